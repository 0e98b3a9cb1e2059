"""WSC207: a traced tensor used where Python needs an int (a size, a shape, a slice bound, a count)."""

from __future__ import annotations

import libcst as cst

from cslint.rule_api.context import RuleContext

# torch functions whose positional arguments (or `size=`) are sizes or bounds.

from cslint.rules.base import Rule
SIZE_FUNCTIONS = frozenset({
    "torch.arange", "torch.range", "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.rand",
    "torch.randn", "torch.randint", "torch.randperm", "torch.eye", "torch.linspace", "torch.logspace",
    "torch.tril_indices", "torch.triu_indices",
})
# torch.full(size, fill_value), torch.randint(low, high, size), linspace(start, end, steps): which positions.
SIZE_POSITIONS = {"torch.full": (0,), "torch.linspace": (2,), "torch.logspace": (2,), "torch.randint": (0, 1, 2)}
SIZE_KEYWORDS = frozenset({"size", "steps", "end", "start", "step", "n", "m", "high", "low", "length",
                           "split_size_or_sections", "sections", "chunks", "repeats", "sizes", "shape",
                           "output_size", "pad", "scale_factor"})
# Tensor methods whose arguments are all sizes, dims or counts.
SIZE_METHODS = frozenset({
    "view", "reshape", "expand", "repeat", "tile", "new_zeros", "new_ones", "new_empty", "narrow", "unflatten",
    "split", "chunk", "tensor_split", "unfold", "roll", "topk", "kthvalue",
})
# Functional ops whose size-like keywords are Python ints.
SIZE_KEYWORD_FUNCTIONS = frozenset({
    "torch.nn.functional.interpolate", "torch.nn.functional.pad", "torch.nn.functional.adaptive_avg_pool1d",
    "torch.nn.functional.adaptive_avg_pool2d", "torch.nn.functional.adaptive_max_pool2d",
    "torch.nn.functional.one_hot", "torch.nn.functional.upsample",
})


