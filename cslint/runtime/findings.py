"""What the runtime checker reports: one finding per problem, at the user's own file:line."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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

    def add(self, finding: RuntimeFinding) -> None:
        """Keep one finding per (code, path, line); a second backend seeing it only strengthens it."""
        for i, old in enumerate(self.findings):
            if (old.code, old.path, old.line) == (finding.code, finding.path, finding.line):
                if finding.backend not in old.backend.split("+"):
                    self.findings[i] = RuntimeFinding(old.code, old.path, old.line, old.message,
                                                      f"{old.backend}+{finding.backend}", old.column or finding.column)
                return
        self.findings.append(finding)

    def sorted_findings(self) -> list[RuntimeFinding]:
        return sorted(self.findings, key=lambda f: (f.path, f.line, f.code))

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "findings": [f.to_json() for f in self.sorted_findings()],
                "notes": self.notes, "error": self.error, "graph_breaks": self.graph_breaks, "steps": self.steps}

    @staticmethod
    def from_json(data: dict[str, Any]) -> RuntimeReport:
        report = RuntimeReport(data["target"], notes=list(data.get("notes", [])), error=data.get("error", ""),
                               graph_breaks=data.get("graph_breaks", 0), steps=data.get("steps", 0))
        report.findings = [RuntimeFinding.from_json(f) for f in data.get("findings", [])]
        return report
