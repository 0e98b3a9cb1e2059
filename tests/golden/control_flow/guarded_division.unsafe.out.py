import torch
from torch import nn


class MeanLoss(nn.Module):
    def forward(self, losses, mask):
        total = (losses * mask).sum()
        count = mask.sum()
        loss = torch.where(count > 0, total / count, total)
        return loss


def run(seed):
    torch.manual_seed(seed)
    losses = torch.rand(8)
    mask = (torch.rand(8) > seed / 4).float()  # seed 4: every entry masked out
    return MeanLoss()(losses, mask)
