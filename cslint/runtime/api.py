"""`check(target)`: run a target in a child process with a timeout and a memory limit; return its RuntimeReport.

The child writes its report as it goes (after every new finding and every backend's change of status), so
a run that times out or dies still returns what it found, with the unfinished backends marked.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
from typing import IO

from cslint.support.install_hint import install_hint
from cslint.runtime.findings import COMPLETE, RUNNING, TIMED_OUT, RuntimeReport, stopped

INSTALL_HINT = ("the runtime checker needs PyTorch: install a CPU build of torch first (see docs/install.md), then "
                f"the runtime extra, {install_hint('runtime')}")
DEFAULT_TIMEOUT = 300.0
DEFAULT_MEMORY_LIMIT_MB = 8192  # address space of the child; 0 for none
OUTPUT_TAIL_BYTES = 64 * 1024  # how much of the step's own stdout/stderr is kept (for error messages)
PROGRESS_PREFIX = b"cslint runtime: "


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


class _Tail(threading.Thread):
    """Drain a pipe, keeping only its last `limit` bytes (a step may print without bound); with `echo`,
    the worker's progress lines are passed on to our stderr as they come."""

    def __init__(self, pipe: IO[bytes], echo: bool = False, limit: int = OUTPUT_TAIL_BYTES) -> None:
        super().__init__(daemon=True)
        self.pipe, self.echo, self.limit, self.data = pipe, echo, limit, b""

    def run(self) -> None:
        pending = b""
        while chunk := self.pipe.read1(65536):  # type: ignore[attr-defined]
            self.data = (self.data + chunk)[-self.limit:]
            if self.echo:
                *lines, pending = (pending + chunk).split(b"\n")
                pending = pending[-self.limit:]
                for line in lines:
                    if line.startswith(PROGRESS_PREFIX):
                        sys.stderr.write(line.decode("utf-8", "replace") + "\n")
                        sys.stderr.flush()

    def text(self) -> str:
        self.join(timeout=5)
        lines = self.data.decode("utf-8", "replace").splitlines()
        return "\n".join(line for line in lines if not line.startswith(PROGRESS_PREFIX.decode()))


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """The worker leads its own process group: processes the step started go with it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()


def check(target: str, backends: tuple[str, ...] = ("lazy", "dynamo"), *, timeout: float = DEFAULT_TIMEOUT,
          outputs: bool = False, isolate: bool = True, progress: bool = False, cwd: str | None = None,
          memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB,
          compiled_backends: tuple[str, ...] | None = None) -> RuntimeReport:
    """Run `target` (`file.py:factory` or `module:factory`) under the runtime backends, "lazy", "fake"
    (fake tensors, docs/runtime.md) and "dynamo" (a torch.compile step under `compiled_backends` instead,
    when given).

    `isolate=False` runs in this process (faster; for tests of trusted targets only: no timeout, no limit).
    """
    if not isolate:
        from cslint.runtime.worker import execute

        return execute(target, backends, outputs, progress, compiled_backends=compiled_backends)
    from cslint.support.scratch import scratch_directory

    with scratch_directory("cslint-runtime-") as scratch:
        result_path = os.path.join(scratch, "report.json")
        options = {"target": target, "backends": list(backends), "outputs": outputs, "progress": progress,
                   "result_path": result_path, "memory_limit_mb": memory_limit_mb,
                   "compiled_backends": list(compiled_backends) if compiled_backends is not None else None}
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        process = subprocess.Popen([sys.executable, "-m", "cslint.runtime.worker", json.dumps(options)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   cwd=cwd, env=env, start_new_session=True)
        assert process.stdout is not None and process.stderr is not None
        tails = [_Tail(process.stdout), _Tail(process.stderr, echo=progress)]
        timed_out = False
        try:  # from here on, an ending signal (scratch.Ended) still takes the worker's group with it
            for tail in tails:
                tail.start()
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(process)  # also after a normal exit: the step's own children must not outlive it
        stderr = tails[-1].text()
        report, finished = _read(result_path, target)
    if timed_out:
        report.error = report.error or f"the target did not finish within {timeout:g} s (timeout)"
        for backend in backends:
            if report.status.get(backend, RUNNING) == RUNNING:
                report.status[backend] = TIMED_OUT
        return report
    if not finished:
        why = _death(process.returncode, memory_limit_mb)
        report.error = report.error or f"the checker process {why} before finishing its report" + (
            ":\n" + "\n".join(stderr.strip().splitlines()[-15:]) if stderr.strip() else "")
        for backend in backends:
            if report.status.get(backend, RUNNING) == RUNNING:
                report.status[backend] = stopped(f"the checker process {why}")
    return report


def _death(returncode: int, memory_limit_mb: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}" + (f" (memory limit {memory_limit_mb} MB?)" if memory_limit_mb else "")
    return f"exited with code {returncode}"


def _read(path: str, target: str) -> tuple[RuntimeReport, bool]:
    """The report the child wrote last, and whether the child said it was its final one."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return RuntimeReport(target), False
    report = RuntimeReport.from_json(data)
    report.outputs = data.get("outputs", [])
    return report, bool(data.get("finished"))


__all__ = ["COMPLETE", "DEFAULT_MEMORY_LIMIT_MB", "DEFAULT_TIMEOUT", "INSTALL_HINT", "check", "torch_available"]
