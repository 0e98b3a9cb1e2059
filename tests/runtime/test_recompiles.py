"""Dynamo's recompiles put where their value comes from, and breaks in host draws under their rule."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import RuntimeReport, check  # noqa: E402
from tests.runtime.test_runtime import expected_line  # noqa: E402

STEPS = Path(__file__).parent / "targets" / "recompiles.py"


def run(factory: str) -> RuntimeReport:
    report = check(f"{STEPS}:{factory}", ("dynamo",), isolate=False)
    assert not report.error, report.error
    return report


def test_state_made_on_the_first_step_and_a_python_counter_recompile_at_their_own_lines() -> None:
    """Lamb's shape under dynamo: the parameter loop resumes after the trust ratio's `if`, and the resumed
    frame guards `not self.state` where it reads `self.state[p]`: the problem is the `if len(state) == 0:`
    below it that fills the state on the first step only (the static pass names that `if`). The Python
    counter's guard fails on every later step, at the increment."""
    report = run("trust_ratio_step")
    assert report.complete, report.status
    recompiles = {(f.code, f.line) for f in report.findings if "recompiled" in f.message}
    assert recompiles == {("WSC703", expected_line(STEPS, "LAZY-STATE")),
                          ("WSC702", expected_line(STEPS, "PY-COUNTER"))}, report.findings
    lazy = next(f for f in report.findings if f.code == "WSC703")
    assert "`not self.state`" in lazy.message and "before the first step" in lazy.message, lazy.message


def test_a_host_draw_read_into_python_recompiles_at_the_draw_and_numpy_choice_breaks_as_a_host_draw() -> None:
    """Whisper's SpecAugment shape: `epsilon = np.random.rand(1).item()` breaks the graph (dynamo traces the
    draw, `.item()` reads it); the frame resumed after the break takes the drawn number as a constant and is
    recompiled on every step, which dynamo logs where the number is first used (a call of the nested helper):
    it is the draw's line. `np.random.choice` breaks inside torch._numpy: the host draw (WSC704), not a
    conversion the user wrote. The loop variable of the frame resumed in the loop is no change between steps."""
    report = run("spec_augment")
    assert report.complete, report.status
    found = {(f.code, f.line) for f in report.findings}
    draw, choice = expected_line(STEPS, "HOST-DRAW"), expected_line(STEPS, "CHOICE")
    assert {("WSC201", draw), ("WSC704", draw), ("WSC704", choice)} <= found, report.findings
    assert expected_line(STEPS, "FIRST-USE") not in {f.line for f in report.findings if f.code == "WSC704"}
    assert not [f for f in report.findings if f.line == choice + 1], report.findings  # `mask[row, ...]`: `row == 1`
    assert "WSC203" not in {f.code for f in report.findings}, report.findings
