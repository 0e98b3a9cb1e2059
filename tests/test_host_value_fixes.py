"""Fixes that keep a value read from a tensor on the device when it is assigned to a name (issue 20):
offered only when every use of the name takes a tensor, safe only for a zero-dimensional value."""

from __future__ import annotations

import pytest

MODEL = """
import logging
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x, w):
        y = x @ w
        scale = {read}
        {use}
"""


def _item_fix(lint, read: str, use: str):  # type: ignore[no-untyped-def]
    found = [d for d in lint(MODEL.format(read=read, use=use)) if d.code in ("WSC201", "WSC203")]
    assert len(found) == 1, found
    return found[0].fix


@pytest.mark.parametrize("use", [
    "return y / scale",
    "return torch.maximum(y, scale) + 1",
    "return y.mul_(scale), scale",
    "y -= scale\n        return y",
])
def test_every_use_takes_a_tensor_is_a_safe_fix(lint, use):
    fix = _item_fix(lint, "y.abs().max().item()", use)
    assert fix is not None and fix.applicability == "safe"
    assert "Keep `scale` a tensor" in fix.message


@pytest.mark.parametrize("use", [
    'logging.info(f"scale {scale}")\n        return y',
    "return y.view(-1, int(scale))",
    "return y.add(y, alpha=scale)",
    "return y.reshape(scale)",
    "return [scale] * 3",
    "total = scale + 1.0\n        return y * total",
])
def test_a_use_that_needs_a_python_number_gets_no_safe_fix(lint, use):
    fix = _item_fix(lint, "y.abs().max().item()", use)
    assert fix is None or (fix.applicability == "unsafe" and "float64" in fix.message)


@pytest.mark.parametrize("use", ["return y.view(-1, int(scale))", "return y.reshape(scale)",
                                 "return y.new_zeros(3, scale)", "return y[scale]"])
def test_a_use_as_a_shape_or_index_gets_no_fix(lint, use):
    assert _item_fix(lint, "y.abs().max().item()", use) is None


def test_a_value_with_dimensions_is_unsafe(lint):
    fix = _item_fix(lint, "y[:1, :1].item()", "return y * scale")
    assert fix is not None and fix.applicability == "unsafe" and "zero-dimensional" in fix.message
    fix = _item_fix(lint, "float(y[0, 0:1])", "return torch.mul(y, scale)")
    assert fix is not None and fix.applicability == "unsafe" and "zero-dimensional" in fix.message


def test_an_if_on_the_name_is_unsafe_and_chains_into_torch_where(fix):
    code = MODEL.format(read="y.abs().max().item()", use="if scale > 1.0:\n            y = y / scale\n        return y")
    assert "torch.where" not in fix(code)
    fixed = fix(code, unsafe=True)
    assert "scale = y.abs().max().detach()" in fixed
    assert "y = torch.where(scale > 1.0, y / scale, y)" in fixed


def test_a_name_assigned_twice_gets_no_safe_fix(lint):
    fix = _item_fix(lint, "y.abs().max().item()", "scale = 2.0\n        return y * scale")
    assert fix is not None and fix.applicability == "unsafe"  # only the bookkeeping fix: the name may hold either


BOOKKEEPING = """
import logging
import torch

class Adaptive(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        total = 0.0
        for group in self.param_groups:
            for p in group["params"]:
                total += 0.5 * p.grad.abs().sum().item()
                self.state[p]["norm"] += p.grad.norm().item()
                self.state[p]["last"] = 2 * p.grad.norm().item()
        {use}
"""


@pytest.mark.parametrize("use", [
    "d = max(1.0, 2.0 / total)",
    "if total == 0:\n            return None",
    'logging.info(f"total={total:1.1e}")',
    "scale = (1 - 0.9) * total",
])
def test_python_bookkeeping_stays_a_tensor_unsafely(lint, fix, use):
    code = BOOKKEEPING.format(use=use)
    found = [d for d in lint(code) if d.code == "WSC201"]
    assert len(found) == 3 and all(d.fix is not None for d in found)
    assert 'Keep `self.state[p]["last"]` a tensor' in found[2].fix.message
    assert found[0].fix.applicability == "unsafe"
    assert "float64" in found[0].fix.message and "Keep `total` a tensor" in found[0].fix.message
    fixed = fix(code, unsafe=True)
    assert "total += 0.5 * p.grad.abs().sum().detach()" in fixed
    assert 'self.state[p]["norm"] += p.grad.norm().detach()' in fixed
    assert "total += 0.5 * p.grad.abs().sum().item()" in fix(code)  # only with --unsafe-fixes


