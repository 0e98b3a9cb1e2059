"""WSC101 on an `if` guarding a block of updates: a masked update (unsafe), or no fix when the block
does something a masked update cannot express."""

from __future__ import annotations

import pytest

STEP = """
import torch

class Opt(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        total = 0.0
        for group in self.param_groups:
            lr = group["lr"]
            for p in group["params"]:
                buf = self.state[p]["buf"]
                if lr > 0.0:
{block}
                p.sub_(buf * lr)
        return total
"""


def _block(*lines: str) -> str:
    return STEP.format(block="\n".join(" " * 20 + line for line in lines))


def test_a_block_of_updates_becomes_a_masked_update(lint, fix):
    code = _block("scale = lr * 2", "scale *= 0.5", "buf.mul_(0.9).add_(p.grad, alpha=scale)",
                  "total += buf.abs().sum()")
    [finding] = [d for d in lint(code) if d.code == "WSC101"]
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    fixed = fix(code, unsafe=True)
    for line in ("taken = torch.as_tensor(lr > 0.0)",
                 "scale = lr * 2",
                 "scale *= 0.5",
                 "buf_taken = buf.mul(0.9).add(scale * p.grad)",  # alpha= then folded by WSC401
                 "total_taken = total + buf_taken.abs().sum()",
                 "buf.copy_(torch.where(taken, buf_taken, buf))",
                 "total = torch.where(taken, total_taken, total)"):
        assert line in fixed, line
    assert "if lr > 0.0" not in fixed and "if lr > 0.0" in fix(code)  # only with --unsafe-fixes


def test_one_update_needs_no_condition_name(fix):
    fixed = fix(_block("buf.mul_(0.9).add_(p.grad)"), unsafe=True)
    assert "buf.copy_(torch.where(torch.as_tensor(lr > 0.0), buf_taken, buf))" in fixed
    assert " taken =" not in fixed


@pytest.mark.parametrize("lines", [
    ("self.log(buf)", "buf.mul_(0.9)"),  # a call whose effects cslint cannot see
    ("for _ in range(2):", "    buf.mul_(0.9)"),  # a loop
    ("buf.mul_(0.9)", "return total"),
    ("noise = torch.randn_like(buf)", "buf.add_(noise)"),  # random numbers drawn on every step
    ("fresh *= 2",),  # updates a name that does not exist before the block
])
def test_blocks_a_masked_update_cannot_express_keep_no_fix(lint, lines):
    found = [d for d in lint(_block(*lines)) if d.code == "WSC101"]
    assert found and all(d.fix is None for d in found)


def test_and_or_of_tensor_conditions_become_logical_ops(fix):
    code = _block("buf.mul_(0.9)").replace("if lr > 0.0:", "if buf.sum() > 0 and p.grad.sum() < 1:")
    assert "torch.logical_and(buf.sum() > 0, p.grad.sum() < 1)" in fix(code, unsafe=True)
    code = _block("total = total + 1").replace("if lr > 0.0:", "if buf.max() == 0 or lr == 0:")
    assert "torch.logical_or(buf.max() == 0, torch.as_tensor(lr == 0))" in fix(code, unsafe=True)


def test_and_with_a_python_value_keeps_no_fix(lint):
    code = _block("buf.mul_(0.9)").replace("if lr > 0.0:", "if self.defaults and buf.sum() > 0:")
    assert all(d.fix is None for d in lint(code) if d.code == "WSC101")


def test_a_nested_python_if_stays_and_its_updates_are_selected_in_its_branch(fix):
    fixed = fix(_block("if p.dim() > 1:", "    buf.mul_(0.9)", "else:", "    buf.add_(p.grad)",
                       "total += buf.sum()"), unsafe=True)
    for line in ("taken = torch.as_tensor(lr > 0.0)",
                 "if p.dim() > 1:",
                 "buf_taken = buf.mul(0.9)",
                 "buf.copy_(torch.where(taken, buf_taken, buf))",
                 "buf_taken2 = buf.add(p.grad)",
                 "buf.copy_(torch.where(taken, buf_taken2, buf))",
                 "total_taken = total + buf.sum()",
                 "total = torch.where(taken, total_taken, total)"):
        assert line in fixed, line


