"""A subprocess run with a deadline and a cap on the memory it may map, reporting its time and peak.

A run that hangs or reads without end fails the test instead of taking the machine: the deadline kills
it, and the address-space cap makes a runaway allocation fail inside it rather than swap. The peak is the
resident maximum of the process and the children it waited for (wait4), taken by a small launcher: a
process forked from pytest itself starts with pytest's resident size as its high-water mark, which exec
keeps, so measured directly the peak would be the test session's size, not the run's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

LAUNCHER = """\
import os, resource, subprocess, sys
peak_file, limit, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
process = subprocess.Popen(command)
_, status, usage = os.wait4(process.pid, 0)
with open(peak_file, "w") as out:
    out.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


@dataclass
class BoundedRun:
    result: subprocess.CompletedProcess[str]
    seconds: float
    peak_mb: float


def run_bounded(command: list[str], cwd: Path, env: dict[str, str], *, timeout: float = 60,
                address_space: int = 2 << 30) -> BoundedRun:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory() as scratch:
        peak_file = os.path.join(scratch, "peak")
        launcher = [sys.executable, "-c", LAUNCHER, peak_file, str(address_space), *command]
        started = time.perf_counter()
        process = subprocess.Popen(launcher, cwd=cwd, stdout=out, stderr=err, env=env, start_new_session=True)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            pytest.fail(f"{command} did not finish within {timeout} s")
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(command, process.returncode, out.read().decode(), err.read().decode())
        with open(peak_file) as peak:
            peak_kb = int(peak.read())
    return BoundedRun(result, seconds, peak_kb / 1024)
