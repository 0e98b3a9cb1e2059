"""WSC705's fix under `--target compile` (fixers/grad_switch.py): a switch turning `requires_grad` on for a tensor
the step makes (a view of the input, a new tensor, a buffer of the module) is skipped while torch.compile
traces. A switch on a parameter, on the function's own input, off, or on a tensor whose gradient the function
reads keeps its finding and gets no fix; on the lazy targets there is none either."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_golden import _load

CODE = '''
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 3)
        self.register_buffer("zero", torch.tensor(0.0), persistent=False)
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, values):
        {body}
        return self.conv(values[:, None]).mean()
'''


def _wsc705(lint, body: str, target: str = "compile"):  # type: ignore[no-untyped-def]
    return [d for d in lint(CODE.format(body=body), target=target) if d.code == "WSC705"]


@pytest.mark.parametrize("body", [
    "hidden = values[:, None]\n        hidden.requires_grad = True",
    "hidden = values * 2\n        hidden.requires_grad_()",
    "hidden = values.clone()\n        hidden.requires_grad_(True)",
    "aux = self.zero\n        if self.training:\n            aux.requires_grad_()",
])
def test_a_switch_on_a_tensor_the_step_makes_is_skipped_under_compile(lint, body: str) -> None:
    found = _wsc705(lint, body)
    assert len(found) == 1 and found[0].fix is not None and found[0].fix.applicability == "unsafe"
    assert "does not require grad" in found[0].fix.message


@pytest.mark.parametrize("body", [
    "weight = self.scale\n        weight.requires_grad_(True)",  # a parameter: unfreezing is the point
    "for p in self.conv.parameters():\n            p.requires_grad = True",
    "values.requires_grad_()",  # the caller's tensor: the caller may read its gradient
    "hidden = values[:, None]\n        hidden.requires_grad_(False)",
    "hidden = values[:, None]\n        hidden.requires_grad = False",
    "hidden = values[:, None]\n        hidden.requires_grad = True\n        saliency = hidden.grad",
    "hidden = values[:, None]\n        hidden.requires_grad_()\n"
    "        (g,) = torch.autograd.grad(self.conv(hidden).sum(), hidden)",
])
def test_a_switch_whose_flag_matters_keeps_its_finding_without_a_fix(lint, body: str) -> None:
    found = _wsc705(lint, body)
    assert found and all(d.fix is None for d in found)


@pytest.mark.parametrize("target", ["wsc", "xla"])
def test_no_fix_on_the_lazy_targets(lint, target: str) -> None:
    found = _wsc705(lint, "hidden = values[:, None]\n        hidden.requires_grad = True", target=target)
    assert found and all(d.fix is None for d in found)


def test_the_fixed_statement_is_guarded_and_a_second_run_finds_nothing(lint, fix) -> None:
    body = "hidden = values[:, None]\n        hidden.requires_grad = True"
    fixed = fix(CODE.format(body=body), unsafe=True, target="compile")
    assert ("        if not torch.compiler.is_compiling():\n            hidden.requires_grad = True\n") in fixed
    assert not [d for d in lint(fixed, target="compile") if d.code == "WSC705"]


def test_compiled_the_fixed_step_gives_the_original_gradients_through_reentrant_checkpoints() -> None:
    """The claim the fix rests on: with the switch skipped under torch.compile, the parameters' gradients
    through `checkpoint(..., use_reentrant=True)` are the original's (eager, and compiled with its breaks)."""
    torch = pytest.importorskip("torch")
    golden = Path(__file__).parent / "golden" / "side_effects"
    original = _load(golden / "grad_switch.compile.unsafe.in.py", "grad_switch_original")
    fixed = _load(golden / "grad_switch.compile.unsafe.out.py", "grad_switch_fixed")

    def gradients(module, compiled: bool):  # type: ignore[no-untyped-def]
        torch.manual_seed(0)
        model = module.Net()
        forward = torch.compile(model, backend="aot_eager", fullgraph=module is fixed) if compiled else model
        loss = forward(module._batch(3))
        loss.backward()
        return torch.cat([loss.reshape(1)] + [p.grad.flatten() for p in model.parameters()])

    torch._dynamo.reset()
    expected = gradients(original, compiled=False)
    torch.testing.assert_close(gradients(original, compiled=True), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gradients(fixed, compiled=True), expected, rtol=1e-5, atol=1e-6)
    torch._dynamo.reset()
