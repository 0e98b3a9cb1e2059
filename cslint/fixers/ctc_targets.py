"""CTC targets selected with `masked_select` -> the same targets in ctc_loss's padded (N, S) form.

    mask = (labels != ignore_index) & (labels != blank)
    lengths = mask.sum(-1)
    targets = labels.masked_select(mask)                    # 1-D, as long as the data selects
    loss = F.ctc_loss(log_probs, targets, input_lengths, lengths)
->
    targets = labels.gather(-1, torch.argsort(torch.logical_not(mask).int(), dim=-1, stable=True))

`ctc_loss` takes its targets either concatenated (1-D, what `masked_select` makes) or padded, one row per
sample of which it reads the first `target_lengths[i]` entries. A stable sort of each row by "not selected"
moves the row's selected labels to its front in their order, so the first `mask.sum(-1)[i]` entries of row
`i` are exactly the labels `masked_select` took from it, whatever the mask: the same loss and gradients, of a
fixed shape. (Padding at the end of each row, the usual layout, makes the sort the identity.)

Offered only when the selection's one use is the `targets` argument of `torch.nn.functional.ctc_loss`
whose `target_lengths` is that mask's count per row (`mask.sum(-1)`, directly or through a name assigned
once), and neither the labels nor the mask has calls with effects. Safe when the mask is visibly elementwise
over the labels (the same shape): ctc_loss documents both forms as the same targets; unsafe otherwise (a mask
of another shape would select differently from the gather). On CUDA the concatenated form of int32 CPU targets
with blank 0 may run cuDNN's kernel, the padded form runs the native one (results equal up to float rounding).
"""

from __future__ import annotations

import libcst as cst

from cslint.fixers.masked import _atom, _same_code, _text, is_elementwise_over, is_pure
from cslint.fixers.masked_select import masked_select_operands
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

_CTC_LOSS = "torch.nn.functional.ctc_loss"


def padded_ctc_targets(call: cst.Call, ctx: RuleContext, definitions: dict[str, cst.BaseExpression]) -> Fix | None:
    """For `name = labels.masked_select(mask)` (the call) whose one use is ctc_loss's targets: the gather."""
    operands = masked_select_operands(call, ctx)
    if operands is None:
        return None
    labels, mask = operands
    if not (is_pure(labels, ctx) and is_pure(mask, ctx)):
        return None
    name = _assigned_name(call, ctx)
    if name is None or definitions.get(name) is not call:
        return None
    loss = _only_use_as_ctc_targets(name, ctx)
    if loss is None or not _counts_rows_of(_argument(loss, 3, "target_lengths"), mask, definitions):
        return None
    torch, imports = ctx.torch_name()
    code = f"{_atom(labels)}.gather(-1, {torch}.argsort({torch}.logical_not({_text(mask)}).int(), dim=-1, stable=True))"
    replacement = cst.parse_expression(code).with_changes(lpar=call.lpar, rpar=call.rpar)
    message = f"Pass the targets padded, one row per sample with its selected labels first: `{code}` (ctc_loss " \
              "reads the first target_lengths of each row: the same targets, a fixed shape)"
    if is_elementwise_over(mask, labels, ctx, definitions):
        return Fix("safe", message, [(call, replacement)], imports)
    return Fix("unsafe", f"{message}; unsafe: assumes the mask has the shape of `{ctx.code(labels, 24)}`",
               [(call, replacement)], imports)


def _assigned_name(call: cst.Call, ctx: RuleContext) -> str | None:
    for node in ctx.walk(prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if type(node) is cst.Assign and node.value is call and len(node.targets) == 1 \
                and isinstance(node.targets[0].target, cst.Name):
            return node.targets[0].target.value
    return None


def _only_use_as_ctc_targets(name: str, ctx: RuleContext) -> cst.Call | None:
    """The ctc_loss call whose targets argument is `name`, when that and the assignment are its only mentions."""
    mentions = 0
    skipped: set[int] = set()  # names that are not the variable: attributes and keywords
    losses = []
    for node in ctx.walk(prune=(cst.ClassDef,)):
        if isinstance(node, cst.Attribute):
            skipped.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            skipped.add(id(node.keyword))
        elif isinstance(node, cst.Name) and node.value == name and id(node) not in skipped:
            mentions += 1
        elif isinstance(node, cst.Call) and ctx.resolve(node.func) == _CTC_LOSS:
            targets = _argument(node, 1, "targets")
            if isinstance(targets, cst.Name) and targets.value == name:
                losses.append(node)
    return losses[0] if mentions == 2 and len(losses) == 1 else None


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if len(positional) > position:
        return positional[position].value
    return next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == keyword), None)


def _counts_rows_of(lengths: cst.BaseExpression | None, mask: cst.BaseExpression,
                    definitions: dict[str, cst.BaseExpression]) -> bool:
    """Is `lengths` `mask.sum(-1)` (or `dim=-1`), itself or through a name assigned once?"""
    if isinstance(lengths, cst.Name) and lengths.value in definitions:
        lengths = definitions[lengths.value]
    if not isinstance(lengths, cst.Call) or not isinstance(lengths.func, cst.Attribute) \
            or lengths.func.attr.value != "sum" or len(lengths.args) != 1:
        return False
    arg = lengths.args[0]
    if arg.star or (arg.keyword is not None and arg.keyword.value != "dim"):
        return False
    return _text(arg.value).replace(" ", "") == "-1" and _same_code(lengths.func.value, mask)
