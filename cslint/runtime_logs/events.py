"""What a runtime log says happened: one event per graph break, recompile or counter, with where it happened."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str = ""


@dataclass(frozen=True)
class RuntimeEvent:
    kind: str  # "graph break", "recompile", "counter" (a metrics report's run-wide count), "finding"
    summary: str  # dynamo's graph-break type, the failed guard, the counter and its value
    source: str  # the log it came from ("TORCH_LOGS", "TORCH_TRACE", "metrics report", "cslint runtime")
    frames: tuple[Frame, ...] = ()  # outermost first; the site is the innermost frame in the project
    graph_break: str = ""  # the registry id ("GB0170") when the log names one
    hint: str = ""  # the runtime's first hint
    code: str = ""  # the rule code, when the log is a cslint runtime report
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
