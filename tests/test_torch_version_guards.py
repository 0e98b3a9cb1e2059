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


FALLBACK = """
import numpy as np
import torch
from torch import nn

class Bump(nn.Module):
    def forward(self, x):
        if hasattr(torch, "nextafter"):
            return torch.nextafter(x, x + 1)
        return torch.tensor(np.nextafter(x.detach().cpu().numpy(), np.inf))
"""


def _environment_with_torch(root, monkeypatch, defines: str):
    """A virtual environment (never run) whose torch 1.6 defines `defines` at its top level."""
    from cslint.analysis import library_env
    from tests.test_libraries import _install, _script

    venv = root / "venv"
    _install(venv / "lib" / "python3.11" / "site-packages", "torch", "1.6.0",
             {"__init__.py": f"def {defines}(a, b):\n    return a\n"})
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n", encoding="utf-8")
    _script(venv / "bin" / "python", root / "ran")
    monkeypatch.setattr(library_env, "_ENVIRONMENTS", {})
    return str(venv / "bin" / "python")


def test_a_name_guard_asks_the_torch_of_the_linted_environment(tmp_path, monkeypatch):
    """`hasattr(torch, "nextafter")` is settled by the torch the `python` setting names, not by the torch
    cslint runs beside: an environment whose torch lacks the name keeps the fallback's findings."""
    from tests.conftest import run_linter

    old = _environment_with_torch(tmp_path / "old", monkeypatch, defines="other_function")
    result, _ = run_linter(tmp_path / "a", {"model.py": FALLBACK}, python=old)
    assert ("WSC201", 9) in codes(result.diagnostics)
    new = _environment_with_torch(tmp_path / "new", monkeypatch, defines="nextafter")
    result, _ = run_linter(tmp_path / "b", {"model.py": FALLBACK}, python=new)
    assert not any(code.startswith("WSC2") for code, _ in codes(result.diagnostics))
    assert not (tmp_path / "old" / "ran").exists() and not (tmp_path / "new" / "ran").exists()
    result, _ = run_linter(tmp_path / "c", {"model.py": FALLBACK}, python="none")
    assert ("WSC201", 9) in codes(result.diagnostics)
