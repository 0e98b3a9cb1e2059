"""AutoGen advice (WSC9xx): off by default, shown with `--select WSC9`, quiet where nothing applies."""

from __future__ import annotations

MODEL = """
import torch.nn as nn
import torch.nn.functional as F

class FocalLoss(nn.Module):
    def __init__(self, gamma=2.0):
        super().__init__()
        self.gamma = gamma

    def forward(self, logits, target):
        ce = F.cross_entropy(logits, target, reduction="none")
        return ((1 - (-ce).exp()) ** self.gamma * ce).mean()

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)
        self.aux_loss = nn.MSELoss()
        self.sim_loss = nn.CosineEmbeddingLoss(margin=0.1)
        self.loss_fn = FocalLoss()

    def forward(self, x, y):
        logits = self.fc(x)
        return self.loss_fn(logits, y) + self.aux_loss(logits, logits.detach())
"""


def test_advice_is_off_by_default(lint) -> None:
    assert not any(d.code.startswith("WSC9") for d in lint(MODEL))
    assert not any(d.code.startswith("WSC9") for d in lint(MODEL, select=("ALL",)))


def test_advice_appears_when_selected(lint) -> None:
    found = [(d.code, d.line) for d in lint(MODEL, select=("WSC9",))]
    assert found == [("WSC901", 4), ("WSC902", 17), ("WSC903", 18)]


def test_advice_messages_name_the_autogen_form(lint) -> None:
    messages = {d.code: d.message for d in lint(MODEL, select=("WSC9",))}
    assert "@autogen_loss" in messages["WSC901"]
    assert "modelzoo.common.pytorch.layers.MSELoss(..., use_autogen=True)" in messages["WSC902"]
    assert "not supported by AutoGen" in messages["WSC903"]


def test_autogen_ready_code_is_quiet(lint) -> None:
    code = """
import torch.nn as nn
from modelzoo.common.pytorch.layers import MSELoss
from modelzoo.common.pytorch.layers.utils import autogen_loss

@autogen_loss
class FocalLoss(nn.Module):
    def forward(self, logits, target):
        return (logits - target).abs().mean()

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.aux_loss = MSELoss(use_autogen=True)
        self.act = nn.ReLU()
"""
    assert lint(code, select=("WSC9",)) == []


def test_autogen_advice_is_wsc_only(lint) -> None:
    assert not any(d.code.startswith("WSC9") for d in lint(MODEL, select=("WSC9",), target="compile"))


def test_a_data_pipeline_class_named_like_a_loss_is_not_a_module(lint) -> None:
    code = """
class LossTracker:
    def __init__(self):
        self.total = 0.0
"""
    assert lint(code, select=("WSC9",)) == []
