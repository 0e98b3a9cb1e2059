import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, m, k):
        # scale only when anything is positive
        y = torch.where(x.max() > 0, x * 2, x)
        z = torch.where(x.max() > 0, x + 1, x - 1)
        y = torch.where((m == k).any(), y * 3, y)
        w = torch.where(x.sum() > 10, y, torch.where(x.sum() < -10, -y, torch.zeros_like(y)))
        out = torch.where(x.mean() > 0.1, z, w)
        return y + z + w + out


def run(seed):
    torch.manual_seed(seed)
    x = torch.randn(4, 8) * (seed + 1) * 3 - seed
    m = torch.randint(0, 3, (5,))
    return Gate(8)(x, m, torch.tensor(seed % 3))
