import torch
import torch.nn.functional as F
from torch import nn


class StableCrossEntropy(nn.Module):
    """Label-smoothed cross entropy computed "in double for stability"."""

    def __init__(self, smoothing=0.1):
        super().__init__()
        self.smoothing = smoothing

    def forward(self, logits, labels):
        if logits.dtype == torch.float64:  # a dtype check, left alone
            logits = logits.float()
        log_probs = F.log_softmax(logits.double(), dim=-1)
        weights = torch.ones(logits.shape[-1], dtype=torch.float64) / logits.shape[-1]
        nll = -log_probs.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        smooth = -(log_probs * weights).sum(-1)
        scale = torch.tensor(1.0 - self.smoothing, dtype=float)
        loss = scale * nll + self.smoothing * smooth
        return loss.mean().to(torch.double)


def run(seed):
    torch.manual_seed(seed)
    logits = torch.randn(8, 5)
    labels = torch.randint(0, 5, (8,))
    return StableCrossEntropy()(logits, labels).float()
