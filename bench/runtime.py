"""What `cslint runtime` costs on real training steps, next to running the same step eagerly.

    pip install -e '.[test]'
    python bench/runtime.py                                  # the five families, tiny and small, each backend
    python bench/runtime.py --families llama --sizes small --backends lazy
    python bench/runtime.py --compare --sizes tiny --backends lazy fake   # complete / sites / time per backend
    python bench/runtime.py --model-steps bert llama --backends lazy fake --no-floor   # bench/model_steps.py

The steps: transformers bert, gpt2, t5, llama and mixtral (random weights, no download), forward + loss +
backward + AdamW, two batches. `tiny` is the test configuration (tests/runtime/targets/real_steps.py,
width 32, one layer, 2 x 8 tokens); `small` is bench/runtime_steps.py (width 256, two layers, 4 x 128
tokens). Every measurement is a fresh process with one intra-op thread: on a shared machine PyTorch's
thread pool spins while it waits, and that spinning, not the step, was most of the CPU time of a tiny
eager step. Imports and model building are timed apart and left out (for dynamo, also the modules it
imports the first time it traces an optimizer). Times are CPU seconds of the process (wall seconds depend
on what else the machine runs; the load average is printed).

Columns: "eager x3" runs the step three times on the CPU in plain PyTorch (the issue's goal: each
backend's check takes at most 3x that); "lazy floor" runs the steps on the lazy device with no checker at
all (what lazy tensors cost by themselves; "-" when the TorchScript lazy backend cannot run the step
alone); "dynamo floor" runs them under `torch.compile` with the checker's settings and capture-only
backend but none of its hooks or logs (what dynamo costs by itself); "lazy" and "dynamo" are the checker's
backends. "counts": for lazy, the graphs compiled and run (each CPU fallback or value read runs the
pending graph); for dynamo, the frames compiled, the graphs captured and the restarts (dynamo traces a
frame again from its start after each graph break in it); the floor's in brackets. Prints one table;
nothing is asserted.

`--compare` (and `--model-steps`, on the factories of bench/model_steps.py) prints instead, per step and
backend: complete or stopped (and why), the sites found (code file:line), CPU seconds, the bare backend's
("fake floor": fake tensors with real values, reads answered, nothing recorded; the build of the model
under fake tensors is timed apart), and the sites only one backend found (docs/runtime.md).
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
BACKENDS = ("lazy", "fake", "dynamo")
MODEL_STEPS = ROOT / "bench" / "model_steps.py"

MEASURE = r"""
import json, os, resource, sys, time
started = time.perf_counter()
import torch, transformers
torch.set_num_threads(1)
from cslint.runtime.step_factory import build, load_factory
from cslint.runtime.findings import RuntimeReport
target, backend = sys.argv[1], sys.argv[2]
if backend.startswith("dynamo"):
    # modules dynamo imports the first time it traces an optimizer (1.5 s): imports, left out as the goal says
    import torch._dynamo, torch._inductor.cudagraph_trees, functorch.compile, torch.export._trace
    from torch._dynamo.utils import compilation_time_metrics, counters
    restarts, reset = [0], torch._dynamo.reset

    def counting_reset():  # dynamo's reset clears its timings, which count the restarts
        restarts.append(sum(len(times) for name, times in compilation_time_metrics.items()
                            if name.startswith("compile_attempt_") and name != "compile_attempt_0"))
        reset()
    torch._dynamo.reset = counting_reset
factory = load_factory(target)
imported = time.perf_counter()


def stopped_by(exc):
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"


report = RuntimeReport(target)
counts = {}
if backend == "eager":
    torch.manual_seed(0)
    step = build(factory, "cpu")
    begin, cpu = time.perf_counter(), time.process_time()
    for _ in range(3):
        for batch in step.batches:
            step.fn(*batch)
elif backend in ("fake-floor", "fake"):
    from cslint.runtime.fake_backend import FakeWatcher, build_fake, fake_mode, trace_fake
    from cslint.runtime.stability import compare_steps
    with fake_mode() as mode:
        torch.manual_seed(0)
        begin, cpu = time.perf_counter(), time.process_time()
        try:
            step = build_fake(factory, mode, report)  # the model built under fake tensors: timed apart
            counts = {"build": round(time.process_time() - cpu, 2)}
            begin, cpu = time.perf_counter(), time.process_time()
            if backend == "fake":
                compare_steps(trace_fake(step, mode, report), report)
            else:  # fake tensors with real values, reads answered from them, nothing recorded
                with mode, FakeWatcher(report, mode, recording=False):
                    for batch in step.batches:
                        step.fn(*batch)
        except Exception as exc:
            counts["stopped"] = stopped_by(exc)
elif backend in ("lazy-floor", "lazy"):
    import torch._lazy.metrics
    from cslint.runtime.lazy_backend import init, run_lazy
    from cslint.runtime.stability import compare_steps
    init()
    torch.manual_seed(0)
    step = build(factory, "lazy")
    torch._lazy.mark_step()
    torch._lazy.metrics.reset()
    begin, cpu = time.perf_counter(), time.process_time()
    if backend == "lazy":
        try:
            compare_steps(run_lazy(step, report), report)
        except Exception as exc:
            counts = {"stopped": stopped_by(exc)}
    else:
        for batch in step.batches:
            step.fn(*batch)
            torch._lazy.mark_step()
    counts = counts or {"graphs compiled": torch._lazy.metrics.counter_value("UncachedCompile") or 0,
              "graphs run": (torch._lazy.metrics.counter_value("UncachedCompile") or 0)
              + (torch._lazy.metrics.counter_value("CachedCompile") or 0)}
