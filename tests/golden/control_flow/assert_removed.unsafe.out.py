import torch
from torch import nn


class Block(nn.Module):
    def forward(self, h):
        h = h * 2
        if h.dim() == 2:
            pass
        return h


def run(seed):
    torch.manual_seed(seed)
    return Block()(torch.randn(2, 3))
