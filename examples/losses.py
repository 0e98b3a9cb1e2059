import torch
from torch import nn


class LabelSmoothedLoss(nn.Module):
    def __init__(self, smoothing=0.1, ignore_index=-100):
        super().__init__()
        self.smoothing = smoothing
        self.ignore_index = ignore_index

    def forward(self, logits, labels):
        assert torch.isfinite(logits).all(), "non-finite logits"
        valid = labels != self.ignore_index
        log_probs = torch.log_softmax(logits, dim=-1)
        nll = -log_probs.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        smooth = -log_probs.mean(dim=-1)
        per_token = (1 - self.smoothing) * nll + self.smoothing * smooth
        total = (per_token * valid).sum()
        count = valid.sum()
        loss = total / count if count > 0 else total
        return loss


class WarmupDecay(nn.Module):
    """Decays a loss weight with a learned number of refinement steps."""

    def forward(self, loss, steps):
        for _ in range(int(steps)):
            loss = loss * 0.9
        while loss > 10.0:
            loss = loss / 2
        return loss
