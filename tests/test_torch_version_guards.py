"""Fallbacks for an old torch (#36, held-out set 2, F11): the guard decides them on the torch cslint targets.

`if not hasattr(torch, "nextafter"):`, `torch.__version__ < "1.7"` and `version.parse(torch.__version__) <
version.parse("1.10")` run their body only on a torch older than any cslint supports: what is inside is
dead there. A guard the supported torch does not settle (a newer version, a name torch does not define)
keeps its body.
"""

from __future__ import annotations

import pytest

from tests.conftest import codes

TARGETS = ["wsc", "compile"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_fallback_behind_a_missing_torch_function_is_dead(lint, target):
    code = """
    import numpy as np
    import torch
    from torch import nn

    def _host_nextafter(a, b):
        return torch.tensor(np.nextafter(a.detach().cpu().numpy(), b.detach().cpu().numpy()))

    def _step_up(a, b):
        if hasattr(torch, "nextafter"):
            return torch.nextafter(a, b)
        else:
            return _host_nextafter(a, b)

    class Bump(nn.Module):
        def forward(self, x):
            return _step_up(x, x + 1)
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_a_branch_for_an_old_torch_version_is_dead(lint, target):
    code = """
    import torch
    from packaging import version
    from torch import nn

    class Scale(nn.Module):
        def forward(self, x):
            if torch.__version__ < "1.7":
                x = x * x.max().item()
            if version.parse(torch.__version__) < version.parse("1.10.0"):
                x = x / x.sum().item()
            if not hasattr(torch, "nextafter"):
                x = x + float(x.min())
            return x
    """
    assert codes(lint(code, target=target)) == []


def test_the_side_for_the_supported_torch_is_kept(lint):
    code = """
    import torch
    from torch import nn

    class Scale(nn.Module):
        def forward(self, x):
            if hasattr(torch, "nextafter"):
                x = x * x.max().item()
            if torch.__version__ >= "1.7":
                x = x / x.sum().item()
            return x
    """
    assert codes(lint(code, target="wsc")) == [("WSC201", 7), ("WSC201", 9)]


def test_a_guard_the_supported_torch_does_not_settle_keeps_its_body(lint):
    code = """
    import torch
    from torch import nn

    class Scale(nn.Module):
        def forward(self, x):
            if torch.__version__ < "2.7":
                x = x * x.max().item()
            if not hasattr(torch, "made_up_function_name"):
                x = x / x.sum().item()
            return x
    """
    assert codes(lint(code, target="wsc")) == [("WSC201", 7), ("WSC201", 9)]
