"""Grouped report: one header per file, then `line:col CODE message` lines under it (ruff's `grouped`)."""

from __future__ import annotations

from itertools import groupby
from typing import TYPE_CHECKING

from cslint.output.escape import escape_text
from cslint.output.text import _fixable, _summary, fixes_shown, target_marker
from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions


def render(result: RunResult, options: FormatOptions) -> str:
    out: list[str] = []
    for path, group in groupby(result.diagnostics, key=lambda d: d.path):
        items = list(group)
        out.append(f"{escape_text(str(path))}:")
        width = max(len(f"{d.place}:{d.column}") for d in items)
        for d in items:
            marker = " [*]" if _fixable(d, options.unsafe_fixes) else ""
            out.append(f"  {f'{d.place}:{d.column}':<{width}} {d.labelled_code}{marker} {escape_text(d.message)}"
                       f"{target_marker(d, options.target)}")
            if options.show_chain and d.chain:
                out.append(f"  {'':<{width}} traced: {escape_text(' -> '.join(d.chain))}")
        out.append("")
    if not options.quiet:
        out.extend(fixes_shown(result, options))
        out.extend(_summary(result, options))
    return "\n".join(out) + ("\n" if out else "")
