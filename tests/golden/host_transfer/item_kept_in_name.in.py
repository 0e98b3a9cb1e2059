"""A value read with .item()/float()/int() into a name whose every use takes a tensor: it stays one."""

import torch
from torch import nn


class PeakNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        scale = y.abs().max().item()
        count = int(x.ne(0).sum())
        mean = float(y.mean())
        y = y / scale - mean
        return torch.mul(y, count), scale


def run(seed):
    torch.manual_seed(seed)
    y, scale = PeakNorm()(torch.randn(3, 4))
    return y * scale
