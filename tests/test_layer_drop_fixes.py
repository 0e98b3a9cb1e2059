"""The layer-drop fixes of WSC101 (issue 37 item 2, fixers/layer_drop.py): a branch on a drop flag that runs
one `hidden = layer(hidden)` becomes `torch.where` over the layer's result; refused where selecting would
not be the same program (more statements skipped, a result that is not a tensor, a flag of unknown type)."""

from __future__ import annotations

import pytest

FLAG = """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))
        self.layerdrop = 0.5

    def forward(self, hidden):
        for layer in self.layers:
            to_drop = {start}
            if self.training:
                to_drop = torch.rand([]) < self.layerdrop
            if not to_drop:
                hidden = {call}
        return hidden
"""

CONTINUE = """
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))
        self.layerdrop = 0.5
        self.seen = 0

    def forward(self, hidden):
        for layer in self.layers:
            if self.training:
                if torch.rand([]) < self.layerdrop:
                    continue
{rest}
        return hidden
"""


def _flag_fixes(lint, **parts):  # type: ignore[no-untyped-def]
    values = {"start": "False", "call": "layer(hidden)"} | parts
    return [d for d in lint(FLAG.format(**values), target="compile") if d.code == "WSC101" and d.line == 16]


def test_a_branch_on_a_drop_flag_runs_the_layer_and_selects(lint, fix):
    found = _flag_fixes(lint)
    assert len(found) == 1 and found[0].fix is not None and found[0].fix.applicability == "unsafe"
    assert "zero gradients" in found[0].fix.message
    fixed = fix(FLAG.format(start="False", call="layer(hidden)"), unsafe=True, target="compile")
    assert "hidden = torch.where(torch.as_tensor(torch.logical_not(torch.as_tensor(to_drop)), " \
           "device=hidden.device), layer(hidden), hidden)" in fixed
    assert "if not to_drop" not in fixed


@pytest.mark.parametrize("parts", [
    {"call": "layer(hidden), None"},  # a tuple: torch.where has no form for it
    {"start": "self.start"},  # a flag whose first value is not known to be a bool
])
def test_no_select_when_the_result_or_the_flag_is_not_known(lint, parts):
    found = _flag_fixes(lint, **parts)
    assert found and all(d.fix is None for d in found)


def test_continue_keeps_its_condition_in_a_flag(fix):
    fixed = fix(CONTINUE.format(rest="            hidden = layer(hidden)"), unsafe=True, target="compile")
    assert "continue" not in fixed
    assert "            skip_layer = False\n            if self.training:\n" \
           "                skip_layer = torch.rand([]) < self.layerdrop\n" in fixed
    assert "hidden = torch.where(torch.as_tensor(skip_layer, device=hidden.device), hidden, layer(hidden))" in fixed


@pytest.mark.parametrize("rest", [
    "            self.seen += 1\n            hidden = layer(hidden)",  # `continue` skips two statements
    "            hidden = layer(hidden), 1",  # not a tensor
])
def test_continue_that_skips_more_than_one_tensor_assignment_has_no_fix(lint, rest):
    found = [d for d in lint(CONTINUE.format(rest=rest), target="compile") if d.code == "WSC101"]
    assert found and all(d.fix is None for d in found)


def test_the_fixed_layer_drop_steps_run_on_the_lazy_backend(tmp_path):
    """The flag is drawn on the host (`torch.rand([])`): selecting with a host condition gives a lazy tensor a
    host gradient, and the lazy backend stops. The fixed golden puts the condition on the tensor's device."""
    pytest.importorskip("torch")
    from pathlib import Path

    from cslint.runtime import check

    fixed = Path(__file__).parent / "golden" / "control_flow" / "layer_drop.unsafe.out.py"
    target = tmp_path / "target.py"
    target.write_text(fixed.read_text(encoding="utf-8"), encoding="utf-8")
    report = check(f"{target}:runtime_target", ("lazy",), isolate=False)
    assert not report.error, report.error
    assert dict(report.status) == {"lazy": "complete"}
