"""CTC targets taken with `masked_select` (transformers' CTC loss): the selection is as long as the data
says, a dynamic shape. ctc_loss also takes its targets padded, one row per sample, reading the first
`target_lengths[i]` of row i; a stable sort of each row by "not selected" puts the row's selected labels
first in their order, so the padded targets are the same targets for every mask (safe)."""

import torch
from torch import nn
import torch.nn.functional as F


def ctc_loss(logits, labels, logit_lengths, blank=0, ignore_index=-100):
    labels_mask = (labels != ignore_index) & (labels != blank)
    target_lengths = labels_mask.sum(-1)
    flattened_targets = labels.masked_select(labels_mask)
    log_probs = F.log_softmax(logits, dim=-1, dtype=torch.float32).transpose(0, 1)
    return F.ctc_loss(log_probs, flattened_targets, logit_lengths, target_lengths, blank=blank)


class Recognizer(nn.Module):
    def __init__(self, dim=8, vocab=6):
        super().__init__()
        self.head = nn.Linear(dim, vocab)

    def forward(self, frames, labels, lengths):
        return ctc_loss(self.head(frames), labels, lengths)


def _batch(seed, device="cpu"):
    generator = torch.Generator().manual_seed(seed)
    frames = torch.randn(3, 20, 8, generator=generator)
    labels = torch.randint(1, 6, (3, 7), generator=generator)
    labels[0, 5:] = -100  # padded at the end
    labels[1, 3:] = 0  # padded with the blank
    labels[2, 2] = -100  # a hole inside the row: not a prefix
    lengths = torch.tensor([20, 18, 15])
    return frames.to(device), labels.to(device), lengths.to(device)


def run(seed):
    torch.manual_seed(0)
    model = Recognizer()
    loss = model(*_batch(seed))
    loss.backward()
    return torch.cat([loss.reshape(1)] + [p.grad.flatten() for p in model.parameters()])
