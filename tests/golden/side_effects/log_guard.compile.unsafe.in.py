"""Logs and warnings in a compiled step (transformers' `logger.warning_once(...)` in a property the loss
reads): under torch.compile each is a graph break, whatever it prints. The fix guards each statement with
`if not torch.compiler.is_compiling():`, which dynamo answers while tracing, so the call is dead in the
graph; eager runs still log (unsafe: compiled runs do not)."""

import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Net(nn.Module):
    def __init__(self, dim=8, loss_type=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.loss_type = loss_type

    @property
    def loss_function(self):
        loss_type = self.loss_type
        if loss_type is None:
            # the default, said once
            logger.warning(
                f"`loss_type={loss_type}` is unrecognized. "
                "Using the default loss."
            )
            loss_type = "mse"
        return nn.functional.mse_loss if loss_type == "mse" else nn.functional.l1_loss

    def forward(self, x, y):
        if x.dim() != 2:
            warnings.warn("expected a batch of vectors")
        out = self.proj(x)
        logger.info("output mean %s", out.mean())
        return self.loss_function(out, y)


def _batch(seed, device="cpu"):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(4, 8, generator=generator).to(device), torch.randn(4, 8, generator=generator).to(device)


def run(seed):
    torch.manual_seed(0)
    model = Net()
    loss = model(*_batch(seed))
    loss.backward()
    return torch.cat([loss.reshape(1)] + [p.grad.flatten() for p in model.parameters()])


def runtime_target(device):
    """One compiled training step."""
    from cslint.runtime import Step

    torch.manual_seed(0)
    model = Net().to(device)

    def step(x, y):
        loss = model(x, y)
        return loss, torch.autograd.grad(loss, list(model.parameters()))

    return Step(step, [_batch(0, device), _batch(1, device)])
