import torch
import torch.nn.functional as F
from torch import nn

IGNORE_INDEX = -100


class MaskedLMHead(nn.Module):
    def __init__(self, dim, vocab):
        super().__init__()
        self.decoder = nn.Linear(dim, vocab)

    def forward(self, hidden, labels):
        logits = self.decoder(hidden)
        token_loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
        is_target = labels.flatten() != IGNORE_INDEX
        loss = torch.where(is_target, token_loss, 0).sum() / is_target.sum()
        predicted = logits.argmax(-1).flatten()
        correct = (predicted == labels.flatten()).float()
        accuracy = torch.where(is_target, correct, 0).sum() / is_target.sum()
        return torch.stack([loss, accuracy])


def run(seed):
    torch.manual_seed(seed)
    head = MaskedLMHead(8, 11)
    hidden = torch.randn(2, 6, 8)
    labels = torch.randint(0, 11, (2, 6))
    if seed == 0:  # nothing to predict: the mean over no tokens is NaN before and after the fix
        labels.fill_(IGNORE_INDEX)
    elif seed >= 2:
        labels[torch.rand(2, 6) < 0.7] = IGNORE_INDEX
    # seed 1: every token is a target
    return head(hidden, labels)
