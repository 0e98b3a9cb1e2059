"""Python bookkeeping read from tensors with .item(): an accumulator summed over blocks, then used in
Python arithmetic. Keeping it a tensor (unsafe: float32 instead of Python's float64) keeps the whole
computation on the device."""

import torch
from torch import nn


class EnergyNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        energy = 0.0
        outs = []
        for block in self.blocks:
            h = block(x)
            energy += h.pow(2).sum().item()
            outs.append(h)
        peak = torch.stack(outs).abs().amax().item()
        scale = 1.0 / (energy + 1e-6) ** 0.5
        return torch.stack(outs) * scale / peak


def run(seed):
    torch.manual_seed(seed)
    return EnergyNorm()(torch.randn(3, 4))


def runtime_target(device):
    torch.manual_seed(0)
    return EnergyNorm().to(device), [torch.randn(3, 4, device=device) for _ in range(2)]
