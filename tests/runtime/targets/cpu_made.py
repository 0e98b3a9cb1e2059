"""Steps of the shapes of held-out set 4's false findings (#36): comparisons of a tensor with None, and tensors
made on the CPU inside the step (no device) copied to Python next to the same reads of device tensors."""

import torch
from torch import nn

from cslint.runtime import Step


class Neuron(nn.Module):
    """A state compared with None by `==`: a question about None, no value read."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, mem):
        if not mem == None:  # noqa: E711
            x = x + mem
        if mem != None:  # noqa: E711
            x = x * 2
        if (mem > 1).any():  # runtime: WSC101
            x = x - 1
        return self.fc(x).sum()


class Encoder(nn.Module):
    """Repeat counts and spike times made with no device, copied to Python; a scalar read of one; copies of
    tensors made on the input's device."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        counts = torch.ones(len(x.size()), dtype=torch.long)
        times = torch.randint(0, 6, (3,)).long()
        pattern = torch.zeros(6).scatter(0, times, 1)
        reps = tuple([2] + counts.tolist())  # runtime: CPU-TOLIST
        a = pattern.numpy().sum()
        b = (pattern[1:] * 2).cpu()
        d = torch.cat((times, times.flip(0))).tolist()  # runtime: CPU-CAT-TOLIST
        e = torch.max(times).item()  # runtime: CPU-ITEM
        f = torch.zeros(3, device=x.device).tolist()  # runtime: DEVICE-TOLIST
        g = torch.ones(3).to(x.device).tolist()  # runtime: MOVED-TOLIST
        self.seen = (a, b, d, e, f, g)
        return self.fc(x).repeat(reps).sum()


def _step(model, *inputs):
    def step(*batch):
        return model(*batch)

    return Step(step, [inputs, inputs])


def none_comparisons():
    return _step(Neuron(), torch.randn(2, 4), torch.randn(2, 4))


def cpu_copies():
    return _step(Encoder(), torch.randn(2, 4))
