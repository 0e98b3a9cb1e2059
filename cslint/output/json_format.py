"""JSON report: an array of findings with 1-based positions, the fix and the trace chain."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from cslint.output.statistics import statistics_rows
from cslint.core.report import Diagnostic
from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.core.graph_break_ids import GraphBreak
    from cslint.output import FormatOptions


def diagnostic_dict(d: Diagnostic) -> dict[str, Any]:
    found = {
        "filename": str(d.path),
        "line": d.line,
        "column": d.column,
        "end_line": d.end_line,
        "end_column": d.end_column,
        "code": d.code,
        "message": d.message,
        "fix": None if d.fix is None else {"applicability": d.fix.applicability, "message": d.fix.message},
        "trace_chain": d.chain,
        "traced_because": d.reason,
        "notes": d.notes,
        "cell": d.cell,  # a notebook's cell (1-based; the lines are within it), else null (as ruff)
        "certainty": d.certainty,
        "assumption": d.assumption or None,
        "targets": list(d.targets),  # the targets whose roots reach it, the run's first
        # an installed library's lines that do it, when this line calls into the library
        "library_sites": [{"filename": path, "line": line, "code": code} for path, line, code in d.library_sites],
    }
    if d.graph_break is not None:  # only under --target compile: other targets' reports keep their shape
        found["graph_break"] = graph_break_dict(d.graph_break)
    return found


def graph_break_dict(gb: GraphBreak) -> dict[str, str]:
    return {"id": gb.id, "type": gb.type, "hint": gb.hint, "url": gb.url}


def render(result: RunResult, options: FormatOptions) -> str:
    if options.statistics:  # as ruff's `--statistics --output-format json`
        rows = [{"code": code, "name": name, "count": count, "fixable": fixable}
                for code, name, count, fixable in statistics_rows(result)]
        return json.dumps(rows, indent=2) + "\n"
    return json.dumps([diagnostic_dict(d) for d in result.diagnostics], indent=2) + "\n"
