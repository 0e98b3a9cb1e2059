"""`cslint check --runtime-log FILE...`: the static pass, the logs' events matched to it, and with --fix only
the fixes of the findings a log confirmed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from cslint.core.config import ConfigError
from cslint.core.report import Diagnostic
from cslint.core.run_result import RunResult
from cslint.runtime_logs.match import LogReport, match
from cslint.runtime_logs.read import LogError, read_logs


def lint_with_logs(logs: list[Path], lint: Callable[..., RunResult], files: list[Path], fix: bool,
                   target: str, python: str | None) -> tuple[RunResult, LogReport]:
    try:
        events = read_logs([str(p) for p in logs])
    except LogError as exc:
        raise ConfigError(str(exc)) from None
    result = lint(files, False)
    if target == "compile":  # the ids the log's breaks carry, to compare
        from cslint.engine.graph_break_registry import with_graph_breaks

        result.diagnostics = with_graph_breaks(result.diagnostics, python)
    report = match(events, result.diagnostics, files)
    if fix:
        confirmed = {_key(d) for d in report.confirmed}
        result = lint(files, lambda d: _key(d) in confirmed)
        report.fixed = result.fixed
    return result, report


def _key(d: Diagnostic) -> tuple[str, int, str]:
    return os.path.realpath(d.path), d.line, d.code
