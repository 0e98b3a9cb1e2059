"""Roots from the classic torch_xla training loop.

    for x, y in loader:
        loss = train_step(model, x, y, optimizer)
        xm.mark_step()        # or torch_xla.sync()

XLA records every tensor operation of an iteration lazily and compiles the graph at `mark_step()`, so
what the loop body calls runs traced, exactly like a `@cstorch.trace` step. The functions of the linted
tree called in such a loop become step-function roots: their `model`/`optimizer` parameters are
resolved as for a decorated step, so `Net.forward` and `AdamW.step` findings carry the chain from them.
Statements written directly in the loop body are not analysed (they are not a function); move them
into the step function to have them checked. These roots are found for every target: `mark_step` only
appears in XLA code.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.index import FunctionInfo, ModuleInfo
from cslint.analysis.project import Project
from cslint.analysis.walk import iter_nodes

MARK_STEP = frozenset({"torch_xla.core.xla_model.mark_step", "torch_xla.sync", "torch_xla.step"})


def xla_loop_roots(project: Project) -> Iterator[tuple[FunctionInfo, str]]:
    for module in project.modules.values():
        if "mark_step" not in module.source and "torch_xla" not in module.source:
            continue
        for loop, where, owner in _loops(module):
            calls = [n for n in iter_nodes(loop.body) if isinstance(n, cst.Call)]
            if not any(module.imports.resolve(c.func) in MARK_STEP for c in calls if dotted_name(c.func)):
                continue
            for call in calls:
                target = _callee(project, module, owner, call)
                if target is not None and target is not owner:
                    target.step_function = True
                    yield target, f"called in a loop of {where} that ends each step with xm.mark_step()"


def _loops(module: ModuleInfo) -> Iterator[tuple[cst.For | cst.While, str, FunctionInfo | None]]:
    functions = list(module.functions.values()) + [m for c in module.classes.values() for m in c.methods.values()]
    for func in functions:
        for node in iter_nodes(func.node.body):
            if isinstance(node, (cst.For, cst.While)):
                yield node, func.display_name, func
    for stmt in module.tree.body:  # a training script's top-level loop
        if isinstance(stmt, (cst.For, cst.While)):
            yield stmt, module.name, None


def _callee(project: Project, module: ModuleInfo, owner: FunctionInfo | None, call: cst.Call) -> FunctionInfo | None:
    dotted = dotted_name(call.func)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    if owner is not None and owner.cls is not None and head == "self" and rest and "." not in rest:
        return project.find_method(owner.cls, rest)
    return project.lookup_function(module.imports.qualify(dotted))