def test_a_name_bound_to_state_in_the_block_is_updated_through_the_state(fix):
    fixed = fix(_block("if p.dim() > 1:", "    avg = self.state[p]['avg']", "    avg.mul_(0.9)"), unsafe=True)
    assert "avg = self.state[p]['avg']" in fixed
    assert "avg.copy_(torch.where(taken, avg_taken, avg))" in fixed


def test_a_nested_tensor_if_is_fixed_first_then_the_block(lint, fix):
    code = _block("if buf.sum() > 0:", "    scale = lr * 2", "else:", "    scale = lr", "buf.mul_(scale)")
    code = code.replace("buf = self.state[p][\"buf\"]", "buf = self.state[p][\"buf\"]\n                scale = 1.0")
    outer, inner = [d for d in lint(code) if d.code == "WSC101"]
    assert outer.fix is None and inner.fix is not None  # the outer block waits for the inner one
    fixed = fix(code, unsafe=True)
    assert "if buf.sum() > 0" not in fixed and "if lr > 0.0" not in fixed
    # `scale`, rebound in the block and read only there, needs no selection
    assert "buf.copy_(torch.where(torch.as_tensor(lr > 0.0), buf_taken, buf))" in fixed


def test_a_torch_call_that_writes_a_tensor_from_before_the_block_keeps_no_fix(lint):
    code = "import torch.distributed as dist\n" + _block("if p.dim() > 1:", "    dist.all_reduce(buf)", "total += 1")
    assert all(d.fix is None for d in lint(code) if d.code == "WSC101")


def test_a_name_the_block_reads_before_rebinding_it_is_selected(fix):
    # nothing after the block reads `prev`, but the next iteration's block does: it must see the selected value
    code = _block("scale = buf.sum() * prev", "buf.mul_(scale)", "prev = buf.sum()")
    code = code.replace("        total = 0.0\n", "        total = 0.0\n        prev = torch.ones(())\n")
    fixed = fix(code, unsafe=True)
    assert "prev = torch.where(taken, prev_taken, prev)" in fixed


def test_a_name_rebound_to_its_own_tensor_and_read_only_after_needs_no_selection(fix):
    code = _block("tmp = torch.zeros(2)", "tmp[0] = buf.sum()", "buf.mul_(tmp[0])")
    code = code.replace("        total = 0.0\n", "        total = 0.0\n        tmp = torch.ones(2)\n")
    fixed = fix(code, unsafe=True)
    assert "tmp[0] = buf.sum()" in fixed and "tmp = torch.where" not in fixed


CHAIN = """
import torch

class Opt(torch.optim.Optimizer):
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                rho = state["rho"]
                v = state["v"]
                scale = 1.0
{chain}
                p.data.mul_(scale)
"""


def _chain(*lines: str) -> str:
    return CHAIN.format(chain="\n".join(" " * 16 + line for line in lines))


def test_an_if_else_of_updates_masks_each_branch_by_its_condition(lint, fix):
    code = _chain("if rho >= 5:",
                  "    denom = v.sqrt().add_(1e-8)",
                  "    p.data.addcdiv_(v, denom, value=-0.1)",
                  "else:",
                  "    p.data.add_(v, alpha=-0.1)")
    [finding] = [d for d in lint(code) if d.code == "WSC101"]
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert "every branch" in finding.fix.message
    fixed = fix(code, unsafe=True)
    for line in ("taken = torch.as_tensor(rho >= 5)",
                 "denom = v.sqrt().add_(1e-8)",
                 # `.data` of a parameter outside no_grad: the selection writes through `.data` too
                 "p.data.copy_(torch.where(taken, p_taken, p.data))",
                 "taken2 = torch.logical_not(taken)",
                 "p.data.copy_(torch.where(taken2, p_taken2, p.data))"):
        assert line in fixed, line
    assert "if rho" not in fixed and "p.copy_(" not in fixed


