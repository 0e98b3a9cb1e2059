"""A custom `torch.autograd.Function`'s `backward` runs in the step's `loss.backward()` once `Fn.apply(...)` ran
in the traced step (#36, the user view's M26; #37 item 4): traced in the project's code, static methods and
class methods (`forward(cls, ctx, x)`) alike; in an installed library's, summarised with `forward` and reported
on the user's call, with the library's lines in `library_sites`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import codes
from tests.test_libraries import _install, _lint, site  # noqa: F401  (the fixture)

FUNCTIONS = '''
import torch
from torch.autograd import Function


class Sparse(Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.clamp(x, min=0)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        grad = grad_output.clone()
        grad[out == 0] = 0
        if grad.abs().max() > 1e4:
            grad = grad / grad.norm()
        return grad * out.sum().item()


class SparseByClass(Function):
    @classmethod
    def forward(cls, ctx, x, dim=-1):
        ctx.dim = dim
        out = torch.clamp(x, min=0)
        ctx.save_for_backward(out)
        return out

    @classmethod
    def backward(cls, ctx, grad_output):
        (out,) = ctx.saved_tensors
        grad = grad_output.clone()
        grad[out == 0] = 0
        return grad, None


class Smooth(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, 2 * x * grad_output, grad_output)


def sparse(x):
    return Sparse.apply(x)


def sparse_by_class(x, dim=-1):
    return SparseByClass.apply(x, dim)
'''

# the lines of FUNCTIONS' findings
STORE, BRANCH, READ, CLASS_STORE = 16, 17, 19, 34

STEP = '''

import cerebras.pytorch as cstorch


@cstorch.trace
def train_step(x):
    loss = (CALL).sum()
    loss.backward()
    return loss.detach()
'''


@pytest.mark.parametrize(("call", "expected"), [
    ("Sparse.apply(x)", [("WSC502", STORE), ("WSC101", BRANCH), ("WSC201", READ)]),
    ("SparseByClass.apply(x, 0)", [("WSC502", CLASS_STORE)]),
    ("sparse_by_class(x)", [("WSC502", CLASS_STORE)]),
    ("Smooth.apply(x)", []),
])
def test_a_projects_function_backward_is_traced_from_the_step(lint, call, expected):
    found = lint(FUNCTIONS + STEP.replace("CALL", call), target="wsc")
    assert sorted(codes(found)) == sorted(expected)
    assert all(d.chain[-1].endswith(".backward") for d in found)


def test_a_projects_function_applied_outside_traced_code_is_quiet(lint):
    untraced = FUNCTIONS + '''

def evaluate(x):
    return Sparse.apply(x).sum() + SparseByClass.apply(x).sum()
'''
    assert codes(lint(untraced, target="wsc")) == []


def _library_step(site_dir, root, step):  # type: ignore[no-untyped-def]
    _install(site_dir, "fakefunctions", "1.0", {"__init__.py": "", "functions.py": FUNCTIONS})
    return _lint(root, {"step.py": '''
        import torch
        import cerebras.pytorch as cstorch
        from fakefunctions.functions import Smooth, Sparse, sparse_by_class

    ''' + step})


def test_a_library_functions_backward_is_reported_on_the_users_call(site, tmp_path):  # noqa: F811
    found = _library_step(site, tmp_path / "proj", '''
        @cstorch.trace
        def train_step(x):
            first = Sparse.apply(x).sum()
            second = sparse_by_class(x).sum()
            third = Smooth.apply(x).sum()
            loss = first + second + third
            loss.backward()
            return loss.detach()
    ''')
    assert sorted((code, line) for code, _, line, _ in found) == [
        ("WSC101", 8), ("WSC201", 8), ("WSC502", 8), ("WSC502", 9)]
    by_line = {(code, line): message for code, _, line, message in found}
    assert "via fakefunctions.functions.Sparse.backward: `grad[out == 0] = 0`" in by_line[("WSC502", 8)]
    assert "via fakefunctions.functions.sparse_by_class -> fakefunctions.functions.SparseByClass.backward" \
        in by_line[("WSC502", 9)]


def test_a_library_functions_backward_is_in_library_sites(site, tmp_path):  # noqa: F811
    from tests.conftest import run_linter
    from tests.test_libraries import PYTHON

    _install(site, "fakefunctions", "1.0", {"__init__.py": "", "functions.py": FUNCTIONS})
    result, _ = run_linter(tmp_path / "proj", {"step.py": '''
import cerebras.pytorch as cstorch
from fakefunctions.functions import sparse_by_class


@cstorch.trace
def train_step(x):
    return sparse_by_class(x).sum()
'''}, python=PYTHON["path"])
    store = next(d for d in result.diagnostics if d.code == "WSC502")
    assert [(Path(path).parts[-2:], line, code) for path, line, code in store.library_sites] == [
        (("fakefunctions", "functions.py"), CLASS_STORE, "grad[out == 0] = 0")]


def test_a_library_function_applied_outside_traced_code_is_quiet(site, tmp_path):  # noqa: F811
    found = _library_step(site, tmp_path / "proj", '''
        def evaluate(x):
            return Sparse.apply(x).sum() + sparse_by_class(x).sum()
    ''')
    assert found == []


def test_a_class_method_functions_ctx_is_not_a_tensor(lint):
    """`@classmethod def backward(cls, ctx, grad)`: `ctx` is autograd's context, not the first gradient, so a
    test of `ctx.needs_input_grad[1]` is no branch on a tensor (it was, with `ctx` bound where `cls` is)."""
    code = '''
import torch
from torch.autograd import Function


class Bisect(Function):
    @classmethod
    def forward(cls, ctx, x, alpha):
        ctx.alpha = alpha
        y = torch.softmax(x, -1)
        ctx.save_for_backward(y)
        return y

    @classmethod
    def backward(cls, ctx, grad_output):
        (y,) = ctx.saved_tensors
        d_alpha = None
        if ctx.needs_input_grad[1]:
            d_alpha = (grad_output * y).sum()
        if grad_output.abs().max() > 1e4:
            grad_output = grad_output.clamp(-1e4, 1e4)
        return grad_output * y, d_alpha
''' + STEP.replace("CALL", "Bisect.apply(x, 1.5)")
    assert codes(lint(code, target="wsc")) == [("WSC101", 19)]
