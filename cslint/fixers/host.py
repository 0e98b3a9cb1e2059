"""Rewrites that keep a value read back from a tensor on the device.

`x * t.item()` -> `x * t.detach()`: `.item()` both leaves the graph and cuts the gradient, so the
replacement keeps the cut with `.detach()`. `float(t)` / `int(t)` become `.float()` / `.long()` casts
(`int()` truncates toward zero, as a float-to-long cast does). With a zero-dimensional tensor these give
the same values and dtypes as the Python number: PyTorch promotes a 0-dim tensor like a Python scalar.
A one-element tensor with dimensions broadcasts and promotes like any tensor, so the fix is only safe
when the receiver is known to be zero-dimensional (a full reduction, or a name only ever bound to one).
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cslint.analysis.walk import child_nodes, iter_nodes

from cslint.fixers.assignments import assignments
from cslint.fixers.operands import tensor_operand
from cslint.rule_api.context import RuleContext

# Tensor methods that reduce to a 0-dim tensor when called without arguments.
from cslint.rule_api.findings import Fix
FULL_REDUCTIONS = frozenset({
    "sum", "mean", "max", "min", "prod", "norm", "amax", "amin", "std", "var", "median", "nansum",
    "nanmean", "count_nonzero", "all", "any",
})
# No-argument tensor methods whose result has the receiver's shape.
SHAPE_PRESERVING = frozenset({
    "sqrt", "rsqrt", "abs", "exp", "log", "log1p", "neg", "sigmoid", "tanh", "relu", "square", "reciprocal",
    "detach", "clone", "float", "half", "bfloat16", "long", "int", "contiguous", "clamp_min", "sign",
})
ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power, cst.Modulo)
ARITHMETIC_AUG = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign,
                  cst.FloorDivideAssign, cst.PowerAssign, cst.ModuloAssign)
# The cast that reproduces each Python conversion on a tensor.
CONVERSION_CASTS = {"item": None, "float": "float", "int": "long"}


def is_zero_dim(expr: cst.BaseExpression, ctx: RuleContext, seen: frozenset[str] = frozenset()) -> bool:
    """Is `expr` certainly a zero-dimensional tensor (so it promotes and broadcasts like a number)?"""
    if isinstance(expr, cst.Call) and not expr.args:
        func = expr.func
        if isinstance(func, cst.Attribute) and ctx.is_tensor(func.value):
            if func.attr.value in FULL_REDUCTIONS:
                return True
            if func.attr.value in SHAPE_PRESERVING:
                return is_zero_dim(func.value, ctx, seen)
    if isinstance(expr, cst.BinaryOperation) and ctx.is_tensor(expr):
        sides = [s for s in (expr.left, expr.right) if ctx.is_tensor(s)]
        return all(is_zero_dim(s, ctx, seen) for s in sides)
    if isinstance(expr, cst.UnaryOperation) and ctx.is_tensor(expr):
        return is_zero_dim(expr.expression, ctx, seen)
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and expr.args[0].keyword is None:
        qualified = ctx.resolve(expr.func)
        if qualified is not None and qualified.startswith("torch.") and \
                qualified.rsplit(".", 1)[-1] in FULL_REDUCTIONS and ctx.is_tensor(expr.args[0].value):
            return True
    if isinstance(expr, cst.Name):
        if expr.value in seen:  # `loss = loss * 2`: as zero-dimensional as the name's other bindings make it
            return True
        values = assignments(ctx).get(expr.value, [])
        return bool(values) and all(v is not None and is_zero_dim(v, ctx, seen | {expr.value}) for v in values)
    return False


def parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` safe to put before `.method()`: `a + b` becomes `(a + b)`."""
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer, cst.Float)
    if isinstance(expr, atoms) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def method(receiver: cst.BaseExpression, name: str) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=parenthesized(receiver), attr=cst.Name(name)))


