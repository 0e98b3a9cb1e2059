"""Tracing predicates: `torch.compiler.is_compiling()` and friends, and what they answer under each tracer.

Library code guards itself with them (`if is_torchdynamo_compiling(): return False`). Under
torch.compile (dynamo) the compile predicates are true while tracing and the code they skip is dead there;
lazy-tensor tracing (WSC, XLA, RDU) is none of dynamo, TorchScript or FX, so every one of them is false
and the code after the guard runs traced. A project function whose returns are such predicates (or
constants) is a predicate too.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.index import FunctionInfo, ModuleInfo
from cslint.analysis.project import Project
from cslint.analysis.walk import FlatTree, iter_nodes

LAZY = "lazy"  # lazy tensors: cerebras.pytorch, torch_xla, SambaFlow
DYNAMO = "dynamo"  # torch.compile / torch.export

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
}
LIBRARY_ROOTS = ("transformers.", "diffusers.", "timm.", "accelerate.", "peft.")


class Guards:
    """What tracing predicates answer under one tracer, for calls in one project."""

    def __init__(self, project: Project, tracer: str) -> None:
        self.project = project
        self.tracer = tracer
        self._helpers: dict[str, bool | None] = {}

    def call_value(self, module: ModuleInfo, call: cst.Call) -> bool | None:
        """True/False when `call` is a tracing predicate (or a helper built on one), else None."""
        dotted = dotted_name(call.func)
        if dotted is None:
            return None
        qualified = module.imports.resolve(call.func)
        if qualified is None:  # `import torch._dynamo as dynamo` inside the helper: not a module-level import
            last = dotted.rsplit(".", 1)[-1]
            return self.tracer in LIBRARY_HELPERS[last] if "." in dotted and last in LIBRARY_HELPERS else None
        if qualified in PREDICATES:
            return self.tracer in PREDICATES[qualified]
        helper = self.project.lookup_function(qualified)
        found = self._helper_value(helper) if helper is not None else None
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
        for node in iter_nodes(func.node.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
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
