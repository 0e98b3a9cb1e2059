"""What `cslint runtime` costs on real training steps, next to running the same step eagerly.

    pip install -e '.[test]'
    python bench/runtime.py                                  # the five families, tiny and small, each backend
    python bench/runtime.py --families llama --sizes small --backends lazy

The steps: transformers bert, gpt2, t5, llama and mixtral (random weights, no download), forward + loss +
backward + AdamW, two batches. `tiny` is the test configuration (tests/runtime/targets/real_steps.py,
width 32, one layer, 2 x 8 tokens); `small` is bench/runtime_steps.py (width 256, two layers, 4 x 128
tokens). Every measurement is a fresh process with one intra-op thread: on a shared machine PyTorch's
thread pool spins while it waits, and that spinning, not the step, was most of the CPU time of a tiny
eager step. Imports and model building are timed apart and left out. Times are CPU seconds of the
process (wall seconds depend on what else the machine runs; the load average is printed).

Columns: "eager x3" runs the step three times on the CPU in plain PyTorch (the issue's goal: each
backend's check takes at most 3x that); "lazy floor" runs the step once on the lazy device with no
checker at all (what lazy tensors cost by themselves; "-" when the TorchScript lazy backend cannot run the
step alone); "lazy" and "dynamo" are the checker's backends. Prints one table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"tiny": ROOT / "tests" / "runtime" / "targets" / "real_steps.py",
           "small": ROOT / "bench" / "runtime_steps.py"}
FAMILIES = ("bert", "gpt2", "t5", "llama", "mixtral")
BACKENDS = ("lazy", "dynamo")

MEASURE = r"""
import json, resource, sys, time
started = time.perf_counter()
import torch, transformers
torch.set_num_threads(1)
from cslint.runtime.targets import build, load_factory
from cslint.runtime.findings import RuntimeReport
target, backend = sys.argv[1], sys.argv[2]
factory = load_factory(target)
imported = time.perf_counter()
report = RuntimeReport(target)
if backend == "eager":
    torch.manual_seed(0)
    step = build(factory, "cpu")
    begin, cpu = time.perf_counter(), time.process_time()
    for _ in range(3):
        for batch in step.batches:
            step.fn(*batch)
elif backend == "floor":
    from cslint.runtime.lazy_backend import init
    init()
    torch.manual_seed(0)
    step = build(factory, "lazy")
    torch._lazy.mark_step()
    begin, cpu = time.perf_counter(), time.process_time()
    for batch in step.batches:
        step.fn(*batch)
        torch._lazy.mark_step()
elif backend == "lazy":
    from cslint.runtime.lazy_backend import init, run_lazy
    from cslint.runtime.stability import compare_steps
    init()
    torch.manual_seed(0)
    step = build(factory, "lazy")
    begin, cpu = time.perf_counter(), time.process_time()
    compare_steps(run_lazy(step, report), report)
else:
    from cslint.runtime.dynamo_backend import run_dynamo
    torch.manual_seed(0)
    step = build(factory, "cpu")
    begin, cpu = time.perf_counter(), time.process_time()
    run_dynamo(step, report)
print(json.dumps({"imports": imported - started, "seconds": time.process_time() - cpu,
                  "wall": time.perf_counter() - begin, "findings": len(report.findings),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(target: str, backend: str) -> dict[str, float] | None:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", MEASURE, target, backend], capture_output=True, text=True,
                          cwd=ROOT, env=env, check=False)
    if done.returncode != 0:
        if backend == "floor":
            return None  # the lazy backend alone cannot run this step (the checker works around it)
        raise SystemExit(f"{target}/{backend} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--sizes", nargs="+", choices=tuple(TARGETS), default=list(TARGETS))
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    args = parser.parse_args()
    print(f"load average at start: {_load()}")
    header = f"{'family':<8} {'size':<6} {'eager x3':>8} {'floor':>6}"
    for backend in args.backends:
        header += f" {backend:>7} {'ratio':>6} {'MB':>5}"
    print(header + " (CPU seconds; ratio = backend / eager x3)")
    for size in args.sizes:
        for family in args.families:
            target = f"{TARGETS[size]}:{family}"
            eager = measure(target, "eager")
            assert eager is not None
            floor = measure(target, "floor")
            row = f"{family:<8} {size:<6} {eager['seconds']:>8.2f} " + \
                (f"{floor['seconds']:>6.2f}" if floor else f"{'-':>6}")
            for backend in args.backends:
                result = measure(target, backend)
                assert result is not None
                row += f" {result['seconds']:>7.2f} {result['seconds'] / eager['seconds']:>6.1f} " \
                       f"{result['peak_mb']:>5.0f}"
            print(row, flush=True)
    print(f"load average at end: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
