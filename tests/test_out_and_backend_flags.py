"""WSC402 (`out=` into a tensor that may be non-contiguous) and WSC706 (backend-flag context managers in the
step): graph breaks of torch.compile no rule reported (#37 item 5)."""

from __future__ import annotations

import libcst as cst

from cslint.core.graph_break_ids import graph_break_id
from tests.conftest import codes

# A fused-attention block in the style of model code: scores written into a slice of a cached buffer, and
# an RNN run with cuDNN switched off for determinism.
MODEL = """
import torch
from torch import nn


class CachedAttention(nn.Module):
    def __init__(self, dim, max_len):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.register_buffer("scores", torch.zeros(max_len, max_len))

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        n = x.shape[0]
        torch.mm(q, k.t(), out=self.scores[:n, :n])
        attn = torch.empty(n, n, device=x.device)
        torch.softmax(self.scores[:n, :n], dim=-1, out=attn)
        with torch.backends.cudnn.flags(enabled=False, deterministic=True):
            h, _ = self.rnn(attn.unsqueeze(0) @ v.unsqueeze(0))
        return h


def export_scores(model, x, out):
    torch.mm(x, x.t(), out=out.t())
    with torch.backends.cudnn.flags(enabled=False):
        return model(x)
"""


def _line(text: str) -> int:
    return next(i for i, line in enumerate(MODEL.lstrip("\n").splitlines(), start=1) if text in line)


def test_both_are_reported_in_the_step_under_compile(lint):
    found = [c for c in codes(lint(MODEL, target="compile")) if c[0] in ("WSC402", "WSC706")]
    flags = _line("with torch.backends.cudnn.flags(enabled=False, d")
    assert found == [("WSC402", _line("out=self.scores")), ("WSC706", flags)]


def test_they_carry_the_graph_break_ids_dynamo_reports():
    """The ids torch 2.13's `torch.compile(fullgraph=True)` raises with: "Attempted to call op with
    non-contiguous `out=` tensor" and "torch.* op returned non-Tensor" (`_GeneratorContextManager`)."""
    assert graph_break_id("WSC402", "`torch.mm(a, b, out=c)` writes into `c`") == "GB0242"
    assert graph_break_id("WSC706", "`with torch.backends.cudnn.flags(enabled=False)` sets") == "GB0208"
    assert graph_break_id("WSC706", "`with torch.backends.opt_einsum.flags(enabled=False)` sets") == "GB0007"


def test_quiet_on_lazy_tensor_targets(lint):
    """Lazy tensors write a view through `out=` and set the flags once while tracing: no break there."""
    for target in ("wsc", "xla"):
        assert not [d for d in lint(MODEL, target=target) if d.code in ("WSC402", "WSC706")]


def test_quiet_outside_traced_code(lint):
    untraced = MODEL.replace("class CachedAttention(nn.Module):", "class CachedAttention:")
    assert not [d for d in lint(untraced, target="compile") if d.code in ("WSC402", "WSC706")]


def test_a_contiguous_out_made_in_the_step_is_not_reported(lint):
    """`attn = torch.empty(...)` is contiguous; a name also bound to a view is not known to be."""
    assert _line("out=attn") not in [line for code, line in codes(lint(MODEL, target="compile")) if code == "WSC402"]
    rebound = MODEL.replace("        return h\n", "        attn = attn.t()\n        return h\n", 1)
    assert _line("out=attn") in [line for code, line in codes(lint(rebound, target="compile")) if code == "WSC402"]


COPYABLE = """
import torch
from torch import nn


class Projector(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, dim))
        self.register_buffer("proj", torch.zeros(dim, dim).t())

    def forward(self, x):
        torch.mm(x, self.weight, out=self.proj)
        y = torch.add(x, 1.0, out=x)
        return y + self.proj
"""


def test_the_unsafe_fix_copies_into_the_out_tensor_and_leaves_no_finding(fix, lint):
    assert fix(COPYABLE, target="compile") == COPYABLE.lstrip("\n")  # not a safe fix
    fixed = fix(COPYABLE, unsafe=True, target="compile")
    cst.parse_module(fixed)
    assert "self.proj.copy_(torch.mm(x, self.weight))" in fixed
    assert "y = x.copy_(torch.add(x, 1.0))" in fixed
    assert not [d for d in lint(fixed, target="compile") if d.code == "WSC402"]
    assert fix(fixed, unsafe=True, target="compile") == fixed


def test_the_fix_computes_the_same_values_into_the_same_memory():
    import torch

    def original(a, b, out):
        r = torch.mm(a, b, out=out)
        return r

    def fixed(a, b, out):
        r = out.copy_(torch.mm(a, b))
        return r

    a, b = torch.randn(4, 3), torch.randn(3, 4)
    out1, out2 = torch.empty(4, 4).t(), torch.empty(4, 4).t()
    r1, r2 = original(a, b, out1), fixed(a, b, out2)
    assert r1 is out1 and r2 is out2
    assert torch.equal(out1, out2) and out1.stride() == out2.stride()
