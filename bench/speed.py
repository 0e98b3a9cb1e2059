"""How fast cslint is on a large tree, next to libcst parsing alone and torchfix, in one run.

    pip install -e '.[test]'
    python bench/speed.py --corpus path/to/transformers/models             # cslint and libcst only
    python bench/speed.py --corpus path/to/transformers/models --torchfix /path/to/venv/bin/torchfix

torchfix pins an older libcst, so install it in its own virtualenv (`python -m venv /tmp/tfx &&
/tmp/tfx/bin/pip install torchfix`) and pass its executable. Without `--corpus` the corpus is the
installed torch package's own source. The corpus is copied to a temporary directory first (the
"one file edited" row edits the copy). Every measurement is a fresh process started from the shell,
like a user's run: wall-clock seconds and the peak resident memory of the largest process. The
pre-commit hook is timed as shipped (`--server`: this run starts its own server, in the temporary
directory, and stops it) and without the server. Prints one table and whether each goal of the speed
issue is met; nothing is asserted. `--cold-only` measures the parse floor and the cold run alone (the
installed torch package: `python bench/speed.py --cold-only`); each row also records the load average
when it started, as the machine may be shared.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARSE_ONLY = r"""
import sys
from pathlib import Path
import libcst as cst
for path in sorted(Path(sys.argv[1]).rglob("*.py")):
    try:
        cst.parse_module(path.read_bytes())
    except Exception:
        pass
"""

# Runs one command and reports the peak RSS of its largest process (the children's maximum).
MEASURE = r"""
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak, "returncode": done.returncode,
                  "stderr": done.stderr[-2000:]}))
"""

GOALS = {
    "cold vs torchfix": "cslint cold at least 10x faster than torchfix",
    "cold vs parse": "cslint cold within 1.5x of libcst parsing the corpus",
    "warm": "warm re-run, nothing changed: under 2 s",
    "edit": "warm re-run after editing one file: under 3 s",
    "one": "one edited file, as the pre-commit hook runs it: under 0.3 s",
    "memory": "peak memory under 300 MB per process",
    "cold": "cslint cold under 60 s",
    "cold vs parse, 2x": "cslint cold within 2x of libcst parsing the corpus",
    "memory, 500 MB": "peak memory under 500 MB per process",
}


def measure(argv: list[str], cwd: Path | None = None) -> dict[str, float]:
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, check=True,
                         cwd=cwd)
    return {**json.loads(out.stdout), "load": load}


def cslint(*args: str) -> list[str]:
    return [sys.executable, "-m", "cslint", "check", *args, "-q", "--exit-zero", "-o", os.devnull]


def torch_sources() -> Path:
    spec = importlib.util.find_spec("torch")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        sys.exit("no --corpus given and torch is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def package_path(source: Path) -> Path:
    """`source` relative to the directory above its top package (`transformers/models` for an installed
    transformers' models): the copy keeps it, so module names, relative imports and names cslint knows
    (`transformers.modeling_utils.PreTrainedModel`) resolve as they do where the package is installed."""
    top = source
    while (top.parent / "__init__.py").is_file():
        top = top.parent
    return source.relative_to(top.parent)


def copy_corpus(source: Path, limit: int | None, root: Path) -> tuple[Path, list[Path]]:
    """The files under `source` copied to the same package path under `root`; the packages above it get
    their `__init__.py` only (the linted tree is `source`'s files alone, as on the original machine)."""
    target = root / package_path(source)
    files = sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.parts)
    if limit:
        files = files[:limit]
    for path in files:
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)
    for package in target.relative_to(root).parents:
        if package != Path(".") and (source.parents[len(package.parts) - 1] / "__init__.py").is_file():
            (root / package / "__init__.py").touch()
    return target, [target / p.relative_to(source) for p in files]


