"""WSC101/WSC104 on a check that raises: kept as `torch._assert_async` under --target compile, no fix on the
lazy-tensor targets, never removed."""

from __future__ import annotations

import pytest

STEP = """
import torch

class Opt(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        lr = self.param_groups[0]["lr"]
        for group in self.param_groups:
            {check}
            for p in group["params"]:
                p.sub_(group["lr"] * p.grad)
"""
ONLY_RAISES = 'if group["lr"] > lr:\n                raise ValueError("lr above the first group")'


def test_a_check_that_only_raises_becomes_a_device_assertion_under_compile(lint, fix):
    code = STEP.format(check=ONLY_RAISES)
    [finding] = [d for d in lint(code, target="compile") if d.code == "WSC101"]
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert "_assert_async" in finding.fix.message and "RuntimeError" in finding.fix.message
    assert "raise" in fix(code, target="compile")  # not a safe fix
    fixed = fix(code, unsafe=True, target="compile")
    assert 'torch._assert_async(torch.logical_not(torch.as_tensor(group["lr"] > lr)), "lr above the first group")' \
        in fixed
    assert 'p.sub_(group["lr"] * p.grad)' in fixed


@pytest.mark.parametrize("target", ["wsc", "rdu", "xla"])
def test_no_fix_on_lazy_targets_keeps_the_check(lint, fix, target):
    code = STEP.format(check=ONLY_RAISES)
    found = [d for d in lint(code, target=target) if d.code == "WSC101"]
    assert found and all(d.fix is None for d in found)
    assert fix(code, unsafe=True, target=target) == fix(code) == code.lstrip("\n")


MODEL = """
import torch
from torch import nn

class Block(nn.Module):
    def forward(self, h, mask=None):
        {check}
        return h * 2
"""


@pytest.mark.parametrize("check, kept", [
    ('assert torch.isfinite(h).all(), "non-finite"', 'torch._assert_async(torch.isfinite(h).all(), "non-finite")'),
    ("assert (h > 0).any()", "torch._assert_async((h > 0).any(), 'assert (h > 0).any()')"),
    ('assert not (h < 0).all(), f"bad at {h.dim()}"',  # the message formats a Python value: kept
     'torch._assert_async(torch.logical_not((h < 0).all()), f"bad at {h.dim()}")'),
])
def test_an_assert_becomes_a_device_assertion_under_compile(fix, check, kept):
    fixed = fix(MODEL.format(check=check), unsafe=True, target="compile")
    assert "        assert " not in fixed
    assert kept in fixed
    assert fix(MODEL.format(check=check), unsafe=True) == MODEL.format(check=check).lstrip("\n")  # wsc: kept


@pytest.mark.parametrize("check", [
    "assert mask is None or mask.any()",  # the assertion would evaluate mask.any() on None
    'assert torch.isfinite(h).all(), f"non-finite: {h.max()}"',  # the message formats a tensor
])
def test_an_assert_that_cannot_be_kept_on_the_device_gets_no_fix(lint, check):
    found = [d for d in lint(MODEL.format(check=check), target="compile") if d.code == "WSC104"]
    assert found and all(d.fix is None for d in found)


@pytest.mark.parametrize("check", [
    'if group["lr"] > lr:\n                group["lr"] = lr\n                raise ValueError("clamped")',
    'if group["lr"] > lr:\n                raise ValueError("too large")\n'
    '            else:\n                lr = lr * 2',
])
def test_a_branch_doing_more_than_raise_keeps_no_fix(lint, check):
    found = [d for d in lint(STEP.format(check=check), target="compile") if d.code == "WSC101"]
    assert found and all(d.fix is None for d in found)
