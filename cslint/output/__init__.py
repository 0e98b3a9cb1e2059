"""Report formats. Each module renders a list of diagnostics to a string."""

from __future__ import annotations

from collections.abc import Callable

from cslint.output import github, grouped, json_format, json_lines, sarif, text
from cslint.runner import Diagnostic, RunResult

Formatter = Callable[[RunResult, "FormatOptions"], str]


class FormatOptions:
    def __init__(self, show_chain: bool = False, show_source: bool = True, unsafe_fixes: bool = False,
                 statistics: bool = False, quiet: bool = False, fix_mode: bool = False) -> None:
        self.show_chain = show_chain
        self.show_source = show_source
        self.unsafe_fixes = unsafe_fixes
        self.statistics = statistics
        self.quiet = quiet
        self.fix_mode = fix_mode


FORMATS: dict[str, Formatter] = {
    "text": text.render,
    "concise": text.render_concise,
    "grouped": grouped.render,
    "json": json_format.render,
    "json-lines": json_lines.render,
    "sarif": sarif.render,
    "github": github.render,
}

__all__ = ["Diagnostic", "FORMATS", "FormatOptions", "RunResult"]
