"""Steps with ops the lazy backend runs on the host: some only the host can run (an assertion on a value, a
comparison whose result is a Python bool), some it merely has no lowering for; and a step of lowered ops."""

import torch
import torch.nn.functional as F
from torch import nn

from cslint.runtime import Step


class CheckedProjection(nn.Module):
    """A check kept as a device-side assertion, as the compile target's fix writes it."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x):
        h = self.proj(x).tanh()
        torch._assert_async((h.abs() <= 1).all(), "activations out of range")  # runtime: WSC104
        return h.sum()


class SkipsRepeatedInput(nn.Module):
    """Whole-tensor comparisons: their result is a Python bool, computed on the host."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.register_buffer("previous", torch.zeros(4, 6))

    def forward(self, x):
        h = self.proj(x)
        if torch.equal(x, self.previous):  # runtime: WSC101
            h = h * 0
        same = torch.allclose(h, h.flip(0))  # runtime: WSC203
        return h.sum() * same


class SignUpdate(nn.Module):
    """Ops a static-graph device lowers that the TorchScript lazy backend runs on the CPU."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x):
        h = self.proj(x)
        return (torch.sign(h) * h).logsumexp(-1).sum()  # runtime: BACKEND-LIMIT


class MaskedClassifier(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.hidden = nn.Linear(6, 12)
        self.out = nn.Linear(12, classes)
        self.mix = nn.Parameter(torch.eye(classes))

    def forward(self, x, labels, keep):
        h = torch.relu(self.hidden(x))
        h = torch.lerp(h, h.sin(), 0.5)  # the backend has neither: the checker builds them from ops it has
        logits = self.out(h) @ self.mix
        probs = torch.softmax(logits, dim=-1)
        logits = torch.where(keep[:, None], logits, probs)
        logits = logits.masked_fill(keep[:, None] == 0, -1e4)
        return F.cross_entropy(logits, labels)


def _batch(device, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(4, 6, generator=generator).to(device)


def device_assertion(device):
    return CheckedProjection().to(device), [_batch(device, 0)]


def whole_tensor_comparison(device):
    return SkipsRepeatedInput().to(device), [_batch(device, 0)]


def backend_limits(device):
    return SignUpdate().to(device), [_batch(device, 0)]


def reads_already_reported(device):
    def step(x):
        scale = x.abs().max().item()  # runtime: WSC201
        hits = x.nonzero()  # runtime: WSC501
        picked = x[x > 0]  # runtime: WSC502
        on_host = x.cpu()  # runtime: WSC202
        return x.sum() / scale + hits.shape[0] + picked.sum() + on_host.shape[0]

    return step, [_batch(device, 1)]


def lowered_training_step(device):
    """Forward, loss, backward and an SGD step, all ops the backend lowers (or the checker builds from them)."""
    model = MaskedClassifier().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x, labels, keep):
        loss = model(x, labels, keep)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.detach()

    batches = []
    for seed in (2, 3):
        generator = torch.Generator().manual_seed(seed)
        batches.append((_batch(device, seed), torch.randint(0, 5, (4,), generator=generator).to(device),
                        (torch.rand(4, generator=generator) > 0.5).to(device)))
    return Step(step, batches)
