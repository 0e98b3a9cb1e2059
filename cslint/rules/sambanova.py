"""SambaNova RDU: traced roots from `samba.utils.trace_graph`/`trace_multigraph` calls, and their misuse.

Codes WSC851-WSC853: a sub-range of WSC8xx (training-loop APIs that hide a graph change), kept apart for
the SambaFlow entry points; they run on the `rdu` target (or when selected by code). They are
module-scope rules: `trace_graph` is called from a training script, outside any traced function.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis.project import Project
from cslint.analysis.walk import bound_names, visit
from cslint.rules.base import Rule

TRACE_GRAPH = "samba.utils.trace_graph"
TRACE_MULTIGRAPH = "samba.utils.trace_multigraph"
INIT_OUTPUT_GRADS = "init_output_grads"
LOSS_WORDS = ("loss", "criterion", "cross_entropy", "nll")


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
    for qualified in (TRACE_GRAPH, TRACE_MULTIGRAPH):
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
    finder = _CallFinder(module)
    visit(module.tree, finder)
    if not finder.calls:
        return None
    return SambaScript(finder.calls, finder.assigned, finder.grads_initialised)


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


# ---- rules -------------------------------------------------------------------------------------------


def _returned_tuples(func: FunctionInfo) -> Iterator[cst.Tuple | cst.List]:
    class Returns(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: list[cst.Tuple | cst.List] = []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is func.node

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            if isinstance(node.value, (cst.Tuple, cst.List)):
                self.found.append(node.value)

    visitor = Returns()
    visit(func.node, visitor)
    yield from visitor.found


def _looks_like_loss(expr: cst.BaseExpression) -> bool:
    target = expr.func if isinstance(expr, cst.Call) else expr
    name = (dotted_name(target) or "").rsplit(".", 1)[-1].lower()
    return any(word in name for word in LOSS_WORDS)


class TraceGraphWithoutLossIndices(Rule):
    code = "WSC851"
    name = "trace-graph-without-loss-indices"
    scope = "module"
    summary = ("Checks for `samba.utils.trace_graph(model, ...)` without `loss_indices` when the model's "
               "`forward` returns other tensors together with the loss.")
    why = ("Without `loss_indices` the SambaFlow compiler assumes every output of `forward` is a loss and "
           "back-propagates from all of them: the logits or hidden states returned for metrics get gradients "
           "of their own and the graph trains on the wrong objective.")
    example = """
class Net(nn.Module):
    def forward(self, x, y):
        logits = self.fc(x)
        return self.criterion(logits, y), logits

samba.utils.trace_graph(model, inputs, optim)
"""
    use_instead = """
samba.utils.trace_graph(model, inputs, optim, loss_indices=[0])
"""
    fix_safety = "No fix: which outputs are losses is the author's decision; the message names the likely index."
    VALID = [
        """
from sambaflow import samba
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x, y):
        logits = self.fc(x)
        return self.criterion(logits, y), logits

model = Net()
samba.utils.trace_graph(model, [x, y], optim, loss_indices=[0])
""",
        """
from sambaflow import samba
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x, y):
        return self.criterion(self.fc(x), y)

samba.utils.trace_graph(Net(), [x, y], optim)
""",
    ]
    INVALID = [
        """
from sambaflow import samba
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x, y):
        logits = self.fc(x)
        loss = self.criterion(logits, y)
        return loss, logits

def main(args):
    model = Net()
    optim = samba.optim.SGD(model.parameters(), lr=0.1)
    samba.utils.trace_graph(model, [x, y], optim, init_output_grads=True)  # expect: WSC851
""",
    ]

    def check_module(self, ctx) -> None:  # type: ignore[no-untyped-def]
        script = samba_script(ctx.module)
        if script is None:
            return
        for call in script.calls:
            indices = call.keyword("loss_indices")
            if call.api != "trace_graph" or (indices is not None and dotted_name(indices.value) != "None"):
                continue
            for cls in classes_of(call.model, script, ctx.module, ctx.project):
                forward = ctx.project.find_method(cls, "forward")
                if forward is None:
                    continue
                for returned in _returned_tuples(forward):
                    values = [e.value for e in returned.elements]
                    losses = [i for i, v in enumerate(values) if _looks_like_loss(v)]
                    if losses and len(losses) < len(values):
                        ctx.report(call.node, f"`{cls.name}.forward` returns `{ctx.code(returned)}` and trace_graph "
                                              "has no `loss_indices`: the compiler back-propagates from every "
                                              f"output; pass `loss_indices={losses}`")
                        break
                else:
                    continue
                break


class TraceMultigraphRepeated(Rule):
    code = "WSC852"
    name = "trace-multigraph-repeated"
    scope = "module"
    summary = "Checks for `samba.utils.trace_multigraph` called more than once for the same graph."
    why = ("SambaFlow documents that `trace_multigraph()` must be called only once for each graph: a second "
           "trace re-initialises the graph's weights and tensors on the device and returns new output handles.")
    example = """
