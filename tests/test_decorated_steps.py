"""A step wrapped by a project decorator whose wrapper passes everything on (`def _use_grad(*args, **kwargs)`, as
torch.optim's `_use_grad_for_differentiable`, copied into many research optimizers): the wrapper is traced
(#24 item 9), and the step keeps what its own callers give it; the wrapper's unknown `*args` do not make
`self` unknown and hide every finding in the step."""

from __future__ import annotations

import pytest

from tests.conftest import codes

DECORATOR = '''
import functools

import torch


def _use_grad(func):
    def _wrapped({params}):
        {self_line}
        prev = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(self.defaults["differentiable"])
            ret = func({args})
        finally:
            torch.set_grad_enabled(prev)
        return ret
    functools.update_wrapper(_wrapped, func)
    return _wrapped


class MySGD(torch.optim.Optimizer):
    @_use_grad
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad.sum().item() > 0:
                    p.add_(p.grad, alpha=-group["lr"])
'''
FORMS = {
    "star-args": {"params": "*args, **kwargs", "self_line": "self = args[0]", "args": "*args, **kwargs"},
    "named": {"params": "self, *args, **kwargs", "self_line": "pass", "args": "self, *args, **kwargs"},
}
EXPECTED = [("WSC101", 25), ("WSC201", 25), ("WSC401", 26)]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_decorated_step_keeps_its_findings(lint, form: str) -> None:
    assert codes(lint(DECORATOR.format(**FORMS[form]), target="wsc", select=("WSC1", "WSC2", "WSC4"))) == EXPECTED


def test_the_wrapper_is_quiet_outside_traced_code(lint) -> None:
    code = DECORATOR.format(**FORMS["star-args"]).replace("class MySGD(torch.optim.Optimizer):", "class MySGD:")
    assert lint(code, target="wsc", select=("WSC1", "WSC2", "WSC4")) == []
