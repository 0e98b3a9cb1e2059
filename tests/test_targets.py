"""`--target`: the same code gives each target its own rules, wording and fixes; docs/targets.md is current."""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.cli.main import main
from cslint.core.config import ConfigError, Settings
from cslint.core.targets import TARGETS, get_target
from cslint.engine.selection import enabled_rules
from cslint.output.docs import refresh_target_table, render_rule, render_target_table
from cslint.rules import rule_by_code

DOC = Path(__file__).resolve().parent.parent / "docs" / "targets.md"

STEP = """
import torch
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            h = h * 2
        print("hidden", h.mean())
        scale = h.max().item()
        return h.double() * scale
"""

OPTIMIZER = """
import torch

class Lazy(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.add_(p.grad, alpha=-group["lr"])
"""


def _codes(diagnostics) -> set[str]:  # type: ignore[no-untyped-def]
    return {d.code for d in diagnostics}


def test_each_target_runs_its_own_families(lint) -> None:
    found = {name: _codes(lint(STEP, target=name)) for name in TARGETS}
    for name in TARGETS:
        assert "WSC101" in found[name] and "WSC201" in found[name] and "WSC701" in found[name], name
    assert "WSC601" in found["wsc"] and "WSC601" in found["xla"]
    assert "WSC601" not in found["compile"]  # float64 compiles fine under Inductor


def test_scalar_argument_rule_is_wsc_only(lint) -> None:
    assert "WSC401" in _codes(lint(OPTIMIZER, target="wsc"))
    assert "WSC401" not in _codes(lint(OPTIMIZER, target="compile"))
    assert "WSC401" in _codes(lint(OPTIMIZER, target="compile", select=("WSC401",)))  # selected by code


def test_messages_say_the_targets_consequence_and_the_rule_page_its_advice(lint) -> None:
    """A message says what is wrong and what it does on the target, in one clause; the target's advice (use
    torch.cond, print with xm.add_step_closure) is on the rule's page, not in every message."""
    compile_if = next(d for d in lint(STEP, target="compile") if d.code == "WSC101")
    wsc_if = next(d for d in lint(STEP, target="wsc") if d.code == "WSC101")
    assert compile_if.message.endswith("a graph break (an error under `fullgraph=True`)")
    assert wsc_if.message.endswith("the first step's branch is frozen into the graph")
    assert "torch.cond" not in compile_if.message
    xla_item = next(d for d in lint(STEP, target="xla") if d.code == "WSC201")
    assert xla_item.message.endswith("on XLA it runs the graph so far")
    rule_page = render_rule(rule_by_code("WSC101"))
    assert "torch.cond" in rule_page.split("## On other targets", 1)[1]
    assert "samba.session.run" in render_rule(rule_by_code("WSC701")).split("## On other targets", 1)[1]


def test_cerebras_fixes_are_offered_only_on_wsc(lint) -> None:
    imports_cerebras = ("cerebras", "torch")  # the project imports cerebras.pytorch somewhere
    wsc_print = next(d for d in lint(STEP, target="wsc", unsafe_fixes=True, project_packages=imports_cerebras)
                     if d.code == "WSC701")
    assert wsc_print.fix is not None and "cerebras" in wsc_print.fix.message.lower()
    for name in ("rdu", "xla", "compile"):
        other = next(d for d in lint(STEP, target=name, unsafe_fixes=True, project_packages=imports_cerebras)
                     if d.code == "WSC701")
        if name == "compile":  # compile's own fix: the statement skipped while torch.compile traces
            assert other.fix is not None and "is_compiling()" in other.fix.message, name
            assert "cerebras" not in other.fix.message.lower(), name
        else:
            assert other.fix is None, name


def test_target_free_fixes_stay_on_every_target(lint) -> None:
    for name in TARGETS:
        item = next(d for d in lint(STEP, target=name) if d.code == "WSC101")
        assert item.fix is not None, name  # torch.where is plain PyTorch


def test_unknown_target_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown target `tpu`"):
        enabled_rules(Settings(target="tpu"))
    assert get_target("RDU").name == "rdu"


def test_cli_target_option(tmp_path: Path, capsys) -> None:
    path = tmp_path / "train.py"
    path.write_text(OPTIMIZER.lstrip(), encoding="utf-8")
    assert main(["check", str(path), "--target", "compile", "--select", "WSC4"]) == 0
    assert main(["check", str(path), "--target", "wsc", "--select", "WSC4"]) == 1
    assert "WSC401" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["check", str(path), "--target", "gpu"])
    assert exit_info.value.code == 2


def test_doc_table_matches_the_target_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert render_target_table() in text, "docs/targets.md is stale: run `python docs/generate.py`"
    assert refresh_target_table(text) == text
    for name in TARGETS:
        assert f"### `{name}`" in text


def test_table_marks_opt_in_and_platform_rules() -> None:
    rows = {line.split(" | ")[0].strip("| "): line for line in render_target_table().splitlines()
            if line.startswith("| WSC")}
    assert rows["WSC851"].endswith("| - | yes | - | - |")
    assert rows["WSC901"].endswith("| opt-in | - | - | - |")
