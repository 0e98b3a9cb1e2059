"""`check(target)`: run a target in a child process with a timeout and return its RuntimeReport."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from cslint.runtime.findings import RuntimeReport

INSTALL_HINT = "the runtime checker needs PyTorch: pip install 'cslint[runtime]' (or pip install torch)"
DEFAULT_TIMEOUT = 300.0


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def check(target: str, backends: tuple[str, ...] = ("lazy", "dynamo"), *, timeout: float = DEFAULT_TIMEOUT,
          outputs: bool = False, isolate: bool = True, progress: bool = False, cwd: str | None = None) -> RuntimeReport:
    """Run `target` (`file.py:factory` or `module:factory`) under the runtime backends.

    `isolate=False` runs in this process (faster; for tests of trusted targets only).
    """
    if not isolate:
        from cslint.runtime.worker import execute

        return execute(target, backends, outputs, progress)
    with tempfile.TemporaryDirectory(prefix="cslint-runtime-") as scratch:
        result_path = os.path.join(scratch, "report.json")
        options = {"target": target, "backends": list(backends), "outputs": outputs, "progress": progress,
                   "result_path": result_path}
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            done = subprocess.run([sys.executable, "-m", "cslint.runtime.worker", json.dumps(options)],
                                  stdout=subprocess.PIPE, stderr=None if progress else subprocess.PIPE,
                                  timeout=timeout, cwd=cwd, env=env, text=True, check=False)
        except subprocess.TimeoutExpired:
            return RuntimeReport(target, error=f"the target did not finish within {timeout:g} s (timeout)")
        if not os.path.exists(result_path):
            tail = "\n".join((done.stderr or "").strip().splitlines()[-15:])
            return RuntimeReport(target, error=f"the checker process exited with code {done.returncode} "
                                               f"without a report:\n{tail}")
        with open(result_path, encoding="utf-8") as handle:
            data = json.load(handle)
    report = RuntimeReport.from_json(data)
    report.outputs = data.get("outputs", [])
    return report