for batch in loader:
    outputs = samba.utils.trace_multigraph(graph, batch)
"""
    use_instead = """
outputs = samba.utils.trace_multigraph(graph, inputs)  # once, before the loop
for batch in loader:
    ...
"""
    fix_safety = "No fix: the call has to move out of the loop, or the duplicate be removed, by hand."
    VALID = [
        """
from sambaflow import samba

encoder_out = samba.utils.trace_multigraph(encoder, enc_inputs, trace_prefix="enc")
decoder_out = samba.utils.trace_multigraph(decoder, dec_inputs, trace_prefix="dec")
""",
        """
from sambaflow import samba

handles = {}
for name, graph in graphs.items():
    handles[name] = samba.utils.trace_multigraph(graph, inputs[name])
""",
    ]
    INVALID = [
        """
from sambaflow import samba

fwd = samba.utils.trace_multigraph(encoder, enc_inputs)
out = samba.utils.trace_multigraph(encoder, other_inputs)  # expect: WSC852
""",
        """
from sambaflow.samba.utils import trace_multigraph

def train(graph, loader):
    for batch in loader:
        outputs = trace_multigraph(graph, batch)  # expect: WSC852
""",
    ]

    def check_module(self, ctx) -> None:  # type: ignore[no-untyped-def]
        script = samba_script(ctx.module)
        if script is None:
            return
        seen: set[str] = set()
        for call in script.calls:
            graph = call.model
            if call.api != "trace_multigraph" or graph is None:
                continue
            text = ctx.code(graph, limit=200)
            used = {n.value for n in _all_names(graph)}
            looped = any(not (used & loop) for loop in call.loops)
            if text in seen:
                ctx.report(call.node, f"trace_multigraph is called again for `{text}`: trace each graph once")
            elif looped:
                ctx.report(call.node, f"trace_multigraph for `{text}` runs in a loop, once per iteration: "
                                      "trace each graph once, before the loop")
            seen.add(text)


def _all_names(node: cst.CSTNode) -> Iterator[cst.Name]:
    class Names(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: list[cst.Name] = []

        def visit_Name(self, n: cst.Name) -> None:
            self.found.append(n)

    visitor = Names()
    visit(node, visitor)
    yield from visitor.found


class InitOutputGradsDisabled(Rule):
    code = "WSC853"
    name = "output-grads-not-initialised"
    scope = "module"
    summary = ("Checks for `trace_graph`/`trace_multigraph` with `init_output_grads=False` in a script that "
               "never calls `init_output_grads(...)` itself.")
    why = ("With `init_output_grads=False` SambaFlow leaves the output gradients on the device uninitialised; "
           "unless the script sets them (`samba.utils.init_output_grads`), back-propagation starts from "
           "whatever the device memory holds.")
    example = """
samba.utils.trace_graph(model, inputs, optim, init_output_grads=False)
"""
    use_instead = """
samba.utils.trace_graph(model, inputs, optim)  # init_output_grads=True: gradients of ones
# or keep False and call samba.utils.init_output_grads(model.output_tensors, ...) yourself
"""
    fix_safety = "No fix: dropping the argument is right only when the outputs' gradients should be ones."
    VALID = [
        """
from sambaflow import samba

samba.utils.trace_graph(model, inputs, optim, init_output_grads=False)
samba.utils.init_output_grads(model.output_tensors, customized_tensors_dict={"loss": scale})
""",
        """
from sambaflow import samba

samba.utils.trace_graph(model, inputs, optim, init_output_grads=True)
""",
    ]
    INVALID = [
        """
from sambaflow import samba

def main():
    model = Net()
    samba.utils.trace_graph(model, inputs, optim, init_output_grads=False)  # expect: WSC853
""",
    ]

    def check_module(self, ctx) -> None:  # type: ignore[no-untyped-def]
        script = samba_script(ctx.module)
        if script is None or script.grads_initialised:
            return
        for call in script.calls:
            arg = call.keyword("init_output_grads")
            if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False":
                ctx.report(arg, f"{call.api}(init_output_grads=False) but the script never calls "
                                "`init_output_grads(...)`: the output gradients stay uninitialised")