else:
    torch.manual_seed(0)
    step = build(factory, "cpu")
    begin, cpu = time.perf_counter(), time.process_time()
    if backend == "dynamo":
        from cslint.runtime.dynamo_backend import run_dynamo
        run_dynamo(step, report)
    else:  # dynamo alone: the checker's settings and capture-only backend, none of its hooks or logs
        def capture_only(gm, example_inputs):
            return gm.forward
        with torch._dynamo.config.patch(capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False,
                                        suppress_errors=False):
            compiled = torch.compile(step.fn, backend=capture_only, fullgraph=False, dynamic=False)
            for batch in step.batches:
                compiled(*batch)
        torch._dynamo.reset()
    counts = {"frames": counters["frames"]["total"], "graphs": counters["stats"]["unique_graphs"],
              "restarts": max(restarts)}
sites = sorted({f"{f.code} {os.path.basename(f.path)}:{f.line}" for f in report.findings})
print(json.dumps({"imports": imported - started, "seconds": time.process_time() - cpu,
                  "wall": time.perf_counter() - begin, "findings": len(report.findings), "counts": counts,
                  "sites": sites,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(target: str, backend: str) -> dict[str, float] | None:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", MEASURE, target, backend], capture_output=True, text=True,
                          cwd=ROOT, env=env, check=False)
    if done.returncode != 0:
        if backend.endswith("-floor") or "--compare" in sys.argv or "--model-steps" in sys.argv:
            return None  # the lazy backend alone cannot run this step (the checker works around it)
        raise SystemExit(f"{target}/{backend} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _status(result: dict[str, object]) -> str:
    stopped = result["counts"].get("stopped") if isinstance(result["counts"], dict) else None
    return f"stopped ({stopped})" if stopped else "complete"


def compare(targets: list[str], backends: list[str], floors: bool = True) -> None:
    """Per target and backend: complete or not, the sites found (code file:line), the checker's CPU seconds
    and its bare backend's (the floor), and the sites one backend found that another did not."""
    print(f"{'target':<28} {'backend':<7} {'status':<9} {'sites':>5} {'seconds':>7} {'floor':>6} {'x floor':>7}"
          " (CPU seconds of the run)")
    for target in targets:
        found: dict[str, set[str]] = {}
        for backend in backends:
            result = measure(target, backend)
            floor = measure(target, f"{backend}-floor") if floors and backend != "dynamo" else None
            if result is None:
                print(f"{target.rpartition('/')[2]:<28} {backend:<7} crashed (the process died)", flush=True)
                found[backend] = set()
                continue
            status = _status(result)
            found[backend] = set(result["sites"])  # type: ignore[arg-type]
            base = floor["seconds"] if floor is not None and _status(floor) == "complete" else None
            build = result["counts"].get("build") if isinstance(result["counts"], dict) else None
            print(f"{target.rpartition('/')[2]:<28} {backend:<7} {status.split(' ')[0]:<9} {len(found[backend]):>5} "
                  f"{result['seconds']:>7.2f} " + (f"{base:>6.2f} {result['seconds'] / base:>7.2f}" if base
                                                   else f"{'-':>6} {'-':>7}")
                  + (f" (+ {build:.2f} building under fake tensors)" if build is not None else ""), flush=True)
            if status != "complete":
                print(f"    {backend}: {status}")
        for backend in backends:
            others = set().union(*(found[b] for b in backends if b != backend))
            only = sorted(found[backend] - others)
            if only:
                print(f"    only {backend}: {', '.join(only)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--sizes", nargs="+", choices=tuple(TARGETS), default=list(TARGETS))
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=["lazy", "dynamo"])
    parser.add_argument("--compare", action="store_true",
                        help="complete / sites / seconds per backend instead of the cost table")
    parser.add_argument("--no-floor", action="store_true", help="with --compare: do not time the bare backends")
    parser.add_argument("--model-steps", nargs="+", metavar="NAME",
                        help="compare on these factories of bench/model_steps.py (implies --compare)")
    args = parser.parse_args()
    print(f"load average at start: {_load()}")
    if args.compare or args.model_steps:
        targets = [f"{MODEL_STEPS}:{name}" for name in args.model_steps] if args.model_steps else \
            [f"{TARGETS[size]}:{family}" for size in args.sizes for family in args.families]
        compare(targets, args.backends, floors=not args.no_floor)
        print(f"load average at end: {_load()}")
        return 0
    header = f"{'family':<8} {'size':<6} {'eager x3':>8}"
    for backend in args.backends:
        header += f" {backend + ' floor':>12} {backend:>7} {'ratio':>6} {'MB':>5} {'counts':<34}"
    print(header + " (CPU seconds; ratio = backend / eager x3)")
    for size in args.sizes:
        for family in args.families:
            target = f"{TARGETS[size]}:{family}"
            eager = measure(target, "eager")
            assert eager is not None
            row = f"{family:<8} {size:<6} {eager['seconds']:>8.2f}"
            for backend in args.backends:
                floor = measure(target, f"{backend}-floor")
                result = measure(target, backend)
                assert result is not None
                counts = ", ".join(f"{n} {v}" for n, v in result["counts"].items())
                if floor is not None:
                    counts += " (floor " + ", ".join(str(v) for v in floor["counts"].values()) + ")"
                row += (f" {floor['seconds']:>12.2f}" if floor else f" {'-':>12}") + \
                    f" {result['seconds']:>7.2f} {result['seconds'] / eager['seconds']:>6.1f} " \
                    f"{result['peak_mb']:>5.0f} {counts:<34}"
            print(row, flush=True)
    print(f"load average at end: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
