"""A loss head that rejects out-of-range labels (the shape of Hugging Face's label checks). Under
--target compile the check stays, as `torch._assert_async`; the Python-valued `labels is not None` stays its
`if`."""

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, vocab_size=7):
        super().__init__()
        self.vocab_size = vocab_size
        self.proj = nn.Linear(4, vocab_size)

    def forward(self, hidden, labels=None):
        logits = self.proj(hidden)
        if labels is not None:
            torch._assert_async(torch.logical_not(labels.max() >= self.vocab_size), f"labels must be below {self.vocab_size}")
        if labels is None:
            return logits.sum()
        return nn.functional.cross_entropy(logits, labels)


def run(seed):
    torch.manual_seed(seed)
    head = Head()
    return head(torch.randn(5, 4), torch.randint(0, 7, (5,)))


def runtime_target(device):
    from cslint.runtime import Step

    head = Head().to(device)
    return Step(head, [(torch.randn(5, 4, device=device), torch.randint(0, 7, (5,), device=device)) for _ in range(2)])
