import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, m, k):
        # scale only when anything is positive
        if x.max() > 0:
            y = x * 2
            z = x + 1
        else:
            y = x
            z = x - 1
        if (m == k).any():
            y = y * 3
        if x.sum() > 10:
            w = y
        elif x.sum() < -10:
            w = -y
        else:
            w = torch.zeros_like(y)
        out = z if (x.mean() > 0.1) else w
        return y + z + w + out


def run(seed):
    torch.manual_seed(seed)
    x = torch.randn(4, 8) * (seed + 1) * 3 - seed
    m = torch.randint(0, 3, (5,))
    return Gate(8)(x, m, torch.tensor(seed % 3))
