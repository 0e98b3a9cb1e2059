"""One construct per line that dynamo breaks the graph at, each under the static rule that names it: the
static pass (--target compile) and dynamo must give each line the same graph-break id."""

import logging
import math
import random

import numpy as np
import torch
from torch import nn

log = logging.getLogger(__name__)


class EveryBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("scores", torch.zeros(4, 4))

    def forward(self, x):
        h = self.proj(x)
        if h.sum() > 100:
            h = h * 2
        while h.sum() > 100:
            h = h / 2
        h = h + 1 if h.mean() > 100 else h
        keep = (h.sum() > -100) and (h.mean() > -100)
        h = h * float(keep)
        h = h + h.max().item()
        h = h * int(h.sum() > -100)
        h = h + math.sqrt(h.abs().sum())
        print(h)
        log.warning("%s", h)
        h = h * np.random.rand()
        h = h * random.random()
        for _ in range(int(h.sum() > -100)):
            h = h + 1
        picked = h[h > 0]
        torch.mm(x, x.t(), out=self.scores[:2, :2])
        h = self.without_cudnn(h)
        return h.sum() + picked.sum() + len(h.tolist())

    def without_cudnn(self, h):  # its own frame: dynamo runs the rest of a frame eagerly after this break
        with torch.backends.cudnn.flags(enabled=False):
            return h + self.scores.sum()


def step():
    model = EveryBreak()

    def run(x):
        return model(x)

    return run, [(torch.randn(2, 4),)]
