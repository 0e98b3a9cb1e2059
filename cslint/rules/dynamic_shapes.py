"""WSC5xx: operations whose output shape depends on tensor values.

Loops over such results are WSC107's (control flow); these rules report the operation itself.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.dynamo_config import DYNAMIC_OUTPUT_SHAPES
from cslint.analysis.libraries import MASK_STORE, SHAPE
from cslint.fixers.masked import masked_reduction_fix, masked_store_fix
from cslint.fixers.ctc_targets import padded_ctc_targets
from cslint.fixers.masked_select import masked_select_reduction_fix
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix
from cslint.rules.base import Rule
from cslint.core.targets import get_target

FIXED_SHAPE = "a static graph needs shapes known before the data"
SHAPE_ADVICE = {"xla": "a value-dependent shape recompiles the XLA graph; use `torch._check` or a static bound.",
                "compile": "mark the dimension with `torch._dynamo.mark_dynamic` or bound it with `torch._check`."}
OP_ALTERNATIVES = "\n\nWhat to write instead, per op:\n"

# op -> the fixed-shape way to write what it is usually used for
ALTERNATIVES = {
    "nonzero": "keep the boolean mask and compute on every element (torch.where(mask, x, 0), masked_fill), "
               "or pick a fixed number of positions with torch.topk",
    "argwhere": "keep the boolean mask and compute on every element (torch.where(mask, x, 0), masked_fill), "
                "or pick a fixed number of positions with torch.topk",
    "where": "use the three-argument torch.where(mask, x, other) or keep the mask as a multiplier",
    "masked_select": "torch.where(mask, x, 0) keeps the shape; reduce it with a mask-weighted sum",
    "unique": "count against the fixed range of values instead: F.one_hot(x, num_classes).sum(0)",
    "unique_consecutive": "compare neighbours with a fixed-shape mask: x[..., 1:] != x[..., :-1]",
    "bincount": "F.one_hot(x, num_classes).sum(0), or zeros(num_classes).scatter_add_(0, x, weights)",
    "repeat_interleave": "repeat a Python int number of times, or gather with an index of fixed size "
                         "(or pass output_size=)",
}
DYNAMIC_OPS = frozenset(ALTERNATIVES) - {"where", "repeat_interleave"}
OP_ALTERNATIVES += "".join(f"- `{op}`: {alternative}\n" for op, alternative in ALTERNATIVES.items())
CAPTURED_SHAPES = (
    "Under `--target compile` it is not reported where dynamo keeps it in the graph with a size only known at run "
    "time: when the project sets `torch._dynamo.config.capture_dynamic_output_shape_ops = True` at module level, "
    "under a root decorated with `@torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)`, or under a "
    "root compiled with `fullgraph=True` (which turns the setting on, torch 2.13); the lazy targets (wsc, xla, "
    "rdu) compile fixed shapes whatever dynamo's settings."
)


def _repeats_argument(call: cst.Call, is_method: bool) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "repeats":
            return arg.value
    positional = [a.value for a in call.args if a.keyword is None]
    if is_method:
        return positional[0] if positional else None
    return positional[1] if len(positional) > 1 else positional[0] if len(positional) == 1 else None


def dynamic_op_name(call: cst.Call, ctx: RuleContext) -> str | None:
    """The name of the value-dependent-shape op `call` performs on a tensor, if any."""
    func = call.func
    qualified = ctx.resolve(func)
    is_method = qualified is None and isinstance(func, cst.Attribute) and ctx.is_tensor(func.value)
    if is_method and isinstance(func, cst.Attribute):
        name = func.attr.value
    elif qualified is not None and qualified.startswith("torch.") and qualified.count(".") == 1:
        name = qualified.split(".")[1]
    else:
        return None
    if name in DYNAMIC_OPS:
        return name
    if name == "where" and not is_method and len(call.args) == 1 and call.args[0].keyword is None:
        return name
    if name == "repeat_interleave" and not any(a.keyword and a.keyword.value == "output_size" for a in call.args):
        repeats = _repeats_argument(call, is_method)
        if repeats is not None and ctx.is_tensor(repeats):
            return name
    return None


class DynamicShapeOp(Rule):
    code = "WSC501"
    graph_break = "GB0036"  # Dynamic shape operator
    target_notes = {"xla": "XLA recompiles for each shape"}
    target_advice = SHAPE_ADVICE
    name = "dynamic-shape-op"
    summary = ("Checks for `nonzero`, `argwhere`, one-argument `torch.where`, `masked_select`, `unique`, "
               "`unique_consecutive`, `bincount` and `repeat_interleave` with tensor repeats in traced code.")
    why = (
        "These return as many elements as the data selects, so the output shape is only known once the values "
        "are. A static graph is compiled for fixed shapes: the trace fails, or it freezes the first step's "
        "shape and is wrong (or recompiles) on every step whose data selects a different number. "
    ) + CAPTURED_SHAPES + OP_ALTERNATIVES.rstrip()
    example = """
