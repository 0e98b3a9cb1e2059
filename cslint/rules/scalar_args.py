"""WSC4xx: traced tensors passed where a PyTorch operator takes a Python number."""

from __future__ import annotations

import libcst as cst

from cslint.analysis.kinds import Tag
from cslint.analysis.number_params import NUMBER_PARAMS
from cslint.fixers.scalar_args import POSITIONAL_FILL, fill_from_zeros, fold_scalar_argument
from cslint.rules.base import Rule, RuleContext


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
            ctx.report(value, f"`{ctx.code(value)}` is the fill value of `{op}`, which takes a Python number: its "
                              "value is read while tracing and drops out of the graph; add the tensor to zeros "
                              "instead", fill_from_zeros(node, op, positional[fill_at]))
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in number_params or not ctx.is_tensor(arg.value):
                continue
            keyword = arg.keyword.value
            ctx.report(arg.value, f"`{keyword}={ctx.code(arg.value)}` passes a traced tensor where `{op}` takes a "
                                  "Python number: its value is read while tracing and drops out of the graph; "
                                  "multiply the tensor operand instead",
                       fill_from_zeros(node, op, arg) if keyword == "fill_value" else
                       fold_scalar_argument(node, op, is_method, ctx))