@pytest.mark.parametrize("use", [
    "k = list(range(int(total)))",
    "first = group['params'][total]",
    "rows = torch.zeros(3)[:total]",
])
def test_bookkeeping_used_as_a_python_integer_gets_no_fix(lint, use):
    found = [d for d in lint(BOOKKEEPING.format(use=use)) if d.code == "WSC201" and "abs()" in d.message]
    assert len(found) == 1 and found[0].fix is None


def test_a_read_that_does_not_reach_an_assignment_through_arithmetic_gets_no_fix(lint):
    code = BOOKKEEPING.format(use="values = [total]").replace(
        "total += 0.5 * p.grad.abs().sum().item()", "total += max(p.grad.abs().sum().item(), 1.0)")
    found = [d for d in lint(code) if d.code == "WSC201" and "abs" in d.message]
    assert len(found) == 1 and found[0].fix is None


LARGEST = """
import torch

class Opt(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        norm = self.param_groups[0]["params"][0].norm()
        value = {expr}
        for group in self.param_groups:
            for p in group["params"]:
                p.sub_(p.grad * value)
"""


@pytest.mark.parametrize("expr, expected", [
    ('max(group["lr"] for group in self.param_groups)',
     'torch.stack([torch.as_tensor(group["lr"]) for group in self.param_groups]).max()'),
    ('min([g["lr"] for g in self.param_groups])',
     'torch.stack([torch.as_tensor(g["lr"]) for g in self.param_groups]).min()'),
    ('max([self.param_groups[0]["lr"], self.param_groups[-1]["lr"]])',
     'torch.stack([torch.as_tensor(self.param_groups[0]["lr"]), torch.as_tensor(self.param_groups[-1]["lr"])]).max()'),
    ("max((norm, norm * 2))", "torch.stack([norm, norm * 2]).max()"),
])
def test_max_over_an_iterable_is_stacked_on_the_device(lint, fix, expr, expected):
    [finding] = [d for d in lint(LARGEST.format(expr=expr)) if d.code == "WSC205"]
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert f"value = {expected}" in fix(LARGEST.format(expr=expr), unsafe=True)


@pytest.mark.parametrize("expr", [
    'max([norm, self.param_groups[0]["lr"]])',  # a device tensor and maybe a Python number: stack would fail
    "max(n for p in self.param_groups for n in p['params'])",  # nested loops
    "max(*self.param_groups)",
])
def test_max_over_an_iterable_without_a_fix(lint, expr):
    found = [d for d in lint(LARGEST.format(expr=expr)) if d.code == "WSC205"]
    assert all(d.fix is None for d in found)


@pytest.mark.parametrize("call, expected", [
    ("math.sqrt(y.var())", "torch.sqrt(y.var())"),
    ("math.fabs(y.sum())", "torch.abs(y.sum())"),
    ("math.log(1 + y.mean())", "torch.log(1 + y.mean())"),
])
def test_math_on_a_tensor_becomes_the_torch_op(lint, fix, call, expected):
    code = MODEL.replace("import logging", "import logging\nimport math").format(read=call, use="return y * scale")
    [finding] = [d for d in lint(code) if d.code == "WSC204"]
    assert finding.fix is not None and finding.fix.applicability == "unsafe" and "float64" in finding.fix.message
    assert f"scale = {expected}" in fix(code, unsafe=True)


def test_math_functions_without_a_torch_twin_get_no_fix(lint):
    code = MODEL.replace("import logging", "import logging\nimport math").format(
        read="math.floor(y.sum())", use="return y * scale")
    assert all(d.fix is None for d in lint(code) if d.code == "WSC204")


SELF_REBOUND = """
import torch
from torch import nn

class Scaled(nn.Module):
    def forward(self, x, w):
        loss = x.sum()
        loss = loss * {factor}
        return x * loss.item()
"""


def test_a_name_rebound_from_itself_is_judged_by_its_other_bindings(lint):
    """`loss = loss * 2` reads the name it binds: asking whether `loss` is zero-dimensional went round that
    binding until Python's recursion limit, and the WSC201 finding became an internal error (WSC002)."""
    found = lint(SELF_REBOUND.format(factor="2"))
    assert [d.code for d in found] == ["WSC201"]
    assert found[0].fix is not None and found[0].fix.applicability == "safe"
    with_dimensions = lint(SELF_REBOUND.format(factor="w"))  # `w` may have dimensions: no longer certain
    assert [d.code for d in with_dimensions] == ["WSC201"]
    assert with_dimensions[0].fix is None or with_dimensions[0].fix.applicability == "unsafe"
