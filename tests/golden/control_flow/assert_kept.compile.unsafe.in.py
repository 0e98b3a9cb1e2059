import torch
from torch import nn


class Block(nn.Module):
    def forward(self, h):
        assert torch.isfinite(h).all(), "non-finite activations"
        h = h * 2
        if h.dim() == 2:
            assert (h > -1e9).all()
        return h


def run(seed):
    torch.manual_seed(seed)
    return Block()(torch.randn(2, 3))
