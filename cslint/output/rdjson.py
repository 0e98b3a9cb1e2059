"""Reviewdog Diagnostic Format (rdjson), as ruff's `rdjson`: `{"source": {name, url}, "severity":
"warning", "diagnostics": [{message, location: {path, range: {start, end}}, code: {value, url}}]}`.

Schema: https://github.com/reviewdog/reviewdog/tree/master/proto/rdf. Lines and columns are 1-based, the
end exclusive, as the schema says. ruff adds `suggestions` (text edits) for a finding with a fix; cslint's
fixes rewrite syntax trees and a report keeps only their description, so none are given (the `--diff`
report shows the edits).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from cslint.core.report import Diagnostic

from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions

SOURCE = {"name": "cslint", "url": "https://github.com/cslint/cslint"}


def diagnostic(d: Diagnostic) -> dict[str, Any]:
    from cslint.output.docs import rule_url

    return {
        "message": d.message,
        "location": {"path": str(d.path), "range": {"start": {"line": d.line, "column": d.column},
                                                    "end": {"line": d.end_line, "column": d.end_column}}},
        "code": {"value": d.code, "url": rule_url(d.code)},
    }


def render(result: RunResult, options: FormatOptions) -> str:
    return json.dumps({"source": SOURCE, "severity": "warning",
                       "diagnostics": [diagnostic(d) for d in result.diagnostics]}, indent=2) + "\n"
