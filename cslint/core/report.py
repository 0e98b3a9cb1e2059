"""What a run reports: diagnostics with their location, and the run's outcome.

Kept free of libcst so a run whose reports all come from the cache never imports the parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cslint.core.graph_break_ids import GraphBreak

SYNTAX_ERROR = "WSC001"
INTERNAL_ERROR = "WSC002"
NOT_ANALYSED = "WSC004"  # over the size limit or the analysis budget: one finding, no analysis
# the names reports give the engine's own codes
ENGINE_NAMES = {SYNTAX_ERROR: "syntax-error", INTERNAL_ERROR: "internal-error", NOT_ANALYSED: "not-analysed"}
BUG_HINT = "please report it, with the file, at the cslint issue tracker"


class FixView(Protocol):
    """What a report shows of a fix: a rule's fix with its edits (rule_api.findings.Fix), or a summary."""

    @property
    def applicability(self) -> str: ...

    @property
    def message(self) -> str: ...


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
    fix: FixView | None = None
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
