"""What a run reports: diagnostics with their location, and the run's outcome.

A finding has this one shape from the moment it has a place in a file (engine/runner.py) to the report:
the cache stores and restores it (`as_json`, `from_json`) and worker processes hand it back as it is.
Kept free of libcst so a run whose reports all come from the cache never imports the parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cslint.core.graph_break_ids import GraphBreak
from cslint.core.json_shape import matches

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


@dataclass(frozen=True)
class FixSummary:
    """A fix as reports show it (from the cache, or from a worker process): no edits to apply."""

    applicability: str
    message: str


def chain_function(hop: str) -> str:
    """The qualified name of one hop of a traced chain (`pkg.Sub.hook (override of Base.hook)`: a
    subclass's override reached from its base class's `self.hook()`)."""
    return hop.split(" ", 1)[0]


@dataclass(frozen=True)
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
    # What the finding rests on besides evidence ("" when only on evidence): with `include-uncertain`, the
    # assumption that made its function traced (a library entry point: that a user's step calls it).
    assumption: str = ""
    # the targets whose roots reach it, the run's target first (a run checks each root for its own target:
    # analysis/root_targets.py); the run fills in its target where a finding has none of its own
    targets: tuple[str, ...] = ()
    # where an installed library's code does it, when a call on this line reaches it: (path, line, code)
    library_sites: tuple[tuple[str, int, str], ...] = ()

    @property
    def certainty(self) -> str:
        """`evidence` or `assumed` (the `include-uncertain` tier)."""
        return "assumed" if self.assumption else "evidence"

    @property
    def labelled_code(self) -> str:
        """`WSC101`, or `WSC101 [GB0170]` with the graph-break id the runtime prints for it."""
        return f"{self.code} [{self.graph_break.id}]" if self.graph_break is not None else self.code

    @property
    def place(self) -> str:
        """`line`, or `cell N:line` in a notebook (ruff's notation)."""
        return f"cell {self.cell}:{self.line}" if self.cell is not None else str(self.line)

    def as_json(self) -> dict[str, Any]:
        """Every field but the path (the cache keys its entries by file), as JSON; a fix as its summary
        (its edits are not kept)."""
        gb = self.graph_break
        return {"line": self.line, "column": self.column, "end_line": self.end_line, "end_column": self.end_column,
                "code": self.code, "message": self.message,
                "fix": [self.fix.applicability, self.fix.message] if self.fix is not None else None,
                "chain": list(self.chain), "reason": self.reason, "source_line": self.source_line,
                "cell": self.cell, "graph_break": [gb.id, gb.type, gb.explanation, gb.hint] if gb is not None else None,
                "notes": list(self.notes), "assumption": self.assumption,
                "targets": list(self.targets), "library_sites": [list(site) for site in self.library_sites]}

    @classmethod
    def from_json(cls, path: Path, data: Any) -> Diagnostic:
        """The diagnostic `as_json` gave for a file at `path`; ValueError for anything else (a damaged
        or edited cache file, or one an older cslint wrote)."""
        if not isinstance(data, dict) or data.keys() != _FIELDS.keys() or \
                not all(matches(data[name], kind) for name, kind in _FIELDS.items()):
            raise ValueError("malformed cached finding")
        fix, gb = data["fix"], data["graph_break"]
        return cls(path, data["line"], data["column"], data["end_line"], data["end_column"], data["code"],
                   data["message"], FixSummary(*fix) if fix is not None else None, list(data["chain"]),
                   data["reason"], data["source_line"], data["cell"], GraphBreak(*gb) if gb is not None else None,
                   list(data["notes"]), data["assumption"], tuple(data["targets"]),
                   tuple((site, line, code) for site, line, code in data["library_sites"]))


# The JSON of a diagnostic: each field's kind.
_FIELDS = {"line": "int", "column": "int", "end_line": "int", "end_column": "int", "code": "str", "message": "str",
           "fix": "[str]*2|None", "chain": "[str]", "reason": "str", "source_line": "str", "cell": "int|None",
           "graph_break": "[str]*4|None", "notes": "[str]", "assumption": "str", "targets": "[str]",
           "library_sites": "[site]"}
