"""WSC8xx: training-loop APIs that hide a host sync or a per-step graph change inside a traced step."""

from __future__ import annotations

import libcst as cst

from cslint.analysis.syntax import path_key
from cslint.analysis.kinds import Tag
from cslint.analysis.step_functions import GRAD_SCALER_CLASSES
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix
from cslint.rules.base import Rule

TORCH_GRAD_SCALERS = frozenset(c for c in GRAD_SCALER_CLASSES if c.startswith("torch."))
TORCH_LR_SCHEDULERS = "torch.optim.lr_scheduler."
CLIP_FUNCTIONS = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm_",
                            "torch.nn.utils.clip_grad_norm", "torch.nn.utils.clip_grad.clip_grad_norm",
                            "torch.nn.utils.get_total_norm", "torch.nn.utils.clip_grad.get_total_norm"})
ERROR_IF_NONFINITE_POSITION = {"get_total_norm": 2}  # (tensors, norm_type, error_if_nonfinite, foreach)


def _argument(call: cst.Call, keyword: str, position: int) -> cst.Arg | None:
    for index, arg in enumerate(call.args):
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg
        elif arg.star == "" and index == position:
            return arg
    return None


def _is_literal(arg: cst.Arg | None, value: str) -> bool:
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == value


def drop_argument_fix(call: cst.Call, arg: cst.Arg, message: str) -> Fix | None:
    """The call without `arg` (its default takes over); a dropped last argument leaves its comma (or its
    absence) to the new last one, so one-argument-per-line calls keep their layout."""
    position = next(i for i, a in enumerate(call.args) if a is arg)
    later = call.args[position + 1:]
    if arg.keyword is None and any(a.keyword is None for a in later):
        return None  # dropping it would shift the positional arguments after it
    kept = [a for a in call.args if a is not arg]
    if kept and arg is call.args[-1]:
        kept[-1] = kept[-1].with_changes(comma=arg.comma)
    return Fix("safe", message, [(call, call.with_changes(args=kept))])


def _receiver_class(call: cst.Call, ctx: RuleContext, role: str) -> str | None:
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    kind = ctx.kind(func.value)
    if kind.tag is Tag.OBJECT and kind.role == role:
        return kind.cls
    return None


class TorchGradScaler(Rule):
    code = "WSC801"
    name = "torch-grad-scaler"
    summary = "Checks for `torch.amp.GradScaler` / `torch.cuda.amp.GradScaler` used in a traced training step."
    why = (
        "PyTorch's GradScaler decides in Python whether to skip the optimizer step: it reads the found-inf "
        "flag with `.item()`. While tracing there is no value to read, and whichever branch the first step "
        "took is frozen into the graph, so overflowing steps are applied or good steps skipped forever."
    )
    example = """
scaler = torch.cuda.amp.GradScaler()

@cstorch.trace
def training_step(batch):
    loss = model(batch)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""
    use_instead = """
scaler = cstorch.amp.GradScaler(loss_scale="dynamic")

@cstorch.trace
def training_step(batch):
    loss = model(batch)
    scaler.scale(loss).backward()
    cstorch.amp.optimizer_step(loss, optimizer, scaler)
"""
    fix_safety = "No fix: the scaler is built outside the step; construct `cstorch.amp.GradScaler` there."
    VALID = [
        """
import torch
import cerebras.pytorch as cstorch
from torch import nn

model = nn.Linear(8, 1)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)
scaler = cstorch.amp.GradScaler(loss_scale="dynamic")

@cstorch.trace
def training_step(inputs, targets):
    loss = nn.functional.mse_loss(model(inputs), targets)
    scaler.scale(loss).backward()
    cstorch.amp.optimizer_step(loss, optimizer, scaler)
    return loss

def gpu_loop(loader):
    cuda_scaler = torch.cuda.amp.GradScaler()
    for inputs, targets in loader:
        loss = nn.functional.mse_loss(model(inputs), targets)
        cuda_scaler.scale(loss).backward()
        cuda_scaler.step(optimizer)
        cuda_scaler.update()
""",
    ]
    INVALID = [
        """
import torch
import cerebras.pytorch as cstorch
from torch import nn

