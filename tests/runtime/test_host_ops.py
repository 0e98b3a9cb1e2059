"""Ops the lazy backend runs on the host, told by its `aten::<op>` fallback counters: an op only the host can
run (an assertion on a value, a comparison returning a Python bool) is a finding at the user's line; an op
the backend merely has no lowering for is a note; a step of lowered ops gets neither."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from cslint.runtime import RuntimeReport, check  # noqa: E402
from cslint.runtime import lazy_backend  # noqa: E402
from tests.runtime.test_runtime import expected_line  # noqa: E402

STEPS = Path(__file__).parent / "targets" / "host_ops.py"
NO_LOWERING = "the lazy backend has no lowering for this op and runs it on the host"


def run(factory: str) -> RuntimeReport:
    report = check(f"{STEPS}:{factory}", ("lazy",), isolate=False)
    assert not report.error, report.error
    assert report.status == {"lazy": "complete"}, report.status
    return report


def lazy_notes(report: RuntimeReport) -> list[str]:
    return [note for note in report.notes if note.startswith("lazy:")]


def test_a_device_side_assertion_is_reported_at_its_line() -> None:
    report = run("device_assertion")
    (finding,) = report.findings
    assert (finding.code, finding.line, finding.backend) == ("WSC104", expected_line(STEPS, "WSC104"), "lazy")
    assert finding.message.startswith(f"a device-side assertion on a tensor (`torch._assert_async()`): {NO_LOWERING}")
    assert finding.message.endswith("the step waits for the device and the graph is cut")


def test_a_comparison_returning_a_python_bool_takes_the_code_of_its_construct() -> None:
    report = run("whole_tensor_comparison")
    assert [(f.code, f.line) for f in report.findings] == [
        ("WSC101", expected_line(STEPS, "WSC101")), ("WSC203", expected_line(STEPS, "WSC203"))]
    branch, read = report.findings
    assert branch.message.startswith("`if` on a tensor condition, through a comparison of whole tensors "
                                     f"(`torch.equal()`): {NO_LOWERING}"), branch.message
    assert read.message.startswith(f"`torch.allclose()`: {NO_LOWERING}"), read.message


def test_an_op_the_backend_only_lacks_a_lowering_for_is_a_note_not_a_finding() -> None:
    report = run("backend_limits")
    assert report.findings == []
    line = f"{STEPS}:{expected_line(STEPS, 'BACKEND-LIMIT')}"
    assert lazy_notes(report) == [
        f"lazy: `torch.{op}()` at {line} has no lowering on the TorchScript lazy backend, which ran it on the "
        "host (a limit of this backend, not a finding)" for op in ("sign", "logsumexp")]


def test_reads_and_shapes_the_backend_ran_on_the_host_are_reported_once_as_before() -> None:
    """`_local_scalar_dense`, `nonzero` and a boolean index also bump fallback counters (a copy to the CPU is
    lowered)."""
    report = run("reads_already_reported")
    assert [(f.code, f.line) for f in report.findings] == [
        (code, expected_line(STEPS, code)) for code in ("WSC201", "WSC501", "WSC502", "WSC202")]
    assert not any(NO_LOWERING in f.message for f in report.findings)
    assert lazy_notes(report) == []


def test_a_step_of_lowered_ops_reports_nothing() -> None:
    report = run("lowered_training_step")
    assert report.findings == [] and lazy_notes(report) == []


def test_ops_the_checker_runs_in_place_of_the_steps_do_not_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replacement (cslint/runtime/on_device.py) that runs an op the backend lacks is the checker's doing."""
    aten = torch.ops.aten

    def lerp_through_sign(start: torch.Tensor, end: torch.Tensor, weight: float) -> torch.Tensor:
        aten.sign.default(start)  # the TorchScript backend has no lowering for it
        return aten.add.Tensor(start, aten.mul.Tensor(aten.sub.Tensor(end, start), weight))

    monkeypatch.setitem(lazy_backend.REPLACEMENTS, torch.ops.aten.lerp.Scalar, lerp_through_sign)
    report = run("lowered_training_step")
    assert report.findings == [] and lazy_notes(report) == []
