"""`.item()` of a one-element NumPy draw (wav2vec2's `epsilon = np.random.rand(1).item()`, probabilistic
rounding of a span count): under torch.compile dynamo traces the drawn array as a tensor, so the read is a
graph break of its own after the draw's. `np.random.rand()` draws the same number as a Python float (the
same generator call), with no array to read: safe. The host draw itself stays (WSC704)."""

import numpy as np
import torch
from torch import nn


class RandomCrop(nn.Module):
    def __init__(self, dim=8, keep=0.5):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.keep = keep

    def forward(self, x):
        epsilon = np.random.rand()
        shift = np.random.uniform(0.0, 1.0)
        count = int(self.keep * x.shape[1] + epsilon)
        return self.proj(x[:, :count]).mean() * (1.0 + shift)


def run(seed):
    np.random.seed(seed)
    torch.manual_seed(0)
    model = RandomCrop()
    x = torch.randn(2, 9, 8, generator=torch.Generator().manual_seed(seed))
    loss = model(x)
    loss.backward()
    return torch.cat([loss.reshape(1)] + [p.grad.flatten() for p in model.parameters()])


def runtime_step(device):
    """One compiled training step (the runtime checker's target of tests/test_numpy_draw_fixes.py)."""
    from cslint.runtime import Step

    torch.manual_seed(0)
    model = RandomCrop().to(device)

    def step(x):
        loss = model(x)
        return loss, torch.autograd.grad(loss, list(model.parameters()))

    return Step(step, [(torch.randn(2, 9, 8).to(device),), (torch.randn(2, 9, 8).to(device),)])
