"""SambaNova RDU: misuse of `samba.utils.trace_graph`/`trace_multigraph` (the roots they name are found by
cslint/analysis/platforms.py).

Codes WSC851-WSC853: a sub-range of WSC8xx (training-loop APIs that hide a graph change), kept apart for
the SambaFlow entry points; they run on the `rdu` target (or when selected by code). They are
module-scope rules: `trace_graph` is called from a training script, outside any traced function.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.index import FunctionInfo
from cslint.analysis.platforms import classes_of, samba_script
from cslint.analysis.walk import visit
from cslint.rule_api.context import ModuleScope
from cslint.rules.base import Rule

LOSS_WORDS = ("loss", "criterion", "cross_entropy", "nll")


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

    def check_module(self, ctx: ModuleScope) -> None:
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
                                              f"has no `loss_indices={losses}`")
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

    def check_module(self, ctx: ModuleScope) -> None:
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
                ctx.report(call.node, f"trace_multigraph is called again for `{text}`")
            elif looped:
                ctx.report(call.node, f"trace_multigraph for `{text}` runs in a loop, once per iteration")
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

    def check_module(self, ctx: ModuleScope) -> None:
        script = samba_script(ctx.module)
        if script is None or script.grads_initialised:
            return
        for call in script.calls:
            arg = call.keyword("init_output_grads")
            if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False":
                ctx.report(arg, f"{call.api}(init_output_grads=False) but the script never calls "
                                "`init_output_grads(...)`: the output gradients stay uninitialised")
