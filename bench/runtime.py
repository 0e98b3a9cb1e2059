"""What `cslint runtime` costs on real training steps, next to running the same step eagerly.

    pip install -e '.[test]'
    python bench/runtime.py                      # the five model families, each backend
    python bench/runtime.py --families llama     # one of them

The steps are tests/runtime/targets/real_steps.py: transformers bert, gpt2, t5, llama and mixtral from
tiny configs (random weights, no download), forward + loss + backward + AdamW, two batches. Every
measurement is a fresh process: imports and model building are timed apart and left out of the
comparison. "eager x3" is the same step run three times on the CPU in plain PyTorch; the goal of the
runtime issue is that each backend's check takes at most 3x that. Prints one table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests" / "runtime" / "targets" / "real_steps.py"
FAMILIES = ("bert", "gpt2", "t5", "llama", "mixtral")

MEASURE = r"""
import json, resource, sys, time
started = time.perf_counter()
import torch, transformers
from cslint.runtime.targets import build, load_factory
from cslint.runtime.findings import RuntimeReport
target, backend = sys.argv[1], sys.argv[2]
factory = load_factory(target)
imported = time.perf_counter()
report = RuntimeReport(target)
if backend == "eager":
    torch.manual_seed(0)
    step = build(factory, "cpu")
    begin = time.perf_counter()
    for _ in range(3):
        for batch in step.batches:
            step.fn(*batch)
elif backend == "lazy":
    from cslint.runtime.lazy_backend import init, run_lazy
    from cslint.runtime.stability import compare_steps
    init()
    torch.manual_seed(0)
    step = build(factory, "lazy")
    begin = time.perf_counter()
    compare_steps(run_lazy(step, report), report)
else:
    from cslint.runtime.dynamo_backend import run_dynamo
    torch.manual_seed(0)
    step = build(factory, "cpu")
    begin = time.perf_counter()
    run_dynamo(step, report)
done = time.perf_counter()
print(json.dumps({"imports": imported - started, "seconds": done - begin, "findings": len(report.findings),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(family: str, backend: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", MEASURE, f"{TARGET}:{family}", backend], capture_output=True,
                          text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{family}/{backend} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    args = parser.parse_args()
    print(f"{'family':<8} {'eager x3 s':>10} {'lazy s':>8} {'ratio':>6} {'dynamo s':>9} {'ratio':>6} "
          f"{'lazy MB':>8} {'dynamo MB':>9} {'imports s':>9}")
    for family in args.families:
        eager, lazy, dynamo = (measure(family, backend) for backend in ("eager", "lazy", "dynamo"))
        base = eager["seconds"]
        print(f"{family:<8} {base:>10.2f} {lazy['seconds']:>8.2f} {lazy['seconds'] / base:>6.1f} "
              f"{dynamo['seconds']:>9.2f} {dynamo['seconds'] / base:>6.1f} {lazy['peak_mb']:>8.0f} "
              f"{dynamo['peak_mb']:>9.0f} {lazy['imports']:>9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
