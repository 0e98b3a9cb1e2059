"""The dense-dispatch fix of mixture-of-experts loops (issue 37): offered for the loop over the experts that
received tokens, refused when the token or slot indices have another use the rewrite cannot make dense."""

from __future__ import annotations

import pytest

MODEL = """
import torch
from torch import nn

class Experts(nn.Module):
    def forward(self, hidden_states, top_k_index, top_k_weights):
        final = torch.zeros_like(hidden_states)
        mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts).permute(2, 1, 0)
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in hit:
            expert_idx = expert_idx[0]
            top_k_pos, token_idx = torch.where(mask[expert_idx])
            {extra}
            current = self.experts[expert_idx](hidden_states[token_idx]) * top_k_weights[token_idx, top_k_pos, None]
            final.index_add_(0, token_idx, current)
        return final
"""


def _loop_fix(lint, extra: str):  # type: ignore[no-untyped-def]
    found = [d for d in lint(MODEL.format(extra=extra)) if d.code == "WSC107"]
    assert len(found) == 1, found
    return found[0].fix


def test_the_expert_loop_gets_an_unsafe_dense_dispatch(lint):
    fix = _loop_fix(lint, "pass")
    assert fix is not None and fix.applicability == "unsafe"
    assert "every expert on every token" in fix.message


@pytest.mark.parametrize("extra", [
    "if token_idx.numel() == 0:\n                continue",  # longcat_flash: a per-expert test of the count
    "self.count = token_idx.shape[0]",
    "top_k_weights[token_idx] = 0",
])
def test_another_use_of_the_indices_gets_no_fix(lint, extra):
    assert _loop_fix(lint, extra) is None


def test_a_loop_over_other_nonzero_rows_gets_no_fix(lint):
    code = MODEL.format(extra="pass").replace("torch.where(mask[expert_idx])", "torch.where(hidden_states > 0)")
    found = [d for d in lint(code) if d.code == "WSC107"]
    assert len(found) == 1 and found[0].fix is None