def forward(self, tokens, hidden):
    positions = (tokens == self.mask_id).nonzero(as_tuple=True)
    return hidden[positions]
"""
    use_instead = """
def forward(self, tokens, hidden):
    is_masked = tokens == self.mask_id
    return torch.where(is_masked.unsqueeze(-1), hidden, 0)  # same shape every step
"""
    fix_safety = (
        "Safe for `masked_select(x, m).sum()` (-> `torch.where(m, x, 0).sum()`: the same elements, broadcast "
        "alike); `.mean()` is safe when the mask is visibly elementwise over `x`, unsafe otherwise (the count "
        "assumes the mask has the broadcast shape). CTC targets `t = labels.masked_select(mask)` whose one use "
        "is ctc_loss's targets, with `mask.sum(-1)` as its target_lengths: `labels.gather(-1, torch.argsort("
        "torch.logical_not(mask).int(), dim=-1, stable=True))`, the padded form ctc_loss takes, each row's "
        "selected labels first (safe when the mask is visibly elementwise over the labels: the same targets for "
        "every mask; on CUDA the padded form never runs cuDNN's kernel, which int32 CPU targets with blank 0 "
        "may, equal up to rounding; unsafe otherwise, as it assumes the mask has the labels' shape). "
        "No fix otherwise: what replaces a variable-size selection "
        "(a mask, a top-k) is a design choice."
    )
    VALID = [
        """
import torch
import torch.nn.functional as F
from torch import nn

class TopKRouter(nn.Module):
    def __init__(self, dim, num_experts, k):
        super().__init__()
        self.gate = nn.Linear(dim, num_experts)
        self.k = k
        self.lengths = torch.tensor([3, 1, 2]).repeat_interleave(2)

    def forward(self, h, padding):
        logits = self.gate(h).masked_fill(padding.unsqueeze(-1), float("-inf"))
        weights, experts = torch.topk(logits.softmax(-1), self.k, dim=-1)
        picked = torch.gather(h, 1, experts)
        kept = torch.where(weights > 0.1, weights, 0)
        load = F.one_hot(experts, logits.shape[-1]).sum(dim=(0, 1))
        spread = h.repeat_interleave(2, dim=0)
        sized = torch.repeat_interleave(h, experts.flatten(), dim=0, output_size=h.shape[0] * self.k)
        return picked, kept, load, spread, sized
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class MoE(nn.Module):
    def __init__(self, experts):
        super().__init__()
        self.experts = nn.ModuleList(experts)

    def forward(self, h, expert_ids):
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            rows = torch.nonzero(expert_ids == e).squeeze(-1)  # expect: WSC501
            out[rows] = expert(h[rows])
        used = expert_ids.unique()  # expect: WSC501
        rows, cols = torch.where(expert_ids > 0)  # expect: WSC501
        picked = h.masked_select(expert_ids.unsqueeze(-1) > 0)  # expect: WSC501
        counts = torch.bincount(expert_ids.flatten())  # expect: WSC501
        spread = h.repeat_interleave(counts, dim=0)  # expect: WSC501
        return out, used, rows, picked, spread
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if ctx.report_library_effects(node, SHAPE, "makes a tensor whose shape depends on its values", FIXED_SHAPE):
            return
        reduced = masked_select_reduction_fix(node, ctx, assigned_once(ctx))
        if reduced is not None:  # the reduction is visited before the masked_select call inside it
            ctx.scratch.setdefault("masked_select_fixes", {})[id(reduced[0])] = reduced[1]
        name = dynamic_op_name(node, ctx)
        if name is None or ctx.captures(DYNAMIC_OUTPUT_SHAPES):  # dynamo keeps it in the graph, of unbacked size
            return
        what = "one-argument torch.where" if name == "where" else f"`{name}`"
        fix = ctx.scratch.get("masked_select_fixes", {}).get(id(node)) or padded_ctc_targets(node, ctx, assigned_once(ctx))
        ctx.report(node, f"{what} in `{ctx.code(node)}` returns a tensor whose shape depends on its values", fix)


