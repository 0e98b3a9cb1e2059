"""JSON Lines report: one finding per line (same fields as `json`), easy to stream and grep."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from cslint.output.json_format import diagnostic_dict
from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions


def render(result: RunResult, options: FormatOptions) -> str:
    return "".join(json.dumps(diagnostic_dict(d)) + "\n" for d in result.diagnostics)
