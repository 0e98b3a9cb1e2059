"""What the runtime checker reports: one finding per problem, at the user's own file:line, and how far
each backend got.

A backend's status is one of three strings: `complete`, `stopped at FILE:LINE (REASON)` (or `stopped
(REASON)` when no line is known) and `timed out`. Only a report whose every backend is complete may be
called clean.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


COMPLETE = "complete"
TIMED_OUT = "timed out"
RUNNING = "running"  # inside the worker only: the backend started and has not finished yet


def stopped(reason: str, path: str = "", line: int = 0) -> str:
    where = f" at {path}:{line}" if path else ""
    return f"stopped{where} ({reason})"


@dataclass(frozen=True)
class RuntimeFinding:
    code: str
    path: str
    line: int
    message: str
    backend: str  # "lazy", "dynamo", "stability", "optimizer"
    column: int = 0  # 1-based; 0 when the backend only knows the line

    @property
    def family(self) -> str:
        return self.code[:4] + "xx"

    def location(self) -> str:
        return f"{self.path}:{self.line}" + (f":{self.column}" if self.column else "")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> RuntimeFinding:
        return RuntimeFinding(**data)


@dataclass
class RuntimeReport:
    target: str
    findings: list[RuntimeFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # backend limits, fallbacks: informational
    error: str = ""  # an exception in user code (with traceback), a timeout, a bad target
    outputs: list[Any] = field(default_factory=list)  # reference outputs on CPU (verify only)
    graph_breaks: int = 0
    steps: int = 0
    status: dict[str, str] = field(default_factory=dict)  # backend -> complete / stopped at ... / timed out
    changed: Callable[[RuntimeReport], None] | None = field(default=None, repr=False, compare=False)  # the worker saves

    def set_status(self, backend: str, status: str) -> None:
        self.status[backend] = status
        if self.changed is not None:
            self.changed(self)

    @property
    def complete(self) -> bool:
        """True when the target ran and every backend traced it to the end."""
        return not self.error and bool(self.status) and all(s == COMPLETE for s in self.status.values())

    def incomplete(self) -> dict[str, str]:
        return {backend: status for backend, status in self.status.items() if status != COMPLETE}

    def add(self, finding: RuntimeFinding) -> None:
        """Keep one finding per (code, path, line); a second backend seeing it only strengthens it."""
        for i, old in enumerate(self.findings):
            if (old.code, old.path, old.line) == (finding.code, finding.path, finding.line):
                if finding.backend not in old.backend.split("+"):
                    self.findings[i] = RuntimeFinding(old.code, old.path, old.line, old.message,
                                                      f"{old.backend}+{finding.backend}", old.column or finding.column)
                    if self.changed is not None:
                        self.changed(self)
                return
        self.findings.append(finding)
        if self.changed is not None:
            self.changed(self)

    def sorted_findings(self) -> list[RuntimeFinding]:
        return sorted(self.findings, key=lambda f: (f.path, f.line, f.code))

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "findings": [f.to_json() for f in self.sorted_findings()],
                "notes": self.notes, "error": self.error, "graph_breaks": self.graph_breaks, "steps": self.steps,
                "status": dict(self.status)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> RuntimeReport:
        report = RuntimeReport(data["target"], notes=list(data.get("notes", [])), error=data.get("error", ""),
                               graph_breaks=data.get("graph_breaks", 0), steps=data.get("steps", 0),
                               status=dict(data.get("status", {})))
        report.findings = [RuntimeFinding.from_json(f) for f in data.get("findings", [])]
        return report