def conversion_receiver(node: cst.Call, ctx: RuleContext) -> tuple[cst.BaseExpression, str] | None:
    """For `t.item()`, `float(t)`, `int(t)` on a tensor: (t, which conversion); else None."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args \
            and ctx.is_tensor(func.value):
        return func.value, "item"
    if isinstance(func, cst.Name) and func.value in ("float", "int") and len(node.args) == 1 \
            and node.args[0].keyword is None and not node.args[0].star and ctx.is_tensor(node.args[0].value) \
            and func.value not in ctx.module.imports.names:
        return node.args[0].value, func.value
    return None


def on_device(receiver: cst.BaseExpression, conversion: str) -> cst.BaseExpression:
    """The tensor expression that replaces the conversion: detached, cast like the conversion."""
    value: cst.BaseExpression = method(receiver, "detach")
    cast = CONVERSION_CASTS[conversion]
    return method(value, cast) if cast else value


def drop_conversion(node: cst.Call, ctx: RuleContext) -> Fix | None:
    """`x * t.item()` -> `x * t.detach()` (the caller checked the result only feeds tensor arithmetic)."""
    found = conversion_receiver(node, ctx)
    if found is None:
        return None
    receiver, conversion = found
    replacement = on_device(receiver, conversion).with_changes(lpar=node.lpar, rpar=node.rpar)
    shown = cst.Module([]).code_for_node(replacement)
    if is_zero_dim(receiver, ctx):
        return Fix("safe", f"Keep the value on the device: `{shown}`", [(node, replacement)])
    return Fix("unsafe", f"Keep the value on the device: `{shown}`; unsafe: if `{ctx.code(receiver)}` is not "
                         "zero-dimensional, it broadcasts and promotes dtypes like a tensor, not a number",
               [(node, replacement)])


def feeds_tensor_arithmetic(node: cst.BinaryOperation | cst.AugAssign, ctx: RuleContext) -> list[cst.Call]:
    """The conversion calls that are an operand of tensor arithmetic (the other operand a tensor)."""
    if isinstance(node, cst.AugAssign):
        if isinstance(node.operator, ARITHMETIC_AUG) and ctx.is_tensor(node.target) \
                and isinstance(node.value, cst.Call):
            return [node.value]
        return []
    if not isinstance(node.operator, ARITHMETIC):
        return []
    pairs = ((node.left, node.right), (node.right, node.left))
    return [side for side, other in pairs if isinstance(side, cst.Call) and ctx.is_tensor(other)]


def builtin_to_clamp(node: cst.Call, ctx: RuleContext) -> Fix | None:
    """`max(c, t.item())` -> `torch.clamp(t.detach(), min=c)`; two tensors -> torch.maximum/minimum."""
    func = node.func
    if not isinstance(func, cst.Name) or func.value not in ("max", "min") or len(node.args) != 2:
        return None
    if any(arg.keyword is not None or arg.star for arg in node.args):
        return None
    torch, imports = ctx.torch_name()
    values = [arg.value for arg in node.args]
    tensors: list[cst.BaseExpression | None] = []
    for value in values:
        converted = isinstance(value, cst.Call) and conversion_receiver(value, ctx)
        if converted:
            tensors.append(on_device(*converted))
        elif ctx.is_tensor(value):
            tensors.append(value)
        else:
            tensors.append(None)
    # Run eagerly, `lr` or an input may be a Python number: an operand that is not surely a tensor is
    # passed through torch.as_tensor, which torch.maximum and torch.clamp accept either way.
    wrapped = False
    for i, (tensor, value) in enumerate(zip(tensors, values)):
        if tensor is not None and tensor is value:
            tensors[i], was_wrapped = tensor_operand(value, ctx, torch)
            wrapped = wrapped or was_wrapped
    if all(t is not None for t in tensors):
        name = "maximum" if func.value == "max" else "minimum"
        call = cst.Call(func=cst.Attribute(cst.Name(torch), cst.Name(name)),
                        args=[cst.Arg(t) for t in tensors if t is not None])
    else:
        index = 0 if tensors[0] is not None else 1
        tensor, bound = tensors[index], values[1 - index]
        if tensor is None or ctx.kind(bound).is_data_dependent:
            return None
        keyword = "min" if func.value == "max" else "max"
        call = cst.Call(func=cst.Attribute(cst.Name(torch), cst.Name("clamp")), args=[
            cst.Arg(tensor),
            cst.Arg(bound, keyword=cst.Name(keyword), equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                                             cst.SimpleWhitespace(""))),
        ])
    call = call.with_changes(lpar=node.lpar, rpar=node.rpar)
    shown = cst.Module([]).code_for_node(call)
    why = "the result is a tensor, whose dtype and shape follow the tensor operand instead of Python's number rules"
    if wrapped:
        why += "; an operand that may be a Python float (float64) is compared as a float32 tensor"
    return Fix("unsafe", f"Compare on the device: `{shown}`; unsafe: {why}", [(node, call)], imports)


def builtin_to_torch(node: cst.Call, ctx: RuleContext) -> Fix | None:
    """`round(t)` -> `torch.round(t)`, `round(t, n)` -> decimals=n."""
    func = node.func
    if not isinstance(func, cst.Name) or func.value != "round" or not node.args:
        return None
    if any(arg.keyword is not None or arg.star for arg in node.args) or len(node.args) > 2:
        return None
    torch, imports = ctx.torch_name()
    args = [cst.Arg(node.args[0].value)]
    if len(node.args) == 2:
        args.append(cst.Arg(node.args[1].value, keyword=cst.Name("decimals"),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
    call = cst.Call(func=cst.Attribute(cst.Name(torch), cst.Name(func.value)), args=args)
    call = call.with_changes(lpar=node.lpar, rpar=node.rpar)
    # Tensor defines no __round__: round(t) raises TypeError, so no rewrite can keep the behaviour.
    return Fix("unsafe", f"Use {torch}.round (half to even, like Python's round); unsafe: round() on a tensor "
                         "raises TypeError, so this changes what the code does, and with decimals torch scales "
                         "by 10**n first, so ties can round differently from Python", [(node, call)], imports)


# Tensor ops whose positional arguments may be 0-dim tensors where the code passed a Python number.
TENSOR_ARGUMENT_OPS = frozenset({
    "add", "sub", "mul", "div", "true_divide", "pow", "maximum", "minimum", "where", "lerp", "clamp", "fmax",
    "fmin", "atan2", "hypot", "copysign", "fmod", "remainder", "add_", "sub_", "mul_", "div_", "lerp_",
    "copy_", "fill_", "clamp_", "pow_", "full_like", "multiply", "divide", "subtract",
})


def keep_tensor_name(node: cst.Call, ctx: RuleContext) -> Fix | None:
    """`scale = t.item()` where every later use of `scale` takes a tensor (arithmetic with a tensor, a
    positional argument of a tensor op, a return): keep `scale` a tensor. A use as an if/while condition
    makes the fix unsafe; the condition is then a tensor, which WSC101's torch.where fix rewrites."""
    found = conversion_receiver(node, ctx)
    if found is None:
        return None
    receiver, conversion = found
    func = ctx.traced.func.node
    name = _assigned_name(func, node)
    if name is None or assignments(ctx).get(name) != [node]:
        return None
    uses = _uses(func, name)
    if not uses:
        return None
    conditions = 0
    for parent, child in uses:
        kind = _use_kind(parent, child, ctx)
        if kind is None:
            return None
        conditions += kind == "condition"
    replacement = on_device(receiver, conversion).with_changes(lpar=node.lpar, rpar=node.rpar)
    shown = cst.Module([]).code_for_node(replacement)
    reasons = []
    if not is_zero_dim(receiver, ctx):
        reasons.append(f"if `{ctx.code(receiver)}` is not zero-dimensional, `{name}` broadcasts and promotes "
                       "dtypes like a tensor, not a number")
    if conditions:
        reasons.append(f"`{name}` is tested by an if/while, which becomes a tensor condition (rewritten by the "
                       "torch.where fix of WSC101 where it assigns only)")
    message = f"Keep `{name}` a tensor (every use takes one): `{shown}`"
    if reasons:
        return Fix("unsafe", message + "; unsafe: " + "; ".join(reasons), [(node, replacement)])
    return Fix("safe", message, [(node, replacement)])


