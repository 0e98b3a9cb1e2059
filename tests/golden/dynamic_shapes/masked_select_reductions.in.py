import torch
from torch import nn


class TargetLoss(nn.Module):
    """Token losses reduced over the targets that are not padding, selected with masked_select."""

    def __init__(self, pad_id=0):
        super().__init__()
        self.pad_id = pad_id

    def forward(self, losses, targets, row_weights):
        keep = targets != self.pad_id
        total = torch.masked_select(losses, keep).sum()
        positive = losses.masked_select(losses > 0).mean()
        weighted = row_weights.masked_select(keep).sum()
        return torch.stack([total, positive, weighted])


def run(seed):
    """Seed 0: every target is padding (empty selections), seed 1: none is; others random."""
    torch.manual_seed(seed)
    losses = torch.randn(4, 16)
    targets = torch.randint(0, 3, (4, 16))
    if seed == 0:
        targets.zero_()
    if seed == 1:
        targets.fill_(2)
    row_weights = torch.rand(4, 1)
    return TargetLoss()(losses, targets, row_weights)


def runtime_target(device):
    """One traced step of the loss."""
    from cslint.runtime import Step

    loss = TargetLoss()

    def step(losses, targets):
        return loss(losses, targets, torch.ones(4, 1, device=device))

    return Step(step, [(torch.randn(4, 16, device=device), torch.randint(0, 3, (4, 16), device=device))
                       for _ in range(2)])
