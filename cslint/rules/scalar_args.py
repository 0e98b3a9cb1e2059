"""WSC4xx: operator arguments a static trace cannot take: traced tensors where a PyTorch operator takes a
Python number, `out=` tensors it cannot write in place."""

from __future__ import annotations

import libcst as cst

from cslint.analysis.kinds import Tag
from cslint.analysis.number_params import NUMBER_PARAMS
from cslint.analysis.walk import bound_names
from cslint.fixers.out_argument import copy_into_out
from cslint.fixers.scalar_args import POSITIONAL_FILL, fill_from_zeros, fold_scalar_argument
from cslint.rule_api.context import RuleContext
from cslint.rules.base import Rule
from cslint.core.targets import get_target


def _operator_name(call: cst.Call, ctx: RuleContext) -> tuple[str, bool] | None:
    """(ATen operator name, called as a tensor method?) for a torch function or tensor method call."""
    func = call.func
    qualified = ctx.resolve(func)
    if qualified is not None and qualified.startswith("torch."):
        return qualified.rsplit(".", 1)[-1], False
    if isinstance(func, cst.Attribute) and ctx.kind(func.value).tag in (Tag.TENSOR, Tag.UNKNOWN):
        return func.attr.value, True  # an unknown receiver given `alpha=<tensor>` is a tensor too
    return None


