"""A subprocess run with a deadline and a cap on the memory it may map, reporting its time and peak.

A run that hangs or reads without end fails the test instead of taking the machine: the deadline kills
it, and the address-space cap makes a runaway allocation fail inside it rather than swap. The peak is the
resident maximum of the process and the children it waited for (wait4).
"""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class BoundedRun:
    result: subprocess.CompletedProcess[str]
    seconds: float
    peak_mb: float


def run_bounded(command: list[str], cwd: Path, env: dict[str, str], *, timeout: float = 60,
                address_space: int = 2 << 30) -> BoundedRun:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, env=env, preexec_fn=cap)
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > started + timeout:
                process.kill()
                os.wait4(process.pid, 0)
                pytest.fail(f"{command} did not finish within {timeout} s")
            time.sleep(0.05)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(command, os.waitstatus_to_exitcode(status), out.read().decode(),
                                             err.read().decode())
    return BoundedRun(result, seconds, usage.ru_maxrss / 1024)
