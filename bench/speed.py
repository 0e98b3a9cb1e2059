"""How long cslint takes on a large tree, next to libcst parsing alone (and torchfix, if installed).

    python bench/speed.py                       # corpus: the installed torch package's own sources
    python bench/speed.py --corpus path/to/transformers/models

Each measurement runs in its own subprocess (cold start, peak memory from getrusage). Prints one
table; nothing is asserted. The goals of the speed issue are targets, not met yet: see the README.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

PARSE_ONLY = r"""
import json, resource, sys, time
from pathlib import Path
import libcst as cst
files = [Path(p) for p in json.load(open(sys.argv[1]))]
start = time.perf_counter()
for path in files:
    try:
        cst.parse_module(path.read_bytes())
    except Exception:
        pass
print(json.dumps({"seconds": time.perf_counter() - start,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CSLINT = r"""
import json, resource, sys, time
from pathlib import Path
from cslint.config import Settings
from cslint.deep_stack import run_with_deep_stack
from cslint.runner import Linter
from cslint.selection import enabled_rules
files = [Path(p) for p in json.load(open(sys.argv[1]))]
settings = Settings()
linter = Linter(settings, enabled_rules(settings))
start = time.perf_counter()
result = run_with_deep_stack(lambda: linter.run(files))
print(json.dumps({"seconds": time.perf_counter() - start, "findings": len(result.diagnostics),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(script: str, file_list: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", script, str(file_list)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="use only the first N files")
    args = parser.parse_args()
    corpus = args.corpus
    if corpus is None:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or spec.origin is None:
            print("no --corpus given and torch is not installed")
            return 2
        corpus = Path(spec.origin).parent
    files = sorted(str(p) for p in corpus.rglob("*.py") if "test" not in p.parts)
    if args.limit:
        files = files[: args.limit]
    lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
    file_list = Path("/tmp/cslint-bench-files.json")
    file_list.write_text(json.dumps(files))
    print(f"corpus: {corpus} ({len(files)} files, {lines:,} lines)")
    parse = measure(PARSE_ONLY, file_list)
    cold = measure(CSLINT, file_list)
    one = min(wall([sys.executable, "-m", "cslint", "check", "--quiet", files[0]]) for _ in range(3))
    rows = [("libcst parse only", parse["seconds"], parse["peak_mb"]),
            ("cslint check (cold, 1 process)", cold["seconds"], cold["peak_mb"])]
    if shutil.which("torchfix"):
        rows.append(("torchfix", wall(["torchfix", str(corpus)]), float("nan")))
    print(f"{'':34} {'seconds':>9} {'peak MB':>9} {'x parse':>8}")
    for name, seconds, peak in rows:
        print(f"{name:34} {seconds:9.1f} {peak:9.0f} {seconds / parse['seconds']:8.2f}")
    print(f"{'one file, interpreter start incl.':34} {one:9.2f}")
    print(f"findings: {cold['findings']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
