"""A value read with .item() and then tested by an if: kept a tensor (unsafe), after which the branch is a
tensor condition that WSC101 rewrites into torch.where on the next pass."""

import torch
from torch import nn


class ClipPeak(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        peak = y.abs().max().item()
        if peak > 1.0:
            y = y / peak
        return y


def run(seed):
    torch.manual_seed(seed)
    return ClipPeak()(torch.randn(3, 4) * seed)
