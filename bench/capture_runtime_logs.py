"""Capture the runtime logs tests/fixtures/runtime_logs/ holds, from real steps (run by hand, not in the suite).

    python bench/capture_runtime_logs.py OUT_DIR
    python bench/capture_runtime_logs.py --trim OUT_DIR tests/fixtures/runtime_logs

For each step it runs a child process:
- dynamo: `torch.compile(step, backend="eager")` (dynamo's own logs; eager skips inductor's codegen) with
  TORCH_LOGS=graph_breaks,recompiles,recompiles_verbose, and TORCH_TRACE for three of the `families` steps;
- lazy: the step on torch's lazy-tensor device (what cslint's lazy backend traces), printing
  `torch._lazy.metrics.metrics_report()`: the lazy-tensor-core report torch_xla's `metrics_report()` prints
  (torch_xla itself cannot be installed here).
- cslint's lazy backend: `cslint runtime STEP --backend lazy --output-format json`, the report it writes (it
  keeps no log of its own; gpt2 and mixtral do not run on torch's lazy device without it: a KV-cache
  `torch.cat` with an empty list fails there, so their metrics report is empty).
The five Hugging Face families are tests/runtime/targets/real_steps.py's tiny training steps; the
`families` models are tests/runtime/targets/families.py's, each with one construct that breaks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig

HF = ("bert", "gpt2", "t5", "llama", "mixtral")
FAMILIES = ("control_flow", "host_transfer", "scalar_argument", "dynamic_shape", "python_counter")

_DYNAMO = """
import sys, torch
sys.path.insert(0, {root!r})
from tests.runtime.targets import {module} as steps
made = getattr(steps, {name!r})("cpu")
if isinstance(made, tuple) and isinstance(made[0], torch.nn.Module):
    model, batches = made
    step = lambda x: model(x)
    batches = [(b,) for b in batches]
else:
    step, batches = made
compiled = torch.compile(step, backend="eager")
for batch in batches:
    compiled(*batch)
"""

_LAZY = """
import sys, torch, torch._lazy, torch._lazy.ts_backend, torch._lazy.metrics
torch._lazy.ts_backend.init()
sys.path.insert(0, {root!r})
from tests.runtime.targets import {module} as steps
made = getattr(steps, {name!r})("lazy")
if isinstance(made, tuple) and isinstance(made[0], torch.nn.Module):
    model, batches = made
    step = lambda x: model(x)
    batches = [(b,) for b in batches]
else:
    step, batches = made
for batch in batches:
    step(*batch)
    torch._lazy.mark_step()
