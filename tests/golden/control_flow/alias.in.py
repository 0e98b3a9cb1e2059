import torch as T
from torch import nn


class Norm(nn.Module):
    def forward(self, x):
        n = x.norm()
        if n > 1:
            x = x * 0.5
        elif n > 0.5:
            x = x * 0.75
        return x


def run(seed):
    T.manual_seed(seed)
    return Norm()(T.randn(4) * seed / 3)