def _median_model_file(files: list[Path]) -> Path | None:
    """A typical file an ML engineer edits: the median-sized one among those defining a forward."""
    models = sorted((p for p in files if "def forward" in p.read_text(encoding="utf-8", errors="replace")),
                    key=lambda p: p.stat().st_size)
    return models[len(models) // 2] if models else None


def _after_edits(path: Path, argv: list[str], edits: int = 3) -> dict[str, float]:
    """The median run of `argv` after each of `edits` edits of `path`."""
    runs = []
    for _ in range(edits):
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"\n_cslint_bench_edit_{time.monotonic_ns()} = 1\n")
        runs.append(measure(argv))
        time.sleep(0.5)  # the server reads the new cache ahead between commits, as it would
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def start_server(hook: list[str]) -> None:
    """The first `--server` run checks in its own process and starts the server in the background."""
    measure(hook)
    deadline = time.monotonic() + 60
    while not server_ask("status") and time.monotonic() < deadline:
        time.sleep(0.2)
    measure(hook)  # the server has read the cache ahead after this one


def server_ask(kind: str) -> dict[str, float] | None:
    from cslint.server.client import ask

    return ask({"kind": kind}, timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, help="a directory of Python files (default: torch's sources)")
    parser.add_argument("--limit", type=int, help="only the first N files (sorted)")
    parser.add_argument("--torchfix", help="torchfix executable (default: `torchfix` on PATH, if any)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--cold-only", action="store_true", help="only the parse floor and the cold run")
    args = parser.parse_args()
    source = (args.corpus or torch_sources()).resolve()
    torchfix = args.torchfix or shutil.which("torchfix")
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="cslint-bench-") as work:
        # this run's own server, whatever else runs on the machine; CI variables would turn it off
        os.environ.update(CSLINT_SERVER_DIR=work, CSLINT_SERVER_IDLE="600")
        for name in ("CI", "CSLINT_NO_SERVER"):
            os.environ.pop(name, None)
        root = Path(work) / "corpus"
        corpus, files = copy_corpus(source, args.limit, root)
        (root / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")  # the project root
        lines = sum(p.read_bytes().count(b"\n") for p in files)
        cache = Path(work) / "cache"
        print(f"corpus: {source} ({len(files)} files, {lines:,} lines; copied to {corpus})", flush=True)

        rows["libcst parse only"] = measure([sys.executable, "-c", PARSE_ONLY, str(corpus)])
        rows["cslint cold"] = measure(cslint(str(corpus), "--no-cache"))
        if args.cold_only:
            return _cold_report(rows, args.json, len(files), lines)
        rows["cslint cold, --jobs 1"] = measure(cslint(str(corpus), "--no-cache", "--jobs", "1"))
        measure(cslint(str(corpus), "--cache-dir", str(cache)))  # fills the cache
        rows["cslint warm, nothing changed"] = measure(cslint(str(corpus), "--cache-dir", str(cache)))
        edited = sorted(files, key=lambda p: p.stat().st_size)[len(files) // 2]
        with edited.open("a", encoding="utf-8") as handle:
            handle.write("\n_cslint_bench_edit = 1\n")
        rows["cslint warm, one file edited"] = measure(cslint(str(corpus), "--cache-dir", str(cache)))
        one = [measure(cslint(str(edited), "--no-cache")) for _ in range(3)]
        rows["cslint one file (no cache)"] = min(one, key=lambda r: r["seconds"])
        # the pre-commit hook: as shipped (`--server`: a background cslint with libcst and the rules loaded),
        # and without the server; the file unchanged, then edited
        hook = cslint("--server", "--project-context", str(edited), "--cache-dir", str(cache))
        local_hook = [a for a in hook if a != "--server"]
        start_server(hook)
        for label, argv in (("server", hook), ("no server", local_hook)):
            hits = [measure(argv) for _ in range(3)]
            rows[f"cslint pre-commit hook ({label}), file unchanged"] = min(hits, key=lambda r: r["seconds"])
            rows[f"cslint pre-commit hook ({label}), file edited"] = _after_edits(edited, argv)
        model = _median_model_file(files)
        if model is not None:  # the hook on a model file: it needs libcst, and its callers are re-analysed
            for label in ("server", "no server"):
                argv = cslint(*(["--server"] if label == "server" else []), "--project-context", str(model),
                              "--cache-dir", str(cache))
                rows[f"cslint pre-commit hook ({label}), {model.name} edited"] = _after_edits(model, argv)
        served = server_ask("status")
        if served:  # the served checks ran in the server's children, not in the measured processes
            rows["cslint server (its largest child)"] = {"seconds": 0.0, "peak_mb": served["peak_mb"]}
            rows["cslint server (itself, idle)"] = {"seconds": 0.0, "peak_mb": served["own_mb"]}
        server_ask("stop")
        if torchfix:
            rows["torchfix"] = measure([torchfix, str(corpus)])
    width = max(map(len, rows))
    print(f"\n{'':<{width}}  {'seconds':>9}  {'peak MB':>8}")
    for name, row in rows.items():
        seconds = f"{row['seconds']:>9.2f}" if row["seconds"] else f"{'':>9}"
        print(f"{name:<{width}}  {seconds}  {row['peak_mb']:>8.0f}")
    if not torchfix:
        print(f"{'torchfix':<{width}}  not installed (pass --torchfix)")

    cold = rows["cslint cold"]["seconds"]
    results = {
        "cold vs parse": (cold / rows["libcst parse only"]["seconds"], "x parse", lambda r: r <= 1.5),
        "warm": (rows["cslint warm, nothing changed"]["seconds"], "s", lambda r: r < 2),
        "edit": (rows["cslint warm, one file edited"]["seconds"], "s", lambda r: r < 3),
        "one": (rows["cslint pre-commit hook (server), file edited"]["seconds"], "s", lambda r: r < 0.3),
        "memory": (max(r["peak_mb"] for k, r in rows.items() if k.startswith("cslint")), "MB", lambda r: r < 300),
    }
    if torchfix:
        results["cold vs torchfix"] = (rows["torchfix"]["seconds"] / cold, "x faster", lambda r: r >= 10)
    print()
    for key, (value, unit, met) in results.items():
        print(f"{GOALS[key]:<62} {value:8.2f} {unit:<9} {'met' if met(value) else 'NOT met'}")
    print("(pre-commit hook, as shipped with --server; median of 3 edits. Without the server: "
          f"{rows['cslint pre-commit hook (no server), file edited']['seconds']:.2f} s; on an unchanged file: "
          f"{rows['cslint pre-commit hook (server), file unchanged']['seconds']:.2f} s)")
    print("(peak memory is the largest process's: with --jobs, one worker's; with --server, the server's child)")
    if args.json:
        args.json.write_text(json.dumps({"files": len(files), "lines": lines, "rows": rows}, indent=2))
    return 0


def _cold_report(rows: dict[str, dict[str, float]], out: Path | None, files: int, lines: int) -> int:
    print(f"\n{'':<20}  {'seconds':>9}  {'peak MB':>8}  {'load':>5}")
    for name, row in rows.items():
        print(f"{name:<20}  {row['seconds']:>9.2f}  {row['peak_mb']:>8.0f}  {row['load']:>5.1f}")
    cold = rows["cslint cold"]
    results = {"cold": (cold["seconds"], "s", cold["seconds"] <= 60),
               "cold vs parse, 2x": (cold["seconds"] / rows["libcst parse only"]["seconds"], "x parse",
                                     cold["seconds"] <= 2 * rows["libcst parse only"]["seconds"]),
               "memory, 500 MB": (cold["peak_mb"], "MB", cold["peak_mb"] < 500)}
    print()
    for key, (value, unit, met) in results.items():
        print(f"{GOALS[key]:<62} {value:8.2f} {unit:<9} {'met' if met else 'NOT met'}")
    if out:
        out.write_text(json.dumps({"files": files, "lines": lines, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
