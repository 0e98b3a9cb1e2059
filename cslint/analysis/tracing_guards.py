"""Tracing predicates: `torch.compiler.is_compiling()` and friends, and what they answer under each tracer.

Library code guards itself with them (`if is_torchdynamo_compiling(): return False`). Under
torch.compile (dynamo) the compile predicates are true while tracing and the code they skip is dead there;
lazy-tensor tracing (WSC, XLA, RDU) is none of dynamo, TorchScript or FX, so every one of them is false
and the code after the guard runs traced. A project function whose returns are such predicates (or
constants) is a predicate too, and so is a module-level name bound to one behind a fallback
(`_is_compiling = torch.compiler.is_compiling if hasattr(torch.compiler, "is_compiling") else lambda: False`,
`getattr(torch.compiler, "is_compiling", None) or getattr(torch._dynamo, "is_compiling", None)`, one
binding per branch of a version check): projects wrap the predicate so that old torch versions still import.
"""

from __future__ import annotations

import ast
import builtins
import re

import libcst as cst

from cslint.analysis.import_scan import ast_dotted_name
from cslint.analysis.imports import dotted_name
from cslint.analysis.index import FunctionInfo, ModuleInfo
from cslint.analysis.project import Project
from cslint.analysis.torch_facts import attribute_guard, version_guard
from cslint.analysis.walk import FlatTree, iter_nodes
from cslint.core.targets import DYNAMO, LAZY

# Predicate -> the tracers under which it is true while tracing.
PREDICATES: dict[str, frozenset[str]] = {
    "torch.compiler.is_compiling": frozenset({DYNAMO}),
    "torch.compiler.is_dynamo_compiling": frozenset({DYNAMO}),
    "torch._dynamo.is_compiling": frozenset({DYNAMO}),
    "torch._dynamo.external_utils.is_compiling": frozenset({DYNAMO}),
    "torch._utils.is_compiling": frozenset({DYNAMO}),
    "torch.jit.is_tracing": frozenset(),
    "torch.jit.is_scripting": frozenset(),
    "torch._C._get_tracing_state": frozenset(),
    "torch.fx._symbolic_trace.is_fx_tracing": frozenset(),
    "torch.compiler.is_exporting": frozenset(),
}
# Helpers of libraries a project imports (not analysed when the library is not linted), by last name.
LIBRARY_HELPERS: dict[str, frozenset[str]] = {
    "is_torchdynamo_compiling": frozenset({DYNAMO}),
    "is_torch_compiling": frozenset({DYNAMO}),
    "is_compiling": frozenset({DYNAMO}),
    "is_jit_tracing": frozenset(),
    "is_torch_fx_proxy": frozenset(),
    "is_fx_tracing": frozenset(),
    "is_tracing": frozenset({DYNAMO}),  # transformers: dynamo, jit, fx or stream capture, never lazy tensors
    "is_torchdynamo_exporting": frozenset(),
}
LIBRARY_ROOTS = ("transformers.", "diffusers.", "timm.", "accelerate.", "peft.")
_PREDICATE_NAMES = tuple(sorted({name.rsplit(".", 1)[-1] for name in PREDICATES}))
_FALLBACK = "fallback"  # a constant or None beside a predicate: what the name is when torch has no predicate
_BUILTINS = frozenset(dir(builtins))


