"""WSC101's fix for a cache keyed by a tensor (fixers/memo_cache.py): RAdam's forks memoise the
rectification terms per step in a param-group cache whose first slot records the step it holds. With the
counter on the device, the slot index and the hit test read it on the host; the fix keeps the miss branch
without its stores (unsafe), and is refused where the cache is more than a memo of its key."""

from __future__ import annotations

from pathlib import Path

import pytest

STEP = """
import torch
from torch.optim import Optimizer


class Rectified(Optimizer):
    def __init__(self, params, lr=1e-3, beta=0.999):
        super().__init__(params, dict(lr=lr, beta=beta, cache=[[None, None, None] for _ in range(10)]))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["step"] = torch.tensor(0.0, device=p.device)
                self.state[p]["m"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        hits = 0
        for group in self.param_groups:
            beta = group["beta"]
            for p in group["params"]:
                state = self.state[p]
                state["m"].mul_(beta).add_(p.grad)
                state["step"] += 1
                # one computation per step for the group
                entry = group["cache"][int(state["step"] % 10)]
                if state["step"] == entry[0]:
{hit}
                else:
{miss}
                p.add_(state["m"] * -group["lr"] * scale * rho)
        return hits
"""

HIT = ["rho, scale = entry[1], entry[2]"]
MISS = ["entry[0] = state['step']",
        "beta_t = torch.pow(beta, state['step'])",
        "rho = 2 / (1 - beta) - 2 * state['step'] * beta_t / (1 - beta_t)",
        "entry[1] = rho",
        "scale = torch.sqrt(rho / (rho + 1))",
        "entry[2] = scale"]


def _code(hit=HIT, miss=MISS, after=""):  # type: ignore[no-untyped-def]
    indent = " " * 20
    code = STEP.format(hit="\n".join(indent + line for line in hit), miss="\n".join(indent + line for line in miss))
    return code.replace("        return hits\n", after + "        return hits\n") if after else code


def _memo_fixes(lint, code):  # type: ignore[no-untyped-def]
    return [d for d in lint(code) if d.code == "WSC101" and d.fix is not None and "cache" in d.fix.message]


def test_the_miss_branch_replaces_the_cache(lint, fix):
    code = _code()
    [finding] = _memo_fixes(lint, code)
    assert finding.fix.applicability == "unsafe" and "`rho`, `scale`" in finding.fix.message
    fixed = fix(code, unsafe=True)
    body = fixed.split("def step")[1]
    assert "entry" not in body and "int(" not in body and "if state" not in body
    assert "                # one computation per step for the group\n" \
           "                beta_t = torch.pow(beta, state['step'])\n" in body
    assert "                scale = torch.sqrt(rho / (rho + 1))\n                p.add_(" in body
    assert not [d for d in lint(fixed) if d.code in ("WSC101", "WSC203")]
    assert "entry = group" in fix(code)  # only with --unsafe-fixes


@pytest.mark.parametrize(("hit", "miss", "after"), [
    (HIT + ["hits += 1"], MISS, ""),  # the hit branch does more than read the entry
    (HIT, MISS[:-1] + ["entry[2] = scale * 2"], ""),  # the entry holds something else than `scale`
    (HIT, MISS + ["scale = scale * 2"], ""),  # `scale` changes after it was stored
    (HIT, [MISS[1]] + MISS[2:], ""),  # the key is never stored: every call misses
    (HIT, ["entry[0] = state['step'] + 1"] + MISS[1:], ""),  # another key than the test's
    (HIT, MISS, "                last = entry[1]\n"),  # the entry is read after the `if`
    (["rho = entry[1]"], MISS, ""),  # `scale` is stored but the hit branch does not read it
])
def test_no_fix_when_the_cache_is_more_than_a_memo_of_its_key(lint, hit, miss, after):
    code = _code(hit, miss, after)
    assert [d for d in lint(code) if d.code == "WSC101"]
    assert not _memo_fixes(lint, code)


def test_quiet_outside_traced_code(lint):
    code = _code().replace("    @torch.no_grad()\n    def step(self):", "    def summary(self):")
    assert not [d for d in lint(code) if d.code in ("WSC101", "WSC203")]


GOLDEN = Path(__file__).parent / "golden" / "optimizers"


@pytest.mark.parametrize(("name", "found"), [("rectified_memo.unsafe.in.py", True),
                                              ("rectified_memo.unsafe.out.py", False)])
def test_the_runtime_checker_finds_the_golden_before_and_not_after(tmp_path, name, found):
    pytest.importorskip("torch")
    from cslint.runtime import check

    target = tmp_path / "target.py"
    target.write_text((GOLDEN / name).read_text(encoding="utf-8"), encoding="utf-8")
    report = check(f"{target}:runtime_target", ("lazy", "dynamo"), isolate=False)
    assert not report.error, report.error
    assert dict(report.status) == {"lazy": "complete", "dynamo": "complete"}
    own = [f for f in report.findings if Path(f.path).resolve() == target.resolve()]
    assert bool(own) is found, [(f.code, f.line) for f in own]
