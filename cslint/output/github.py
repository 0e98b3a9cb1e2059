"""GitHub Actions workflow commands: `::error file=...,line=...,col=...::message` (inline annotations).

Syntax: https://docs.github.com/actions/reference/workflow-commands-for-github-actions. Property values
escape `%`, CR, LF, `:` and `,`; the message escapes `%`, CR and LF.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cslint.output.escape import escape_text
from cslint.core.report import Diagnostic
from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions


def escape_data(value: str) -> str:
    """The workflow-command escapes, then every other control character made visible: the log is
    shown in a terminal-like viewer that honours escape sequences."""
    return escape_text(value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic) -> str:
    title = f"cslint ({d.code}, cell {d.cell})" if d.cell is not None else f"cslint ({d.code})"
    props = {"title": title, "file": str(d.path), "line": str(d.line), "col": str(d.column)}
    if d.end_line >= d.line:
        props["endLine"] = str(d.end_line)
        props["endColumn"] = str(d.end_column)
    fields = ",".join(f"{key}={escape_property(value)}" for key, value in props.items())
    return f"::error {fields}::{escape_data(f'{d.code} {d.message}')}"


def render(result: RunResult, options: FormatOptions) -> str:
    return "".join(annotation(d) + "\n" for d in result.diagnostics)
