"""WSC8xx: training-loop APIs inside a traced step (mixed precision, zero_grad, clipping, schedulers)."""

from __future__ import annotations

from tests.conftest import codes

AMP_LOOP = """
import torch
import cerebras.pytorch as cstorch
from torch import nn
from torch.cuda.amp import GradScaler

model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-3, total_steps=1000)
scaler = GradScaler()

@cstorch.trace
def training_step(inputs, targets):
    optimizer.zero_grad(set_to_none=False)
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.mse_loss(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
    return loss

def train(loader):
    for inputs, targets in loader:
        loss = training_step(inputs, targets)
        scaler.update()
        scheduler.step()
        optimizer.zero_grad(set_to_none=False)
"""


def test_mixed_precision_step_reports_each_api_once(lint):
    found = lint(AMP_LOOP, select=("WSC8",))
    assert codes(found) == [("WSC802", 13), ("WSC801", 16), ("WSC803", 18), ("WSC804", 21)]
    assert "torch.cuda.amp.GradScaler" in found[1].message
    assert "OneCycleLR" in found[3].message


def test_drop_argument_fixes(fix):
    fixed = fix(AMP_LOOP)
    assert "    optimizer.zero_grad()\n    with" in fixed
    assert "clip_grad_norm_(model.parameters(), 1.0)" in fixed
    assert fixed.count("zero_grad(set_to_none=False)") == 1  # the untraced loop is left alone


def test_positional_error_flag_is_not_dropped_before_other_positionals(lint):
    code = """
    import torch
    import cerebras.pytorch as cstorch
    from torch import nn

    model = nn.Linear(4, 4)

    @cstorch.trace
    def training_step(inputs):
        model(inputs).sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, 2.0, True, False)
    """
    found = lint(code, select=("WSC803",))
    assert codes(found) == [("WSC803", 10)]
    assert found[0].fix is None


def test_cerebras_amp_and_scheduler_are_fine(lint):
    code = """
    import cerebras.pytorch as cstorch
    from torch import nn

    model = nn.Linear(4, 4)
    optimizer = cstorch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = cstorch.optim.lr_scheduler.CosineDecayLR(optimizer, initial_learning_rate=1e-3,
                                                         end_learning_rate=1e-5, total_iters=100)
    scaler = cstorch.amp.GradScaler(loss_scale="dynamic")

    @cstorch.trace
    def training_step(inputs):
        loss = model(inputs).sum()
        scaler.scale(loss).backward()
        cstorch.amp.optimizer_step(loss, optimizer, scaler)
        scheduler.step()
        optimizer.zero_grad()
        return loss
    """
    assert lint(code, select=("WSC8",)) == []


def test_scaler_passed_as_parameter_with_a_torch_annotation(lint):
    code = """
    import torch
    import cerebras.pytorch as cstorch
    from torch import nn

    @cstorch.trace
    def training_step(model: nn.Module, scaler: torch.amp.GradScaler, batch):
        loss = model(batch).sum()
        scaler.scale(loss).backward()
        return loss
    """
    assert codes(lint(code, select=("WSC8",))) == [("WSC801", 8)]
