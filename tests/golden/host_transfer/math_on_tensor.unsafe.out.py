"""math.sqrt / math.exp applied to tensors convert them to Python floats while tracing; the torch op of
the same name keeps them on the device (unsafe: float32 instead of Python's float64)."""

import math

import torch
from torch import nn


class ScaledScores(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.temperature = nn.Parameter(torch.tensor(0.5))

    def forward(self, q):
        scores = self.proj(q) @ q.transpose(-1, -2)
        scores = scores / torch.sqrt(scores.var())
        return scores * torch.exp(self.temperature)


def run(seed):
    torch.manual_seed(seed)
    return ScaledScores()(torch.randn(3, 4))


def runtime_target(device):
    torch.manual_seed(0)
    return ScaledScores().to(device), [torch.randn(3, 4, device=device) for _ in range(2)]
