"""The projects of one run, each analysed in its own namespace of module names.

Module names are what imports resolve to, and two projects may both hold `pkg/ops.py`: in one shared
namespace only one file can be `pkg.ops`, so which project's `from pkg.ops import f` reaches its own
file would depend on which path sorts first. Each project of a run is therefore analysed as it would
be alone: its named files, with every other file of the run under its root as context.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from cslint.core.run_result import RunResult

Part = tuple[list[Path], list[Path]]  # the files reported on, and the context


def project_parts(targets: Sequence[Path], context: Sequence[Path], roots: Sequence[Path]) -> list[Part]:
    """`targets` split by the innermost of `roots` above each (files under none are one more part), each
    with the files of the run under its root as context; one part, the run as given, if they share one."""
    bases = sorted({os.path.abspath(root) for root in roots}, key=len, reverse=True)

    def innermost(path: Path) -> str | None:
        key = os.path.abspath(path)
        return next((base for base in bases if _under(key, base)), None)

    by_root: dict[str | None, list[Path]] = {}
    for path in targets:
        by_root.setdefault(innermost(path), []).append(path)
    if len(by_root) <= 1:
        return [(list(targets), list(context))]
    everything = [*targets, *context]
    parts = []
    for root, own in by_root.items():
        mine = {os.path.abspath(path) for path in own}
        others = [] if root is None else \
            [p for p in everything if _under(os.path.abspath(p), root) and os.path.abspath(p) not in mine]
        parts.append((own, list(dict.fromkeys(others))))
    return parts


def _under(key: str, base: str) -> bool:
    return key == base or key.startswith(base.rstrip(os.sep) + os.sep)


def merged(results: Sequence[RunResult]) -> RunResult:
    """The parts' results as one run's (the baseline not yet applied), its files in the run's order."""
    whole = RunResult()
    for result in results:
        whole.diagnostics += result.diagnostics
        whole.errors += result.errors
        whole.fixed += result.fixed
        for path, counts in result.fixed_codes.items():
            into = whole.fixed_codes.setdefault(path, {})
            for code, count in counts.items():
                into[code] = into.get(code, 0) + count
        whole.changed_files += result.changed_files
        whole.files_checked += result.files_checked
        whole.other_roots += result.other_roots
    # in the order of one run over all the files: a run surveys them sorted by absolute path
    whole.diagnostics.sort(key=lambda diagnostic: os.path.abspath(diagnostic.path))
    whole.changed_files.sort(key=lambda source: os.path.abspath(source.path))
    whole.other_roots.sort(key=lambda root: os.path.abspath(root[2]))
    return whole
