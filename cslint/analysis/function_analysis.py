"""What inference records of one function: the kind of each expression, the calls it makes (with the kinds
of their arguments), what it returns, the parts the tracer never runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from cslint.analysis.index import FunctionInfo
from cslint.analysis.kinds import STATIC, UNKNOWN, Kind

if TYPE_CHECKING:
    from cslint.analysis.library_env import Summary

Env = dict[str, Kind]


@dataclass
class CallSite:
    node: cst.Call
    callee: FunctionInfo
    args: dict[str, Kind]
    overriding: str | None = None  # reached as a subclass's override of this method (see _overrides_reached)


@dataclass
class FunctionAnalysis:
    func: FunctionInfo
    params: dict[str, Kind]
    kinds: dict[int, Kind] = field(default_factory=dict)
    bound_before: dict[int, dict[str, Kind]] = field(default_factory=dict)
    calls: dict[tuple[int, str], CallSite] = field(default_factory=dict)  # (id(call), callee)
    return_kind: Kind = STATIC
    returns_value: bool = False
    # Parts the tracer never runs (`if torch.compiler.is_compiling(): return` under torch.compile), and parts
    # that run traced after a tracing guard that does not hold for this tracer (id -> the guard's text).
    dead: set[int] = field(default_factory=set)
    unguarded: dict[int, str] = field(default_factory=dict)
    # calls into installed libraries (analysis/libraries.py): id(call) -> (function called, its summary)
    library_calls: dict[int, tuple[str, Summary]] = field(default_factory=dict)
    # `self.<attr>` kinds as the function assigns them (ProjectOracle.attributes joins them over the methods)
    attribute_assignments: dict[str, Kind] = field(default_factory=dict)

    def kind(self, node: cst.CSTNode) -> Kind:
        return self.kinds.get(id(node), UNKNOWN)
