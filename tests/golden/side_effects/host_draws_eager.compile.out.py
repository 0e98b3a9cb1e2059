"""A span-mask helper that draws with NumPy on the host, called from a traced forward: under torch.compile it
runs eagerly, drawing the same numbers: one break at the call instead of one per draw and loop iteration."""

import numpy as np
import torch
from torch import nn


@torch.compiler.disable
def _spans(shape: tuple[int, int], prob: float, span: int = 2) -> np.ndarray:
    batch, length = shape
    epsilon = np.random.rand()
    count = max(int(prob * length / span + epsilon), 1)
    mask = np.zeros((batch, length), dtype=bool)
    for row in range(batch):
        starts = np.random.choice(np.arange(length - span + 1), count, replace=False)
        for offset in range(span):
            mask[row, starts + offset] = True
    return mask


class SpanMasker(nn.Module):
    def __init__(self, dim=8, prob=0.3):
        super().__init__()
        self.prob = prob
        self.proj = nn.Linear(dim, dim)
        self.embed = nn.Parameter(torch.randn(dim))

    def forward(self, hidden):
        hidden = self.proj(hidden)
        if self.training:
            mask = torch.tensor(_spans(tuple(hidden.shape[:2]), self.prob), device=hidden.device)
            hidden = torch.where(mask[..., None], self.embed.to(hidden.dtype), hidden)
        return hidden


def run(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)
    model = SpanMasker()
    return model(torch.randn(2, 10, 8))


def runtime_target(device="cpu"):
    torch.manual_seed(0)
    model = SpanMasker().to(device)

    def step(hidden):
        return model(hidden).sum()

    return step, [torch.randn(2, 10, 8, device=device) for _ in range(2)]
