"""Dynamo breaks the graph at `tensor.requires_grad = True` and `buffer.requires_grad_()` inside the step: the
runtime checker names them WSC705 (the static rule that reports the same lines), not constructs no rule
covers."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import check  # noqa: E402

STEP = '''
import torch
from torch import nn


class FeatureEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 3)
        self.register_buffer("zero", torch.tensor(0.0), persistent=False)

    def forward(self, values):
        hidden = values[:, None]
        if self.training:
            hidden.requires_grad = True
        aux = self.zero
        if self.training:
            aux.requires_grad_()
        return self.conv(hidden).mean() + aux


def runtime_target(device="cpu"):
    return FeatureEncoder().to(device), [torch.randn(2, 16, device=device) for _ in range(2)]
'''


def test_requires_grad_switches_in_the_step_are_wsc705(tmp_path: Path) -> None:
    path = tmp_path / "encoder.py"
    path.write_text(STEP.lstrip("\n"), encoding="utf-8")
    report = check(f"{path}:runtime_target", ("dynamo",), isolate=False)
    assert not report.error, report.error
    lines = [i for i, text in enumerate(path.read_text().splitlines(), 1) if "requires_grad" in text]
    assert [(f.code, f.line) for f in report.findings] == [("WSC705", line) for line in lines]
    assert report.uncovered_breaks == []


def test_the_static_rule_reports_the_same_lines_under_compile(lint) -> None:
    found = lint(STEP.lstrip("\n"), target="compile")
    lines = [i for i, text in enumerate(STEP.lstrip("\n").splitlines(), 1) if "requires_grad" in text]
    assert [(d.code, d.line) for d in found if d.code == "WSC705"] == [("WSC705", line) for line in lines]
