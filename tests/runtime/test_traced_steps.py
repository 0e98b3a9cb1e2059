"""The lazy backend traces real steps to the end, and findings carry the code the static rule gives."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import RuntimeReport, check  # noqa: E402
from tests.runtime.test_runtime import expected_line  # noqa: E402

STEPS = Path(__file__).parent / "targets" / "traced_steps.py"


def run(factory: str, backends: tuple[str, ...] = ("lazy", "dynamo")) -> RuntimeReport:
    report = check(f"{STEPS}:{factory}", backends, isolate=False)
    assert not report.error, report.error
    return report


def test_views_of_created_tensors_and_split_heads_stay_on_the_device() -> None:
    report = run("created_tensors_and_split_heads", ("lazy",))
    assert report.status == {"lazy": "complete"}
    assert report.findings == []


def test_views_of_tensors_copied_to_the_device_in_the_step_and_stores_through_a_mask() -> None:
    """Whisper's SpecAugment: `torch.tensor(spans, device=...)[:, None]` stopped the lazy run ("aten::as_strided
    ... no implementation for lazy"), as did a view of `cpu_tensor.to(device)`; the store through the mask
    (`x[mask] = 0`) is WSC502, as the static rule says, and ran on the CPU."""
    report = run("masked_frames", ("lazy",))
    assert report.status == {"lazy": "complete"}, report.status
    assert [(f.code, f.line) for f in report.findings] == [("WSC502", expected_line(STEPS, "WSC502-STORE"))]


def test_an_op_that_leaves_the_device_stops_the_run_where_it_happened() -> None:
    report = run("leaves_the_device", ("lazy",))
    status = report.status["lazy"]
    assert status.startswith(f"stopped at {STEPS}:{expected_line(STEPS, 'LEAVES')} (LeftTheDevice: "), status
    assert "host_only" in status and "returned a cpu tensor" in status


def test_trip_count_is_wsc107_once_seen_by_both_backends() -> None:
    report = run("trip_count_from_tensor")
    assert [(f.code, f.line, f.backend) for f in report.findings] == \
        [("WSC107", expected_line(STEPS, "WSC107"), "lazy+dynamo")]


def test_clip_grad_error_if_nonfinite_is_wsc803_at_the_call() -> None:
    report = run("clip_nonfinite", ("lazy",))
    assert [(f.code, f.line) for f in report.findings] == [("WSC803", expected_line(STEPS, "WSC803"))]


def test_adamw_in_the_step_is_wsc301_at_the_users_line_and_backward_is_no_finding() -> None:
    report = run("adamw_step")
    assert report.complete
    lines = {f.line for f in report.findings}
    assert expected_line(STEPS, "BACKWARD") not in lines and expected_line(STEPS, "ZERO_GRAD") not in lines
    at_step = {f.code: f for f in report.findings if f.line == expected_line(STEPS, "WSC301")}
    assert set(at_step) == {"WSC301", "WSC201"}, report.findings
    assert "`exp_avg`" in at_step["WSC301"].message and "preinitialize()" in at_step["WSC301"].message
    # AdamW's own `.item()`: at the user's line, with the library frames as its chain
    chain = at_step["WSC201"].chain
    assert chain[0].startswith(f"{STEPS}:{expected_line(STEPS, 'WSC301')} in step")
    assert any("torch/optim/" in frame for frame in chain[1:])
    assert chain[-1].endswith(" in _get_value"), chain  # not the dispatch machinery's frames below it
    assert all(f.path == str(STEPS) for f in report.findings)
    assert not [f for f in report.findings if f.code == "WSC703"], report.findings


def test_a_bound_optimizer_step_is_a_step() -> None:
    report = run("bound_optimizer_step", ("lazy",))
    assert report.complete
    codes = {f.code for f in report.findings}
    assert {"WSC301", "WSC201"} <= codes, report.findings
    assert all("torch/optim/" in f.path for f in report.findings)


def test_logging_a_tensor_is_reported_at_the_users_call_not_in_logging() -> None:
    report = run("logs_a_tensor", ("lazy",))
    assert [(f.code, f.path, f.line) for f in report.findings] == \
        [("WSC701", str(STEPS), expected_line(STEPS, "WSC701"))]


def test_a_graph_change_is_put_on_the_tensor_branch_that_caused_it() -> None:
    report = run("branch_picks_the_graph", ("lazy",))
    assert [(f.code, f.line, f.backend) for f in report.findings] == \
        [("WSC101", expected_line(STEPS, "WSC101"), "lazy+stability")]


def test_show_chain_prints_the_frames_into_the_library(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from cslint.runtime.cli import main as runtime_main

    monkeypatch.setattr("cslint.runtime.cli.check", lambda target, backends, **kwargs: check(target, backends,
                                                                                              isolate=False))
    runtime_main([f"{STEPS}:adamw_step", "--backend", "lazy", "--show-chain", "--allow-incomplete"])
    out = capsys.readouterr().out
    line = expected_line(STEPS, "WSC301")
    assert f"traced_steps.py:{line}: WSC201 [lazy]" in out
    assert "torch/optim/optimizer.py:" in out and " in _get_value" in out


def test_moe_expert_loop_syncs_are_reported_once_each_at_their_lines() -> None:
    report = run("mixture_of_experts")
    assert report.complete, report.status
    line = lambda marker: expected_line(STEPS, marker)  # noqa: E731
    found = {(f.code, f.line, f.backend) for f in report.findings}
    assert found == {
        ("WSC501", line("HIT"), "lazy+dynamo"),  # the nonzero() picking the experts (also a break in the loop)
        ("WSC101", line("EXPERT-IF"), "lazy+dynamo"),  # dynamo: a break inside the loop, traced past
        ("WSC207", line("WHERE"), "lazy"),  # a 0-dim tensor indexing the mask
        ("WSC501", line("WHERE"), "lazy+dynamo"),  # one-argument torch.where
        # dynamo gathers by a 0-dim tensor that enters its graph: after the `if` break, `expert` is an input
        ("WSC207", line("UP"), "lazy"),
        ("WSC207", line("DOWN"), "lazy"),
    }, report.findings
    assert line("MOE-BACKWARD") not in {f.line for f in report.findings}


@pytest.mark.parametrize("factory", ["routed_experts", "many_routed_experts"])
def test_dynamo_traces_past_a_break_inside_a_loop(factory: str) -> None:
    """Dynamo skipped the whole frame after the first break in a loop (the `torch.where`), so the `.item()`
    after it was never seen under dynamo. Each site is at its own line, not at the resumed frame's first line
    (a resumed copy of the function carries that line on the instructions the next iteration runs), and a
    loop longer than dynamo's recompile limit gives no finding on the second step."""
    report = run(factory)
    assert report.complete, report.status
    assert {(f.code, f.line, f.backend) for f in report.findings} == {
        ("WSC501", expected_line(STEPS, "RANGE-WHERE"), "lazy+dynamo"),
        ("WSC201", expected_line(STEPS, "RANGE-ITEM"), "lazy+dynamo"),
    }, report.findings


