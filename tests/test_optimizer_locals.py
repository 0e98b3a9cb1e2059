"""A local the step starts as None and fills on first use is not optimizer state (WSC301).

Seen on a LoRA optimizer of an optimizer package (written anew here): `grad_norm_sq = None` before the
loop over parameters, `if grad_norm_sq is None: grad_norm_sq = p.new_zeros(())` inside it, an accumulator
made afresh on every step.
"""

from __future__ import annotations

import pytest

from tests.conftest import codes

ACCUMULATOR = """
import torch
from torch.optim import Optimizer


class ClippedSGD(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            norm_sq = None
            for p in group["params"]:
                if norm_sq is None:
                    norm_sq = p.new_zeros(())
                norm_sq = norm_sq + p.grad.pow(2).sum()
            scale = torch.clamp(1.0 / (norm_sq.sqrt() + 1e-6), max=1.0)
            for p in group["params"]:
                p.sub_(group["lr"] * scale * p.grad)
"""


# LoRA-RITE writes the annotated form: `grad_norm_sq: torch.Tensor | None = None`
ANNOTATED = ACCUMULATOR.replace("norm_sq = None", "norm_sq: torch.Tensor | None = None")


@pytest.mark.parametrize("target", ("wsc", "compile"))
@pytest.mark.parametrize("source", (ACCUMULATOR, ANNOTATED), ids=("plain", "annotated"))
def test_a_local_accumulator_started_as_none_is_not_state(lint, target, source):
    assert [c for c, _ in codes(lint(source, target=target)) if c.startswith("WSC30")] == []


@pytest.mark.parametrize("source", (ACCUMULATOR, ANNOTATED), ids=("plain", "annotated"))
def test_the_same_guard_storing_into_the_state_is_state(lint, source):  # lazy state is WSC's (not compile's)
    code = source.replace("                    norm_sq = p.new_zeros(())\n",
                          "                    norm_sq = p.new_zeros(())\n"
                          "                    self.state[p][\"norm_sq\"] = norm_sq\n")
    assert ("WSC301", 14) in codes(lint(code, target="wsc"))


def test_an_annotated_local_that_is_not_started_as_none_is_state(lint):
    """The annotation alone does not make a local an accumulator: started from the state, it is the state's."""
    code = ANNOTATED.replace("norm_sq: torch.Tensor | None = None",
                             "norm_sq: torch.Tensor | None = self.state[group[\"params\"][0]].get(\"norm_sq\")")
    assert ("WSC301", 14) in codes(lint(code, target="wsc"))


@pytest.mark.parametrize("source", (ACCUMULATOR, ANNOTATED), ids=("plain", "annotated"))
def test_an_accumulator_outside_traced_code_stays_quiet(lint, source):
    code = source.replace("class ClippedSGD(Optimizer):", "class ClippedSGD:").replace(
        "        super().__init__(params, dict(lr=lr))",
        "        self.param_groups = [dict(params=list(params), lr=lr)]")
    assert codes(lint(code)) == []
