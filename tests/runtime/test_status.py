"""A backend that did not trace the step to the end says so, and the run is never called clean."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import RuntimeReport, check  # noqa: E402
from cslint.runtime.api import OUTPUT_TAIL_BYTES, _Tail  # noqa: E402
from cslint.runtime.cli import main as runtime_main  # noqa: E402
from tests.runtime.test_runtime import expected_line  # noqa: E402

TARGET = Path(__file__).parent / "targets" / "incomplete.py"


def test_a_backend_that_stops_has_a_status_with_its_line() -> None:
    report = check(f"{TARGET}:lazy_kernel_missing", isolate=False)
    assert not report.error
    assert report.status["dynamo"] == "complete"
    assert report.status["lazy"] == (f"stopped at {TARGET}:{expected_line(TARGET, 'STOP')} "
                                     "(NotImplementedError: no lazy kernel for this op)")
    assert not report.complete and set(report.incomplete()) == {"lazy"}
    # what the lazy backend saw before it stopped is kept
    assert ("WSC201", expected_line(TARGET, "WSC201")) in {(f.code, f.line) for f in report.findings}


def test_a_complete_run_is_complete() -> None:
    report = check(f"{Path(__file__).parent / 'targets' / 'families.py'}:look_alikes", isolate=False)
    assert report.status == {"lazy": "complete", "dynamo": "complete"} and report.complete


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def check_here(target: str, backends: tuple[str, ...] = ("lazy", "dynamo"), **kwargs: object) -> RuntimeReport:
        return check(target, backends, isolate=False)
    monkeypatch.setattr("cslint.runtime.cli.check", check_here)


def test_incomplete_is_exit_2_unless_allowed(in_process: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert runtime_main([f"{TARGET}:lazy_kernel_missing", "--no-progress"]) == 2
    out = capsys.readouterr().out
    assert re.search(r"lazy_kernel_missing: lazy: stopped at .*incomplete.py:\d+ \(NotImplementedError", out)
    assert "lazy_kernel_missing: dynamo: complete" in out
    assert "1 backend run did not finish, so this is not a clean bill." in out
    assert runtime_main([f"{TARGET}:lazy_kernel_missing", "--no-progress", "--allow-incomplete"]) == 1


def test_timeout_keeps_findings_and_kills_the_steps_processes(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("CSLINT_TEST_PID_FILE", str(pid_file))
    report = check(f"{TARGET}:hangs_after_a_problem", ("lazy",), timeout=30)
    assert report.status == {"lazy": "timed out"} and "timeout" in report.error
    assert [(f.code, f.line) for f in report.findings] == [("WSC203", expected_line(TARGET, "WSC203"))]
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "a process the step started survived the timeout"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_worker_has_a_memory_limit() -> None:
    report = check(f"{TARGET}:allocates_too_much", ("lazy",), memory_limit_mb=2048, timeout=120)
    assert report.error and "allocate" in report.error.lower(), report.error
    assert report.status == {"lazy": "stopped (the target could not run)"}


def test_output_capture_keeps_only_a_tail() -> None:
    writer = subprocess.Popen([sys.executable, "-c", "import sys\nfor _ in range(200): sys.stdout.write('x' * 100000)\n"
                               "sys.stdout.write('the end')"], stdout=subprocess.PIPE)
    assert writer.stdout is not None
    tail = _Tail(writer.stdout)
    tail.start()
    writer.wait()
    text = tail.text()
    assert len(text) == OUTPUT_TAIL_BYTES and text.endswith("the end")


def test_help_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    out = subprocess.run([sys.executable, "-m", "cslint", "runtime", "--help"], capture_output=True, text=True,
                         cwd=os.getcwd(), check=False).stdout
    for option in ("--backend", "--timeout", "--memory-limit", "--allow-incomplete", "--compare-static",
                   "--output-format", "--no-progress", "from cslint.runtime import Step"):
        assert option in out, out
