"""Rewrite a return from inside a loop on a tensor test ("the first candidate that matches") into a masked
update per iteration.

    for view in [channel_view, layer_view]:           matched = False
        sim = similarity(grad, p, view)               for view in [channel_view, layer_view]:
        if sim.max() < delta:                  ->         sim = similarity(grad, p, view)
            perturb -= project(p, perturb)                found = torch.logical_and(torch.logical_not(
            wd = wd_ratio                                     torch.as_tensor(matched)), sim.max() < delta)
            return perturb, wd                            perturb_taken = perturb - project(p, perturb)
    return perturb, wd                                    wd_taken = wd_ratio
                                                          perturb = torch.where(found, perturb_taken, perturb)
                                                          wd = torch.where(found, wd_taken, wd)
                                                          matched = torch.logical_or(torch.as_tensor(matched), found)
                                                      return perturb, wd

Every iteration runs; an iteration's block counts only if its test holds and no earlier one did, which
is what returning from the first match meant. The loop must iterate over a static sequence, end with the
`if`, and be followed by the function's final `return` of the same value. Always unsafe: every
iteration runs, including the statements before the test (which may call helpers) after a match, and
the selected values are tensors.
"""

from __future__ import annotations

import libcst as cst

from cslint.fixers.assignments import assignments
from cslint.fixers.masked_block import TAKEN, _Condition, _fresh, _line, _Masker
from cslint.fixers.masked_tail import _names, returned_value, same_code, _updates_in_place
from cslint.fixers.where import _condition, is_boolean_condition
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix


def _call(torch: str, name: str, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(cst.Name(torch), cst.Name(name)), [cst.Arg(a) for a in args])


def first_match(node: cst.If, ctx: RuleContext) -> Fix | None:
    """The fix for `if <boolean tensor>: ...; return X` ending a loop that the function's `return X` follows."""
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock) or \
            not is_boolean_condition(node.test, ctx):
        return None
    returned = returned_value(cst.IndentedBlock([node.body.body[-1]]))
    function = ctx.traced.func.node
    body = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []
    loop = next((s for s in body if isinstance(s, cst.For) and isinstance(s.body, cst.IndentedBlock)
                 and s.body.body and s.body.body[-1] is node), None)
    if returned is None or returned[0] is None or loop is None or loop.orelse is not None or \
            ctx.is_data_dependent(loop.iter):
        return None
    index = body.index(loop)
    final = returned_value(cst.IndentedBlock(body[index + 1:])) if index + 2 == len(body) else None
    if final is None or not same_code(final[0], returned[0]):
        return None
    value_names = {n.value for n in _names(returned[0])}
    before_test = list(loop.body.body[:-1])
    for stmt in before_test:  # later iterations run these after a match: they may only bind other names
        smalls = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()
        if not smalls or not all(isinstance(s, cst.Assign) and not _updates_in_place(s.value)
                                 and all(isinstance(t.target, (cst.Name, cst.Tuple)) and
                                         not {n.value for n in _names(t.target)} & value_names
                                         for t in s.targets) for s in smalls):
            return None
    torch, imports = ctx.torch_name()
    # `for view_func in [self._channel_view, self._layer_view]`: the class's own helpers, called every time
    helpers = loop.target.value if isinstance(loop.target, cst.Name) and isinstance(loop.iter, (cst.List, cst.Tuple)) \
        and all(isinstance(e.value, cst.Attribute) and isinstance(e.value.value, cst.Name) and
                e.value.value.value == "self" for e in loop.iter.elements) else None  # the loop's name for them
    masker = _Masker(ctx, node, torch, frozenset({helpers}) if helpers is not None else frozenset())
    lines = masker.block(node.body.body[:-1])
    if lines is None or not masker.updated or value_names & masker.created:
        return None
    lines.extend(masker.selections())
    taken = set(assignments(ctx))
    matched, found = _fresh("matched", taken), _fresh("found", taken)
    test = _call(torch, "logical_and", _call(torch, "logical_not", _call(torch, "as_tensor", cst.Name(matched))),
                 _condition(node.test, ctx, torch))
    lines = [line.visit(_Condition(cst.Name(found))) for line in lines]  # type: ignore[misc]
    new_body = [*before_test, _line(cst.Assign([cst.AssignTarget(cst.Name(found))], test)), *lines,
                _line(cst.Assign([cst.AssignTarget(cst.Name(matched))],
                                 _call(torch, "logical_or", _call(torch, "as_tensor", cst.Name(matched)),
                                       cst.Name(found))))]
    start = _line(cst.Assign([cst.AssignTarget(cst.Name(matched))], cst.Name("False"))).with_changes(
        leading_lines=loop.leading_lines)
    new_loop = loop.with_changes(body=loop.body.with_changes(body=new_body), leading_lines=[])
    updated = ", ".join(dict.fromkeys(masker.updated))
    assert TAKEN not in cst.Module([]).code_for_node(new_loop)
    message = (f"Run every iteration and keep a block's results only for the first one whose test holds "
               f"({torch}.where over {updated}); unsafe: every iteration runs, including the statements before "
               "the test after a match, augmented and in-place updates become out-of-place values selected "
               "afterwards, and the selected values are tensors")
    if helpers is not None:
        message += f"; the loop's functions (`{helpers}`) are called on every iteration"
    return Fix("unsafe", message, [(loop, cst.FlattenSentinel([start, new_loop]))], imports)
