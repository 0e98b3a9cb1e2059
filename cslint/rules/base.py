"""The rule interface: one class per rule, its documentation and examples beside it.

A rule defines `visit_<NodeType>(self, node, ctx)` methods. The checker calls them for every node of
every traced function (never for code outside a traced step), with a `RuleContext` that knows the kind
of each expression and collects reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from cslint.rule_api.context import RuleContext


@dataclass(frozen=True)
class Example:
    """A doc/test example: the code, and for invalid ones the lines marked `# expect: CODE`."""

    code: str


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # "What it does", one sentence
    why: ClassVar[str]  # "Why it breaks a static graph"
    example: ClassVar[str]
    use_instead: ClassVar[str]
    fix_safety: ClassVar[str]
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[str]] = []
    # Rules of an opt-in family (performance advice) run only when selected explicitly.
    default_enabled: ClassVar[bool] = True
    # The target the examples are linted for, for a rule that reports on one target only ("" for the default).
    example_target: ClassVar[str] = ""
    # target name -> a short note the message carries on that target (cslint/engine/messages.py), only where the
    # rule's clause needs it there; target name -> the long form, on the rule's page
    target_notes: ClassVar[dict[str, str]] = {}
    target_advice: ClassVar[dict[str, str]] = {}
    # The calls on a tensor the code stands for, `t.<method>()` and `<builtin>(t)`, wherever they are seen: the
    # runtime classifier gives a call it catches running this code, and with `in_libraries` a summary of an
    # installed library's function records the call, reported at the step's call of that function.
    # cslint/core/rule_table.py is generated from these (`python docs/generate.py`) for the layers below.
    tensor_methods: ClassVar[tuple[str, ...]] = ()
    builtins: ClassVar[tuple[str, ...]] = ()
    # and the functions whose call it stands for wherever it is seen, by qualified name (`torch.view_as_complex`;
    # a name ending in `.`, every function of that namespace: `numpy.random.`), for the library summaries
    functions: ClassVar[tuple[str, ...]] = ()
    # (keyword, value): a call of one of `functions` giving that keyword any other value does not stand for it
    # (`validate_args=False`)
    quiet_keyword: ClassVar[tuple[str, str] | None] = None
    in_libraries: ClassVar[bool] = False
    # The id of dynamo's graph break a finding is (cslint/core/graph_break_ids.py); and, by the source its
    # message quotes first, the id when that construct is another break (None: dynamo traces it)
    graph_break: ClassVar[str | None] = None
    construct_graph_breaks: ClassVar[dict[str, str | None]] = {}
    _visit_names: ClassVar[tuple[str, ...]]  # each class's own, set by `_visit_names` (read from its __dict__)

    def handlers(self) -> dict[str, Callable[[cst.CSTNode, RuleContext], None]]:
        return {attr[len("visit_"):]: getattr(self, attr) for attr in _visit_names(type(self))}


def _visit_names(rule_type: type[Rule]) -> tuple[str, ...]:
    """The rule class's `visit_*` attributes, looked up once per class: a checker is built for every
    group of files, and `dir` walks the class's whole namespace."""
    names: tuple[str, ...] | None = rule_type.__dict__.get("_visit_names")
    if names is None:
        names = tuple(attr for attr in dir(rule_type) if attr.startswith("visit_"))
        rule_type._visit_names = names
    return names
