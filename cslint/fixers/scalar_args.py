"""Fold a tensor passed as a Python-number argument into the tensor operands.

`p.add_(g, alpha=-lr)` -> `p.add_(-lr * g)`, `p.addcdiv_(a, b, value=-s)` -> `p.addcdiv_(-s * a, b)`,
`torch._foreach_add_(ps, gs, alpha=-lr)` -> `torch._foreach_add_(ps, torch._foreach_mul(gs, -lr))`.
The scale moves from the fused kernel into a separate multiply, so the last bit of the result may round
differently; the value is otherwise the same, hence a safe fix.
"""

from __future__ import annotations

import libcst as cst

from cslint.rule_api.context import RuleContext

# op -> (scalar keyword, index of the positional operand the scale multiplies in the method form;

from cslint.rule_api.findings import Fix
# the function form `torch.add(x, g, alpha=a)` names the receiver first, so one more)
FOLDABLE = {
    "add": ("alpha", 0), "add_": ("alpha", 0), "sub": ("alpha", 0), "sub_": ("alpha", 0),
    "addcdiv": ("value", 0), "addcdiv_": ("value", 0), "addcmul": ("value", 0), "addcmul_": ("value", 0),
}
FOREACH_FOLDABLE = {
    "_foreach_add": ("alpha", 1), "_foreach_add_": ("alpha", 1), "_foreach_sub": ("alpha", 1),
    "_foreach_sub_": ("alpha", 1), "_foreach_addcdiv": ("value", 1), "_foreach_addcdiv_": ("value", 1),
    "_foreach_addcmul": ("value", 1), "_foreach_addcmul_": ("value", 1),
}
ATOMS = (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer, cst.Float, cst.SimpleString)


def _factor(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` as an operand of `*` that keeps its meaning (parenthesised unless it binds tighter)."""
    bare = expr.with_changes(lpar=[], rpar=[])
    if isinstance(bare, ATOMS):
        return bare
    if isinstance(bare, cst.UnaryOperation) and isinstance(bare.operator, cst.Minus) \
            and isinstance(bare.expression, ATOMS):
        return bare
    return bare.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _scaled(scale: cst.BaseExpression, operand: cst.BaseExpression) -> cst.BinaryOperation:
    return cst.BinaryOperation(left=_factor(scale), operator=cst.Multiply(whitespace_before=cst.SimpleWhitespace(" "),
                               whitespace_after=cst.SimpleWhitespace(" ")), right=_factor(operand))


def fold_scalar_argument(call: cst.Call, op: str, is_method: bool, ctx: RuleContext) -> Fix | None:
    """The fix moving the scalar keyword of `call` into its operand, or None if the call has no such form."""
    foreach = op in FOREACH_FOLDABLE
    spec = FOREACH_FOLDABLE.get(op) if foreach else FOLDABLE.get(op)
    if spec is None:
        return None
    keyword, operand_index = spec
    if not is_method and not foreach:
        operand_index += 1
    positional = [a for a in call.args if a.keyword is None and not a.star]
    scalar_arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
    if scalar_arg is None or any(a.star for a in call.args) or operand_index >= len(positional):
        return None
    operand_arg = positional[operand_index]
    torch_name, imports = ctx.torch_name()
    if foreach:
        mul = cst.Attribute(value=cst.Name(torch_name), attr=cst.Name("_foreach_mul"))
        new_operand: cst.BaseExpression = cst.Call(func=mul, args=[
            cst.Arg(operand_arg.value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(scalar_arg.value.with_changes(lpar=[], rpar=[]))])
    else:
        new_operand = _scaled(scalar_arg.value, operand_arg.value)
        imports = frozenset()
    args = [a.with_changes(value=new_operand) if a is operand_arg else a for a in call.args if a is not scalar_arg]
    args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    new_call = call.with_changes(args=args)
    return Fix("safe", f"move `{keyword}=` into the tensor operand", [(call, new_call)], imports=imports)


# ops whose fill value is a Python number: {op: {called as a method?: index of the positional fill value}}
POSITIONAL_FILL = {"full_like": {False: 1}, "new_full": {True: 1}}
ZEROS = {"full_like": "zeros_like", "new_full": "new_zeros"}


def fill_from_zeros(call: cst.Call, op: str, fill: cst.Arg) -> Fix | None:
    """`torch.full_like(x, s, **kw)` -> `torch.zeros_like(x, **kw).add_(s)` (and `new_full` -> `new_zeros`):
    the same values in the same dtype, with `s` a tensor operand instead of a number read while tracing."""
    func = call.func
    if op not in ZEROS or not isinstance(func, cst.Attribute) or any(a.star for a in call.args):
        return None
    rest = [a for a in call.args if a is not fill]
    if not rest:
        return None
    rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    zeros = call.with_changes(func=func.with_changes(attr=cst.Name(ZEROS[op])), args=rest, lpar=[], rpar=[])
    added = cst.Call(func=cst.Attribute(zeros, cst.Name("add_")), args=[cst.Arg(fill.value)],
                     lpar=call.lpar, rpar=call.rpar)
    return Fix("safe", f"Fill by adding the tensor to zeros: `{cst.Module([]).code_for_node(added)}`",
               [(call, added)])
