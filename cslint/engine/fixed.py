"""Which findings a fix removed: lines of the fixed text traced back to the lines of the original."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cslint.core.report import Diagnostic
from cslint.core.sources import SourceFile


@dataclass(frozen=True)
class FixedFinding:
    """A static finding a fix removed, where it was in the original text (lines 1-based, inclusive)."""

    path: Path
    line: int
    end_line: int
    code: str


def original_lines(original: str, fixed: str) -> Callable[[int], range]:
    """Maps a line of the fixed text to the lines of the original text it came from."""
    opcodes = difflib.SequenceMatcher(None, original.splitlines(), fixed.splitlines(), autojunk=False).get_opcodes()

    def back(line: int) -> range:
        for tag, i1, i2, j1, j2 in opcodes:
            if j1 < line <= j2:
                if tag == "equal":
                    return range(i1 + line - j1, i1 + line - j1 + 1)
                return range(i1 + 1, max(i2, i1 + 1) + 1)
        return range(0)

    return back


def fixed_findings(before: list[Diagnostic], after: list[Diagnostic], changed: list[SourceFile],
                   unsafe: bool) -> list[FixedFinding]:
    """The findings of the original text (`before`) that a fix was for and that the fixed text (`after`)
    no longer has at the line they moved to."""
    sources = {s.path: s for s in changed}
    remaining: set[tuple[Path, int, str]] = set()
    for d in after:
        source = sources.get(d.path)
        if source is not None:
            back = original_lines(source.original_text or "", source.text)
            remaining.update((d.path, line, d.code) for line in back(d.line))
    return [FixedFinding(d.path, d.line, d.end_line, d.code) for d in before
            if d.path in sources and d.fix is not None and (d.fix.applicability == "safe" or unsafe)
            and (d.path, d.line, d.code) not in remaining]
