"""JUnit XML, as ruff's `junit`: one `testsuite` per file (`package="org.cslint"`), one failed `testcase`
per finding (`name="org.cslint.CODE"`, `classname` the path without its suffix, `line`, `column`; the
failure's message, and `line L, col C, message` as its text); a run without findings is one passing
testcase, "No errors found". A notebook's finding is placed at line 1, column 1, as ruff does.

Every text is escaped for XML and stripped of the characters XML 1.0 cannot hold (escape_text shows
control characters as escapes first).
"""

from __future__ import annotations

import os
from itertools import groupby
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from cslint.output.escape import escape_text
from cslint.core.report import Diagnostic
from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions

PACKAGE = "org.cslint"


def _attr(value: object) -> str:
    return quoteattr(escape_text(str(value)), {"\t": "&#9;"})


def _text(value: str) -> str:
    return escape(escape_text(value))


def testcase(d: Diagnostic) -> list[str]:
    line, column = (1, 1) if d.cell is not None else (d.line, d.column)
    stem, _ = os.path.splitext(str(d.path))
    return [
        f"        <testcase name={_attr(f'{PACKAGE}.{d.code}')} classname={_attr(stem)} line=\"{line}\" "
        f"column=\"{column}\">",
        f"            <failure message={_attr(d.message)}>{_text(f'line {line}, col {column}, {d.message}')}"
        "</failure>",
        "        </testcase>",
    ]


def render(result: RunResult, options: FormatOptions) -> str:
    count = len(result.diagnostics)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="cslint" tests="{max(count, 1)}" failures="{count}" errors="0">']
    if not count:
        out += [f'    <testsuite name="cslint" tests="1" disabled="0" errors="0" failures="0" package="{PACKAGE}">',
                '        <testcase name="No errors found" classname="cslint"/>',
                "    </testsuite>"]
    for path, group in groupby(result.diagnostics, key=lambda d: d.path):
        items = list(group)
        out.append(f"    <testsuite name={_attr(path)} tests=\"{len(items)}\" disabled=\"0\" errors=\"0\" "
                   f"failures=\"{len(items)}\" package=\"{PACKAGE}\">")
        for d in items:
            out.extend(testcase(d))
        out.append("    </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
