"""What a run reports: diagnostics with their location, and the run's outcome.

Kept free of libcst so a run whose reports all come from the cache never imports the parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cslint.baseline import BaselineOutcome
    from cslint.graph_break_registry import GraphBreak
    from cslint.rules import Fix
    from cslint.sources import SourceFile

SYNTAX_ERROR = "WSC001"
INTERNAL_ERROR = "WSC002"
NOT_ANALYSED = "WSC004"  # over the size limit or the analysis budget: one finding, no analysis
BUG_HINT = "please report it, with the file, at the cslint issue tracker"


@dataclass
class FixSummary:
    """A fix as reports show it (from the cache, or from a worker process): no edits to apply."""

    applicability: str
    message: str


def chain_function(hop: str) -> str:
    """The qualified name of one hop of a traced chain (`pkg.Sub.hook (override of Base.hook)`: a
    subclass's override reached from its base class's `self.hook()`)."""
    return hop.split(" ", 1)[0]


@dataclass
class Diagnostic:
    path: Path
    line: int
    column: int  # 1-based
    end_line: int
    end_column: int  # 1-based, exclusive
    code: str
    message: str
    fix: Fix | FixSummary | None = None
    chain: list[str] = field(default_factory=list)
    reason: str = ""
    source_line: str = ""
    cell: int | None = None  # a notebook's cell (1-based); `line` and `end_line` are then within it
    graph_break: GraphBreak | None = None  # under --target compile: the break dynamo reports for this construct
    notes: list[str] = field(default_factory=list)  # what explains the message, shown under it

    @property
    def labelled_code(self) -> str:
        """`WSC101`, or `WSC101 [GB0170]` with the graph-break id the runtime prints for it."""
        return f"{self.code} [{self.graph_break.id}]" if self.graph_break is not None else self.code

    @property
    def place(self) -> str:
        """`line`, or `cell N:line` in a notebook (ruff's notation)."""
        return f"cell {self.cell}:{self.line}" if self.cell is not None else str(self.line)


@dataclass
class RunResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line each; any makes the exit code 2
    fixed: int = 0
    fixed_codes: dict[Path, dict[str, int]] = field(default_factory=dict)  # per file, fixes applied per code
    changed_files: list[SourceFile] = field(default_factory=list)
    files_checked: int = 0
    baseline: BaselineOutcome | None = None  # what the baseline hid, when the run has one
