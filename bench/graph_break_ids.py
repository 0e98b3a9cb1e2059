"""Do the static pass's graph-break ids (--target compile) match the ids dynamo reports at the same lines?

    python bench/graph_break_ids.py [TARGET ...]    (default: the steps below; needs torch and transformers)

Runs `cslint runtime TARGET --backend dynamo` on each step, then `cslint check --target compile` on every
file a runtime break is in and on the step's own file, and compares line by line:
- agree: a static finding with an id at a line where dynamo reported a break with that id;
- differ: a static id at a line where dynamo reported other ids only;
- static only: a static id at a line dynamo reported no break at (not reached, or traced);
- runtime only: a break dynamo reported at a line with no static id.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = [f"tests/runtime/targets/real_steps.py:{f}" for f in ("bert", "gpt2", "t5", "llama", "mixtral")] + \
    [f"tests/runtime/targets/families.py:{f}" for f in ("control_flow", "host_transfer", "dynamic_shape")] + \
    ["tests/runtime/targets/graph_breaks.py:step"]


def _cslint(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "cslint", *args], capture_output=True, text=True, cwd=ROOT,
                          check=False).stdout


def main(targets: list[str]) -> None:
    runtime: dict[tuple[str, int], set[str]] = defaultdict(set)
    files: set[str] = set()
    for target in targets:
        for report in json.loads(_cslint("runtime", target, "--backend", "dynamo", "--output-format", "json",
                                         "--no-progress", "--allow-incomplete")):
            for finding in report["findings"]:
                if finding.get("graph_break"):
                    runtime[(os.path.realpath(finding["path"]), finding["line"])].add(finding["graph_break"])
                    files.add(os.path.realpath(finding["path"]))
        files.add(os.path.realpath(os.path.join(ROOT, target.rsplit(":", 1)[0])))
    static: dict[tuple[str, int], set[str]] = defaultdict(set)
    for d in json.loads(_cslint("check", "--no-cache", "--exit-zero", "--target", "compile", "--output-format",
                                "json", *sorted(files))):
        if d.get("graph_break"):
            static[(os.path.realpath(d["filename"]), d["line"])].add(d["graph_break"]["id"])
    agree = [k for k in static if static[k] & runtime.get(k, set())]
    differ = [k for k in static if k in runtime and not static[k] & runtime[k]]
    static_only = [k for k in static if k not in runtime]
    runtime_only = [k for k in runtime if k not in static]
    print(f"{len(agree)} of {len(agree) + len(differ)} static ids at lines dynamo broke at are the id it reported; "
          f"{len(static_only)} static ids at lines dynamo did not break at; {len(runtime_only)} runtime breaks "
          "at lines with no static id")
    for name, keys in (("differ", differ), ("static only", static_only), ("runtime only", runtime_only)):
        for path, line in sorted(keys):
            print(f"  {name}: {os.path.relpath(path, ROOT)}:{line} static {sorted(static.get((path, line), []))} "
                  f"runtime {sorted(runtime.get((path, line), []))}")


if __name__ == "__main__":
    main(sys.argv[1:] or TARGETS)
