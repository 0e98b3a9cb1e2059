"""Give a state entry that `step()` stores every step an identity before the first step.

    state["trust_ratio"] = trust_ratio      ->   state["trust_ratio"].copy_(trust_ratio)

with `self.state[p]["trust_ratio"] = torch.zeros((), device=p.device)` added to the class's
`preinitialize()`. Offered when the value is certainly zero-dimensional (a full reduction, or elementwise
ops and selections of such values), the store runs on every step (directly in the loop over
`group["params"]`), and the class already has a `preinitialize()` walking `self.param_groups` and
`group["params"]` (the one WSC301's fix generates, or the author's). Unsafe: the entry now exists,
as zero, before the first step.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.fixers.assignments import assignments
from cslint.fixers.host import is_zero_dim
from cslint.analysis.syntax import string_key
from cslint.fixers.preinitialize import _body, _walk
from cslint.rule_api.context import RuleContext

# Tensor methods and torch functions whose result has the broadcast shape of their tensor operands.
from cslint.rule_api.findings import Fix
ELEMENTWISE = frozenset({"clamp", "clamp_min", "clamp_max", "add", "sub", "mul", "div", "pow", "sqrt", "rsqrt",
                         "abs", "neg", "exp", "log", "where", "logical_or", "logical_and", "logical_not",
                         "maximum", "minimum", "reciprocal", "detach", "clone", "float"})


def zero_dim_value(expr: cst.BaseExpression, ctx: RuleContext, seen: frozenset[str] = frozenset()) -> bool:
    """Is `expr` a zero-dimensional tensor or a Python number, as far as the code shows?"""
    if isinstance(expr, (cst.Integer, cst.Float)) or not ctx.is_data_dependent(expr):
        return True  # a Python number or hyperparameter (`self.clamp_value`)
    if is_zero_dim(expr, ctx):
        return True
    if isinstance(expr, cst.Name):
        values = assignments(ctx).get(expr.value, [])
        return expr.value not in seen and bool(values) and \
            all(v is not None and zero_dim_value(v, ctx, seen | {expr.value}) for v in values)
    if isinstance(expr, cst.UnaryOperation):
        return zero_dim_value(expr.expression, ctx, seen)
    if isinstance(expr, cst.BinaryOperation):
        return zero_dim_value(expr.left, ctx, seen) and zero_dim_value(expr.right, ctx, seen)
    if isinstance(expr, cst.Comparison):
        return zero_dim_value(expr.left, ctx, seen) and all(zero_dim_value(c.comparator, ctx, seen)
                                                            for c in expr.comparisons)
    if isinstance(expr, cst.Call) and all(a.keyword is None and not a.star for a in expr.args):
        func = expr.func
        args = [a.value for a in expr.args]
        qualified = ctx.resolve(func)
        if qualified is not None and qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in ELEMENTWISE:
            return bool(args) and all(zero_dim_value(a, ctx, seen) for a in args)
        if isinstance(func, cst.Attribute) and func.attr.value in ELEMENTWISE and ctx.is_tensor(func.value):
            return all(zero_dim_value(a, ctx, seen) for a in (func.value, *args))
    return False


def _param_loop(cls_method: cst.FunctionDef) -> tuple[cst.For, str] | None:
    """The `for P in G["params"]` loop directly inside `for G in self.param_groups` of preinitialize()."""
    body = _body(cls_method.body)
    if len(body) != 1 or not isinstance(body[0], cst.For) or dotted_name(body[0].iter) != "self.param_groups":
        return None
    outer = body[0]
    inner = _body(outer.body)
    if len(inner) != 1 or not isinstance(inner[0], cst.For) or not isinstance(inner[0].target, cst.Name):
        return None
    it = inner[0].iter
    if not (isinstance(it, cst.Subscript) and string_key(it) == "params"):
        return None
    return inner[0], inner[0].target.value


def preinitialized_entry(node: cst.Assign, target: cst.Subscript, ctx: RuleContext) -> Fix | None:
    """The fix for `state["k"] = value` stored on every step, or None."""
    cls = ctx.traced.func.cls
    key = string_key(target)
    if cls is None or key is None or "preinitialize" not in cls.methods or len(node.targets) != 1:
        return None
    found = _param_loop(cls.methods["preinitialize"].node)
    if found is None:
        return None
    loop, param = found
    step = ctx.traced.func.node
    chain = next((c for s, c in _walk(_body(step.body), (step,))
                  if isinstance(s, cst.SimpleStatementLine) and node in s.body), None)
    if chain is not None and isinstance(chain[-1], cst.If):
        return _first_step_copy(node, target, chain, loop, param, ctx)
    if not zero_dim_value(node.value, ctx):
        return None
    if chain is None or not _in_param_loop(chain[-1]):
        return None  # stored conditionally or outside the loop over the parameters
    torch, imports = ctx.torch_name()
    create = cst.parse_statement(f'self.state[{param}]["{key}"] = {torch}.zeros((), device={param}.device)\n')
    new_loop = loop.with_changes(body=loop.body.with_changes(body=[*_body(loop.body), create]))
    copy = cst.Expr(cst.Call(cst.Attribute(target, cst.Name("copy_")), [cst.Arg(node.value)]))
    return Fix("unsafe", f"Create `{ctx.code(target)}` in preinitialize() as a zero-dimensional tensor and copy "
                         "each step's value into it; unsafe: the entry exists (as zero) before the first step",
               [(node, copy), (loop, new_loop)], imports)


def _in_param_loop(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.For) and isinstance(node.iter, cst.Subscript) and string_key(node.iter) == "params"


def _gradient(expr: cst.BaseExpression, ctx: RuleContext) -> cst.BaseExpression | None:
    """`grad.clone()` / `p.grad.detach().clone()` / `torch.clone(grad)`, with `grad = p.grad(.data)`: the
    gradient expression without the copy, else None."""
    if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute) and \
            expr.func.attr.value == "clone":
        inner = expr.func.value
    elif isinstance(expr, cst.Call) and len(expr.args) == 1 and ctx.resolve(expr.func) == "torch.clone":
        inner = expr.args[0].value
    else:
        return None
    base = inner
    while isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) and not base.args and \
            base.func.attr.value == "detach":
        base = base.func.value
    values = (assignments(ctx).get(base.value) or [None]) if isinstance(base, cst.Name) else [base]
    return inner if all(v is not None and _is_grad(v) for v in values) else None  # every `grad = p.grad.data`


def _is_grad(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    return isinstance(expr, cst.Attribute) and expr.attr.value == "grad"


def _first_step_copy(node: cst.Assign, target: cst.Subscript, chain: tuple[cst.CSTNode, ...], loop: cst.For,
                     param: str, ctx: RuleContext) -> Fix | None:
    """`if state["step"] == 0: state["pre_grad"] = grad.clone()` (Adan: the previous gradient starts as the
    first one) -> `state["pre_grad"].copy_(torch.where(state["step"] == 0, grad, state["pre_grad"]))`, the
    entry created as `torch.zeros_like(p)` in preinitialize()."""
    from cslint.fixers.where import _condition

    guard = chain[-1]
    assert isinstance(guard, cst.If)
    gradient = _gradient(node.value, ctx)
    if gradient is None or guard.orelse is not None or len(chain) < 2 or not _in_param_loop(chain[-2]) or \
            len(_body(guard.body)) != 1:
        return None
    torch, imports = ctx.torch_name()
    key = string_key(target)
    create = cst.parse_statement(f'self.state[{param}]["{key}"] = {torch}.zeros_like({param})\n')
    new_loop = loop.with_changes(body=loop.body.with_changes(body=[*_body(loop.body), create]))
    where = cst.Call(cst.Attribute(cst.Name(torch), cst.Name("where")),
                     [cst.Arg(_condition(guard.test, ctx, torch)), cst.Arg(gradient), cst.Arg(target)])
    copy = cst.SimpleStatementLine([cst.Expr(cst.Call(cst.Attribute(target, cst.Name("copy_")), [cst.Arg(where)]))],
                                   leading_lines=guard.leading_lines)
    return Fix("unsafe", f"Create `{ctx.code(target)}` in preinitialize() as zeros shaped like the parameter and "
                         f"copy the gradient into it where `{ctx.code(guard.test)}` holds; unsafe: the entry "
                         "exists (as zeros) before the first step", [(guard, copy), (loop, new_loop)], imports)