model = nn.Linear(8, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.cuda.amp.GradScaler()

@cstorch.trace
def training_step(inputs, targets):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.mse_loss(model(inputs), targets)
    scaler.scale(loss).backward()  # expect: WSC801
    scaler.step(optimizer)
    scaler.update()
    return loss

@cstorch.trace
def step_with_local_scaler(inputs, targets):
    local = torch.amp.GradScaler("cuda")  # expect: WSC801
    loss = nn.functional.mse_loss(model(inputs), targets)
    local.scale(loss).backward()
    return loss
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if ctx.resolve(node.func) in TORCH_GRAD_SCALERS:
            ctx.scratch.setdefault("reported_scalers", set()).add(id(node))
            ctx.report(node, f"`{ctx.code(node)}` in a traced step: {self._advice()}")
            return
        scaler = _receiver_class(node, ctx, "grad_scaler")
        if scaler not in TORCH_GRAD_SCALERS or not isinstance(node.func, cst.Attribute):
            return
        name = path_key(node.func.value) or ctx.code(node.func.value)
        reported = ctx.scratch.setdefault("reported_scalers", set())
        if name not in reported:  # once per scaler and function: its first use
            reported.add(name)
            ctx.report(node, f"`{name}` is a {scaler} used in a traced step: {self._advice()}")

    @staticmethod
    def _advice() -> str:
        return "it reads the found-inf flag with .item(), frozen at trace time"


class ZeroGradKeepsZeros(Rule):
    code = "WSC802"
    name = "zero-grad-set-to-none-false"
    summary = "Checks for `zero_grad(set_to_none=False)` in a traced training step."
    why = (
        "Keeping zero-filled gradient tensors instead of dropping them adds a fill of every gradient to the "
        "graph each step, and code that tests `p.grad is None` sees a different graph than on the first "
        "step. The Cerebras optimizers expect the default, `set_to_none=True`."
    )
    example = """
@cstorch.trace
def training_step(batch):
    optimizer.zero_grad(set_to_none=False)
    loss = model(batch)
    loss.backward()
    optimizer.step()
"""
    use_instead = """
@cstorch.trace
def training_step(batch):
    optimizer.zero_grad()
    loss = model(batch)
    loss.backward()
    optimizer.step()
"""
    fix_safety = ("Safe: the argument is dropped and the default (`set_to_none=True`) applies; code that reads "
                  "`p.grad` before the next backward sees None instead of zeros.")
    VALID = [
        """
import cerebras.pytorch as cstorch
from torch import nn

model = nn.Linear(4, 4)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)

@cstorch.trace
def training_step(inputs):
    optimizer.zero_grad()
    model.zero_grad(set_to_none=True)
    loss = model(inputs).sum()
    loss.backward()
    optimizer.step()
    return loss

def evaluate(loader):
    optimizer.zero_grad(set_to_none=False)
""",
    ]
    INVALID = [
        """
import torch
import cerebras.pytorch as cstorch
from torch import nn

model = nn.Linear(4, 4)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)

@cstorch.trace
def training_step(inputs):
    optimizer.zero_grad(set_to_none=False)  # expect: WSC802
    loss = model(inputs).sum()
    loss.backward()
    optimizer.step()
    model.zero_grad(False)  # expect: WSC802
    return loss
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "zero_grad") or ctx.is_tensor(func.value):
            return
        arg = _argument(node, "set_to_none", 0)
        if _is_literal(arg, "False"):
            assert arg is not None
            fix = drop_argument_fix(node, arg, "Drop `set_to_none=False` (the default sets gradients to None)")
            ctx.report(node, f"`{ctx.code(node)}` keeps zero-filled gradients in the traced step", fix)


class ClipGradErrorIfNonfinite(Rule):
    code = "WSC803"
    name = "clip-grad-error-if-nonfinite"
    summary = "Checks for `clip_grad_norm_(..., error_if_nonfinite=True)` in a traced training step."
    why = (
        "To raise on a non-finite norm, PyTorch reads the norm's value in Python: a host sync that has no "
        "value while tracing, so the check either fails the trace or runs only on the first step."
    )
    example = """
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
"""
    use_instead = """
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
# inspect the returned norm outside the step (e.g. in a step closure) if non-finite norms must stop training
"""
    fix_safety = "Safe: the argument is dropped; the clipping itself is unchanged, only the Python check goes."
    VALID = [
        """
import torch
import cerebras.pytorch as cstorch
from torch import nn

model = nn.Linear(4, 4)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)

@cstorch.trace
def training_step(inputs):
    loss = model(inputs).sum()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=False)
    optimizer.step()
    return loss, norm

