"""WSC705's fix under `--target compile`: a switch that turns `requires_grad` on for a tensor the step makes
(`h = x[:, None]` then `h.requires_grad = True`; `loss = self.zero` of a buffer then `loss.requires_grad_()`)
is skipped while torch.compile traces.

Dynamo cannot trace the switch. Such switches serve eager autograd: reentrant checkpointing computes the
parameters' gradients only when an input requires grad, and a zero loss must be differentiable on its own.
Under torch.compile AOTAutograd differentiates the whole graph, checkpoints included, whatever the input's
flag, so the parameters' gradients stay the same. A switch on a parameter (freezing or unfreezing part of the
model), on the function's own inputs, or on a tensor whose `.grad` the function reads is left alone: there
the flag is the point.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.syntax import string_value
from cslint.analysis.walk import iter_nodes
from cslint.fixers.compile_guard import skip_under_compile, statement_of
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

_MADE = (cst.Call, cst.BinaryOperation, cst.Subscript)  # a new tensor or a view of one, not an alias


def skip_switch_under_compile(switch: cst.CSTNode, tensor: str, made_by: cst.BaseExpression | None,
                              ctx: RuleContext) -> Fix | None:
    """`switch` (the call or assignment turning `tensor`'s `requires_grad` on), guarded; `made_by` is the
    value last assigned to `tensor` before it in the step."""
    if made_by is None or not (isinstance(made_by, _MADE) or _own_buffer(made_by, ctx)):
        return None
    if _reads_gradient_of(tensor, ctx):
        return None
    stmt = statement_of(switch, ctx)
    if stmt is None:
        return None
    torch, guarded, imports = skip_under_compile(stmt, ctx)
    return Fix("unsafe", f"Skip it while torch.compile traces (`if not {torch}.compiler.is_compiling():`): the "
                         "compiled graph differentiates through checkpoints without it, so the parameters' "
                         f"gradients are unchanged; unsafe: in compiled runs `{tensor}` does not require grad, so "
                         "its own gradient is not computed and a result whose only gradient path is it has none "
                         "(eager runs are unchanged)",
               [(stmt, guarded)], imports)


def _own_buffer(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`self.zero` where the function's class registers `zero` as a buffer (never a parameter's alias)."""
    cls = ctx.traced.func.cls
    if not (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"
            and cls is not None and "__init__" in cls.methods):
        return False
    for node in iter_nodes(cls.methods["__init__"].node):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == "register_buffer" and node.args \
                and string_value(node.args[0].value) == value.attr.value:
            return True
    return False


def _reads_gradient_of(tensor: str, ctx: RuleContext) -> bool:
    """The function reads `tensor.grad` or asks autograd for gradients (`torch.autograd.grad(out, tensor)`)."""
    for node in ctx.walk():
        if isinstance(node, cst.Attribute) and node.attr.value == "grad" and isinstance(node.value, cst.Name) \
                and node.value.value == tensor:
            return True
        if isinstance(node, (cst.Attribute, cst.Name)) and ctx.resolve(node) == "torch.autograd.grad":
            return True
    return False
