"""Which format each `--runtime-log` file is, and its events; a file in none of them is an error, never empty."""

from __future__ import annotations

import os

from cslint.runtime_logs import cslint_report, metrics_report, torch_logs, torch_trace
from cslint.runtime_logs.events import RuntimeEvent

MAX_LOG_BYTES = 256 * 1024 * 1024


class LogError(Exception):
    """A log cslint cannot read; the message (one line) says which and why."""


def read_logs(paths: list[str]) -> list[RuntimeEvent]:
    found: list[RuntimeEvent] = []
    for path in paths:
        found.extend(read_log(path))
    return found


def read_log(path: str) -> list[RuntimeEvent]:
    if os.path.isdir(path):
        try:
            return torch_trace.directory_events(path)
        except torch_trace.TraceError as exc:
            raise LogError(str(exc)) from None
    try:
        if os.path.getsize(path) > MAX_LOG_BYTES:
            raise LogError(f"{path}: larger than {MAX_LOG_BYTES // (1024 * 1024)} MB; trim the log to the run")
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError as exc:
        raise LogError(f"{path}: cannot read the runtime log: {exc.strerror or exc}") from None
    if cslint_report.looks_like(text):
        try:
            return cslint_report.events(text)
        except ValueError as exc:
            raise LogError(f"{path}: {exc}") from None
    if torch_trace.looks_like(text):
        return torch_trace.events(text)
    if torch_logs.looks_like(text):
        return torch_logs.events(text)
    if metrics_report.looks_like(text):
        return metrics_report.events(text)
    if not text.strip():
        raise LogError(f"{path}: empty (a TORCH_LOGS capture of a run without graph breaks or recompiles is empty, "
                       "and cslint cannot tell it from a wrong file)")
    raise LogError(f"{path}: not a runtime log cslint reads (TORCH_LOGS output, a TORCH_TRACE directory or file, "
                   "a torch_xla/lazy metrics report, or `cslint runtime --output-format json`)")
