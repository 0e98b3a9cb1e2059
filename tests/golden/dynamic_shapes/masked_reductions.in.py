import torch
from torch import nn


def _mask_for(seed, shape, threshold):
    """Seed 0: mask all false, seed 1: all true, others: random (the empty mask is the edge case)."""
    if seed == 0:
        return torch.full(shape, float("-inf"))
    if seed == 1:
        return torch.full(shape, float("inf"))
    return torch.randn(shape) * 2 + threshold


class HardExampleLoss(nn.Module):
    """Averages only the losses above a margin, and clears padded logits in place."""

    def __init__(self, margin=0.5, pad_id=0):
        super().__init__()
        self.margin = margin
        self.pad_id = pad_id

    def forward(self, losses, scores, tokens):
        hard = losses > self.margin
        hard_mean = losses[hard].mean()
        hard_total = losses[losses > self.margin].sum()
        finite_total = (scores[torch.isfinite(scores)].sum())
        scores[tokens == self.pad_id] = -1e4
        tokens[tokens == self.pad_id] = 1
        return torch.stack([hard_mean, hard_total, finite_total]), scores, tokens


def run(seed):
    torch.manual_seed(seed)
    losses = _mask_for(seed, (4, 16), 0.5)
    scores = torch.randn(4, 16)
    scores[0, 0] = float("inf") if seed >= 2 else scores[0, 0]
    tokens = torch.randint(0, 3, (4, 16))
    return HardExampleLoss()(losses, scores, tokens)
