"""What one call of a small helper returns, and options whose None the body replaces by a Python value.

False alarms seen on a transformer library written in the `default(val, d)` / `exists(v)` style (written
anew here): a helper analysed once with the join of its callers' arguments handed a tensor back to every
caller as soon as one caller passed a tensor, so `causal = default(causal, self.causal)` made a flag a
tensor; `candidates = default(candidates, self.candidates)` in a `forward` left an option presumed a
tensor although its fallback is a constructor argument. Each negative test has a positive twin where the
same shape does hold a tensor.
"""

from __future__ import annotations

import pytest

from tests.conftest import codes

TARGETS = ("wsc", "compile")

HELPERS = """
import torch
from torch import nn


def exists(v):
    return v is not None


def default(val, d):
    if exists(val):
        return val
    return d
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_small_helper_answers_each_call_with_its_own_arguments(lint, target):
    code = HELPERS + """

class Attend(nn.Module):
    def __init__(self, causal=False):
        super().__init__()
        self.causal = causal

    def scores(self, q, k, mask=None, causal=None):
        causal = default(causal, self.causal)
        if q.shape[-2] == 1 and causal:
            causal = False
        sim = q @ k.transpose(-1, -2)
        mask = default(mask, sim > 0)
        return sim.masked_fill(~mask, 0.0), causal

    def forward(self, q, k, mask):
        out, _ = self.scores(q, k, mask=mask)
        gate = default(mask, None)
        if gate.any():
            out = out * 2
        return out
"""
    # `causal` in `scores` comes back a Python bool; the tensor handed to the same helper in `forward` stays one
    assert codes(lint(code, target=target)) == [("WSC101", 31)]


@pytest.mark.parametrize("target", TARGETS)
def test_an_option_whose_none_is_replaced_by_a_python_value_is_static(lint, target):
    code = HELPERS + """

class Decoder(nn.Module):
    def __init__(self, candidates=4, drop_prob=0.1):
        super().__init__()
        self.candidates = candidates
        self.drop_prob = drop_prob

    def forward(self, seq, candidates=None, drop_prob=None, chunk=None, temperature=None):
        candidates = default(candidates, self.candidates)
        drop_prob = drop_prob if drop_prob is not None else self.drop_prob
        if chunk is None:
            chunk = 16
        temperature = 1.0 if temperature is None else temperature
        noise = torch.randn(candidates, seq.shape[-1])
        if self.training and drop_prob > 0.0:
            seq = seq * 0.5
        for start in range(0, seq.shape[0], chunk):
            seq[start:start + chunk] = seq[start:start + chunk] / temperature
        return seq + noise.sum()
"""
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_a_fallback_that_is_a_tensor_keeps_the_option_a_tensor(lint, target):
    code = HELPERS + """

class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.threshold = nn.Parameter(torch.tensor(0.5))

    def forward(self, seq, threshold=None):
        threshold = default(threshold, self.threshold)
        if threshold > 0.0:
            seq = seq * 2
        return seq
"""
    assert codes(lint(code, target=target)) == [("WSC101", 22)]


@pytest.mark.parametrize("target", TARGETS)
def test_a_flag_handed_on_under_its_own_name_stays_a_flag(lint, target):
    code = HELPERS + """

class Attend(nn.Module):
    def forward(self, q, k, causal=None):
        if causal:
            return q @ k.transpose(-1, -2)
        return q @ k.transpose(-1, -2) * 0.5


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attend = Attend()

    def forward(self, x, causal=None):
        out = self.attend(x, x, causal=causal)
        if not causal:
            out = out + 1
        return out


class Gate(nn.Module):
    def forward(self, x, scale=None):
        out = self.inner(x, scale=scale)
        if scale:
            out = out * scale
        return out
"""
    # `scale` is also multiplied into a tensor: a value, presumed a tensor as before
    assert codes(lint(code, target=target)) == [("WSC101", 37)]


def test_per_call_answers_stay_quiet_outside_traced_code(lint):
    code = HELPERS + """

def build(causal=None, candidates=None):
    causal = default(causal, True)
    if causal:
        return torch.zeros(default(candidates, 4))
    return None
