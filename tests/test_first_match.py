"""WSC101 on a return from inside a loop ("the first candidate whose tensor test holds"): every iteration
runs and keeps its block's results only for the first match (unsafe), or no fix."""

from __future__ import annotations

import pytest

HELPER = """
import torch

class Opt(torch.optim.Optimizer):
    def _pick(self, p, perturb, candidates):
        wd = 1.0
        for scale in {loop}:
            sim = (p * scale).sum()
            if sim > 0:
{block}
        return perturb, wd

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                perturb, wd = self._pick(p, p.grad.clone(), [p.grad])
                p.sub_(perturb * wd)
"""


def _helper(*lines: str, loop: str = "[0.5, 2.0]") -> str:
    return HELPER.format(loop=loop, block="\n".join(" " * 16 + line for line in lines))


def test_the_first_match_becomes_a_masked_update_per_iteration(lint, fix):
    code = _helper("perturb -= p * sim", "wd = 0.1", "return perturb, wd")
    [finding] = [d for d in lint(code) if d.code == "WSC101"]
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    fixed = fix(code, unsafe=True)
    for line in ("matched = False",
                 "found = torch.logical_and(torch.logical_not(torch.as_tensor(matched)), sim > 0)",
                 "perturb_taken = perturb - (p * sim)",
                 "perturb = torch.where(found, perturb_taken, perturb)",
                 "wd = torch.where(found, wd_taken, wd)",
                 "matched = torch.logical_or(torch.as_tensor(matched), found)",
                 "return perturb, wd"):
        assert line in fixed, line
    assert fixed.count("return perturb, wd") == 1


@pytest.mark.parametrize("code", [
    _helper("wd = 0.1", "return perturb, wd", loop="candidates[0]"),  # iterates over a tensor
    _helper("wd = 0.1", "return wd, perturb"),  # returns something else than the function's end
    _helper("wd = 0.1", "self.log(wd)", "return perturb, wd"),  # a call whose effects cslint cannot see
    _helper("fresh = p * 2", "return fresh, wd"),
    _helper("wd = 0.1", "return perturb, wd").replace("sim = (p * scale).sum()", "wd = (p * scale).sum()\n"
                                                      "            sim = wd"),  # binds a returned name
])
def test_shapes_without_a_fix(lint, code):
    found = [d for d in lint(code) if d.code == "WSC101"]
    assert found and all(d.fix is None for d in found)


def test_a_loop_over_the_classes_helpers_may_call_them(lint):
    code = _helper("perturb = perturb - view(p)", "return perturb, wd", loop="[self._a, self._b]")
    code = code.replace("sim = (p * scale).sum()", "sim = view(p).sum()").replace("for scale in", "for view in")
    [finding] = [d for d in lint(code) if d.code == "WSC101"]
    assert finding.fix is not None and "`view`" in finding.fix.message
    plain = code.replace("[self._a, self._b]", "[abs, abs]")
    assert all(d.fix is None for d in lint(plain) if d.code == "WSC101")
