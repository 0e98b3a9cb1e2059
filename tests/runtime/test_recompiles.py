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


def test_state_guarded_at_the_users_step_call_is_put_where_the_optimizer_makes_it() -> None:
    """Lion's shape: dynamo guards `not opt.state` in the user's step function, at `opt.step()`; the state is
    made inside the optimizer's step, behind `if len(state) == 0:` (found by stepping a copy of the optimizer
    once, from the settings it had before the run: the run itself is not changed)."""
    report = run("sign_momentum_step")
    assert report.complete, report.status
    assert [(f.code, f.line) for f in report.findings if "recompiled" in f.message] == \
        [("WSC703", expected_line(STEPS, "SIGN-STATE"))], report.findings
    (made,) = [f for f in report.findings if f.code == "WSC703"]
    assert "`exp_avg`" in made.message and "`not opt.state`" in made.message, made.message


def test_looking_for_where_state_is_made_leaves_the_optimizer_alone() -> None:
    import torch

    from cslint.runtime.optimizer_check import optimizers_of, probe_step
    from tests.runtime.targets.recompiles import SignMomentum

    model = torch.nn.Linear(4, 2)
    opt = SignMomentum(model.parameters())

    def step(x):
        model(x).sum().backward()
        opt.step()

    before = optimizers_of(step)
    assert list(before) == ["opt"]
    step(torch.ones(3, 4))  # the run: state made, weights moved, a setting changed
    opt.param_groups[0]["lr"] = 0.5
    weights = [p.detach().clone() for p in model.parameters()]
    state = {id(p): {k: v.clone() for k, v in s.items()} for p, s in opt.state.items()}
    probe = probe_step(before["opt"])
    assert probe is not None and probe.created == {"exp_avg": (str(STEPS), expected_line(STEPS, "SIGN-STATE") + 1)}
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters()))
    assert {id(p): {k: v for k, v in s.items()} for p, s in opt.state.items()}.keys() == state.keys()
    assert all(torch.equal(v, state[id(p)][k]) for p, s in opt.state.items() for k, v in s.items())
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["params"][0] is model.weight
    assert optimizers_of(step) == {}  # its state is no longer empty: nothing to look for


def test_a_group_counter_guarded_at_the_users_step_call_is_put_at_its_increment() -> None:
    report = run("group_step_tiger")
    assert report.complete, report.status
    assert {(f.code, f.line) for f in report.findings if "recompiled" in f.message} == {
        ("WSC703", expected_line(STEPS, "TIGER-STATE")), ("WSC702", expected_line(STEPS, "TIGER-COUNTER"))}, \
        report.findings
