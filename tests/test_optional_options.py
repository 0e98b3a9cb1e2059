"""Optional options are Python numbers (#36, held-out set 1 class F2): a parameter defaulting to None that the
body only tests for None, hands to a predicate (`exists(x)`), compares with number literals or converts with
`int()` is the caller's number or None, not a tensor. Each shape has a twin where the parameter does hold a
tensor (the body uses it as one), which still fires."""

from __future__ import annotations

import pytest

from tests.conftest import codes

TARGETS = ("wsc", "compile")


@pytest.mark.parametrize("target", TARGETS)
def test_a_beam_size_option_compared_with_a_number_is_a_python_value(lint, target):
    code = """
    import torch
    from torch import nn

    def exists(v):
        return v is not None

    class Quantizer(nn.Module):
        def forward(self, x, beam_size=None):
            searching = exists(beam_size) and beam_size > 1
            if searching:
                x = x.repeat(2, 1)
            return x * 2
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_an_int_option_converted_with_int_is_a_python_value(lint, target):
    code = """
    import torch
    from torch import nn

    class Codebook(nn.Module):
        def forward(self, dist, topk=None):
            if topk is not None:
                k = min(int(topk), dist.shape[-1])
                dist = dist.topk(k, dim=-1).values
            return dist.sum()
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_a_helper_option_compared_with_a_number_is_a_python_value(lint, target):
    code = """
    import torch
    from torch import nn

    def sample(logits, temperature=None):
        if temperature is not None and temperature > 0.0:
            logits = logits / 2.0
        return logits.softmax(-1)

    class Head(nn.Module):
        def forward(self, x):
            return sample(self.proj(x))
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_an_optional_parameter_used_as_a_tensor_still_branches(lint, target):
    code = """
    import torch
    from torch import nn

    def exists(v):
        return v is not None

    class Quantizer(nn.Module):
        def forward(self, x, lengths=None, scale=None):
            if exists(lengths) and lengths.max() > 1:
                x = x * 2
            if exists(scale) and scale > 1:
                x = x * scale
            return x
    """
    assert [c for c, _ in codes(lint(code, target=target))] == ["WSC101", "WSC101"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_tensor_passed_by_the_caller_still_branches(lint, target):
    code = """
    import torch
    from torch import nn

    def clip(x, limit=None):
        if limit is not None and limit > 1:
            x = x.clamp(max=1.0)
        return x

    class Net(nn.Module):
        def forward(self, x):
            return clip(x, x.amax())
    """
    assert [c for c, _ in codes(lint(code, target=target))] == ["WSC101"]


@pytest.mark.parametrize("target", TARGETS)
def test_an_option_tested_once_and_given_to_einops_is_a_python_value(lint, target):
    code = """
    import torch
    from torch import nn
    from einops import repeat

    def exists(v):
        return v is not None

    class Codebook(nn.Module):
        def forward(self, x, topk=None):
            is_topk = exists(topk)
            if is_topk:
                topk = min(int(topk), x.shape[-1])
                assert topk > 0
                x = repeat(x, "... d -> ... k d", k=topk)
            return x.sum()
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_an_optional_tensor_handed_to_a_helper_still_branches(lint, target):
    code = """
    import torch
    from torch import nn

    def exists(v):
        return v is not None

    class Gate(nn.Module):
        def forward(self, x, gate=None):
            has_gate = exists(gate)
            if has_gate and gate.sum() > 0:
                x = x * 2
            return x
    """
    assert [c for c, _ in codes(lint(code, target=target))] == ["WSC101"]
