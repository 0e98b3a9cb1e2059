"""Lint real code at scale and check cslint never fails on it (issue: never crash, never corrupt).

1. Lint the CPython standard library and the installed torch package with every function a traced
   root (`--trace-roots '*'`, so every rule sees every line) and count internal errors (must be 0).
2. Copy N real files (torch's own sources), run `--fix --unsafe-fixes` over the copy, check that every
   file still parses and that a second fix run changes nothing.
3. A hostile repository (see bench/hostile.py): every pathological input of issue #19, each linted by
   `cslint check` in a subprocess, in the repository as working directory; no file outside it may
   change, no module of it may be imported, no run may take over 60 s or 1 GB.

    python bench/robustness.py                # all three, stdlib + torch, 600 files for the fix run
    python bench/robustness.py --fix-files 1000
    python bench/robustness.py --skip-stdlib
    python bench/robustness.py --hostile-only

Exit status 1 if any check fails. Needs torch installed (the test extra) for the torch corpus.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import libcst as cst

from cslint.core.config import Settings
from cslint.support.deep_stack import run_with_deep_stack
from cslint.engine.discovery import collect_files
from cslint.core.report import NOT_ANALYSED
from cslint.engine.runner import INTERNAL_ERROR, Linter
from cslint.engine.selection import enabled_rules

EVERYTHING_TRACED = Settings(trace_roots=("*",))


def lint_tree(label: str, root: Path, chunk: int = 400) -> int:
    files = collect_files([root], EVERYTHING_TRACED.with_overrides(exclude=("__pycache__", "test", "tests",
                                                                           "site-packages", "idlelib")))
    linter = Linter(EVERYTHING_TRACED, enabled_rules(EVERYTHING_TRACED))
    start = time.perf_counter()
    internal, findings, errors, not_analysed = [], 0, [], []
    # chunks keep memory flat; cross-file chains only matter within a package, which chunks mostly keep
    for i in range(0, len(files), chunk):
        result = run_with_deep_stack(lambda i=i: linter.run(files[i:i + chunk]))
        internal += [d for d in result.diagnostics if d.code == INTERNAL_ERROR]
        not_analysed += [d for d in result.diagnostics if d.code == NOT_ANALYSED]
        findings += len(result.diagnostics)
        errors += result.errors
    elapsed = time.perf_counter() - start
    print(f"{label}: {len(files)} files, {findings} findings, {len(internal)} internal errors, "
          f"{len(not_analysed)} not analysed (size limit, analysis budget), {len(errors)} unreadable, {elapsed:.1f}s")
    for d in not_analysed[:10]:
        print(f"  not analysed: {d.path}:{d.line}: {d.message}")
    for d in internal[:20]:
        print(f"  {d.path}:{d.line}: {d.message}")
    for e in errors[:5]:
        print(f"  unreadable: {e}")
    return len(internal)


def fix_run(source_root: Path, count: int) -> int:
    originals = [p for p in collect_files([source_root], EVERYTHING_TRACED) if p.stat().st_size < 400_000][:count]
    with tempfile.TemporaryDirectory() as directory:
        copy_root = Path(directory)
        copies = []
        for path in originals:
            target = copy_root / path.relative_to(source_root.parent)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
            copies.append(target)
        linter = Linter(EVERYTHING_TRACED.with_overrides(unsafe_fixes=True), enabled_rules(EVERYTHING_TRACED))
        start = time.perf_counter()
        first = run_with_deep_stack(lambda: linter.run(copies, fix=True, unsafe_fixes=True))
        unparsable = []
        for source in first.changed_files:
            source.path.write_text(source.text, encoding=source.encoding)
        for path in copies:
            try:
                cst.parse_module(path.read_bytes())
            except cst.ParserSyntaxError:
                unparsable.append(path)
        second = run_with_deep_stack(lambda: linter.run(copies, fix=True, unsafe_fixes=True))
        elapsed = time.perf_counter() - start
        print(f"fix run: {len(copies)} files, {first.fixed} fixes applied in {len(first.changed_files)} files, "
              f"{len(unparsable)} unparsable after fixing, second run changed {len(second.changed_files)} files, "
              f"{len(first.errors)} errors, {elapsed:.1f}s")
        for path in unparsable[:10]:
            print(f"  unparsable: {path}")
        for source in second.changed_files[:10]:
            print(f"  not idempotent: {source.path}")
        return len(unparsable) + len(second.changed_files) + len(first.errors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix-files", type=int, default=600)
    parser.add_argument("--skip-stdlib", action="store_true", help="only the torch corpus and the fix run")
    parser.add_argument("--hostile-only", action="store_true", help="only the hostile repository")
    args = parser.parse_args()
    from hostile import hostile_run

    if args.hostile_only:
        return 1 if hostile_run() else 0
    failures = hostile_run()
    failures += 0 if args.skip_stdlib else lint_tree("stdlib", Path(sysconfig.get_paths()["stdlib"]))
    try:
        import torch
    except ImportError:
        print("torch is not installed: skipping the torch corpus")
        return 1 if failures else 0
    torch_root = Path(torch.__file__).parent
    failures += lint_tree("torch", torch_root)
    failures += fix_run(torch_root, args.fix_files)
    print("OK" if not failures else f"FAILED ({failures} problems)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
