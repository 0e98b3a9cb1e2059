"""`--diff`: the fixes as a unified diff, and a one-line summary of what would be applied."""

from __future__ import annotations

import difflib

from cslint.core.run_result import RunResult


def render_diff(result: RunResult) -> str:
    out: list[str] = []
    for source in result.changed_files:
        name = str(source.path)
        out.extend(difflib.unified_diff((source.original_text or "").splitlines(keepends=True),
                                        source.text.splitlines(keepends=True), fromfile=f"a/{name}",
                                        tofile=f"b/{name}"))
    return "".join(out)


def diff_summary(result: RunResult, unsafe_fixes: bool) -> str:
    """`N fixes would be applied; M more with --unsafe-fixes.` (M: unsafe fixes left out)."""
    applied = result.fixed
    left_out = 0 if unsafe_fixes else sum(d.fix is not None and d.fix.applicability == "unsafe"
                                          for d in result.diagnostics)
    text = f"{applied} fix{'es' if applied != 1 else ''} would be applied" if applied else "No fixes would be applied"
    return text + (f"; {left_out} more with --unsafe-fixes." if left_out else ".")