def test_an_elif_chain_selects_a_name_every_branch_binds(fix):
    fixed = fix(_chain("if rho >= 5:",
                       "    scale = torch.sqrt(rho - 4)",
                       "elif self.defaults['sgd']:",
                       "    scale = 1.0 / rho",
                       "else:",
                       "    scale = -1"), unsafe=True)
    for line in ("taken = torch.as_tensor(rho >= 5)",
                 "scale_taken = torch.sqrt(rho - 4)",
                 "scale = torch.where(taken, scale_taken, scale)",
                 "taken2 = torch.logical_and(torch.logical_not(taken), torch.as_tensor(self.defaults['sgd']))",
                 "scale_taken2 = 1.0 / rho",
                 "scale = torch.where(taken2, scale_taken2, scale)",
                 "taken3 = torch.logical_not(torch.logical_or(taken, taken2))",
                 "scale_taken3 = -1",
                 "scale = torch.where(taken3, scale_taken3, scale)"):
        assert line in fixed, line


def test_a_name_first_bound_in_the_chain_is_selected_in_the_later_branches(fix):
    code = _chain("if rho >= 5:", "    step = rho * 2", "    v.mul_(2)", "else:", "    step = rho", "p.data.add_(v * step)")
    fixed = fix(code.replace("                p.data.mul_(scale)\n", ""), unsafe=True)
    # the first branch binds `step` for the first time (computed unconditionally), the second selects
    assert "                step = rho * 2\n" in fixed and "step = torch.where(taken2, step_taken, step)" in fixed


def test_the_selected_branches_compute_what_the_chain_computed():
    torch = pytest.importorskip("torch")

    def original(rho, v, p):
        if rho >= 5:
            scale = torch.sqrt(rho - 4)
        elif rho > 2:
            scale = 1.0 / rho
        else:
            scale = -1
        if rho >= 5:
            p.add_(v * scale)
        else:
            p.mul_(scale)
        return p

    def fixed(rho, v, p):  # what the fix writes for the two `if`s
        taken = rho >= 5
        scale = torch.sqrt(rho - 4)
        taken2 = torch.logical_and(torch.logical_not(taken), rho > 2)
        scale_taken = 1.0 / rho
        scale = torch.where(taken2, scale_taken, scale)
        taken3 = torch.logical_not(torch.logical_or(taken, taken2))
        scale_taken2 = -1
        scale = torch.where(taken3, scale_taken2, scale)
        taken = rho >= 5
        p_taken = p.add(v * scale)
        p.copy_(torch.where(taken, p_taken, p))
        taken2 = torch.logical_not(taken)
        p_taken2 = p.mul(scale)
        p.copy_(torch.where(taken2, p_taken2, p))
        return p

    v = torch.randn(5)
    for rho in (1.0, 3.0, 5.0, 7.5):
        start = torch.randn(5)
        expected = original(torch.tensor(rho), v, start.clone())
        torch.testing.assert_close(fixed(torch.tensor(rho), v, start.clone()), expected)


@pytest.mark.parametrize("lines", [
    ("if rho >= 5:", "    p.data.mul_(2)", "elif self.check(p):", "    p.data.mul_(3)"),  # an elif test calling code
    ("if rho >= 5:", "    p.data.mul_(2)", "else:", "    for _ in range(2):", "        p.data.mul_(3)"),  # a loop
    ("if rho >= 5:", "    p.data.mul_(2)", "else:", "    return"),
])
def test_chains_a_masked_update_cannot_express_keep_no_fix(lint, lines):
    found = [d for d in lint(_chain(*lines)) if d.code == "WSC101"]
    assert found and all(d.fix is None or "every branch" not in d.fix.message for d in found)
