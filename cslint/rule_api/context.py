"""What a rule is given: the traced function it visits, with the questions rules ask about it, and where
its findings go."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import libcst as cst

from cslint.analysis.imports import dotted_name, module_level_alias
from cslint.analysis.kinds import Kind
from cslint.analysis.walk import FlatTree
from cslint.analysis.warm import warm_indexes
from cslint.rule_api.findings import Finding, Fix

if TYPE_CHECKING:
    from cslint.analysis.function_analysis import FunctionAnalysis
    from cslint.analysis.index import ModuleInfo
    from cslint.analysis.project import Project
    from cslint.analysis.traced import TracedFunction
    from cslint.core.config import Settings


def annotation_note(name: str, annotation: str) -> str:
    return f"`{name}` is annotated `{annotation}`, but the traced callers pass a tensor"


def top_level_alias(module: ModuleInfo, name: str) -> str | None:
    """`module_level_alias` from the index when it has the top-level imports (no tree is parsed)."""
    if module.top_level_imports is None:
        return module_level_alias(module.tree, name)
    for imported, alias in module.top_level_imports:
        if imported == name:
            return alias or name
    return None


_TESTED = (cst.If, cst.While, cst.IfExp, cst.Assert, cst.CompIf)  # nodes whose `test` is taken as a truth value


@dataclass
class RuleContext:
    traced: TracedFunction
    settings: Settings
    project: Project | None = None  # the program being checked: what a fix looks up in other modules
    findings: list[Finding] = field(default_factory=list)
    current_code: str = ""  # the code of the rule running: its findings carry it
    scratch: dict[str, Any] = field(default_factory=dict)  # per-function notes a rule keeps between visits
    _condition_parts: set[int] | None = None
    _body: FlatTree | None = None
    _resolved: dict[int, str | None] = field(default_factory=dict)  # every rule resolves the same calls
    read_module_text: bool = False  # a rule read the whole file's text (its findings depend on all of it)

    @property
    def analysis(self) -> FunctionAnalysis:
        analysis = self.traced.analysis
        assert analysis is not None, "the checker runs rules on analysed functions only"
        return analysis

    @property
    def module(self) -> ModuleInfo:
        return self.traced.func.module

    # ---- questions rules ask ---------------------------------------------------------------------

    def module_text(self) -> str:
        """The whole file's text (an editor reuses a function's findings only while it is the same)."""
        self.read_module_text = True
        return self.module.source

    def walk(self, root: cst.CSTNode | None = None, prune: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
        """`iter_nodes` over the traced function's body (or a part of it), read from one walk of the body
        shared by the dispatch and every rule's scans."""
        return self.body.walk(root, prune)

    @property
    def body(self) -> FlatTree:
        if self._body is None:
            body = self.traced.func.node.body
            piece = self.traced.func.piece
            warm = warm_indexes() if piece is not None else None  # an editor's: unchanged functions walked once
            self._body = FlatTree(body) if piece is None or warm is None else warm.body_walk(piece.module, body)
        return self._body

    def kind(self, node: cst.CSTNode) -> Kind:
        return self.traced.analysis.kind(node)  # type: ignore[union-attr]

    def captures(self, setting: str) -> bool:
        """Whether dynamo captures what `setting` (analysis/dynamo_config.py) names here instead of breaking
        the graph: under the compile target, when the project turns it on or the root's compile options do
        (`fullgraph=True`, a `config.patch` decorator). Lazy tracers read values whatever dynamo's settings."""
        from cslint.core.targets import get_target

        if not get_target(self.settings.target).follows_dynamo_config:
            return False
        compiled = self.traced.root.compile
        return setting in self.settings.dynamo_config or (compiled is not None and setting in compiled.captures)

    def is_tensor(self, node: cst.CSTNode) -> bool:
        return self.kind(node).is_tensor

    def is_data_dependent(self, node: cst.CSTNode) -> bool:
        return self.kind(node).is_data_dependent

    def truth_is_data_dependent(self, test: cst.BaseExpression) -> bool:
        """Does evaluating `test` as a condition call bool() on a tensor or on a value read from one?"""
        if isinstance(test, cst.BooleanOperation):
            return self.truth_is_data_dependent(test.left) or self.truth_is_data_dependent(test.right)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.truth_is_data_dependent(test.expression)
        return self.is_data_dependent(test)

    def is_condition_part(self, node: cst.CSTNode) -> bool:
        """Is `node` an and/or/not whose truth an if/while/assert/ternary/comprehension test takes?"""
        if self._condition_parts is None:
            parts: set[int] = set()

            def mark(test: cst.BaseExpression) -> None:
                if isinstance(test, cst.BooleanOperation):
                    parts.add(id(test))
                    mark(test.left)
                    mark(test.right)
                elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                    parts.add(id(test))
                    mark(test.expression)

            for n in self.walk():
                if type(n) in _TESTED:
                    mark(n.test)  # type: ignore[attr-defined]
            self._condition_parts = parts
        return id(node) in self._condition_parts

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """Qualified name of a name/attribute through the module's imports (`T.where` -> torch.where)."""
        key = id(node)
        if key in self._resolved:
            return self._resolved[key]
        dotted = dotted_name(node)
        if dotted is None or dotted.split(".")[0] in self.traced.analysis.params:  # type: ignore[union-attr]
            found = None
        else:
            found = self.module.imports.resolve(node)
        self._resolved[key] = found
        return found

    def bound_before(self, stmt: cst.If) -> dict[str, Kind]:
        """Names bound (and their kinds) just before an `if` statement runs."""
        return self.traced.analysis.bound_before.get(id(stmt), {})  # type: ignore[union-attr]

    def torch_name(self) -> tuple[str, frozenset[str]]:
        """How fix code should spell the torch module here, and the imports it needs for that."""
        alias = top_level_alias(self.module, "torch")
        if alias is not None:
            return alias, frozenset()
        return "torch", frozenset({"torch"})

    def code(self, node: cst.CSTNode, limit: int = 48) -> str:
        """Source text of a node for a message, shortened to one line."""
        text = " ".join(cst.Module([]).code_for_node(node).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def report_library_effects(self, node: cst.Call, what: str, does: str, why: str) -> bool:
        """Report, on the call, what an installed library function it calls does that a trace cannot
        (analysis/libraries.py): `what` is the kind of effect this rule reports (its code, for a call of the
        rule table), `does` the phrase after the call's code, `why` the rule's reason. One finding per call and rule; True if there was one."""
        called = self.traced.analysis.library_calls.get(id(node)) if self.traced.analysis is not None else None
        effects = [e for e in called[1].effects if e.what == what] if called is not None else []
        assumption = ""
        if not effects and called is not None and self.settings.include_uncertain:
            # only some of the functions the call (or one in the library) may run do it, which one not known
            effects = [e for e in called[1].possible if e.what == what]
            if effects:
                assumption = (f"assuming `{effects[0].via[-1]}` is the one that runs of the library functions "
                              "a call here may run, not all of which do this")
        if not effects:
            return False
        notes = [effects[0].trail()] + ([f"and {len(effects) - 1} more like it"] if len(effects) > 1 else [])
        call = f"{self.code(node.func, 40)}(...)" if node.args else self.code(node)
        # a line reached by several paths (a function taken from a table of them) is named once
        sites = tuple(dict.fromkeys((e.path, e.line, e.text) for e in effects))
        self.report(node, f"`{call}` {does} {effects[0].describe()}", consequence=why, notes=notes,
                    library_sites=sites, assumption=assumption)
        return True

    # ---- reporting -------------------------------------------------------------------------------

    def report(self, node: cst.CSTNode, message: str, fix: Fix | None = None, consequence: str = "",
               notes: list[str] | None = None, library_sites: tuple[tuple[str, int, str], ...] = (),
               assumption: str = "") -> None:
        """`message` says what is wrong; `consequence`, what it does on a lazy tracer, which a target's own
        note replaces (cslint/engine/messages.py): under torch.compile, for instance, the break and its cost."""
        assert self.current_code
        overrides = self.traced.annotation_overrides
        notes = list(notes or ())
        if overrides:  # `timestep: int` that the traced callers pass a tensor: the callers win, and we say so
            notes += [annotation_note(name, overrides[name]) for name in
                     sorted({n.value for n in self.walk(node) if type(n) is cst.Name and n.value in overrides})]
        self.findings.append(Finding(code=self.current_code, message=message, node=node, traced=self.traced, fix=fix,
                                     consequence=consequence, notes=notes, library_sites=library_sites,
                                     assumption=assumption))


class ModuleScope(Protocol):
    """What a rule with `scope = "module"` is given instead of a `RuleContext`: the file's index, the
    project, and a place to report (checker.ModuleContext)."""

    module: ModuleInfo
    project: Project
    settings: Settings

    def resolve(self, node: cst.BaseExpression) -> str | None: ...

    def code(self, node: cst.CSTNode, limit: int = 48) -> str: ...

    def report(self, node: cst.CSTNode, message: str, fix: Fix | None = None,
               notes: list[str] | None = None) -> None: ...
