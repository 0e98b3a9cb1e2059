"""Dynamo's graph-break and recompile messages, as both TORCH_LOGS and TORCH_TRACE carry them, into events.

A graph break (torch/_dynamo/symbolic_convert.py, `log_graph_break`):

    Graph break in user code at /path/model.py:40
    Graph Break Reason: Encountered graph break when attempting to trace CALL: ...:

    Data-dependent branching
      Explanation: ...
      Hint: ...
     For more details about this graph break, please visit: https://.../gb/gb0170.html

    User code traceback:
      File "/path/train.py", line 8, in <module>
      File "/path/model.py", line 40, in forward

A recompile (`recompiles` / `recompiles_verbose`):

    Recompiling function forward in /path/model.py:12
        triggered by the following guard failure(s):
        - 0/0: self.calls == 1  # self.calls += 1  # path/model.py:13 in forward (_dynamo/...)
"""

from __future__ import annotations

import re

from cslint.runtime_logs.events import Frame, RuntimeEvent

_AT = re.compile(r"in user code at (?P<path>.+):(?P<line>\d+)\s*$")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')
_PAGE = re.compile(r"/gb/gb(?P<number>\d+)\.html")
_RECOMPILING = re.compile(r"Recompiling function (?P<function>\S+) in (?P<path>.+):(?P<line>\d+)\s*$")
# `- 0/0: GUARD  # SOURCE  # path:line in function (...)` (recompiles); verbose adds a `User stack trace`
_GUARD = re.compile(r"^\s*- \d+/\d+: (?P<guard>.+?)(?:\s{2,}#\s*(?P<rest>.*))?$")
_GUARD_SITE = re.compile(r"(?P<path>[^\s#]+\.py):(?P<line>\d+) in (?P<function>\S+)")


def graph_break(text: str, source: str) -> RuntimeEvent | None:
    lines = text.splitlines()
    if not lines or "Graph break" not in lines[0]:
        return None
    at = _AT.search(lines[0])
    gb_type = ""
    for index, line in enumerate(lines):
        if line.startswith("Graph Break Reason:"):
            reason = line[len("Graph Break Reason:"):].strip()
            following = next((rest.strip() for rest in lines[index + 1:] if rest.strip()), "")
            gb_type = following if reason.endswith(":") else reason
            break
    hint = next((line.strip()[len("Hint:"):].strip() for line in lines if line.strip().startswith("Hint:")), "")
    page = _PAGE.search(text)
    frames = [Frame(m["path"], int(m["line"]), m["function"]) for m in map(_FRAME.match, _traceback(lines)) if m]
    if not frames and at is not None:
        frames = [Frame(at["path"], int(at["line"]))]
    if not frames:
        return None
    return RuntimeEvent("graph break", gb_type, source, tuple(frames),
                        graph_break=f"GB{page['number']}" if page else "", hint=hint)


def _traceback(lines: list[str]) -> list[str]:
    """The lines of the `User code traceback:` section, up to dynamo's own `Traceback` (TORCH_TRACE has it)."""
    out: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("User code traceback:"):
            inside = True
        elif inside and line.startswith("Traceback"):
            break
        elif inside:
            out.append(line)
    return out


def recompiles(text: str, source: str) -> list[RuntimeEvent]:
    """One event per failed guard that names a user line; the function's own line when none does."""
    lines = text.splitlines()
    head = _RECOMPILING.search(lines[0]) if lines else None
    if head is None:
        return []
    function = Frame(head["path"], int(head["line"]), head["function"])
    events: list[RuntimeEvent] = []
    for index, line in enumerate(lines[1:], start=1):
        guard = _GUARD.match(line)
        if guard is None:
            continue
        site = _GUARD_SITE.search(guard["rest"] or "")
        if site is None:  # verbose: the site is on the `File "...", line N` below `User stack trace:`
            for below in lines[index + 1:index + 4]:
                frame = _FRAME.match(below.replace("- ", "", 1))
                if frame is not None:
                    site = frame
                    break
        frames = (function, Frame(site["path"], int(site["line"]), site["function"])) if site else (function,)
        events.append(RuntimeEvent("recompile", f"guard `{guard['guard'].strip()}` failed", source, frames))
    return events or [RuntimeEvent("recompile", "recompiled", source, (function,))]
