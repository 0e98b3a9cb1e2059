"""Run steps under dynamo (`torch.compile`, not fullgraph) with a backend that only captures graphs.

Graph breaks and recompilations are read from dynamo's own `graph_breaks`/`recompiles` log artifacts,
which carry the user's file:line; `torch._dynamo.explain()` and `counters["graph_break"]` undercount
(data-dependent branches land in `counters["unimplemented"]`). Scalar-output and dynamic-shape capture
stay off: with them on, dynamo would capture `.item()` and `nonzero()` instead of breaking.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch._dynamo

from cslint.runtime.classify import Classified, classify_guard_line, classify_line
from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.frames import is_library_file
from cslint.runtime.targets import Step

_BREAK = re.compile(r"Graph break .*?in user code at (?P<path>.+?):(?P<line>\d+)\s*\n"
                    r"Graph Break Reason: (?P<reason>.*?)(?:\n|$)(?P<body>.*)", re.S)
_GUARD = re.compile(r"- \d+/\d+: (?P<guard>.+?)\s{2,}#.*?\n\s*- User stack trace:\s*\n\s*-\s+File \"(?P<path>.+?)\", "
                    r"line (?P<line>\d+)")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.getMessage()))


@contextmanager
def _dynamo_logs() -> Iterator[_Collect]:
    handler = _Collect()
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name.endswith(("__graph_breaks", "__recompiles"))]
    saved = [(lg, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.propagate = False  # keep dynamo's own console output quiet; we report it ourselves
        lg.addHandler(handler)
    try:
        yield handler
    finally:
        for lg, propagate in saved:
            lg.removeHandler(handler)
            lg.propagate = propagate
        torch._logging.set_logs()


def _explanation(body: str) -> str:
    for line in body.splitlines():
        if line.strip().startswith("Explanation:"):
            return line.strip()[len("Explanation:"):].strip()
    return ""


def _break_code(reason: str, body: str, path: str, line: int) -> Classified:
    text = reason + "\n" + body
    if "Data-dependent branching" in text or "data-dependent" in reason.lower():
        return classify_line(path, line) or Classified("WSC101", "a branch on a tensor condition")
    if "Dynamic shape operator" in text:
        return Classified("WSC501", "an op whose output shape depends on tensor values")
    if "print" in text or "logging" in text:
        return Classified("WSC701", "a print/log call in the traced step")
    if ".item()" in text or "tolist" in text or "numpy" in text:
        return Classified("WSC201", "a tensor value read on the host")
    return classify_line(path, line) or Classified("WSC703", "an unsupported Python construct")


def run_dynamo(step: Step, report: RuntimeReport, progress: Any = None) -> None:
    torch._dynamo.reset()
    graphs: list[torch.fx.GraphModule] = []

    def capture_only(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward

    with torch._dynamo.config.patch(capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False,
                                    suppress_errors=False), _dynamo_logs() as logs:
        compiled = torch.compile(step.fn, backend=capture_only, fullgraph=False, dynamic=False)
        for index, batch in enumerate(step.batches):
            compiled(*batch)
            if progress is not None:
                progress(f"dynamo step {index + 1}/{len(step.batches)}")
    torch._dynamo.reset()
    breaks: set[tuple[str, int, str]] = set()
    for name, message in logs.records:
        if name.endswith("__graph_breaks"):
            match = _BREAK.search(message)
            if match is None or is_library_file(match["path"], os.path.dirname(torch.__file__)):
                continue
            path, line, reason = os.path.abspath(match["path"]), int(match["line"]), match["reason"].strip()
            breaks.add((path, line, reason))
            found = _break_code(reason, match["body"], path, line)
            detail = _explanation(match["body"]) or reason
            report.add(RuntimeFinding(found.code, path, line, f"graph break: {found.what} ({detail})", "dynamo"))
        elif name.endswith("__recompiles"):
            for guard in _GUARD.finditer(message):
                path = os.path.abspath(guard["path"])
                if is_library_file(path, os.path.dirname(torch.__file__)):
                    continue
                found = classify_guard_line(path, int(guard["line"]))
                report.add(RuntimeFinding(
                    found.code, path, int(guard["line"]),
                    f"{found.what}: the graph is recompiled on a later step because guard "
                    f"`{guard['guard'].strip()}` failed (keep the value in a tensor buffer)", "dynamo"))
    report.graph_breaks = len(breaks)
    report.notes.append(f"dynamo: {len(graphs)} graph(s) captured, {len(breaks)} distinct graph break(s)")