def test_recompiles_within_the_first_step_are_no_finding() -> None:
    """The shared decorator's wrapper is compiled once per calling variant during step 1; step 2 reuses them."""
    report = run("mixture_of_experts", ("dynamo",))
    assert not [f for f in report.findings if f.code in ("WSC702", "WSC703")], report.findings
    assert any("recompile(s) during the first step only" in note for note in report.notes), report.notes


def test_a_graph_break_no_rule_covers_is_a_note_not_a_finding() -> None:
    report = run("collects_garbage")
    assert report.complete and report.findings == []
    where = f"{STEPS}:{expected_line(STEPS, 'UNCOVERED')}"
    assert any(where in note and "no rule covers" in note for note in report.notes), report.notes


def test_state_made_in_the_step_of_an_optimizer_outside_torch_is_at_the_line_that_makes_it() -> None:
    """Like the static rule and the optimizer check: in the optimizer's own code (prodigyopt's, the user's),
    with the user's `opt.step()` as the first frame of its chain; torch's own optimizers stay at that call."""
    report = run("custom_optimizer_step", ("lazy",))
    assert report.complete, report.status
    state = {f.line: f for f in report.findings if f.code == "WSC301"}
    made, every_step = expected_line(STEPS, "CUSTOM-STATE"), expected_line(STEPS, "CUSTOM-EVERY-STEP")
    assert sorted(state) == [made, made + 1, made + 2, every_step], report.findings  # each line that made state
    assert all(f.path == str(STEPS) for f in state.values())
    assert "`step` of `SlicedAdam`" in state[made].message, state[made].message
    assert "`update_norm` of `SlicedAdam`" in state[every_step].message, state[every_step].message
    assert state[made].chain[0].startswith(f"{STEPS}:{expected_line(STEPS, 'CUSTOM-STEP')} in step"), state[made].chain
    assert state[made].chain[-1] == f"{STEPS}:{made} in step", state[made].chain


def test_compare_static_puts_a_state_guard_and_the_state_it_makes_on_one_row() -> None:
    """The static rule reports the `if "step" not in state` guard, the runtime each line in it that made
    state: one problem, one row seen by both; a key written every step is its own row, seen by both."""
    from cslint.runtime.compare import BOTH, compare_with_static

    rows = [r for r in compare_with_static(run("custom_optimizer_step", ("lazy",))).rows
            if r.static.startswith("WSC30") or r.runtime.startswith("WSC30")]
    assert [(r.line, r.verdict, r.runtime.count("WSC301 [lazy]")) for r in rows] == [
        (expected_line(STEPS, "CUSTOM-STATE") - 1, BOTH, 3), (expected_line(STEPS, "CUSTOM-EVERY-STEP"), BOTH, 1)]
    # the optimizer check reports each key at its own assignment: all three are that guard's row
    alone = check(f"{STEPS}:sliced_adam_alone", isolate=False)
    rows = [r for r in compare_with_static(alone).rows if r.static.startswith("WSC301")]
    assert [(r.line, r.verdict, r.runtime.count("WSC301 [optimizer]")) for r in rows] == \
        [(expected_line(STEPS, "CUSTOM-STATE") - 1, BOTH, 3)], rows
