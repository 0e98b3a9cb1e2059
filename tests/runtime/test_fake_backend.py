"""The fake-tensor backend: every value read and value-dependent shape in one run, at the user's line, with the
lazy backend's code; a failure inside it reported with its whole cause at the nearest user line."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import check  # noqa: E402
from cslint.runtime.cli import main as runtime_main, render_text  # noqa: E402

from tests.runtime.test_runtime import expected_line  # noqa: E402

STEPS = Path(__file__).parent / "targets" / "fake_steps.py"


def test_each_read_is_reported_at_its_line_with_the_lazy_backends_code() -> None:
    report = check(f"{STEPS}:reads", ("lazy", "fake"), isolate=False)
    assert report.status == {"lazy": "complete", "fake": "complete"}, report.causes
    expected = {("WSC201", expected_line(STEPS, "WSC201")), ("WSC101", expected_line(STEPS, "WSC101")),
                ("WSC201", expected_line(STEPS, "TOLIST")), ("WSC501", expected_line(STEPS, "WSC501")),
                ("WSC502", expected_line(STEPS, "WSC502"))}
    both = {(f.code, f.line) for f in report.findings if f.path == str(STEPS) and f.backend == "lazy+fake"}
    assert expected <= both, report.findings  # both backends, one finding each: same code, same line
    assert not [f for f in report.findings if f.backend in ("lazy", "fake")], report.findings  # nothing one-sided


def test_the_fake_backend_alone_goes_on_after_each_read() -> None:
    report = check(f"{STEPS}:reads", ("fake",), isolate=False)
    assert report.status == {"fake": "complete"}
    lines = {f.line for f in report.findings if f.path == str(STEPS)}
    assert expected_line(STEPS, "WSC502") in lines  # the last read: the first ones did not stop the run
    assert report.steps == 2


def test_a_failure_inside_the_backend_has_its_whole_cause_and_the_users_line() -> None:
    report = check(f"{STEPS}:unsupported", ("fake",), isolate=False)
    assert report.status["fake"].startswith(f"stopped at {STEPS}:{expected_line(STEPS, 'FAILS')} (Wrapped: ")
    cause = report.causes["fake"]
    assert cause.startswith("Wrapped: the step's own wrapper\nraised from RuntimeError: There was no fake impl")
    assert "cslint_tests::doubled" in cause and "register_fake" in cause
    assert "raised from RuntimeError: There was no fake impl" in render_text(report)


def test_cslint_runtime_backend_fake(capsys: pytest.CaptureFixture[str]) -> None:
    assert runtime_main([f"{STEPS}:reads", "--backend", "fake", "--no-progress"]) == 1  # findings
    out = capsys.readouterr().out
    assert f"fake_steps.py:{expected_line(STEPS, 'WSC201')}: WSC201 [fake] `.item()`" in out
    assert f"{STEPS}:reads: fake: complete" in out
