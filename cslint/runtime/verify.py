"""`cslint check --fix --verify`: keep fixes only when the runtime problem is gone and outputs are unchanged.

For every `runtime-targets` entry, the target runs (in a child process) on the original files and on the
fixed files. The fixes are kept only if the fixed code runs, no runtime finding is new, the number of
runtime findings went down, and every output is allclose to the original output. Otherwise every changed
file is restored and the reason printed. Nothing here imports torch; outputs come back as nested lists.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

from cslint.config import Settings
from cslint.runtime.api import INSTALL_HINT, check, torch_available
from cslint.runtime.findings import RuntimeReport
from cslint.runtime.targets import split_target
from cslint.sources import SourceFile

VERIFY_BACKENDS = ("lazy",)  # the backend that traces a step the way WSC does; dynamo adds only reasons


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flatten(value[k])]
    if isinstance(value, list):
        return [x for v in value for x in _flatten(v)]
    return [value]


def outputs_differ(before: list[Any], after: list[Any], tolerance: float) -> str | None:
    """Why two output structures are not allclose (rtol = atol = tolerance), or None."""
    a, b = _flatten(before), _flatten(after)
    if len(a) != len(b):
        return f"the outputs have a different structure ({len(a)} values before, {len(b)} after)"
    worst = 0.0
    for x, y in zip(a, b):
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            if math.isnan(x) and math.isnan(y):
                continue
            if not abs(x - y) <= tolerance + tolerance * abs(y):
                worst = max(worst, abs(x - y))
        elif x != y:
            return f"an output changed ({x!r} -> {y!r})"
    return f"the outputs changed (largest difference {worst:.3g}, tolerance {tolerance:g})" if worst else None


def _rejection(before: RuntimeReport, after: RuntimeReport, tolerance: float) -> str | None:
    if after.error:
        return f"the fixed code fails at runtime: {after.error.strip().splitlines()[-1]}"
    new = Counter(f.code for f in after.findings) - Counter(f.code for f in before.findings)
    if new:
        return f"the fix introduced runtime problem(s) {', '.join(sorted(new))}"
    if before.findings and len(after.findings) >= len(before.findings):
        remaining = ", ".join(sorted({f"{f.code} at line {f.line}" for f in after.findings}))
        return f"the runtime problem is still there ({remaining})"
    return outputs_differ(before.outputs, after.outputs, tolerance)


def _write(source: SourceFile, text: str) -> None:
    source.path.write_bytes((b"\xef\xbb\xbf" if source.bom else b"") + text.encode(source.encoding))


def _target_for(target: str, root: Path) -> str:
    location, factory = split_target(target)
    if location.endswith(".py") and not os.path.isabs(location):
        location = str(root / location)
    return f"{location}:{factory}"


def verify_fixes(settings: Settings, changed: list[SourceFile], tolerance: float = 1e-5,
                 timeout: float = 300.0) -> tuple[list[SourceFile], list[str]]:
    """Return the changed files to write and one message per target (kept or rolled back, and why)."""
    if not changed:
        return changed, []
    if not settings.runtime_targets:
        return changed, ["--verify: no `runtime-targets` in [tool.cslint]; fixes kept unverified"]
    if not torch_available():
        for source in changed:
            source.text = source.original_text or source.text
        return [], [f"--verify: {INSTALL_HINT}; no fix written"]
    root = settings.project_root or Path.cwd()
    targets = [_target_for(t, root) for t in settings.runtime_targets]
    before = [check(t, VERIFY_BACKENDS, outputs=True, timeout=timeout, cwd=str(root)) for t in targets]
    broken = [b for b in before if b.error]
    if broken:
        for source in changed:
            source.text = source.original_text or source.text
        return [], [f"--verify: {b.target} fails before fixing: {b.error.strip().splitlines()[-1]}; no fix written"
                    for b in broken]
    for source in changed:
        _write(source, source.text)
    try:
        after = [check(t, VERIFY_BACKENDS, outputs=True, timeout=timeout, cwd=str(root)) for t in targets]
    finally:
        for source in changed:  # the caller writes the kept fixes atomically
            _write(source, source.original_text or "")
            source.mtime_ns = source.path.stat().st_mtime_ns
    reasons = [(t, _rejection(b, a, tolerance)) for t, b, a in zip(targets, before, after)]
    failed = [(t, r) for t, r in reasons if r is not None]
    if failed:
        for source in changed:
            source.text = source.original_text or source.text
        return [], [f"--verify: fixes rolled back: {t}: {r}" for t, r in failed]
    return changed, [f"--verify: {t}: runtime findings {len(b.findings)} -> {len(a.findings)}, outputs allclose; "
                     "fixes kept" for t, b, a in zip(targets, before, after)]
