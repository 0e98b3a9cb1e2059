"""WSC401: traced tensors passed as Python-number arguments, its fix, and the Number-parameter table."""

from __future__ import annotations

import collections

import pytest

from cslint.analysis.number_params import NUMBER_PARAMS
from tests.conftest import codes

OPTIMIZER = """
import torch
from torch.optim import Optimizer

class SGD(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr, weight_decay=0.0))
        for group in self.param_groups:
            for p in group["params"]:
                p.data.add_(p.data, alpha=-group["lr"])

    def preinitialize(self):
        pass

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr = group["lr"]
            for p in group["params"]:
                grad = p.grad.add(p, alpha=group["weight_decay"])
                p.add_(grad, alpha=-lr)
                p.addcmul_(grad, grad, value=lr * 0.5)
                torch.add(p, grad, alpha=lr, out=p)

    def report(self):
        return [p.add(p, alpha=self.param_groups[0]["lr"]) for p in self.param_groups[0]["params"]]
"""


def test_tensor_learning_rate_arguments_are_reported(lint) -> None:
    assert codes(lint(OPTIMIZER, select=("WSC401",))) == [("WSC401", 20), ("WSC401", 21), ("WSC401", 22)]


def test_fix_multiplies_the_operand(fix) -> None:
    fixed = fix(OPTIMIZER)
    assert "p.add_(-lr * grad)" in fixed
    assert "p.addcmul_((lr * 0.5) * grad, grad)" in fixed
    assert "torch.add(p, lr * grad, out=p)" in fixed
    assert 'p.data.add_(p.data, alpha=-group["lr"])' in fixed  # __init__ is not traced


def test_foreach_fix_scales_the_list(fix) -> None:
    code = """
import cerebras.pytorch as cstorch
import torch

@cstorch.trace
def update(params, grads, lr: torch.Tensor):
    torch._foreach_add_(params, grads, alpha=-lr)
"""
    assert "torch._foreach_add_(params, torch._foreach_mul(grads, -lr))" in fix(code)


def test_forward_and_data_pipeline_are_quiet(lint) -> None:
    code = """
import torch
from torch import nn

def augment(x, strength):
    return x.add(torch.randn_like(x), alpha=strength)

class Block(nn.Module):
    def forward(self, x, y):
        return x.add(y, alpha=2.0).addcmul(x, y, value=0.5)
"""
    assert lint(code, select=("WSC401",)) == []


def test_other_number_parameters_are_reported_without_fix(lint) -> None:
    code = """
import torch
from torch import nn

class Head(nn.Module):
    def forward(self, x, scale):
        return torch.addmm(x, x, x, beta=scale)
"""
    [finding] = lint(code, select=("WSC401",))
    assert (finding.code, finding.line, finding.fix) == ("WSC401", 6, None)


def _derive_from_installed_torch() -> dict[str, frozenset[str]]:
    """The derivation number_params.py documents, run against the installed torch."""
    torch = pytest.importorskip("torch")
    number_types = {"number", "Optional[number]", "float", "Optional[float]"}
    number, other = collections.defaultdict(set), collections.defaultdict(set)
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        types = [str(a.type) for a in schema.arguments]
        if not any("Tensor" in t for t in types):
            continue
        op = schema.name[len("aten::"):]
        for arg, typ in zip(schema.arguments, types):
            if arg.name not in ("self", "out"):
                (number if typ in number_types else other)[op].add(arg.name)
    table = {}
    for op, params in number.items():
        only = params - other[op]
        if only and (not op.startswith("_") or op.startswith("_foreach_")):
            table[op] = frozenset(only)
    return table


def test_table_matches_installed_torch() -> None:
    torch = pytest.importorskip("torch")
    if not torch.__version__.startswith("2.13."):
        pytest.skip("the table was derived from torch 2.13")
    assert _derive_from_installed_torch() == NUMBER_PARAMS
    assert NUMBER_PARAMS["add_"] == {"alpha"} and NUMBER_PARAMS["addcdiv_"] == {"value"}
    assert "clamp" not in NUMBER_PARAMS  # clamp(min=Tensor) exists


FILLS = """
import torch
from torch import nn

class Gate(nn.Module):
    def forward(self, x, lr, n: int = 4):
        scale = x.abs().mean() * lr
        a = torch.full_like(x, scale)
        b = x.new_full((n, 3), scale)
        c = torch.full_like(x, fill_value=scale, dtype=torch.float32)
        d = torch.full_like(x, 0.5)
        return a + b.sum() + c + d
"""


def test_a_tensor_fill_value_is_added_to_zeros(lint, fix) -> None:
    assert codes(lint(FILLS, select=("WSC401",))) == [("WSC401", 7), ("WSC401", 8), ("WSC401", 9)]
    fixed = fix(FILLS)
    assert "a = torch.zeros_like(x).add_(scale)" in fixed
    assert "b = x.new_zeros((n, 3)).add_(scale)" in fixed
    assert "c = torch.zeros_like(x, dtype=torch.float32).add_(scale)" in fixed
    assert "d = torch.full_like(x, 0.5)" in fixed  # a Python number is what full_like takes


def test_filled_from_zeros_gives_the_same_tensor() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(3, 4)
    for scale in (0.1, torch.tensor(0.1), torch.tensor(0.1, dtype=torch.float64), 3):
        expected = torch.full_like(x, float(scale))
        actual = torch.zeros_like(x).add_(scale)
        assert actual.dtype == expected.dtype and torch.equal(actual, expected)
        assert torch.equal(x.new_zeros((2, 3)).add_(scale), x.new_full((2, 3), float(scale)))
