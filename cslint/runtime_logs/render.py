"""The `--runtime-log` report: per event, the static finding at its line and its fix; the events no rule
found ("runtime only"); the static findings in the code the log covers that it did not see."""

from __future__ import annotations

import json
from typing import Any

from cslint.output.escape import escape_text
from cslint.core.report import Diagnostic
from cslint.runtime_logs.match import LogReport, Matched

RUN_WIDE_SHOWN = 10  # a run-wide counter lists the static findings of its family, at most this many in text


def _where(m: Matched) -> str:
    if m.site is not None:
        return f"{m.site[0]}:{m.site[1]}"
    if m.event.frames:
        frame = m.event.frames[-1]
        return f"{frame.path}:{frame.line} (outside the files checked)"
    return "(the whole run: a metrics report names no line)"


def _event_line(m: Matched) -> str:
    event = m.event
    gb = f" {event.graph_break}" if event.graph_break else ""
    code = f" {event.code}" if event.code else ""
    times = f" (x{m.count})" if m.count > 1 else ""
    return escape_text(f"{_where(m)}: {event.kind}{gb}{code}: {event.summary} [{', '.join(m.sources)}]{times}")


def _static_line(d: Diagnostic, site: bool) -> list[str]:
    where = "" if site else f"{d.path}:{d.line}: "
    lines = [escape_text(f"  = static: {where}{d.labelled_code} {d.message}")]
    if d.fix is not None:
        lines.append(escape_text(f"  = fix ({d.fix.applicability}): {d.fix.message}"))
    return lines


def render_text(report: LogReport) -> str:
    out: list[str] = []
    runtime_only = 0
    for m in report.matched:
        out.append(_event_line(m))
        if m.static:
            for d in m.static[:RUN_WIDE_SHOWN] if m.site is None else m.static:
                out.extend(_static_line(d, m.site is not None))
            if m.site is None and len(m.static) > RUN_WIDE_SHOWN:
                out.append(f"  = ... and {len(m.static) - RUN_WIDE_SHOWN} more static findings of that family")
        else:
            runtime_only += m.site is not None or bool(m.event.frames)
            out.append("  = runtime only: no static finding " + ("at this line" if m.site is not None else
                                                                 "in the files checked"))
        if m.event.hint:
            out.append(escape_text(f"  = runtime hint: {m.event.hint}"))
    if report.unseen:
        out.append("")
        out.append("Static findings in the functions the log covers that it did not see:")
        out.extend(escape_text(f"{d.path}:{d.line}:{d.column}: {d.labelled_code} {d.message}") for d in report.unseen)
    with_static = sum(1 for m in report.matched if m.static and m.site is not None)
    out.append("")
    out.append(f"Runtime log: {len(report.matched)} distinct event(s): {with_static} at a static finding, "
               f"{runtime_only} runtime only, {len(report.matched) - with_static - runtime_only} without a line; "
               f"{len(report.unseen)} static finding(s) the log did not see.")
    if report.fixed:
        out.append(f"Fixed {report.fixed} finding(s) a log confirmed.")
    return "\n".join(out) + "\n"


def _diagnostic(d: Diagnostic) -> dict[str, Any]:
    from cslint.output.json_format import diagnostic_dict

    return diagnostic_dict(d)


def render_json(report: LogReport) -> str:
    events = []
    for m in report.matched:
        e = m.event
        events.append({
            "kind": e.kind, "summary": e.summary, "sources": m.sources, "count": m.count,
            "filename": str(m.site[0]) if m.site else None, "line": m.site[1] if m.site else None,
            "frames": [{"filename": f.path, "line": f.line, "function": f.function} for f in e.frames],
            "graph_break": e.graph_break or None, "hint": e.hint or None, "code": e.code or None,
            "verdict": "static finding" if m.static and m.site else "runtime only" if m.site or e.frames
            else "run-wide",
            "static": [_diagnostic(d) for d in m.static],
        })
    return json.dumps({"events": events, "not_seen": [_diagnostic(d) for d in report.unseen], "fixed": report.fixed},
                      indent=2) + "\n"