class TensorScalarArgument(Rule):
    code = "WSC401"
    graph_break = "GB0033"
    name = "tensor-scalar-argument"
    summary = (
        "Checks for traced tensors (the learning rate and anything computed from it, optimizer state, "
        "tensor inputs) passed to operator parameters typed as Python numbers, like `alpha=` or `value=`."
    )
    why = (
        "`alpha` of add/sub, `value` of addcdiv/addcmul and the other `Scalar` parameters of PyTorch's "
        "operators take a Python number. Given a traced tensor, PyTorch reads its value while tracing: on "
        "WSC that fails (\"SyncTensor called outside of MarkStep\") or uses a random value, and when it is "
        "the only use of the learning rate, the whole schedule drops out of the compiled graph. "
        "On WSC `group[\"lr\"]` is a traced tensor."
    )
    example = """
for p in group["params"]:
    p.add_(p.grad, alpha=-group["lr"])
"""
    use_instead = """
for p in group["params"]:
    p.add_(-group["lr"] * p.grad)
"""
    fix_safety = (
        "Safe for add/sub (`alpha`), addcdiv/addcmul (`value`) and their `_foreach_` forms: the scale "
        "multiplies the operand instead (the last bit of a fused multiply-add may round differently). "
        "Other parameters (`beta` of addmm, `p` of dropout, ...) are reported without a fix. Arguments "
        "built only from Python hyperparameters (`alpha=1 - beta1`) are never reported. A tensor fill value "
        "of `torch.full_like(x, s)` / `x.new_full(size, s)` (positional or `fill_value=`) becomes "
        "`torch.zeros_like(x).add_(s)` / `x.new_zeros(size).add_(s)`: safe, the same values and dtype "
        "(zero plus `s`, rounded to the tensor's dtype as the fill was)."
    )
    VALID = [
        """
import torch
from torch.optim import Optimizer

class SGD(Optimizer):
    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__(params, dict(lr=lr, momentum=momentum))
        for group in self.param_groups:
            for p in group["params"]:
                p.data.add_(torch.randn_like(p), alpha=0.01)

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["momentum_buffer"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            momentum = group["momentum"]
            for p in group["params"]:
                buf = self.state[p]["momentum_buffer"]
                buf.mul_(momentum).add_(p.grad, alpha=1 - momentum)
                p.add_(-group["lr"] * buf)
""",
    ]
    INVALID = [
        """
import math
import torch
from torch.optim import Optimizer

class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(p.grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                step_size = group["lr"] / (1 - beta1)
                p.addcdiv_(exp_avg, exp_avg_sq.sqrt().add_(group["eps"]), value=-step_size)  # expect: WSC401
                p.add_(p, alpha=-group["lr"] * group["weight_decay"])  # expect: WSC401
                step = torch.full_like(p, step_size)  # expect: WSC401
                p.sub_(step.div_(exp_avg_sq.sqrt().add_(group["eps"])))
""",
        """
import torch

@torch.compile
def sgd_update(params, grads, lr: torch.Tensor):
    torch._foreach_add_(params, grads, alpha=-lr)  # expect: WSC401
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        named = _operator_name(node, ctx)
        if named is None:
            return
        op, is_method = named
        number_params = NUMBER_PARAMS.get(op)
        if number_params is None:
            return
        fill_at = POSITIONAL_FILL.get(op, {}).get(is_method)
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if fill_at is not None and len(positional) > fill_at and ctx.is_tensor(positional[fill_at].value):
            value = positional[fill_at].value
            ctx.report(value, f"`{ctx.code(value)}` is the fill value of `{op}`, a Python number: read while "
                              "tracing, not in the graph", fill_from_zeros(node, op, positional[fill_at]))
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in number_params or not ctx.is_tensor(arg.value):
                continue
            keyword = arg.keyword.value
            ctx.report(arg.value, f"`{keyword}={ctx.code(arg.value)}` is a tensor where `{op}` takes a Python "
                                  "number: read while tracing, not in the graph",
                       fill_from_zeros(node, op, arg) if keyword == "fill_value" else
                       fold_scalar_argument(node, op, is_method, ctx))


# Calls whose result is a new contiguous tensor (the `*_like` factories keep their input's strides: not these).
CONTIGUOUS_FACTORIES = frozenset({
    "torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.rand", "torch.randn", "torch.randint",
    "torch.arange", "torch.linspace", "torch.tensor", "torch.eye",
})
CONTIGUOUS_METHODS = frozenset({"contiguous", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"})


class OutIntoNonContiguous(Rule):
    code = "WSC402"
    graph_break = "GB0242"  # Attempted to call op with non-contiguous `out=` tensor
    name = "out-into-non-contiguous"
    example_target = "compile"
    summary = ("Checks for `out=` tensors in traced code that may be non-contiguous (under `--target compile`): "
               "anything but a tensor the function itself makes contiguous.")
    why = (
        "torch.compile writes an operator's result into its `out=` tensor only when that tensor is contiguous; "
        "a transposed, sliced or strided `out=` (\"Attempted to call op with non-contiguous `out=` tensor\") "
        "breaks the graph at the call. A parameter, an attribute or a view can be any of these."
    )
    example = """
def forward(self, a, b):
    torch.mm(a, b, out=self.scores[:, : b.shape[1]])
    return self.scores
"""
    use_instead = """
def forward(self, a, b):
    self.scores[:, : b.shape[1]].copy_(torch.mm(a, b))
    return self.scores
"""
    fix_safety = (
        "Unsafe: `out.copy_(op(...))` writes the same memory and returns the same tensor, but casts to the out "
        "tensor's dtype and broadcasts to its shape where `out=` would raise or resize, and computes the "
        "result in a temporary first. Offered only when the out tensor is a plain name or attribute."
    )
    VALID = [
        """
import torch
from torch import nn

class Attention(nn.Module):
    def forward(self, q, k):
        scores = torch.empty(q.shape[0], k.shape[0], device=q.device)
        torch.mm(q, k.t(), out=scores)
        flat = q.new_zeros(q.shape).contiguous()
        torch.add(q, 1.0, out=flat)
        return scores, flat


def evaluate(a, b, buf):
    return torch.mm(a, b, out=buf.t())


model = torch.compile(Attention())
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("cache", torch.zeros(dim, dim))

    def forward(self, q, k, out):
        torch.mm(q, k.t(), out=out)  # expect: WSC402
        torch.mm(q, k.t(), out=self.cache[:, : k.shape[0]])  # expect: WSC402
        view = self.cache.t()
        torch.matmul(q, k.t(), out=view)  # expect: WSC402
        return out


model = torch.compile(Attention(8))
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        out = next((a for a in node.args if a.keyword is not None and a.keyword.value == "out"), None)
        if out is None or not get_target(ctx.settings.target).has_graph_breaks:
            return
        qualified = ctx.resolve(node.func)
        if qualified is None or not qualified.startswith("torch.") or not ctx.is_tensor(out.value) \
                or _made_contiguous(out.value, ctx):
            return
        ctx.report(node, f"`{ctx.code(node)}` writes into `{ctx.code(out.value)}`, which may be non-contiguous: "
                         "torch.compile breaks the graph on a non-contiguous `out=`", copy_into_out(node, out))


def _made_contiguous(out: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A contiguous tensor made here: a factory call, or a local name every assignment in the function
    binds to one (a parameter, an attribute or a view may have any strides)."""
    if isinstance(out, cst.Call):
        return _contiguous_call(out, ctx)
    if not isinstance(out, cst.Name) or out.value in ctx.traced.analysis.params:  # type: ignore[union-attr]
        return False
    values = []
    for n in ctx.walk():
        if type(n) is cst.Assign and any(b.value == out.value for t in n.targets for b in bound_names(t.target)):
            if len(n.targets) != 1 or not isinstance(n.targets[0].target, cst.Name):
                return False  # unpacked from something: its strides are unknown
            values.append(n.value)
        elif type(n) in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.WithItem) \
                and _binds(n, out.value):
            return False
    return bool(values) and all(isinstance(v, cst.Call) and _contiguous_call(v, ctx) for v in values)


def _binds(node: cst.CSTNode, name: str) -> bool:
    target = getattr(node, "target", None) or getattr(getattr(node, "asname", None), "name", None)
    return target is not None and any(b.value == name for b in bound_names(target))


def _contiguous_call(call: cst.Call, ctx: RuleContext) -> bool:
    if ctx.resolve(call.func) in CONTIGUOUS_FACTORIES:
        return True
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in CONTIGUOUS_METHODS \
        and ctx.is_tensor(call.func.value)
