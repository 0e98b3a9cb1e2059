"""`TORCH_LOGS=graph_breaks,recompiles,recompiles_verbose` output (stderr of the run) into events.

Each line carries glog's prefix and the artifact's name:
`V1128 04:05:36.891000 27524 torch/_dynamo/symbolic_convert.py:5124] [0/0] [__graph_breaks] TEXT`;
a message is the run of lines from one that starts one (`Graph break ...`, `Recompiling function ...`) to the
next. Lines of other loggers (warnings, the program's own output on the same stream) are skipped.
"""

from __future__ import annotations

import re

from cslint.runtime_logs import dynamo_messages
from cslint.runtime_logs.events import RuntimeEvent

_PREFIX = re.compile(r"^[VIWEDC]\d{4} [\d:.]+\s+\d+ \S+:\d+\] (?:\[[^\]]*\] )?\[__(?P<artifact>\w+)\] ?(?P<text>.*)$")
_STARTS = ("Graph break", "Recompiling function")


def looks_like(text: str) -> bool:
    return any(_PREFIX.match(line) for line in text.splitlines()[:2000])


def events(text: str) -> list[RuntimeEvent]:
    found: list[RuntimeEvent] = []
    message: list[str] = []
    artifact = ""

    def close() -> None:
        if not message:
            return
        body = "\n".join(message)
        if artifact == "graph_breaks":
            event = dynamo_messages.graph_break(body, "TORCH_LOGS")
            if event is not None:
                found.append(event)
        elif artifact.startswith("recompiles"):
            found.extend(dynamo_messages.recompiles(body, "TORCH_LOGS"))
        message.clear()

    for line in text.splitlines():
        match = _PREFIX.match(line)
        if match is None:  # the program's own output or another logger's, printed between dynamo's lines
            continue
        if match["text"].startswith(_STARTS) or match["artifact"] != artifact:
            close()
            artifact = match["artifact"]
            if not match["text"].startswith(_STARTS):
                continue
        message.append(match["text"])
    close()
    return _without_repeats(found)


def _without_repeats(found: list[RuntimeEvent]) -> list[RuntimeEvent]:
    """`recompiles` and `recompiles_verbose` both log each recompile: one event per (kind, site, summary)."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for event in found:
        key = (event.kind, event.frames[-1:], event.summary)
        if key not in seen:
            seen.add(key)
            out.append(event)
    return out
