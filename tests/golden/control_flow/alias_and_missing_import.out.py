"""Fixes spell torch the way the file imports it, and import it when the file does not."""
import torch
from torch import nn
import torch.nn.functional as F


class Clip(nn.Module):
    def forward(self, x, limit):
        y = F.relu(x)
        y = torch.where(y.max() > limit, y.clamp(max=2.0), y)
        scale = torch.where(y.mean() > 0.5, y.mean(), y.std())
        return y * scale


def run(seed):
    import torch

    torch.manual_seed(seed)
    x = torch.randn(3, 5) * (1 + seed)
    return Clip()(x, torch.tensor(1.5))
