"""WSC101 on a check that only raises: removed (unsafe), and nothing else that raises is removed."""

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


def test_a_check_that_only_raises_is_removed_unsafely(lint, fix):
    code = STEP.format(check='if group["lr"] > lr:\n                raise ValueError("lr above the first group")')
    [finding] = [d for d in lint(code) if d.code == "WSC101"]
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert "where they are set" in finding.fix.message
    assert "raise" in fix(code)  # not a safe fix
    fixed = fix(code, unsafe=True)
    assert "raise" not in fixed and "if group" not in fixed
    assert 'p.sub_(group["lr"] * p.grad)' in fixed


@pytest.mark.parametrize("check", [
    'if group["lr"] > lr:\n                group["lr"] = lr\n                raise ValueError("clamped")',
    'if group["lr"] > lr:\n                raise ValueError("too large")\n'
    '            else:\n                lr = lr * 2',
])
def test_a_branch_doing_more_than_raise_keeps_no_fix(lint, check):
    found = [d for d in lint(STEP.format(check=check)) if d.code == "WSC101"]
    assert found and all(d.fix is None for d in found)
