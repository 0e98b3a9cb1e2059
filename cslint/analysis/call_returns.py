"""What a small helper returns for the arguments of one call, not for all its callers together.

A traced helper is analysed once, with the join of what its callers pass, and that one result served
every caller: `default(causal, self.causal)` returned a tensor to every caller as soon as one of them
passed a tensor, so a flag the next caller passed came back "a tensor" and its `if causal:` was
reported. Small helpers of this kind (`default`, `exists`, `cast_tuple`, `divisible_by`) are everywhere
in model code; each call of one is answered by analysing its body with that call's arguments.

The answer depends only on the helper's code and the call's arguments (class attributes, module-level
objects and installed libraries' summaries are fixed for a run), never on how far the program's fixed
point has got: a helper that calls a project function which is not itself small enough gets no answer
of its own, and the caller takes the joined result as before.
"""

from __future__ import annotations

import ast
import weakref

import libcst as cst

from cslint.analysis.ast_function import ast_function
from cslint.analysis.call_depth import CallChain, Reach, reach
from cslint.analysis.index import FunctionInfo
from cslint.analysis.inference import FunctionInference
from cslint.analysis.kinds import STATIC, UNKNOWN, Kind
from cslint.analysis.param_kinds import helper_param_kinds
from cslint.analysis.project import Project
from cslint.analysis.project_oracle import ProjectOracle
from cslint.analysis.ranks import declared_scalar
from cslint.analysis.tracing_guards import Guards
from cslint.core.targets import DYNAMO
from cslint.analysis.walk import child_nodes

# Statements (at any depth) a helper may have to be analysed per call: a one-screen utility, not a layer.
MAX_STATEMENTS = 8
MAX_LINES = 3 * MAX_STATEMENTS  # decorators, signature, docstring and comments included
# Small helpers calling small helpers: how deep one call's answer may go.
MAX_DEPTH = 3
_ALLOWED_DECORATORS = frozenset({"staticmethod", "classmethod"})


class CallSiteOracle(ProjectOracle):
    """The oracle of one traced program: adds per-call answers for small helpers (`call_return`)."""

    def __init__(self, project: Project, guards: Guards | None) -> None:
        super().__init__(project)
        self.guards = guards
        self._answers: dict[tuple[str, tuple[tuple[str, Kind], ...]], tuple[Kind | None, Reach]] = {}
        self._chain = CallChain(MAX_DEPTH)

    def call_return(self, qualname: str, given: dict[str, Kind]) -> Kind | None:
        key = (qualname, tuple(sorted(given.items())))
        known = self._answers.get(key)
        if known is not None and self._chain.reusable(known[1]):
            self._chain.reuse(known[1])
            return known[0]
        if self._chain.refused(key):
            return None
        func = self.project.lookup_function(qualname)
        if func is None or not is_small_helper(func):
            self._answers[key] = (None, Reach(1, frozenset({key})))
            return None
        with self._chain.working_out(key) as frame:
            inference = _OneCall(self.project, self, func, helper_param_kinds(self, func, given), guards=self.guards)
            analysis = inference.run()
        answer = None if inference.open else (analysis.return_kind if analysis.returns_value else STATIC)
        if answer is not None and (self.guards is None or self.guards.tracer != DYNAMO):
            answer = declared_scalar(answer, func.node.returns)  # as the program takes a result (traced.py)
        if not frame.cut:  # else the answer depends on the chain of calls that led here
            self._answers[key] = (answer, reach(frame))
        return answer


class _OneCall(FunctionInference):
    """A helper's body analysed for one call: a project function it calls must be answered the same way,
    or the helper is left open (its answer would depend on the program's progress)."""

    open = False

    def _project_result(self, target: FunctionInfo, bound: dict[str, Kind]) -> Kind:
        specific = self.oracle.call_return(target.qualname, bound)
        if specific is None:
            self.open = True
            return UNKNOWN
        return specific


_SMALL: weakref.WeakKeyDictionary[FunctionInfo, bool] = weakref.WeakKeyDictionary()


def is_small_helper(func: FunctionInfo) -> bool:
    """A library-free, undecorated, non-generator function of at most MAX_STATEMENTS statements with no
    `**kwargs` (what callers pass by name there is the program's) and no functions or classes inside."""
    small = _SMALL.get(func)
    if small is None:
        small = _SMALL[func] = func.module.library is None and _short_text(func) and _small_function(func)
    return small


def _short_text(func: FunctionInfo) -> bool:
    """Judged from the source span, so that a long function is never parsed for the question."""
    span = func.span
    return span is None or func.module.source.count("\n", span.start, span.end) <= MAX_LINES


def _small_function(func: FunctionInfo) -> bool:
    """`_small_node`, judged on Python's `ast` of the function's text when it is not parsed yet: many helpers
    asked about are not small, and are then never parsed with libcst (several times slower)."""
    if func._node is None and func.span is not None:
        tree = ast_function(func)
        if tree is not None:
            return _small_ast(tree)
    return _small_node(func.node)


def _small_ast(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`_small_node` on an `ast` function: the same decorators, `**kwargs` and statements."""
    if node.args.kwarg is not None or any(
            not (isinstance(d, ast.Name) and d.id in _ALLOWED_DECORATORS) for d in node.decorator_list):
        return False
    count = 0
    for stmt in node.body:
        for current in ast.walk(stmt):
            if isinstance(current, _AST_REFUSED):
                return False
            if isinstance(current, ast.stmt):
                count += 1
                if count > MAX_STATEMENTS:
                    return False
    return True


_AST_REFUSED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Yield, ast.YieldFrom)


def _small_node(node: cst.FunctionDef) -> bool:
    if node.params.star_kwarg is not None or any(
            not (isinstance(d.decorator, cst.Name) and d.decorator.value in _ALLOWED_DECORATORS)
            for d in node.decorators):
        return False
    count = 0
    stack: list[cst.CSTNode] = [node.body]
    while stack:
        current = stack.pop()
        role = _ROLES[type(current)]
        if role is _REFUSED:
            return False
        if role is _STATEMENT:
            count += 1
            if count > MAX_STATEMENTS:
                return False
        stack.extend(child_nodes(current))  # libcst's `children` builds each list with a visitor: far slower
    return True


_REFUSED, _STATEMENT, _OTHER = "refused", "statement", "other"


class _Roles(dict):  # type: ignore[type-arg]
    """node type -> its role in `_small_node`, asked once per type: `isinstance` against libcst's abstract
    statement classes goes through ABCMeta for every node."""

    def __missing__(self, kind: type) -> str:
        if issubclass(kind, (cst.FunctionDef, cst.ClassDef, cst.Yield)):
            role = _REFUSED
        elif issubclass(kind, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            role = _STATEMENT
        else:
            role = _OTHER
        self[kind] = role
        return role


_ROLES = _Roles()
