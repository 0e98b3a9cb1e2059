"""`torch.where` selects between tensors: a branch that binds `None` (a mask helper's fast path that drops
the mask) has no `torch.where` form, so the finding keeps no fix instead of `torch.where(c, None, x)`."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_linter

MASK_HELPER = """
import torch
from torch import nn


class Encoder(nn.Module):
    def forward(self, hidden, attention_mask):
        if attention_mask.all():
            attention_mask = None
        scale = None if hidden.sum() > 0 else hidden
        return hidden, attention_mask, scale
"""


def test_a_branch_binding_none_gets_no_where_fix(tmp_path: Path) -> None:
    result, texts = run_linter(tmp_path, {"model.py": MASK_HELPER}, fix=True, unsafe=True)
    assert "None," not in texts["model.py"] and ", None" not in texts["model.py"]
    findings = sorted((d.code, d.line) for d in result.diagnostics)
    assert ("WSC101", 7) in findings and ("WSC103", 9) in findings  # still reported, with no fix
    assert texts["model.py"].strip() == MASK_HELPER.strip()
