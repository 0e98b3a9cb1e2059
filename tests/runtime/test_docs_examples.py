"""The runtime checker's documentation shows a step factory as users write it: the example is run as it
is written there, with a model of its own beside it, and must trace to the end on both backends, reporting
only what the documentation says AdamW does (its `.item()` in `_get_value` on lazy tensors, WSC201, and its
state made by the first `step()`, WSC301), at the user's line that calls the optimizer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import check  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs" / "runtime.md"

MODEL = """\
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(16, 32)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))
"""


def _example(first_line: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)
    found = [b for b in blocks if b.startswith(first_line)]
    assert len(found) == 1, f"docs/runtime.md has no single example starting {first_line!r}"
    return found[0]


def test_the_documented_step_factory_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "train_check.py").write_text(_example("# train_check.py"), encoding="utf-8")
    (tmp_path / "mymodel.py").write_text(MODEL, encoding="utf-8")
    report = check(f"{tmp_path / 'train_check.py'}:make_step", ("lazy", "dynamo"))
    assert not report.error, report.error
    assert report.status == {"lazy": "complete", "dynamo": "complete"}, report.status
    assert report.findings
    for finding in report.findings:
        assert finding.code in ("WSC201", "WSC301") and finding.path.endswith("train_check.py"), finding
        assert any("torch/optim/" in link for link in finding.chain), finding
    assert {f.code for f in report.findings} == {"WSC201", "WSC301"}