def _elements(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """A size argument's parts: the elements of `(h, w)` / `[b, n]`, else the expression itself."""
    if isinstance(expr, (cst.Tuple, cst.List)):
        return [e.value for e in expr.elements if not isinstance(e, cst.StarredElement)]
    return [expr]


class TensorAsSize(Rule):
    code = "WSC207"
    name = "tensor-as-size"
    summary = ("Checks for traced tensors used where Python needs an int: slice bounds, sizes and shapes "
               "(`torch.arange(n)`, `torch.zeros(b, n)`, `x.view(t, -1)`, `x.repeat(k)`), "
               "`F.interpolate(size=...)`, `range(n)`, and a zero-dimensional tensor as an index (`w[t.argmax()]`).")
    why = ("A slice bound, a size or a shape is a Python int when an operator runs: given a 0-dim tensor, "
           "PyTorch reads its value. So does indexing by a 0-dim integer tensor (`w[i]` selects with `int(i)`; "
           "a 1-dim index is a gather that stays in the graph: `w.index_select(0, i.view(1)).squeeze(0)`). Under torch.compile that is a graph break "
           "(an error with `fullgraph=True`); on lazy tensors (WSC, XLA, RDU) it syncs with the device while "
           "tracing, or the first step's value is frozen into the graph as a constant and every later step reuses it.")
    example = """
def forward(self, hidden, lengths):
    max_len = lengths.max()
    positions = torch.arange(max_len, device=hidden.device)
    return hidden[:, :max_len] + self.pos(positions)
"""
    use_instead = """
def forward(self, hidden, lengths):
    positions = torch.arange(hidden.shape[1], device=hidden.device)  # a static bound
    mask = positions[None, :] < lengths[:, None]                      # and a mask for the rest
    return (hidden + self.pos(positions)) * mask[..., None]
"""
    fix_safety = ("No fix: the static bound (a config value, the padded length, `x.shape[i]`) and the mask "
                  "have to be chosen by a person.")
    VALID = [
        """
import torch
from torch import nn
import torch.nn.functional as F

class Upsampler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.max_len = config.max_len
        self.size = (config.height, config.width)

    def forward(self, x, scale: int = 2):
        b, n = x.shape[0], x.size(1)
        positions = torch.arange(n, device=x.device)
        x = x[:, : self.max_len] + torch.zeros(b, n, 1)
        x = x.view(b, -1).repeat(scale, 1)
        best = x.sum(-1).argmax(-1, keepdim=True)  # a 1-dim index: a gather
        return F.interpolate(x[best][None, None], size=self.size) + positions.sum()


def make_batches(lengths):
    n = lengths.max()
    return torch.arange(n), list(range(n))
""",
    ]
    INVALID = [
        """
import torch
from torch import nn
import torch.nn.functional as F

class Packer(nn.Module):
    def forward(self, hidden, lengths, counts):
        max_len = lengths.max()
        start = counts[0]
        positions = torch.arange(max_len)  # expect: WSC207
        pad = torch.zeros(hidden.shape[0], max_len)  # expect: WSC207
        window = hidden[start:max_len]  # expect: WSC207
        flat = window.view(max_len, -1)  # expect: WSC207
        tiled = flat.repeat(counts[1], 1)  # expect: WSC207
        steps = list(range(max_len))  # expect: WSC207
        return F.interpolate(tiled[None], size=(max_len, 4)), pad, positions, steps  # expect: WSC207


class Experts(nn.Module):
    def forward(self, hidden, routing):
        for row in routing.nonzero():
            expert = row[0]
            hidden = hidden + self.weight[expert]  # expect: WSC207
        first = (routing == 1).nonzero(as_tuple=True)[0][0]
        return hidden[first + 1]  # expect: WSC207
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        qualified = ctx.resolve(func)
        if qualified in SIZE_FUNCTIONS:
            positions = SIZE_POSITIONS.get(qualified)
            positional = [a for a in node.args if a.keyword is None and not a.star]
            parts = [p for i, a in enumerate(positional) if positions is None or i in positions
                     for p in _elements(a.value)]
            parts += [p for a in node.args if a.keyword is not None and a.keyword.value in SIZE_KEYWORDS
                      for p in _elements(a.value)]
            self._check(node, parts, f"`{qualified.rsplit('.', 1)[1]}`", ctx)
        elif qualified in SIZE_KEYWORD_FUNCTIONS:
            parts = [p for a in node.args if a.keyword is not None and a.keyword.value in SIZE_KEYWORDS
                     for p in _elements(a.value)]
            self._check(node, parts, f"`{qualified.rsplit('.', 1)[1]}`", ctx)
        elif isinstance(func, cst.Attribute) and func.attr.value in SIZE_METHODS and ctx.is_tensor(func.value):
            parts = [p for a in node.args if not a.star for p in _elements(a.value)]
            self._check(node, parts, f"`.{func.attr.value}()`", ctx)
        elif isinstance(func, cst.Name) and func.value == "range" and qualified is None \
                and id(node) not in ctx.scratch.get("sizes.loop_ranges", ()):
            self._check(node, [a.value for a in node.args], "`range`", ctx)

    def visit_For(self, node: cst.For, ctx: RuleContext) -> None:  # `for i in range(t)` is WSC107's
        ctx.scratch.setdefault("sizes.loop_ranges", set()).add(id(node.iter))

    def visit_CompFor(self, node: cst.CompFor, ctx: RuleContext) -> None:
        ctx.scratch.setdefault("sizes.loop_ranges", set()).add(id(node.iter))

    def visit_Subscript(self, node: cst.Subscript, ctx: RuleContext) -> None:
        bounds = [part for element in node.slice if isinstance(element.slice, cst.Slice)
                  for part in (element.slice.lower, element.slice.upper, element.slice.step) if part is not None]
        self._check(node, bounds, "a slice", ctx)
        if not ctx.is_tensor(node.value):
            return
        for element in node.slice:
            if isinstance(element.slice, cst.Index) and ctx.kind(element.slice.value).rank == 0 \
                    and ctx.is_tensor(element.slice.value):
                index = element.slice.value
                ctx.report(index, f"`{ctx.code(index)}` is a 0-dim tensor used as an index: read as a Python int "
                                  "while tracing")
                return

    def _check(self, node: cst.CSTNode, parts: list[cst.BaseExpression], where: str, ctx: RuleContext) -> None:
        for part in parts:
            if ctx.is_tensor(part):
                ctx.report(part, f"`{ctx.code(part)}` is a tensor where {where} needs a Python int: read while "
                                 "tracing")
                return