def debug_step(inputs):
    loss = model(inputs).sum()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
""",
    ]
    INVALID = [
        """
import cerebras.pytorch as cstorch
from torch import nn
from torch.nn.utils import clip_grad_norm_

model = nn.Linear(4, 4)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)

@cstorch.trace
def training_step(inputs):
    loss = model(inputs).sum()
    loss.backward()
    clip_grad_norm_(model.parameters(), max_norm=1.0, error_if_nonfinite=True)  # expect: WSC803
    nn.utils.clip_grad_norm_(model.parameters(), 1.0, 2.0, True)  # expect: WSC803
    optimizer.step()
    return loss
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        qualified = ctx.resolve(node.func)
        if qualified not in CLIP_FUNCTIONS:
            return
        position = ERROR_IF_NONFINITE_POSITION.get(qualified.rsplit(".", 1)[-1], 3)
        arg = _argument(node, "error_if_nonfinite", position)
        if _is_literal(arg, "True"):
            assert arg is not None
            fix = drop_argument_fix(node, arg, "Drop `error_if_nonfinite=True`")
            ctx.report(arg, "`error_if_nonfinite=True` reads the gradient norm in Python: a host sync in the "
                            "traced step", fix)


class TorchLrScheduler(Rule):
    code = "WSC804"
    name = "torch-lr-scheduler"
    summary = "Checks for a `torch.optim.lr_scheduler` scheduler built or stepped inside a traced training step."
    why = (
        "A PyTorch scheduler computes the next learning rate in Python and writes it into `group['lr']` as a "
        "number. In a traced step that number is a constant of the graph: the schedule is frozen at its "
        "first value, or every new value changes the graph and forces a recompile."
    )
    example = """
scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=1000)

@cstorch.trace
def training_step(batch):
    loss = model(batch)
    loss.backward()
    optimizer.step()
    scheduler.step()
"""
    use_instead = """
scheduler = cstorch.optim.lr_scheduler.LinearLR(optimizer, initial_learning_rate=1e-4,
                                                end_learning_rate=1e-3, total_iters=1000)
# same step function: the Cerebras scheduler computes lr as a tensor from the traced step counter
"""
    fix_safety = "No fix: the Cerebras schedulers take their parameters as learning rates, not factors."
    VALID = [
        """
import torch
import cerebras.pytorch as cstorch
from torch import nn

model = nn.Linear(4, 4)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)
scheduler = cstorch.optim.lr_scheduler.LinearLR(optimizer, initial_learning_rate=0.01,
                                                end_learning_rate=0.1, total_iters=100)
cpu_optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
cpu_scheduler = torch.optim.lr_scheduler.StepLR(cpu_optimizer, step_size=10)

@cstorch.trace
def training_step(inputs):
    loss = model(inputs).sum()
    loss.backward()
    optimizer.step()
    scheduler.step()
    return loss

def cpu_epoch(loader):
    for inputs in loader:
        model(inputs).sum().backward()
        cpu_optimizer.step()
    cpu_scheduler.step()
""",
    ]
    INVALID = [
        """
import torch
import cerebras.pytorch as cstorch
from torch import nn
from torch.optim.lr_scheduler import CosineAnnealingLR

model = nn.Linear(4, 4)
optimizer = cstorch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = CosineAnnealingLR(optimizer, T_max=1000)

@cstorch.trace
def training_step(inputs):
    loss = model(inputs).sum()
    loss.backward()
    optimizer.step()
    scheduler.step()  # expect: WSC804
    warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.5)  # expect: WSC804
    return loss
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        qualified = ctx.resolve(node.func)
        if qualified is not None and qualified.startswith(TORCH_LR_SCHEDULERS) and qualified[-1:].isalpha() \
                and qualified.rsplit(".", 1)[-1][:1].isupper():
            ctx.report(node, f"`{ctx.code(node)}` builds a PyTorch scheduler inside the traced step; {self._advice()}")
            return
        scheduler = _receiver_class(node, ctx, "lr_scheduler")
        if scheduler and scheduler.startswith(TORCH_LR_SCHEDULERS) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == "step":
            ctx.report(node, f"`{ctx.code(node)}` steps a {scheduler.rsplit('.', 1)[-1]} in the traced step: "
                             f"{self._advice()}")

    @staticmethod
    def _advice() -> str:
        return "its learning rate is a Python number, frozen into the graph"
