"""Azure Pipelines logging commands, as ruff's `azure`:
`##vso[task.logissue type=error;sourcepath=PATH;linenumber=L;columnnumber=C;code=CODE;]message`.

Syntax: https://learn.microsoft.com/azure/devops/pipelines/scripts/logging-commands. Property values
escape `%`, CR, LF, `;` and `]`; the message `%`, CR and LF (a path or message can then never end the
command early or start another). A notebook's finding is placed at line 1, column 1, as ruff does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cslint.output.escape import escape_text
from cslint.core.report import Diagnostic
from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions


def escape_data(value: str) -> str:
    return escape_text(value.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(value: str) -> str:
    return escape_data(value).replace(";", "%3B").replace("]", "%5D")


def logissue(d: Diagnostic) -> str:
    line, column = (1, 1) if d.cell is not None else (d.line, d.column)
    return (f"##vso[task.logissue type=error;sourcepath={escape_property(str(d.path))};linenumber={line};"
            f"columnnumber={column};code={d.code};]{escape_data(d.message)}")


def render(result: RunResult, options: FormatOptions) -> str:
    return "".join(logissue(d) + "\n" for d in result.diagnostics)
