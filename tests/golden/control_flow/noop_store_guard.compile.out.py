"""A guard that only skips a no-op masked store on a NumPy array of tensor data (wav2vec2's span-mask
indices: `if idxs.max() > n - 1: idxs[idxs > n - 1] = n - 1`). Under torch.compile dynamo traces the array
as a tensor, and the `if` on its maximum is a graph break; when it is false no index is above the limit and
the store writes nothing, so the store may run every time (safe: the same array)."""

import numpy as np
import torch
from torch import nn


class SpanPool(nn.Module):
    def __init__(self, dim=8, span=3):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.span = span

    def forward(self, x, starts):
        length = x.shape[1]
        idxs = starts.detach().numpy()[:, :, None] + np.arange(self.span)[None, None, :]
        idxs = idxs.reshape(x.shape[0], -1)
        # keep every index inside the sequence
        idxs[idxs > length - 1] = length - 1
        picked = torch.gather(x, 1, torch.as_tensor(idxs)[:, :, None].expand(-1, -1, x.shape[2]))
        return self.proj(picked).pow(2).mean()


def _batch(seed, device="cpu"):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 10, 8, generator=generator)
    starts = torch.randint(0, 10, (2, 4), generator=generator)
    return x.to(device), starts.to(device)


def run(seed):
    torch.manual_seed(0)
    model = SpanPool()
    loss = model(*_batch(seed))
    loss.backward()
    return torch.cat([loss.reshape(1)] + [p.grad.flatten() for p in model.parameters()])


def runtime_target(device):
    """One compiled training step."""
    from cslint.runtime import Step

    torch.manual_seed(0)
    model = SpanPool().to(device)

    def step(x, starts):
        loss = model(x, starts)
        return loss, torch.autograd.grad(loss, list(model.parameters()))

    return Step(step, [_batch(0, device), _batch(1, device)])
