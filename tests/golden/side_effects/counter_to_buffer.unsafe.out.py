import torch
from torch import nn


class WarmupScale(nn.Module):
    """Scales activations up linearly over the first `warmup` calls."""

    def __init__(self, dim, warmup=4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.warmup = warmup
        # calls seen so far
        self.register_buffer("calls", torch.tensor(0), persistent=False)

    def forward(self, x):
        self.calls += 1
        return self.proj(x) * self._ramp()

    def _ramp(self):
        return torch.clamp(torch.tensor(self.calls / self.warmup), max=1.0)


def run(seed):
    torch.manual_seed(seed)
    model = WarmupScale(8)
    x = torch.randn(4, 8) * (seed + 1)
    return torch.stack([model(x) for _ in range(6)])
