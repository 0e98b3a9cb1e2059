"""A guard that only skips a no-op masked store on a tensor: `if (ids >= n).any(): ids[ids >= n] = n - 1`.
The `if` on the tensor is a graph break under torch.compile; when it is false the mask has no element set
and the store writes nothing, so the `if` goes. Unsafe on a tensor: the in-place store now runs every step,
and autograd counts it as a modification even when it writes nothing (here `ids` holds integers, which
autograd never saves)."""

import torch
from torch import nn


class ClampedEmbedding(nn.Module):
    def __init__(self, vocab=16, dim=8):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, dim)

    def forward(self, ids):
        ids = ids.clone()
        ids[ids >= self.vocab] = self.vocab - 1
        ids[ids < 0] = 0
        return self.embed(ids).pow(2).mean()


def _batch(seed, device="cpu"):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randint(-4, 20, (2, 6), generator=generator).to(device),)


def run(seed):
    torch.manual_seed(0)
    model = ClampedEmbedding()
    loss = model(*_batch(seed))
    loss.backward()
    return torch.cat([loss.reshape(1)] + [p.grad.flatten() for p in model.parameters()])


def runtime_target(device):
    """One compiled training step."""
    from cslint.runtime import Step

    torch.manual_seed(0)
    model = ClampedEmbedding().to(device)

    def step(ids):
        loss = model(ids)
        return loss, torch.autograd.grad(loss, list(model.parameters()))

    return Step(step, [_batch(0, device), _batch(1, device)])
