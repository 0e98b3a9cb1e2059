"""Fixes that keep a value read from a tensor on the device when it is assigned to a name (issue 20):
offered only when every use of the name takes a tensor, safe only for a zero-dimensional value."""

from __future__ import annotations

import pytest

MODEL = """
import logging
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x, w):
        y = x @ w
        scale = {read}
        {use}
"""


def _item_fix(lint, read: str, use: str):  # type: ignore[no-untyped-def]
    found = [d for d in lint(MODEL.format(read=read, use=use)) if d.code in ("WSC201", "WSC203")]
    assert len(found) == 1, found
    return found[0].fix


@pytest.mark.parametrize("use", [
    "return y / scale",
    "return torch.maximum(y, scale) + 1",
    "return y.mul_(scale), scale",
    "y -= scale\n        return y",
])
def test_every_use_takes_a_tensor_is_a_safe_fix(lint, use):
    fix = _item_fix(lint, "y.abs().max().item()", use)
    assert fix is not None and fix.applicability == "safe"
    assert "Keep `scale` a tensor" in fix.message


@pytest.mark.parametrize("use", [
    'logging.info(f"scale {scale}")\n        return y',
    "return y.view(-1, int(scale))",
    "return y.add(y, alpha=scale)",
    "return y.reshape(scale)",
    "return [scale] * 3",
    "total = scale + 1.0\n        return y * total",
])
def test_a_use_that_needs_a_python_number_gets_no_fix(lint, use):
    assert _item_fix(lint, "y.abs().max().item()", use) is None


def test_a_value_with_dimensions_is_unsafe(lint):
    fix = _item_fix(lint, "y[:1, :1].item()", "return y * scale")
    assert fix is not None and fix.applicability == "unsafe" and "zero-dimensional" in fix.message
    fix = _item_fix(lint, "float(y[0, 0:1])", "return torch.mul(y, scale)")
    assert fix is not None and fix.applicability == "unsafe" and "zero-dimensional" in fix.message


def test_an_if_on_the_name_is_unsafe_and_chains_into_torch_where(fix):
    code = MODEL.format(read="y.abs().max().item()", use="if scale > 1.0:\n            y = y / scale\n        return y")
    assert "torch.where" not in fix(code)
    fixed = fix(code, unsafe=True)
    assert "scale = y.abs().max().detach()" in fixed
    assert "y = torch.where(scale > 1.0, y / scale, y)" in fixed


def test_a_name_assigned_twice_is_left_alone(lint):
    assert _item_fix(lint, "y.abs().max().item()", "scale = 2.0\n        return y * scale") is None
