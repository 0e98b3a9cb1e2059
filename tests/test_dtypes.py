"""WSC6xx: float64 and complex values in traced code; dtype checks and code outside the step stay quiet."""

from __future__ import annotations

from tests.conftest import codes

MIXED_PRECISION_BLOCK = """
import torch as T
from torch import nn

class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.register_buffer("table", T.arange(dim, dtype=T.float64))

    def forward(self, x):
        if x.dtype in (T.float64, T.complex128):
            x = x.float()
        with T.autocast("cpu", dtype=T.bfloat16):
            h = self.norm(x)
        variance = h.to(T.float64).pow(2).mean(-1, keepdim=True)
        eps = T.finfo(T.float64).eps
        return (h * T.rsqrt(variance + eps)).to(x.dtype)
"""


def test_float64_through_an_import_alias(lint):
    assert codes(lint(MIXED_PRECISION_BLOCK, select=("WSC6",))) == [("WSC601", 15)]


def test_float64_fix_is_unsafe_and_keeps_the_alias(fix):
    assert "h.to(T.float32).pow(2)" not in fix(MIXED_PRECISION_BLOCK)
    fixed = fix(MIXED_PRECISION_BLOCK, unsafe=True)
    assert "h.to(T.float32).pow(2)" in fixed
    assert "T.finfo(T.float64).eps" in fixed and "dtype=T.float64))" in fixed  # inspection and __init__


def test_python_float_dtype_is_float64(lint, fix):
    code = """
    import torch
    from torch import nn

    class Scale(nn.Module):
        def forward(self, x):
            s = torch.full((1,), 0.5, dtype=float)
            return x.to(float) * s, x.to(dtype=int)
    """
    assert codes(lint(code, select=("WSC601",))) == [("WSC601", 6), ("WSC601", 7)]
    fixed = fix(code, unsafe=True)
    assert "dtype=torch.float32)" in fixed and "x.to(torch.float32)" in fixed and "dtype=int" in fixed


def test_complex_rotary_embedding_in_a_helper(lint):
    code = """
    import torch
    from torch import nn

    def apply_rotary(x, freqs_cis):
        x_c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(x_c * freqs_cis).flatten(-2).type_as(x)

    class Attention(nn.Module):
        def __init__(self, dim, max_len):
            super().__init__()
            freqs = torch.outer(torch.arange(max_len), torch.ones(dim // 2))
            self.register_buffer("freqs_cis", torch.polar(torch.ones_like(freqs), freqs))

        def forward(self, q):
            spectrum = q.cfloat()
            return apply_rotary(q, self.freqs_cis), spectrum
    """
    found = lint(code, select=("WSC6",))
    assert codes(found) == [("WSC602", 5), ("WSC602", 15)]
    assert found[0].chain[-1].endswith("apply_rotary")


def test_quiet_in_data_pipeline(lint):
    code = """
    import torch

    def load_features(array):
        feats = torch.from_numpy(array).double()
        return feats.to(torch.float32), torch.fft.rfft(feats)
    """
    assert lint(code, select=("WSC6",)) == []


def test_dtype_sets_and_the_default_dtype_are_not_float64_uses(lint):
    code = """
    import torch
    from torch.optim import Optimizer

    class SAM(Optimizer):
        @torch.no_grad()
        def step(self, closure=None):
            wide = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
            for group in self.param_groups:
                if self.can_use_foreach(group, dtypes=(torch.float32, torch.float64)):
                    params = [p for p in group["params"] if p.dtype in [torch.float16, torch.float64]]
                    torch._foreach_mul_(params, 0.5)
                for p in group["params"]:
                    acc = torch.zeros_like(p, dtype=wide)
                    norm = p.norm(dtype=torch.float64)
                    p.add_(acc + norm)
    """
    assert codes(lint(code, target="wsc")) == [("WSC601", 14)]


def test_dtype_sets_outside_traced_code_stay_quiet(lint):
    code = """
    import torch

    SUPPORTED = (torch.float32, torch.float64)

    def pick(dtype):
        return torch.float64 if dtype in SUPPORTED else torch.float32
    """
    assert codes(lint(code)) == []
