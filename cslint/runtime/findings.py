"""What the runtime checker reports: one finding per problem, at the user's own file:line, and how far
each backend got.

A backend's status is one of three strings: `complete`, `stopped at FILE:LINE (REASON)` (or `stopped
(REASON)` when no line is known) and `timed out`. Only a report whose every backend is complete may be
called clean.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any


COMPLETE = "complete"
TIMED_OUT = "timed out"
RUNNING = "running"  # inside the worker only: the backend started and has not finished yet


def stopped(reason: str, path: str = "", line: int = 0) -> str:
    where = f" at {path}:{line}" if path else ""
    return f"stopped{where} ({reason})"


# The backends in the order of how precisely they name the construct (lazy and fake read the executing
# instruction).
_PRECISION = ("optimizer", "lazy", "fake", "stability", "dynamo")


def _problem(code: str) -> str:
    """Findings of these families at one line are one problem seen differently: a value read on the host,
    a value-dependent shape (dynamo cannot tell a boolean mask, WSC502, from other such ops, WSC501)."""
    return "host-read" if code[:4] in ("WSC1", "WSC2", "WSC4") else "shape" if code[:4] == "WSC5" else code


@dataclass(frozen=True)
class RuntimeFinding:
    code: str
    path: str
    line: int
    message: str
    backend: str  # "lazy", "fake", "dynamo", "stability", "optimizer"
    column: int = 0  # 1-based; 0 when the backend only knows the line
    chain: tuple[str, ...] = ()  # "path:line in function" from the step down to the op (--show-chain)
    graph_break: str = ""  # the registry id of the break dynamo reported here ("GB0170"), else ""

    @property
    def family(self) -> str:
        return self.code[:4] + "xx"

    def location(self) -> str:
        return f"{self.path}:{self.line}" + (f":{self.column}" if self.column else "")

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self), chain=list(self.chain))

    @staticmethod
    def from_json(data: dict[str, Any]) -> RuntimeFinding:
        return RuntimeFinding(**dict(data, chain=tuple(data.get("chain", ()))))


@dataclass
class RuntimeReport:
    target: str
    findings: list[RuntimeFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # backend limits, fallbacks: informational
    error: str = ""  # an exception in user code (with traceback), a timeout, a bad target
    outputs: list[Any] = field(default_factory=list)  # reference outputs on CPU (verify only)
    graph_breaks: int = 0
    # dynamo's breaks on constructs no rule covers (a call of a `torch.compiler.disable`d function): where
    # and dynamo's break type; not findings, but breaks all the same for whoever counts them
    uncovered_breaks: list[tuple[str, int, str]] = field(default_factory=list)
    steps: int = 0
    status: dict[str, str] = field(default_factory=dict)  # backend -> complete / stopped at ... / timed out
    causes: dict[str, str] = field(default_factory=dict)  # backend -> the whole exception that stopped it
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
        """One finding per problem: a second backend seeing the same problem at the same line tags the first
        finding with its name; the code of the backend that names constructs most precisely is kept."""
        for i, old in enumerate(self.findings):
            if (old.path, old.line) != (finding.path, finding.line) or _problem(old.code) != _problem(finding.code):
                continue
            if old.code != finding.code and finding.backend == old.backend:
                continue  # two constructs on one line, both seen by one backend: two problems
            backends = old.backend.split("+")
            if finding.backend in backends:
                return
            first, second = sorted((old, finding), key=lambda f: _PRECISION.index(f.backend.split("+")[0]))
            tags = sorted({*backends, finding.backend}, key=_PRECISION.index)
            self.findings[i] = replace(first, backend="+".join(tags),
                                       column=first.column or second.column, chain=first.chain or second.chain,
                                       graph_break=first.graph_break or second.graph_break)
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
                "uncovered_breaks": [list(b) for b in self.uncovered_breaks],
                "status": dict(self.status), "causes": dict(self.causes)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> RuntimeReport:
        report = RuntimeReport(data["target"], notes=list(data.get("notes", [])), error=data.get("error", ""),
                               graph_breaks=data.get("graph_breaks", 0), steps=data.get("steps", 0),
                               status=dict(data.get("status", {})), causes=dict(data.get("causes", {})))
        report.findings = [RuntimeFinding.from_json(f) for f in data.get("findings", [])]
        report.uncovered_breaks = [(path, line, gb_type) for path, line, gb_type in data.get("uncovered_breaks", [])]
        return report
