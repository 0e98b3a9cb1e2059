"""Report formats. Each module renders a list of diagnostics to a string."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from cslint.output.style import PLAIN, Style
from cslint.core.report import Diagnostic
from cslint.core.run_result import RunResult

Formatter = Callable[[RunResult, "FormatOptions"], str]


class FormatOptions:
    def __init__(self, show_chain: bool = False, show_source: bool = True, unsafe_fixes: bool = False,
                 statistics: bool = False, quiet: bool = False, fix_mode: bool = False,
                 show_fixes: bool = False, style: Style = PLAIN, target: str = "") -> None:
        self.show_chain = show_chain
        self.show_source = show_source
        self.unsafe_fixes = unsafe_fixes
        self.statistics = statistics
        self.quiet = quiet
        self.fix_mode = fix_mode
        self.show_fixes = show_fixes  # list the fixes applied (--show-fixes; text formats)
        self.style = style  # colour, for the text formats on a terminal (output/style.py)
        # the run's target: the text formats mark a finding that (also) breaks another target's roots
        self.target = target


# format -> (module, function); imported when used (sarif reads the rules' metadata, and so libcst)
RENDERERS = {
    "text": ("text", "render"),
    "concise": ("text", "render_concise"),
    "grouped": ("grouped", "render"),
    "json": ("json_format", "render"),
    "json-lines": ("json_lines", "render"),
    "sarif": ("sarif", "render"),
    "github": ("github", "render"),
    "gitlab": ("gitlab", "render"),
    "junit": ("junit", "render"),
    "pylint": ("pylint", "render"),
    "azure": ("azure", "render"),
    "rdjson": ("rdjson", "render"),
}


class _Formats(dict):  # type: ignore[type-arg]
    def __missing__(self, name: str) -> Formatter:
        module, function = RENDERERS[name]
        renderer: Formatter = getattr(importlib.import_module(f"cslint.output.{module}"), function)
        self[name] = renderer
        return renderer

    def __contains__(self, name: object) -> bool:
        return name in RENDERERS


FORMATS: dict[str, Formatter] = _Formats()

__all__ = ["Diagnostic", "FORMATS", "FormatOptions", "RunResult"]
