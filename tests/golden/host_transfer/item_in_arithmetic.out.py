import torch
from torch import nn


class RMSScale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        norm = h.pow(2).mean().sqrt()
        h = h / norm.detach()
        h = h * x.abs().mean().detach().float()
        h -= int(x.sum()) * 0.01 + self._offset(h)
        return abs(h) + h.round()

    def _offset(self, h):
        return h * h.max().detach()


def run(seed):
    torch.manual_seed(seed)
    model = RMSScale(8)
    x = torch.randn(4, 8) * (seed + 1)
    return model(x)
