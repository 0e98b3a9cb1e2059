import logging
from types import SimpleNamespace

import torch
from torch import nn

try:
    import cerebras.pytorch as cstorch
except ImportError:  # CPU test run without the Cerebras SDK: a step closure runs at once
    cstorch = SimpleNamespace(step_closure=lambda fn: fn)

logger = logging.getLogger(__name__)


class Regressor(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 1)

    def forward(self, x, y):
        print("starting forward")
        pred = self.proj(x).squeeze(-1)
        loss = (pred - y).pow(2).mean()
        print(f"loss {loss.item():.4f}")
        self._report(pred, loss)
        return loss

    def _report(self, pred, loss):
        logger.info("pred mean %s loss %s", pred.mean(), loss)


def run(seed):
    torch.manual_seed(seed)
    model = Regressor(8)
    x, y = torch.randn(16, 8), torch.randn(16)
    return model(x, y)
