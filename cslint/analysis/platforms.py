"""SambaNova RDU entry points: the `samba.utils.trace_graph`/`trace_multigraph` calls of a training script,
and the model `forward` / optimizer `step` they trace (platform roots, found in any target: they only name
what gets traced). The WSC85x rules read the same calls (cslint/rules/sambanova.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis.project import Project
from cslint.analysis.walk import bound_names, visit
from cslint.core.targets import get_target

SAMBA_CALLS = get_target("rdu").script_calls  # trace_graph and trace_multigraph, whose arguments SambaCall reads
INIT_OUTPUT_GRADS = "init_output_grads"


@dataclass(eq=False)
class SambaCall:
    node: cst.Call
    api: str  # "trace_graph" or "trace_multigraph"
    loops: tuple[frozenset[str], ...]  # names bound by each enclosing loop (empty set for `while`)

    def arg(self, position: int, keyword: str) -> cst.BaseExpression | None:
        for arg in self.node.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                return arg.value
        positional = [a for a in self.node.args if a.keyword is None and not a.star]
        return positional[position].value if position < len(positional) else None

    def keyword(self, name: str) -> cst.Arg | None:
        return next((a for a in self.node.args if a.keyword is not None and a.keyword.value == name), None)

    @property
    def model(self) -> cst.BaseExpression | None:
        return self.arg(0, "model" if self.api == "trace_graph" else "graph")

    @property
    def optimizers(self) -> cst.BaseExpression | None:
        return self.arg(2, "optim" if self.api == "trace_graph" else "optimizers")


def _samba_api(name: str | None) -> str | None:
    if name is None:
        return None
    for qualified in SAMBA_CALLS:
        if name == qualified or name.endswith("." + qualified):
            return qualified.rsplit(".", 1)[1]
    return None


class _CallFinder(cst.CSTVisitor):
    def __init__(self, module: ModuleInfo) -> None:
        self.module = module
        self.loops: list[frozenset[str]] = []
        self.calls: list[SambaCall] = []
        self.assigned: dict[str, list[cst.BaseExpression]] = {}  # `model = Net()` / `self.opt = ...`
        self.grads_initialised = False

    def visit_For(self, node: cst.For) -> None:
        self.loops.append(frozenset(n.value for n in bound_names(node.target)))

    def leave_For(self, original_node: cst.For) -> None:
        self.loops.pop()

    def visit_While(self, node: cst.While) -> None:
        self.loops.append(frozenset())

    def leave_While(self, original_node: cst.While) -> None:
        self.loops.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = dotted_name(target.target)
            if name is not None:
                self.assigned.setdefault(name, []).append(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        name = self.module.imports.resolve(node.func)
        api = _samba_api(name)
        if api is not None:
            self.calls.append(SambaCall(node, api, tuple(self.loops)))
        elif (dotted_name(node.func) or "").rsplit(".", 1)[-1] == INIT_OUTPUT_GRADS:
            self.grads_initialised = True


@dataclass
class SambaScript:
    calls: list[SambaCall]
    assigned: dict[str, list[cst.BaseExpression]]
    grads_initialised: bool


def samba_script(module: ModuleInfo) -> SambaScript | None:
    """The SambaFlow calls of a file, or None for the (many) files that make none."""
    if "trace_graph" not in module.source and "trace_multigraph" not in module.source:
        return None
    if not _imports_samba(module):  # a call resolves to samba.utils only through an import naming samba
        return None
    finder = _CallFinder(module)
    visit(module.tree, finder)
    if not finder.calls:
        return None
    return SambaScript(finder.calls, finder.assigned, finder.grads_initialised)


def _imports_samba(module: ModuleInfo) -> bool:
    return any("samba" in full.split(".") for full in module.imports.names.values())


def classes_of(expr: cst.BaseExpression | None, script: SambaScript, module: ModuleInfo,
               project: Project) -> list[ClassInfo]:
    """Project classes an argument is an instance of: `Net()`, or a name assigned `Net(...)`; lists too."""
    if expr is None:
        return []
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [c for element in expr.elements for c in classes_of(element.value, script, module, project)]
    if isinstance(expr, cst.Call):
        dotted = dotted_name(expr.func)
        found = project.lookup_class(module.imports.qualify(dotted)) if dotted else None
        return [found] if found is not None else []
    dotted = dotted_name(expr)
    if dotted is None:
        return []
    out: list[ClassInfo] = []
    for value in script.assigned.get(dotted, []):
        if isinstance(value, cst.Call):  # one level: `model = Net()`, not `model = other`
            out.extend(classes_of(value, script, module, project))
    return out


def sambanova_roots(project: Project, modules: Iterable[ModuleInfo]) -> Iterator[tuple[FunctionInfo, str]]:
    """The model's `forward` and the optimizers' `step` of every trace_graph/trace_multigraph call in
    `modules` (the classes they name may be defined anywhere in `project`)."""
    for module in modules:
        script = samba_script(module)
        if script is None:
            continue
        for call in script.calls:
            for cls in classes_of(call.model, script, module, project):
                forward = project.find_method(cls, "forward")
                if forward is not None:
                    yield forward, f"forward of {cls.name}, passed to samba.utils.{call.api}()"
            for cls in classes_of(call.optimizers, script, module, project):
                step = project.find_method(cls, "step")
                if step is not None:
                    yield step, f"step of {cls.name}, passed to samba.utils.{call.api}()"


def platform_roots(project: Project, modules: Iterable[ModuleInfo]) -> Iterator[tuple[FunctionInfo, str]]:
    """Roots named by a platform's entry points in `modules`, found in any target. torch_xla's training
    loops (`xm.mark_step()`) are found in any target too, by `find_roots`."""
    yield from sambanova_roots(project, modules)