def _assigned_name(func: cst.FunctionDef, value: cst.Call) -> str | None:
    for n in iter_nodes(func.body):
        if isinstance(n, cst.Assign) and n.value is value:
            target = n.targets[0].target if len(n.targets) == 1 else None
            return target.value if isinstance(target, cst.Name) else None
    return None


def _uses(func: cst.FunctionDef, name: str) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """(parent, child-on-the-path) for every read of `name`: the child is the Name itself, or the
    comparison/not around it when the parent is a condition."""
    uses: list[tuple[cst.CSTNode, cst.CSTNode]] = []
    for n, stack in _with_ancestors(func.body):
        if isinstance(n, cst.Name) and n.value == name and stack:
            parent = stack[-1]
            if not (isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Attribute)
                                                            and parent.attr is n)):
                lifted = isinstance(parent, (cst.Comparison, cst.Arg)) and len(stack) >= 2
                if isinstance(parent, cst.Element) and len(stack) >= 3 and isinstance(stack[-3], cst.Return):
                    uses.append((stack[-3], n))  # `return y, scale`
                else:
                    uses.append((stack[-2], parent) if lifted else (parent, n))
    return uses


def _with_ancestors(root: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, list[cst.CSTNode]]]:
    """Each node under `root` (itself included) with the nodes enclosing it, outermost first (one list,
    changed as the walk goes on: copy it to keep it). The rules' walk (analysis/walk.py), not a libcst
    visitor, which builds every node of the function again and costs many times more."""
    path: list[cst.CSTNode] = []
    stack: list[tuple[cst.CSTNode, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        del path[depth:]
        yield node, path
        path.append(node)
        stack.extend((child, depth + 1) for child in reversed(child_nodes(node)))


def _use_kind(parent: cst.CSTNode, child: cst.CSTNode, ctx: RuleContext) -> str | None:
    """"tensor" when the use accepts a tensor as it accepted the number, "condition" for an if/while
    test; None for anything else (a Python call, a format string, a shape, a keyword argument)."""
    if isinstance(parent, (cst.If, cst.While)) and parent.test is child:
        return "condition"
    if isinstance(child, cst.Comparison):
        return None
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, ARITHMETIC):
        other = parent.right if parent.left is child else parent.left
        return "tensor" if ctx.is_tensor(other) and _reads_no_python_only(other) else None
    if isinstance(parent, cst.AugAssign) and parent.value is child and ctx.is_tensor(parent.target):
        return "tensor" if isinstance(parent.operator, ARITHMETIC_AUG) else None
    if isinstance(parent, cst.Return):
        return "tensor"
    if isinstance(parent, cst.Call) and isinstance(child, cst.Arg) and child.keyword is None and not child.star:
        func = parent.func
        last = func.attr.value if isinstance(func, cst.Attribute) else ""
        qualified = ctx.resolve(func)
        is_op = (qualified is not None and qualified.startswith("torch.")) or \
            (isinstance(func, cst.Attribute) and ctx.is_tensor(func.value))
        return "tensor" if is_op and last in TENSOR_ARGUMENT_OPS else None
    return None


def _reads_no_python_only(expr: cst.BaseExpression) -> bool:
    return not isinstance(expr, (cst.SimpleString, cst.FormattedString))


# Calls whose arguments must be Python integers: a tensor there is a dynamic shape or trip count.
NEEDS_PYTHON_INT = frozenset({"range", "len", "int", "list", "tuple", "enumerate", "zip"})
# Functions and tensor methods whose arguments are sizes, counts or dimensions.
SHAPE_ARGUMENT_CALLS = frozenset({
    "view", "reshape", "expand", "repeat", "tile", "zeros", "ones", "empty", "full", "rand", "randn", "randint",
    "arange", "linspace", "new_zeros", "new_ones", "new_empty", "new_full", "narrow", "split", "chunk", "topk",
    "kthvalue", "unflatten", "roll", "select", "unfold", "resize_", "pad", "interpolate", "eye",
})


def keep_bookkeeping_on_device(node: cst.Call, ctx: RuleContext) -> Fix | None:
    """`num += r * t.item()`, `d = t.sum().item()` whose name is later used in Python arithmetic, an
    if, max/min or a format string, `state["v"] += t.item()`: drop the read so the bookkeeping stays a
    tensor (unsafe). The value must reach the assignment only through arithmetic, and no use of the name
    may need a Python integer (an index, a slice, `range`): there the value would become a dynamic shape."""
    found = conversion_receiver(node, ctx)
    if found is None:
        return None
    receiver, conversion = found
    func = ctx.traced.func.node
    statement = _arithmetic_assignment(func, node)
    if statement is None:
        return None
    target = statement.target if isinstance(statement, cst.AugAssign) else statement.targets[0].target
    if isinstance(target, cst.Name):
        if any(not _tolerates_tensor(parent, child) for parent, child in _uses_with_context(func, target.value)):
            return None
        stored = f"`{target.value}`"
    elif isinstance(target, cst.Subscript):
        stored = f"`{ctx.code(target)}`"
    else:
        return None
    replacement = on_device(receiver, conversion).with_changes(lpar=node.lpar, rpar=node.rpar)
    shape = "" if is_zero_dim(receiver, ctx) else \
        f"; if `{ctx.code(receiver)}` is not zero-dimensional, the value broadcasts like a tensor, not a number"
    if shape and isinstance(target, cst.Subscript):
        # a stored entry outlives the step: a number has no dimensions, and an entry whose shape changed
        # after its first store would change the next step's graph
        replacement = cst.Call(cst.Attribute(replacement.with_changes(lpar=[], rpar=[]), cst.Name("reshape")),
                               [cst.Arg(cst.Tuple([]))], lpar=node.lpar, rpar=node.rpar)
        shape = (f"; the value is reshaped to no dimensions, as `.item()` gives a number (it raises, as `.item()` "
                 f"does, when `{ctx.code(receiver)}` has more than one element)")
    shown = cst.Module([]).code_for_node(replacement)
    return Fix("unsafe", f"Keep {stored} a tensor: `{shown}`; unsafe: Python float64 bookkeeping becomes float32 "
                         "tensor arithmetic (the last bits can drift, and an adaptive step size amplifies them), "
                         f"and every later use of {stored} (an if, max/min, a format string) reads a tensor, "
                         f"which those rules then report with their own fixes{shape}", [(node, replacement)])


def _arithmetic_assignment(func: cst.FunctionDef, value: cst.Call) -> cst.Assign | cst.AugAssign | None:
    """The `x = ...` / `x += ...` statement whose value reaches `value` only through arithmetic."""
    for n, path in _with_ancestors(func.body):
        if n is not value:
            continue
        for outer in reversed(path):
            if isinstance(outer, (cst.Assign, cst.AugAssign)):
                if isinstance(outer, cst.Assign) and len(outer.targets) != 1:
                    return None
                if isinstance(outer, cst.AugAssign) and not isinstance(outer.operator, ARITHMETIC_AUG):
                    return None
                return outer
            if isinstance(outer, cst.BinaryOperation) and isinstance(outer.operator, ARITHMETIC):
                continue
            if isinstance(outer, cst.UnaryOperation) and isinstance(outer.operator, (cst.Minus, cst.Plus)):
                continue
            return None
        return None
    return None


def _uses_with_context(func: cst.FunctionDef, name: str) -> list[tuple[list[cst.CSTNode], cst.Name]]:
    """Every read of `name`, with the nodes enclosing it (outermost first)."""
    uses: list[tuple[list[cst.CSTNode], cst.Name]] = []
    for n, stack in _with_ancestors(func.body):
        if isinstance(n, cst.Name) and n.value == name and stack:
            parent = stack[-1]
            if not isinstance(parent, cst.AssignTarget) and not (isinstance(parent, cst.Attribute)
                                                                 and parent.attr is n):
                uses.append((list(stack), n))
    return uses


def _tolerates_tensor(enclosing: list[cst.CSTNode], name: cst.Name) -> bool:
    """Does a 0-dim tensor work where this read had a Python number (perhaps as another rule's finding)?
    Not as an index or slice, nor as the argument of a call that needs a Python integer."""
    for outer in enclosing:
        if isinstance(outer, cst.SubscriptElement):
            return False
        if isinstance(outer, cst.Call) and isinstance(outer.func, cst.Name) and outer.func.value in NEEDS_PYTHON_INT:
            return False
        if isinstance(outer, cst.Call) and isinstance(outer.func, (cst.Attribute, cst.Name)):
            called = outer.func.attr if isinstance(outer.func, cst.Attribute) else outer.func
            if called.value in SHAPE_ARGUMENT_CALLS:
                return False
    return True


def builtin_over_iterable(node: cst.Call, ctx: RuleContext) -> Fix | None:
    """`max(group["lr"] for group in self.param_groups)` / `max([a, b])` ->
    `torch.stack([torch.as_tensor(...) ...]).max()`: the comparison on the device. Each element goes
    through torch.as_tensor, so the fix runs with Python numbers (eagerly) and with tensors (traced)."""
    func = node.func
    if not isinstance(func, cst.Name) or func.value not in ("max", "min") or len(node.args) != 1:
        return None
    arg = node.args[0]
    if arg.keyword is not None or arg.star:
        return None
    torch, imports = ctx.torch_name()
    iterable = arg.value
    if isinstance(iterable, (cst.GeneratorExp, cst.ListComp)):
        if iterable.for_in.inner_for_in is not None:
            return None
        elements: cst.BaseExpression = cst.ListComp(elt=tensor_operand(iterable.elt, ctx, torch)[0],
                                                    for_in=iterable.for_in)
    elif isinstance(iterable, (cst.List, cst.Tuple)) and len(iterable.elements) >= 2 and \
            not any(isinstance(e, cst.StarredElement) for e in iterable.elements):
        operands = [tensor_operand(e.value, ctx, torch) for e in iterable.elements]
        if len({wrapped for _, wrapped in operands}) > 1:
            return None  # a device tensor stacked with a CPU tensor made from a Python number would fail
        elements = cst.List([cst.Element(value) for value, _ in operands])
    else:
        return None
    stacked = cst.Call(func=cst.Attribute(cst.Name(torch), cst.Name("stack")), args=[cst.Arg(elements)])
    call = method(stacked, func.value).with_changes(lpar=node.lpar, rpar=node.rpar)
    shown = cst.Module([]).code_for_node(call)
    return Fix("unsafe", f"Compare on the device: `{shown}`; unsafe: the result is a 0-dim tensor, and Python "
                         "numbers among the values (float64) are compared as float32", [(node, call)], imports)


# math functions whose torch op computes the same function elementwise (math.fabs is torch.abs).
MATH_TO_TORCH = {
    "sqrt": "sqrt", "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "log2": "log2",
    "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "asin": "asin", "acos": "acos",
    "atan": "atan", "erf": "erf", "fabs": "abs",
}


def math_to_torch(node: cst.Call, name: str, ctx: RuleContext) -> Fix | None:
    """`math.sqrt(t)` -> `torch.sqrt(t)` (an operand that may be a Python number through torch.as_tensor).
    Unsafe: the result is a float32 tensor where math returned a float64 Python float, and a value with
    dimensions is computed elementwise where math raised."""
    op = MATH_TO_TORCH.get(name)
    if op is None or len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
        return None
    torch, imports = ctx.torch_name()
    operand, _ = tensor_operand(node.args[0].value, ctx, torch)
    call = cst.Call(func=cst.Attribute(cst.Name(torch), cst.Name(op)), args=[cst.Arg(operand)],
                    lpar=node.lpar, rpar=node.rpar)
    shown = cst.Module([]).code_for_node(call)
    return Fix("unsafe", f"Use the torch op: `{shown}`; unsafe: the result is a float32 tensor where math gave a "
                         "float64 Python float", [(node, call)], imports)
