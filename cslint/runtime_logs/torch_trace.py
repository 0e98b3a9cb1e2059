"""A `TORCH_TRACE` directory (the structured log tlparse reads) into events.

Each file holds records, one a line: glog's prefix, then a JSON object; a record with `has_payload` is followed
by its payload, each line indented by a tab. The graph breaks are the `dynamo_graph_break_reason` artifacts,
whose payload is the message TORCH_LOGS=graph_breaks prints; recompiles are the `compilation_metrics` records'
`recompile_reason`, the guard lines TORCH_LOGS=recompiles prints, in the frame `co_filename`/`co_firstlineno` name.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

from cslint.runtime_logs import dynamo_messages
from cslint.runtime_logs.events import RuntimeEvent

_RECORD = re.compile(r"^[VIWEDC]\d{4} [\d:.]+\s+\d+ \S+:\d+\] (?P<json>\{.*\})\s*$")
MAX_FILE_BYTES = 512 * 1024 * 1024  # a trace is a few MB per compiled frame; a larger file is not one


class TraceError(Exception):
    """A trace directory that cannot be read; the message says why."""


def looks_like(text: str) -> bool:
    first = next((line for line in text.splitlines()[:50] if line.strip()), "")
    return _RECORD.match(first) is not None


def directory_events(directory: str) -> list[RuntimeEvent]:
    try:
        names = sorted(name for name in os.listdir(directory) if not name.startswith("."))
    except OSError as exc:
        raise TraceError(f"{directory}: cannot list the trace directory: {exc.strerror or exc}") from None
    files = [os.path.join(directory, name) for name in names if os.path.isfile(os.path.join(directory, name))]
    if not files:
        raise TraceError(f"{directory}: no trace files (a TORCH_TRACE directory holds dedicated_log_torch_trace_*.log)")
    found: list[RuntimeEvent] = []
    for path in files:
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                raise TraceError(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MB; not a trace file")
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError as exc:
            raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if not looks_like(text):
            raise TraceError(f"{path}: not a TORCH_TRACE file (no structured records)")
        found.extend(events(text))
    return found


def events(text: str) -> list[RuntimeEvent]:
    found: list[RuntimeEvent] = []
    for record, payload in _records(text):
        artifact = record.get("artifact")
        if isinstance(artifact, dict) and artifact.get("name") == "dynamo_graph_break_reason":
            event = dynamo_messages.graph_break(payload, "TORCH_TRACE")
            if event is not None:
                found.append(event)
        metrics = record.get("compilation_metrics")
        if isinstance(metrics, dict) and metrics.get("recompile_reason"):  # the guard lines TORCH_LOGS prints
            reasons = "\n".join(f"- {line}" for line in str(metrics["recompile_reason"]).splitlines())
            found.extend(dynamo_messages.recompiles(
                f"Recompiling function {metrics.get('co_name', '')} in {metrics.get('co_filename', '')}:"
                f"{metrics.get('co_firstlineno') or 0}\n{reasons}", "TORCH_TRACE"))
    return found


def _records(text: str) -> Iterator[tuple[dict[str, Any], str]]:
    record: dict[str, Any] | None = None
    payload: list[str] = []
    for line in text.splitlines():
        if line.startswith("\t") and record is not None:
            payload.append(line[1:])
            continue
        if record is not None:
            yield record, "\n".join(payload)
        record, payload = None, []
        match = _RECORD.match(line)
        if match is not None:
            try:
                parsed = json.loads(match["json"])
            except ValueError:
                continue
            record = parsed if isinstance(parsed, dict) else None
    if record is not None:
        yield record, "\n".join(payload)
