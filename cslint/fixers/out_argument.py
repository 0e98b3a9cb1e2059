"""Write an operator's result into its `out=` tensor with `copy_`: `torch.mm(a, b, out=c)` ->
`c.copy_(torch.mm(a, b))`.

The same memory is written and the expression's value is the same tensor (`copy_` returns it), so the rest
of the step sees no difference; what differs is where `out=` would not have run the same way: `copy_`
casts to the out tensor's dtype and broadcasts to its shape where `out=` raises or resizes, records the
write for autograd where `out=` refuses inputs that need gradients, and the result lives in a temporary
before the copy. Hence an unsafe fix.
"""

from __future__ import annotations

import libcst as cst

from cslint.rule_api.findings import Fix

# Out tensors named by a path: evaluating one has no effect, so moving it before the operands changes nothing.
_PATHS = (cst.Name, cst.Attribute)


def _is_path(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def copy_into_out(call: cst.Call, out: cst.Arg) -> Fix | None:
    """`OUT.copy_(call without out=)`; None when the out tensor is not a plain name or attribute path."""
    if not isinstance(out.value, _PATHS) or not _is_path(out.value):
        return None
    kept = [a for a in call.args if a is not out]
    if kept and out is call.args[-1]:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    computed = call.with_changes(args=kept)
    copied = cst.Call(func=cst.Attribute(value=out.value, attr=cst.Name("copy_")), args=[cst.Arg(computed)])
    return Fix("unsafe", f"Compute into a new tensor and copy it into `{cst.Module([]).code_for_node(out.value)}` "
                         "(unsafe: copy_ casts and broadcasts where out= raises or resizes)",
               [(call, copied)])
