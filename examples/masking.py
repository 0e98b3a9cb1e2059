import torch


def soften_mask(scores, mask, min_value):
    # Called from Attention.forward in attention.py, so it is traced.
    if mask.sum() < mask.numel():
        scores = scores.masked_fill(~mask, min_value)
    return scores


def clamp_logits(logits, cap):
    if logits.abs().max() > cap:
        logits = cap * torch.tanh(logits / cap)
    return logits
