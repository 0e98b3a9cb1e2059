import torch
from torch import nn


class Normalize(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.gain = nn.Parameter(torch.full((1,), 0.5))
        self.eps = eps

    def forward(self, x, y):
        scale = torch.clamp(x.abs().max().detach(), min=self.eps)
        x = x / scale
        floor = torch.minimum(y.mean(), x.mean())
        return x * self.gain.detach() + floor + self._cap(y)

    def _cap(self, y):
        return y * torch.clamp(y.norm(), max=1.0)


def run(seed):
    torch.manual_seed(seed)
    model = Normalize(8)
    x = torch.randn(4, 8) * (seed + 1)
    y = torch.rand(4, 8) * seed
    return model(x, y)
