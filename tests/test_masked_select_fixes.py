"""`masked_select` followed by a reduction (issue 37): the sum is a safe fixed-shape rewrite (`torch.where`
broadcasts as `masked_select` does); the mean is safe only when the mask has the shape of the selected
tensor, since its count is `mask.sum()`."""

from __future__ import annotations

import pytest

MODEL = """
import torch
from torch import nn

class Loss(nn.Module):
    def forward(self, losses, keep, row_mask):
        return {expr}
"""


def _fix(lint, expr: str):  # type: ignore[no-untyped-def]
    found = [d for d in lint(MODEL.format(expr=expr)) if d.code == "WSC501"]
    assert len(found) == 1, found
    return found[0].fix


@pytest.mark.parametrize(("expr", "applicability"), [
    ("torch.masked_select(losses, keep).sum()", "safe"),
    ("losses.masked_select(row_mask).sum()", "safe"),
    ("losses.masked_select(losses > 0).mean()", "safe"),
    ("losses.masked_select(row_mask).mean()", "unsafe"),  # a (B, 1) mask counts B, masked_select B * T
])
def test_a_reduced_masked_select_gets_a_fix(lint, expr, applicability):
    fix = _fix(lint, expr)
    assert fix is not None and fix.applicability == applicability


@pytest.mark.parametrize("expr", [
    "torch.masked_select(losses, keep)",  # the selection itself is used: its length is the data
    "torch.masked_select(losses, keep).max()",
    "torch.masked_select(losses, torch.rand_like(losses) > 0.5).sum()",  # random mask evaluated in another order
])
def test_other_uses_get_no_fix(lint, expr):
    assert _fix(lint, expr) is None


def test_the_mean_fix_is_exact_for_an_elementwise_mask_and_not_for_a_broadcast_one() -> None:
    torch = pytest.importorskip("torch")
    losses, row_mask = torch.randn(4, 16), torch.tensor([[True], [False], [True], [True]])
    torch.testing.assert_close(torch.where(losses > 0, losses, 0).sum() / (losses > 0).sum(),
                               losses.masked_select(losses > 0).mean())
    assert not torch.allclose(torch.where(row_mask, losses, 0).sum() / row_mask.sum(),
                              losses.masked_select(row_mask).mean())
