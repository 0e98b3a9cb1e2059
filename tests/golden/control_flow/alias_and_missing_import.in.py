"""Fixes spell torch the way the file imports it, and import it when the file does not."""
from torch import nn
import torch.nn.functional as F


class Clip(nn.Module):
    def forward(self, x, limit):
        y = F.relu(x)
        if y.max() > limit:
            y = y.clamp(max=2.0)
        scale = y.mean() if (y.mean() > 0.5) else y.std()
        return y * scale


def run(seed):
    import torch

    torch.manual_seed(seed)
    x = torch.randn(3, 5) * (1 + seed)
    return Clip()(x, torch.tensor(1.5))
