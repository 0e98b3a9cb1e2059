"""Pylint's parseable format, as ruff's `pylint`: `path:line: [CODE] message`, one finding a line.

A notebook's finding is placed at line 1, as ruff does for this format: the line within a cell is no
line of the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cslint.output.escape import escape_text
from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions


def render(result: RunResult, options: FormatOptions) -> str:
    return "".join(f"{escape_text(str(d.path))}:{1 if d.cell is not None else d.line}: [{d.code}] "
                   f"{escape_text(d.message)}\n" for d in result.diagnostics)