"""
    assert codes(lint(code)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_a_parameter_used_as_a_size_is_a_python_int(lint, target):
    code = HELPERS + """

class RelativePositionBias(nn.Module):
    def __init__(self, loop_depth=4):
        super().__init__()
        self.loop_depth = loop_depth
        self.bias = nn.Embedding(64, 8)

    def forward(self, i, j, seq, depth=None, offset=None):
        q_pos = torch.arange(j - i, j, dtype=torch.long)
        k_pos = torch.arange(j, dtype=torch.long)
        grid = seq.new_ones(i, j)
        loops = default(depth, self.loop_depth)
        assert loops >= 1
        for _ in range(loops):
            seq = seq * 0.5
        seq = seq[:, :offset] if offset is not None else seq
        return self.bias(k_pos[None, :] - q_pos[:, None]) + grid.sum() + seq.sum()
"""
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_a_size_computed_from_tensor_data_is_still_reported(lint, target):
    code = HELPERS + """

class Packer(nn.Module):
    def forward(self, seq, lengths, n):
        max_len = lengths.max()
        positions = torch.arange(max_len)
        steps = n + 1
        return seq[:, :max_len] + positions, steps * seq
"""
    # `n` is used only in arithmetic with a tensor: a tensor input as before (no finding of its own here)
    assert codes(lint(code, target=target)) == [("WSC207", 18), ("WSC207", 20)]


def test_a_builtin_on_a_parameter_is_not_its_fallback(lint):
    code = HELPERS + """

class Sampler(nn.Module):
    def forward(self, logits, temperature):
        temperature = max(temperature, 1e-10)
        return logits / temperature
"""
    assert codes(lint(code)) == [("WSC205", 17)]


@pytest.mark.parametrize("target", TARGETS)
def test_a_required_input_handed_to_a_helper_with_a_constant_is_not_replaced_by_it(lint, target):
    """`default(x, fallback)` replaces a None: a required `x` given to a two-argument helper with a number or
    a pattern (`read(x, 10)`, `rearrange(x, "b n d -> b d n")`) is used there, and stays the tensor it is."""
    code = """
import torch
from torch import nn
from einops import rearrange
from mylib.ops import top_values


class Head(nn.Module):
    def forward(self, hidden, scores):
        best = top_values(scores, 10)
        flat = rearrange(hidden, "b n d -> b (n d)")
        if scores.max() > 0:
            flat = flat * 2
        if hidden.sum() > 0:
            flat = flat + 1
        return flat, best
"""
    assert codes(lint(code, target=target)) == [("WSC101", 11), ("WSC101", 13)]


@pytest.mark.parametrize("target", TARGETS)
def test_a_container_annotation_beats_a_callers_tensor(lint, target):
    code = """
from typing import Optional

import torch
from torch import nn


class Inner(nn.Module):
    def forward(self, x: torch.Tensor, cache: Optional[dict[str, torch.Tensor]] = None,
                scale: Optional[torch.Tensor] = None):
        cache = cache or {}
        if "conv" in cache:
            x = x + cache["conv"]
        return x * (scale or x)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x: torch.Tensor, cache: Optional[dict[str, torch.Tensor]] = None):
        cache = cache or {}
        return self.inner(x, cache=cache.get("inner"), scale=cache.get("scale"))
"""
    # the nested cache stays a container; `scale`, annotated a tensor, is one
    assert codes(lint(code, target=target)) == [("WSC105", 13)]


def test_calling_a_module_runs_its_own_call_then_forward(lint):
    """A base module overriding `__call__` (a check of its inputs before `super().__call__`, which runs
    `forward`): `block(x)` in a traced step runs both, so what either does is reported."""
    code = """
import torch
from torch import nn


class Checked(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def __call__(self, x):
        if x.abs().max().item() > 1e4:
            x = x.clamp(-1e4, 1e4)
        return super().__call__(x)

    def forward(self, x):
        return self.proj(x).tolist()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Checked()

    def forward(self, x):
        return self.block(x)
"""
    found = {(d.code, d.line) for d in lint(code, target="wsc")}
    assert ("WSC201", 11) in found and ("WSC201", 16) in found
