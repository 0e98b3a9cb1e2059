"""Progress on stderr: on a terminal for runs over a second (pty), plain lines with --progress, nothing
with -q or when stderr is not a terminal."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cslint.support.progress import Progress
from tests.test_shared_indexes import _dense_project


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_line_appears_after_a_second_and_is_wiped_at_the_end():
    clock, out = Clock(), io.StringIO()
    progress = Progress(out, "terminal", clock=clock)
    progress.phase("analysing", 40)
    progress.advance(10)
    assert out.getvalue() == ""  # a quick run shows nothing
    clock.now += 1.5
    progress.advance(10)
    assert out.getvalue() == "\rcslint: analysing 20/40 files, 2 s\x1b[K"
    clock.now += 0.01
    progress.advance(1)  # not redrawn more than ten times a second
    assert out.getvalue().count("\r") == 1
    progress.finish()
    assert out.getvalue().endswith("\r\x1b[K")


def test_plain_lines_at_each_phase_and_every_few_seconds():
    clock, out = Clock(), io.StringIO()
    progress = Progress(out, "lines", clock=clock)
    progress.phase("indexing", 1000)
    progress.advance(100)
    clock.now += 6
    progress.advance(400)
    progress.phase("analysing", 1000)
    progress.finish()
    assert out.getvalue().splitlines() == [
        "cslint: indexing 0/1,000 files, 0 s", "cslint: indexing 500/1,000 files, 6 s",
        "cslint: analysing 0/1,000 files, 6 s"]


def test_off_writes_nothing():
    progress = Progress.off()
    progress.phase("analysing", 3)
    progress.advance(3)
    progress.finish()
    assert progress.text() == "cslint: analysing 3/3 files, 0 s"


def _run_on_a_terminal(args: list[str], cwd: Path) -> tuple[str, str, int]:
    """cslint with stderr on a pseudo-terminal: (stdout, what the terminal showed, exit code)."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "cslint", *args], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    stdout = process.stdout.read().decode() if process.stdout is not None else ""
    code = process.wait()
    os.close(master)
    return stdout, shown.decode(errors="replace"), code


@pytest.fixture(scope="module")
def slow_project(tmp_path_factory) -> Path:
    """A project whose cold run, started in a new interpreter, takes well over a second."""
    return _dense_project(tmp_path_factory.mktemp("progress"), models=300)  # well over a second, also idle


def test_a_long_run_on_a_terminal_shows_progress_and_leaves_a_clean_report(slow_project):
    stdout, shown, code = _run_on_a_terminal(["check", ".", "--no-cache", "-j", "1"], slow_project)
    assert code == 1
    assert "\rcslint: analysing " in shown and " files, " in shown
    assert shown.endswith("\r\x1b[K")  # wiped: the report follows on a clean line
    assert "WSC101" in stdout and "cslint:" not in stdout


def test_quiet_on_a_terminal_shows_no_progress(slow_project):
    stdout, shown, code = _run_on_a_terminal(["check", ".", "--no-cache", "-j", "1", "-q"], slow_project)
    assert code == 1 and "WSC101" in stdout
    assert "analysing" not in shown


def test_no_progress_when_stderr_is_not_a_terminal_unless_asked(slow_project, tmp_path):
    run = [sys.executable, "-m", "cslint", "check", ".", "--no-cache", "-j", "1"]
    quiet = subprocess.run(run, cwd=slow_project, capture_output=True, text=True)
    assert quiet.returncode == 1 and "analysing" not in quiet.stderr
    fixed = _dense_project(tmp_path, models=4)
    asked = subprocess.run(run + ["--progress", "--fix"], cwd=fixed, capture_output=True, text=True)
    assert "cslint: indexing and analysing 0/" in asked.stderr
    assert "cslint: fixing (pass 1)" in asked.stderr
    assert "\r" not in asked.stderr