def _assignments(ctx: RuleContext) -> list[tuple[str, cst.BaseExpression]]:
    """`name = value` in the function's own body, in source order (not in nested functions or classes)."""
    pairs: list[tuple[str, cst.BaseExpression]] = []
    for node in ctx.walk(prune=(cst.FunctionDef, cst.ClassDef)):
        if type(node) is cst.Assign:
            pairs.extend((t.target.value, node.value) for t in node.targets if isinstance(t.target, cst.Name))
        elif type(node) is cst.AnnAssign and isinstance(node.target, cst.Name) and node.value is not None:
            pairs.append((node.target.value, node.value))
    return pairs


def assigned_once(ctx: RuleContext) -> dict[str, cst.BaseExpression]:
    """The expressions of names assigned once in this function (what a fix may read a mask's shape from)."""
    cached = ctx.scratch.get("assigned_once")
    if cached is None:
        pairs = _assignments(ctx)
        counts: dict[str, int] = {}
        for name, _ in pairs:
            counts[name] = counts.get(name, 0) + 1
        cached = ctx.scratch["assigned_once"] = {name: value for name, value in pairs if counts[name] == 1}
    return cached


def is_mask(expr: cst.BaseExpression, ctx: RuleContext) -> bool:
    """Is `expr` a boolean tensor where it is used: a comparison, `~m`, `a & b`, `.bool()`, `dtype=torch.bool`,
    `mask[:, None]`, or a name whose binding(s) reaching here are (the inference follows the bool dtype)?
    Integer index tensors (topk indices, arange) are not."""
    return ctx.kind(expr).boolean


def boolean_index(node: cst.Subscript, ctx: RuleContext) -> cst.BaseExpression | None:
    """The boolean mask `node` indexes a tensor with (`x[m]`, `x[:, m]`), or None."""
    if not ctx.is_tensor(node.value):
        return None
    for element in node.slice:
        if isinstance(element.slice, cst.Index) and is_mask(element.slice.value, ctx):
            return element.slice.value
    return None


