"""WSC101 on an early return (`if <tensor>: return loss` in a step's own body): the rest of the step runs
every time and keeps what it stores only where the condition is false (unsafe), or no fix when the rest
does something that cannot be masked."""

from __future__ import annotations

import pytest

STEP = """
import logging
import torch

class Opt(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        total = torch.zeros(())
        for group in self.param_groups:
            for p in group["params"]:
                total += p.grad.abs().sum()
        if total == 0:
            return loss
{rest}
        return loss
"""


def _rest(*lines: str) -> str:
    return STEP.format(rest="\n".join(" " * 8 + line for line in lines))


def test_the_rest_of_the_step_is_masked(lint, fix):
    code = _rest("for group in self.param_groups:",
                 "    group['d'] = group['d'] * 2",
                 "    for p in group['params']:",
                 "        if p.grad is None:",
                 "            continue",
                 "        state = self.state[p]",
                 "        state['step'] += 1",
                 "        p.data.add_(p.grad, alpha=-0.1)",
                 "    logging.info('done')")
    [finding] = [d for d in lint(code) if d.code == "WSC101"]
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert "log lines" in finding.fix.message
    fixed = fix(code, unsafe=True)
    for line in ("proceed = torch.logical_not(torch.as_tensor(total == 0))",
                 "group['d'] = torch.where(proceed, group['d'] * 2, group['d'])",
                 "            continue",
                 "state['step'] = torch.where(proceed, state['step'] + 1, state['step'])",
                 "p.data.copy_(torch.where(proceed, p.data.add(p.grad, alpha=-0.1), p.data))",
                 "logging.info('done')",
                 "return loss"):
        assert line in fixed, line
    assert "if total == 0" in fix(code)  # only with --unsafe-fixes


def test_an_entry_the_step_never_reads_may_not_exist_yet(fix):
    code = _rest("for group in self.param_groups:", "    group['seen'] = total", "    group['lr'] = group['lr'] * 0.5")
    fixed = fix(code, unsafe=True)
    assert "group['seen'] = torch.where(proceed, total, group.get('seen', total))" in fixed
    assert "group['lr'] = torch.where(proceed, group['lr'] * 0.5, group['lr'])" in fixed


def test_a_condition_joined_with_a_python_value(fix):
    code = _rest("self.state['n'] = 1").replace("if total == 0:", "if total == 0 and not self.defaults:")
    fixed = fix(code, unsafe=True)
    assert "proceed = torch.logical_not(torch.logical_and(torch.as_tensor(total == 0), " \
           "torch.as_tensor(not self.defaults)))" in fixed


def test_a_tensor_made_by_the_rest_is_written_as_it_is(fix):
    code = "import torch.distributed as dist\n" + _rest(
        "buf = torch.zeros(1)", "buf[0] = total", "dist.all_reduce(buf)", "self.state['n'] = buf[0]")
    fixed = fix(code, unsafe=True)
    for line in ("buf[0] = total", "dist.all_reduce(buf)",
                 "self.state['n'] = torch.where(proceed, buf[0], self.state.get('n', buf[0]))"):
        assert line in fixed, line


@pytest.mark.parametrize("lines", [
    ("self.log(total)", "self.state['n'] = 1"),  # a call whose effects cslint cannot see
    ("while self.state['n'] < 3:", "    self.state['n'] = 1"),  # a loop without a static iterable
    ("acc = self.state['acc']", "acc += total"),  # updates existing state in place through a name
    ("x = self.state['acc'].add_(1)",),  # ... inside an expression
    ("self.state['n'] = 1", "return total"),  # a second, different return
])
def test_rests_that_cannot_be_masked_keep_no_fix(lint, lines):
    found = [d for d in lint(_rest(*lines)) if d.code == "WSC101"]
    assert found and all(d.fix is None for d in found)


def test_a_different_final_return_keeps_no_fix(lint):
    code = _rest("self.state['n'] = 1").replace("        return loss\n", "        return total\n")
    code = code.replace("            return total\n", "            return loss\n", 1)
    assert all(d.fix is None for d in lint(code) if d.code == "WSC101")


def test_an_early_return_inside_a_loop_keeps_no_fix(lint):
    code = _rest("self.state['n'] = 1").replace(
        "                total += p.grad.abs().sum()", "                if p.grad.sum() == 0:\n"
                                                      "                    return loss")
    found = [d for d in lint(code) if d.code == "WSC101" and "p.grad.sum()" in d.message]
    assert found and all(d.fix is None for d in found)


def test_a_tensor_if_in_the_rest_is_fixed_first(lint, fix):
    code = _rest("scale = torch.ones(())", "if total > 1:", "    scale = total", "self.state['scale'] = scale")
    early, later = [d for d in lint(code) if d.code == "WSC101"]
    assert early.fix is None and later.fix is not None
    fixed = fix(code, unsafe=True)
    assert "scale = torch.where(" in fixed and ", total, scale)" in fixed and "if total > 1" not in fixed
    assert "self.state['scale'] = torch.where(proceed, scale, self.state.get('scale', scale))" in fixed


GROUP_ENTRY = """
import torch

class Opt(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        group = self.param_groups[0]
        d = group["d"]
        if d > 1.0:
            d = d * 0.5
        for p in group["params"]:
            p.sub_(d * p.grad)
        group["d"] = {stored}
"""


@pytest.mark.parametrize("stored, tensor", [("torch.where(d > 0, d * 2, d)", True), ("d * 2", False)])
def test_a_param_group_entry_the_step_stores_a_tensor_into_is_a_tensor_when_read(lint, stored, tensor):
    # the masked fixes store `group["d"] = torch.where(...)`: later steps read a tensor back
    found = [d for d in lint(GROUP_ENTRY.format(stored=stored)) if d.code == "WSC101"]
    assert bool(found) is tensor