print(torch._lazy.metrics.metrics_report())
"""


def main(out: str) -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(out, exist_ok=True)
    steps = [("real_steps", name) for name in HF] + [("families", name) for name in FAMILIES]
    for index, (module, name) in enumerate(steps):
        env = dict(os.environ, TORCH_LOGS="graph_breaks,recompiles,recompiles_verbose")
        if name in ("control_flow", "host_transfer", "python_counter"):
            env["TORCH_TRACE"] = os.path.join(out, f"{name}.trace")
        with open(os.path.join(out, f"{name}.dynamo.log"), "w") as log:
            subprocess.run([sys.executable, "-c", _DYNAMO.format(root=root, module=module, name=name)],
                           stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root, check=False)
        with open(os.path.join(out, f"{name}.lazy-metrics.txt"), "w") as log:
            subprocess.run([sys.executable, "-c", _LAZY.format(root=root, module=module, name=name)],
                           stdout=log, stderr=subprocess.DEVNULL, cwd=root, check=False)
        with open(os.path.join(out, f"{name}.lazy-report.json"), "w") as log:
            target = os.path.join(root, "tests", "runtime", "targets", f"{module}.py") + f":{name}"
            subprocess.run([sys.executable, "-m", "cslint", "runtime", target, "--backend", "lazy", "--output-format",
                            "json", "--no-progress", "--allow-incomplete"], stdout=log, stderr=subprocess.DEVNULL,
                           cwd=root, check=False)
        print(f"captured {name}", file=sys.stderr)


_DYNAMO_LINE = re.compile(r"^[VIWEDC]\d{4} [\d:.]+\s+\d+ \S+:\d+\] (?:\[[^\]]*\] )?\[__(graph_breaks|recompiles\w*)\]")
_RECORD = re.compile(r"^[VIWEDC]\d{4} [\d:.]+\s+\d+ \S+:\d+\] (\{.*\})\s*$")


CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The shipped logs name paths that are no file on any machine, as a log from another checkout does: a
# logged path that is a file here is that file only (runtime_logs), so a real one would tie the tests to
# the machine they were captured on.
NAMED_AS = {CHECKOUT + "/": "/home/user/cslint/", sysconfig.get_paths()["purelib"] + "/":
            "/home/user/venv/lib/python3.11/site-packages/"}


def _anonymised(lines: list[str]) -> list[str]:
    for real, named in NAMED_AS.items():
        lines = [line.replace(real, named) for line in lines]
    return lines


def trim(source: str, out: str) -> None:
    """Keep what --runtime-log reads, unchanged: dynamo's graph-break and recompile lines of a TORCH_LOGS
    capture (not the program's other output); of a trace, the torch version, the graph-break records (their
    payload up to dynamo's own traceback) and the compilation records of recompiles."""
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        if name.endswith(".trace"):
            os.makedirs(os.path.join(out, name), exist_ok=True)
            for trace in os.listdir(path):
                with open(os.path.join(path, trace)) as handle, open(os.path.join(out, name, trace), "w") as kept:
                    kept.writelines(_anonymised(_trimmed_trace(handle.read().splitlines(keepends=True))))
        elif os.path.getsize(path) and name.endswith((".log", ".txt", ".json")):
            with open(path) as handle:
                lines = handle.readlines()
            if name.endswith(".log"):
                lines = _trimmed_log([line for line in lines if _DYNAMO_LINE.match(line)])
            with open(os.path.join(out, name), "w") as kept:
                kept.writelines(_anonymised(lines))


def _trimmed_log(lines: list[str], repeats: int = 3) -> list[str]:
    """At most `repeats` messages with the same first line (mixtral's expert loop logs one break 14 times)."""
    kept: list[str] = []
    seen: dict[str, int] = {}
    keeping = True
    for line in lines:
        text = re.sub(r"^.*?\[__\w+\] ?", "", line)
        if text.startswith(("Graph break", "Recompiling function")):
            first = text.replace("(user stack suppressed due to duplicate graph break) ", "")
            seen[first] = seen.get(first, 0) + 1
            keeping = seen[first] <= repeats
        if keeping:
            kept.append(line)
    return kept


_METRICS_READ = ("compile_id", "co_name", "co_filename", "co_firstlineno", "recompile_reason")


def _trimmed_trace(lines: list[str]) -> list[str]:
    kept: list[str] = []
    keeping = False
    for line in lines:
        if line.startswith("\t"):
            if keeping and line.startswith("\tTraceback (most recent call last)"):
                keeping = False
            if keeping:
                kept.append(line)
            continue
        record = _RECORD.match(line)
        data = json.loads(record[1]) if record else {}
        artifact = data.get("artifact", {}).get("name") if isinstance(data.get("artifact"), dict) else None
        metrics = data.get("compilation_metrics")
        keeping = artifact in ("torch_version", "dynamo_graph_break_reason") or (
            isinstance(metrics, dict) and bool(metrics.get("recompile_reason")))
        if keeping and isinstance(metrics, dict):  # its dynamo_config alone is 30 KB
            prefix = line[:record.start(1)]
            line = prefix + json.dumps({"compilation_metrics": {k: metrics.get(k) for k in _METRICS_READ}}) + "\n"
        if keeping:
            kept.append(line)
    return kept


if __name__ == "__main__":
    if sys.argv[1:2] == ["--trim"]:
        trim(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "runtime-logs")
