"""What a rule returns: a finding (where, what, on which traced function) and the fix it offers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import libcst as cst

if TYPE_CHECKING:
    from cslint.analysis.traced import TracedFunction

Applicability = Literal["safe", "unsafe"]
Replacement = cst.CSTNode | cst.FlattenSentinel[cst.CSTNode] | cst.RemovalSentinel


@dataclass
class Fix:
    applicability: Applicability
    message: str
    replacements: list[tuple[cst.CSTNode, Replacement]]
    imports: frozenset[str] = frozenset()  # modules the replacement needs imported (e.g. "torch")


@dataclass
class Finding:
    code: str
    message: str
    node: cst.CSTNode
    traced: TracedFunction | None
    fix: Fix | None = None
    consequence: str = ""  # what it does on a lazy tracer; a target's note replaces it (cslint/engine/messages.py)
    # what the analysis adds to the rule's clause (an annotation the callers contradict, a guard that does
    # not hold, the library code that does it): shown under the message, not in it
    notes: list[str] = field(default_factory=list)
    # where an installed library's code does what the finding reports, when that is not on its line (a call
    # into the library): (path, line, the code), each place the library's summary names
    library_sites: tuple[tuple[str, int, str], ...] = ()
    # what the finding rests on when it is in the opt-in tier for a reason of its own (not its root's)
    assumption: str = ""
    target: str = ""  # the target it was checked for (set with its message: engine/checker.py)
