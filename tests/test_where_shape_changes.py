"""The fixes that run a guarded branch every step and select with torch.where refuse a branch that changes
its value's shape, and a test that binds a name the branch reads (seen on a project holding a copy of a
transformer library's mask helpers: `if (padding_length := total - mask.shape[-1]) > 0: mask = F.pad(mask,
(0, padding_length))` was rewritten into a torch.where of two shapes that read `padding_length` unbound)."""

from __future__ import annotations

import libcst as cst
import pytest

WALRUS = """
import torch
import torch.nn.functional as F
from torch import nn


class PadMask(nn.Module):
    def forward(self, mask, lengths):
        total = lengths.max()
        padded = mask
        if (extra := total - mask.shape[-1]) > 0:
            padded = F.pad(mask, (0, extra))
        return padded
"""

PLAIN = """
import torch
import torch.nn.functional as F
from torch import nn


class PadMask(nn.Module):
    def forward(self, mask, lengths):
        extra = lengths.max() - mask.shape[-1]
        padded = mask
        if extra > 0:
            padded = F.pad(mask, (0, extra))
        return padded
"""

BLOCK = """
import torch
from torch import nn


class Grow(nn.Module):
    def forward(self, x, scores):
        count = scores.sum()
        if scores.max() > 0:
            x = torch.cat([x, x[:1]], dim=0)
            count = count + 1
        return x, count
"""

ELEMENTWISE = """
import torch
from torch import nn


class Clip(nn.Module):
    def forward(self, x):
        y = x
        if x.max() > 10:
            y = x / x.max()
        return y
"""


@pytest.mark.parametrize("code", [WALRUS, PLAIN, BLOCK], ids=["walrus", "plain", "block"])
@pytest.mark.parametrize("target", ["wsc", "compile"])
def test_a_branch_that_changes_a_shape_is_reported_without_a_fix(lint, fix, code, target):
    found = [d for d in lint(code, target=target) if d.code == "WSC101"]
    assert len(found) == 1 and found[0].fix is None
    assert fix(code, unsafe=True, target=target).strip() == code.strip()


def test_an_elementwise_branch_still_gets_its_where_fix(fix):
    fixed = fix(ELEMENTWISE, unsafe=True, target="wsc")
    cst.parse_module(fixed)
    assert "torch.where(" in fixed and "if x.max() > 10" not in fixed
