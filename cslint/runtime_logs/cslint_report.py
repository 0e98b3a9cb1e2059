"""`cslint runtime --output-format json` (the lazy and dynamo backends' report) into events.

The lazy backend writes no log of its own: what it reports is this list of reports, one per target, each
finding at the user's file:line with its rule code (and the graph-break id dynamo printed, if any).
"""

from __future__ import annotations

import json
import re
from typing import Any

from cslint.runtime_logs.events import Frame, RuntimeEvent


_HOP = re.compile(r"^(?P<path>.+):(?P<line>\d+) in (?P<function>\S+)$")


def looks_like(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith("[") and '"findings"' in stripped[:100000]


def events(text: str) -> list[RuntimeEvent]:
    """ValueError when the text is not such a report."""
    data = json.loads(text)
    if not isinstance(data, list) or not all(isinstance(r, dict) and isinstance(r.get("findings"), list)
                                             for r in data):
        raise ValueError("not a `cslint runtime --output-format json` report")
    found = []
    for report in data:
        for finding in report["findings"]:
            found.append(_event(finding))
    return found


def _event(finding: Any) -> RuntimeEvent:
    if not isinstance(finding, dict) or not isinstance(finding.get("path"), str) \
            or not isinstance(finding.get("line"), int) or not isinstance(finding.get("code"), str):
        raise ValueError("a finding without path, line and code")
    backend = str(finding.get("backend", ""))
    frames = [frame for frame in map(_frame, finding.get("chain") or []) if frame is not None]
    if not frames or (frames[-1].path, frames[-1].line) != (finding["path"], finding["line"]):
        frames.append(Frame(finding["path"], finding["line"]))
    return RuntimeEvent("finding", str(finding.get("message", "")), f"cslint runtime ({backend})", tuple(frames),
                        graph_break=str(finding.get("graph_break", "")), code=finding["code"])


def _frame(hop: Any) -> Frame | None:
    """`/path/model.py:39 in step`, one hop of the finding's chain from the step down to the op."""
    match = _HOP.match(hop) if isinstance(hop, str) else None
    return Frame(match["path"], int(match["line"]), match["function"]) if match else None
