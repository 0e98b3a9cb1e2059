"""Gradient accumulation: `step` is an input of forward, so cslint takes it for a tensor, but callers
pass a Python int. The condition is wrapped in torch.as_tensor so torch.where gets a tensor either way."""

import torch
from torch import nn


class Accumulate(nn.Module):
    def __init__(self, accum):
        super().__init__()
        self.accum = accum
        self.proj = nn.Linear(4, 4)

    def forward(self, x, step):
        y = self.proj(x)
        if step % self.accum == 0:
            out = y * 2.0
        else:
            out = y
        return out


def run(seed):
    torch.manual_seed(seed)
    model = Accumulate(accum=2)
    x = torch.randn(3, 4)
    eager = [model(x, step) for step in range(3)]  # Python ints, as a CPU training loop passes
    traced = [model(x, torch.tensor(step)) for step in range(3)]  # tensors, as on the device
    return torch.stack(eager + traced)