class Guards:
    """What tracing predicates answer under one tracer, for calls in one project."""

    def __init__(self, project: Project, tracer: str) -> None:
        self.project = project
        self.tracer = tracer
        self._helpers: dict[str, bool | None] = {}
        self._bindings: dict[str, dict[str, list[ast.expr]]] = {}  # module -> its module-level assignments
        self._aliases: dict[tuple[str, str], bool | None] = {}

    def call_value(self, module: ModuleInfo, call: cst.Call) -> bool | None:
        """True/False when `call` is a tracing predicate (or a helper built on one), else None."""
        dotted = dotted_name(call.func)
        if dotted is None:
            return None
        if dotted == "bool" and len(call.args) == 1 and not call.args[0].keyword and not call.args[0].star:
            return self.value(module, call.args[0].value)
        if dotted == "hasattr":  # `if not hasattr(torch, "nextafter"):` a fallback for an older torch
            libraries = self.project.libraries
            return attribute_guard(module, call, libraries.environment if libraries is not None else None)
        qualified = module.imports.resolve(call.func)
        if qualified is None:  # `import torch._dynamo as dynamo` inside the helper: not a module-level import
            if "." not in dotted:  # a module-level name of this module
                return self._alias_value(module, dotted)
            last = dotted.rsplit(".", 1)[-1]
            return self.tracer in LIBRARY_HELPERS[last] if last in LIBRARY_HELPERS else None
        if qualified in PREDICATES:
            return self.tracer in PREDICATES[qualified]
        helper = self.project.lookup_function(qualified)
        found = self._helper_value(helper) if helper is not None else None
        if found is None and helper is None:
            owner, _, name = qualified.rpartition(".")
            defining = self.project.modules.get(owner)
            found = self._alias_value(defining, name) if defining is not None else None
        if found is not None:
            return found
        last = qualified.rsplit(".", 1)[-1]
        if last in LIBRARY_HELPERS and qualified.startswith(LIBRARY_ROOTS):
            return self.tracer in LIBRARY_HELPERS[last]
        return None

    def value(self, module: ModuleInfo, expr: cst.BaseExpression, names: dict[str, bool] | None = None
              ) -> bool | None:
        """The truth of `expr` while tracing, when tracing predicates decide it."""
        if type(expr) is cst.Call:
            return self.call_value(module, expr)
        if type(expr) is cst.Name:
            if names is not None and expr.value in names:
                return names[expr.value]
            return {"True": True, "False": False}.get(expr.value)
        if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Not:
            inner = self.value(module, expr.expression, names)
            return None if inner is None else not inner
        if type(expr) is cst.IfExp:  # `pred() if pred is not None else False`: the predicate decides
            return _combined([self.value(module, expr.body, names), self.value(module, expr.orelse, names)],
                             [_constant(expr.body), _constant(expr.orelse)])
        if type(expr) is cst.Comparison:  # `torch.__version__ < "1.7"`
            return version_guard(module, expr)
        if type(expr) is cst.BooleanOperation:
            left = self.value(module, expr.left, names)
            is_or = type(expr.operator) is cst.Or
            if left is is_or:  # `True or ...`, `False and ...`
                return left
            right = self.value(module, expr.right, names)
            if right is is_or:
                return right
            return left if left is not None and right is not None else None
        return None

    def _helper_value(self, func: FunctionInfo) -> bool | None:
        name = func.qualname
        if name in self._helpers:
            return self._helpers[name]
        self._helpers[name] = None  # recursion: undecided
        self._helpers[name] = found = self._returns_value(func)
        return found

    def _returns_value(self, func: FunctionInfo) -> bool | None:
        """A function whose every return is a predicate or a constant (`return torch.compiler.is_compiling()`,
        `except ImportError: return False`), at least one a predicate: true when any predicate is."""
        names: dict[str, bool] = {}
        predicates: list[bool] = []
        dead = self._unavailable_paths(func)
        for node in iter_nodes(func.node.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if id(node) in dead:
                continue
            if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
                found = self.value(func.module, node.value, names)
                if found is not None:
                    names[node.targets[0].target.value] = found
            elif type(node) is cst.Return:
                if node.value is None:
                    return None
                found = self.value(func.module, node.value, names)
                if found is None:
                    return None
                if not _constant(node.value):
                    predicates.append(found)
        return any(predicates) if predicates else None

    def _unavailable_paths(self, func: FunctionInfo) -> set[int]:
        """The nodes of `func` that a check of the predicate's availability skips: `if _pred is not None:
        return bool(_pred())` (then what follows the `if` is the fallback for an older torch, which the
        installed one does not take), `if hasattr(torch.compiler, "is_exporting"):`."""
        dead: set[int] = set()
        prune = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
        for block in iter_nodes(func.node.body, prune=prune):
            statements = getattr(block, "body", None)
            if type(block) is not cst.IndentedBlock or not isinstance(statements, (list, tuple)):
                continue
            for i, stmt in enumerate(statements):
                available = self._available(func.module, stmt.test) if type(stmt) is cst.If else None
                if available is None:
                    continue
                skipped: list[cst.CSTNode] = [stmt.orelse] if available and stmt.orelse is not None else []
                if not available:
                    skipped.append(stmt.body)
                elif type(stmt.body) is cst.IndentedBlock and stmt.body.body and _returns(stmt.body.body[-1]):
                    skipped.extend(statements[i + 1:])
                for root in skipped:
                    dead.update(id(n) for n in iter_nodes(root))
        return dead

    def _available(self, module: ModuleInfo, test: cst.BaseExpression) -> bool | None:
        """True/False when `test` asks whether a tracing predicate exists (`_pred is not None`, `hasattr(torch.
        compiler, "is_compiling")`): the ones cslint knows all exist in the torch it supports."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            inner = self._available(module, test.expression)
            return None if inner is None else not inner
        if type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.left) is cst.Name \
                and type(test.comparisons[0].comparator) is cst.Name and test.comparisons[0].comparator.value == "None":
            operator = type(test.comparisons[0].operator)
            bindings = self._bindings_of(module, test.left.value)
            if operator in (cst.Is, cst.IsNot) and bindings and all(
                    isinstance(self._reference(module, b), bool) for b in bindings):
                return operator is cst.IsNot
        if type(test) is cst.Call and dotted_name(test.func) == "hasattr" and len(test.args) == 2 \
                and type(test.args[1].value) is cst.SimpleString:
            owner = dotted_name(test.args[0].value)
            name = test.args[1].value.evaluated_value
            if owner is not None and isinstance(name, str) and module.imports.qualify(f"{owner}.{name}") in PREDICATES:
                return True
        return None

    # ---- module-level names bound to a predicate ------------------------------------------------

    def _alias_value(self, module: ModuleInfo, name: str) -> bool | None:
        """What calling the module-level `name` answers, when every binding of it is a tracing predicate or
        a fallback (None, a constant, `lambda: False`) and at least one is a predicate."""
        key = (module.name, name)
        if key in self._aliases:
            return self._aliases[key]
        self._aliases[key] = None  # recursion: undecided
        values = [self._reference(module, value) for value in self._bindings_of(module, name)]
        self._aliases[key] = found = _combined(values, [v == _FALLBACK for v in values])  # type: ignore[arg-type]
        return found

    def _bindings_of(self, module: ModuleInfo, name: str) -> list[ast.expr]:
        """The values the module's module-level code assigns to `name`; the file is parsed only when a line
        of it assigns the name (most plain calls in traced code are of builtins, locals and functions)."""
        if name in _BUILTINS or not re.search(rf"^[ \t]*{re.escape(name)}[ \t]*(?::[^=\n]*)?=(?!=)", module.source,
                                              re.MULTILINE):
            return []
        return self._module_bindings(module).get(name, [])

    def _module_bindings(self, module: ModuleInfo) -> dict[str, list[ast.expr]]:
        """The module's module-level assignments by name (inside `if`/`try` blocks too), read only from a
        file that names a tracing predicate."""
        found = self._bindings.get(module.name)
        if found is None:
            found = self._bindings[module.name] = {}
            if any(name in module.source for name in _PREDICATE_NAMES):
                try:
                    body = ast.parse(module.source).body
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    body = []
                for stmt in _module_level(body):
                    if isinstance(stmt, ast.Assign):
                        for target in stmt.targets:
                            if isinstance(target, ast.Name):
                                found.setdefault(target.id, []).append(stmt.value)
                    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
                        found.setdefault(stmt.target.id, []).append(stmt.value)
        return found

    def _reference(self, module: ModuleInfo, expr: ast.expr) -> bool | str | None:
        """What calling the object `expr` evaluates to answers: True/False for a predicate, `_FALLBACK` for
        None, a constant or a lambda returning one, None when it is anything else."""
        if isinstance(expr, ast.Constant) and (expr.value is None or isinstance(expr.value, bool)):
            return _FALLBACK
        if isinstance(expr, ast.Lambda):
            body = expr.body
            if isinstance(body, ast.Constant) and isinstance(body.value, bool):
                return _FALLBACK
            return self._reference(module, body.func) if isinstance(body, ast.Call) and not body.args else None
        if isinstance(expr, ast.IfExp):
            values = [self._reference(module, expr.body), self._reference(module, expr.orelse)]
            return _combined(values, [v == _FALLBACK for v in values])  # type: ignore[arg-type]
        if isinstance(expr, ast.BoolOp):
            values = [self._reference(module, v) for v in expr.values]
            return _combined(values, [v == _FALLBACK for v in values])  # type: ignore[arg-type]
        dotted = ast_dotted_name(expr)
        if isinstance(expr, ast.Call) and ast_dotted_name(expr.func) == "getattr" and len(expr.args) in (2, 3) \
                and isinstance(expr.args[1], ast.Constant) and isinstance(expr.args[1].value, str):
            owner = ast_dotted_name(expr.args[0])  # `getattr(torch.compiler, "is_compiling", None)`
            dotted = f"{owner}.{expr.args[1].value}" if owner else None
            if len(expr.args) == 3 and self._reference(module, expr.args[2]) != _FALLBACK:
                return None
        if dotted is None:
            return None
        qualified = module.imports.qualify(dotted)
        if qualified in PREDICATES:
            return self.tracer in PREDICATES[qualified]
        if "." not in dotted and dotted not in module.imports.names:
            return self._alias_value(module, dotted)
        helper = self.project.lookup_function(qualified)
        return self._helper_value(helper) if helper is not None else None


def _combined(values: list[bool | None], fallbacks: list[bool]) -> bool | None:
    """The answer of a choice between `values` (the branches of an `if`/`else`, an `or`): the predicates
    decide, constants beside them are fallbacks; None when one is unknown, none is a predicate, or the
    predicates disagree (which one the installed torch takes is not known here)."""
    if any(v is None for v in values):
        return None
    predicates = {v for v, fallback in zip(values, fallbacks) if not fallback}
    return predicates.pop() if len(predicates) == 1 else None


def _returns(stmt: cst.BaseStatement) -> bool:
    return type(stmt) is cst.SimpleStatementLine and any(type(s) is cst.Return for s in stmt.body)


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, (ast.If, ast.Try, ast.With)):
            for block in (stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", []),
                          *(h.body for h in getattr(stmt, "handlers", []))):
                found.extend(_module_level(block))
    return found



def _constant(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Name and expr.value in ("True", "False")


def guard_text(expr: cst.BaseExpression) -> str:
    text = " ".join(cst.Module([]).code_for_node(expr).split())
    return text if len(text) <= 60 else text[:57] + "..."


def guard_regions(tree: FlatTree, dead: set[int], unguarded: dict[int, str]) -> dict[int, str | None]:
    """Every node of `tree` inside a part the tracer never runs (-> None) or runs after a guard that does not
    hold for it (-> the guard's text); an inner mark wins over an outer one."""
    regions: dict[int, str | None] = {}
    nodes, ends = tree.nodes, tree.ends
    for i, node in enumerate(nodes):
        key = id(node)
        if key in dead or key in unguarded:
            mark = None if key in dead else unguarded[key]
            for j in range(i, ends[i]):
                inner = id(nodes[j])
                if mark is None or regions.get(inner, "") is not None:
                    regions[inner] = mark
    return regions


def guard_note(guard: str, tracer: str) -> str:
    how = "lazy tracing" if tracer == LAZY else "torch.compile"
    return f"traced: `{guard}` is false under {how}"
