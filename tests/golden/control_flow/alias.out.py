import torch as T
from torch import nn


class Norm(nn.Module):
    def forward(self, x):
        n = x.norm()
        x = T.where(n > 1, x * 0.5, T.where(n > 0.5, x * 0.75, x))
        return x


def run(seed):
    T.manual_seed(seed)
    return Norm()(T.randn(4) * seed / 3)