class BooleanMaskIndex(Rule):
    code = "WSC502"
    graph_break = "GB0036"
    target_notes = {"xla": "XLA recompiles for each shape"}
    target_advice = SHAPE_ADVICE
    name = "boolean-mask-index"
    summary = "Checks for indexing a tensor with a boolean mask (`x[mask]`, `x[t > 0]`) in traced code."
    why = (
        "`x[mask]` keeps as many elements as the mask has true values, so its shape depends on the data. "
        "A static graph is compiled for fixed shapes; storing through a mask (`x[mask] = 0`) is lowered "
        "through the same value-dependent index computation on lazy-tensor and XLA graphs; under torch.compile "
        "a store keeps the tensor's shape (dynamo traces it as a select over the whole tensor) and is not reported. "
    ) + CAPTURED_SHAPES + (" Keep the full shape with torch.where(mask, x, 0) or masked_fill and reduce with the "
                           "mask; a reduction of a selection becomes torch.where(mask, x, 0).sum() (divided by "
                           "mask.sum() for a mean).")
    example = """
def forward(self, logits, labels):
    loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
    keep = labels.flatten() != -100
    return loss[keep].mean()
"""
    use_instead = """
def forward(self, logits, labels):
    loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
    keep = labels.flatten() != -100
    return torch.where(keep, loss, 0).sum() / keep.sum()
"""
    fix_safety = (
        "`x[m].sum()` -> `torch.where(m, x, 0).sum()` and `x[m].mean()` -> `torch.where(m, x, 0).sum() / m.sum()` "
        "(an all-false mask still gives NaN, like the original) are safe when the mask is visibly elementwise "
        "over `x` (`x[x > 0]`), unsafe otherwise because a mask over only the leading dimensions of `x` "
        "broadcasts differently. `x[m] = <number>` -> `x.masked_fill_(m, <number>)`, with the same safety. "
        "Other uses are reported without a fix."
    )
    VALID = [
        """
import torch
import torch.nn.functional as F
from torch import nn

class Attention(nn.Module):
    def forward(self, q, k, v, key_padding, top_idx):
        causal = torch.ones(q.shape[1], k.shape[1], dtype=torch.bool).tril()
        scores = q @ k.transpose(-1, -2)
        scores = scores.masked_fill(~causal, float("-inf"))
        scores = torch.where(key_padding[:, None, :], scores, -1e9)
        best = torch.topk(scores, 4, dim=-1).indices
        rows = v[top_idx]
        picked = torch.gather(v, 1, best[..., :1].expand(-1, -1, v.shape[-1]))
        return F.softmax(scores, -1) @ v + rows + picked
""",
    ]
    INVALID = [
        """
import torch
import torch.nn.functional as F
from torch import nn

class MaskedLMLoss(nn.Module):
    def forward(self, logits, labels, attention_mask):
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
        keep = labels.flatten() != -100
        masked = loss[keep].mean()  # expect: WSC502
        real = logits[attention_mask.bool()]  # expect: WSC502
        hard = loss[loss > loss.mean()].sum()  # expect: WSC502
        logits[labels == 0] = 0.0  # expect: WSC502
        return masked + real.sum() + hard
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if not get_target(ctx.settings.target).keeps_masked_store_shape:
            ctx.report_library_effects(node, MASK_STORE, "stores through a boolean mask",
                                       "the stored positions are a data-dependent set")
        func = node.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Subscript)):
            return
        subscript = func.value
        if func.attr.value not in api.REDUCTIONS or len(subscript.slice) != 1:
            return
        mask = boolean_index(subscript, ctx)
        if mask is None:
            return
        self._handled(ctx).add(id(subscript))
        fix = masked_reduction_fix(node, subscript.value, mask, func.attr.value, ctx, assigned_once(ctx))
        self._report(subscript, mask, ctx, fix, reduction=func.attr.value)

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                mask = boolean_index(target.target, ctx)
                if mask is not None:
                    self._handled(ctx).add(id(target.target))
                    if get_target(ctx.settings.target).keeps_masked_store_shape:
                        continue
                    fix = masked_store_fix(node, target.target.value, mask, ctx, assigned_once(ctx)) \
                        if len(target.target.slice) == 1 else None
                    ctx.report(target.target, f"storing through the mask `{ctx.code(mask)}` indexes a "
                                              "data-dependent set of positions", fix)

    def visit_Subscript(self, node: cst.Subscript, ctx: RuleContext) -> None:
        if id(node) in self._handled(ctx):
            return
        mask = boolean_index(node, ctx)
        if mask is not None:
            self._report(node, mask, ctx, None, reduction="")

    def _handled(self, ctx: RuleContext) -> set[int]:
        return ctx.scratch.setdefault("bool_index_handled", set())  # type: ignore[no-any-return]

    def _report(self, node: cst.Subscript, mask: cst.BaseExpression, ctx: RuleContext, fix: Fix | None,
                reduction: str) -> None:
        if ctx.captures(DYNAMIC_OUTPUT_SHAPES):  # dynamo keeps the selection in the graph, of unbacked size
            return
        ctx.report(node, f"`{ctx.code(node)}` selects by the mask `{ctx.code(mask)}`", fix,
                   consequence="its shape depends on the data")
