import math

import torch
import torch.nn.functional as F
from torch import nn

from masking import clamp_logits, soften_mask


class Attention(nn.Module):
    def __init__(self, dim, heads, dropout=0.0, logit_cap=50.0):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(dim // heads)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.dropout = dropout
        self.logit_cap = logit_cap

    def forward(self, x, mask=None):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        scores = clamp_logits(scores, self.logit_cap)
        if mask is not None:
            scores = soften_mask(scores, mask[:, None, None, :], torch.finfo(scores.dtype).min)
        probs = F.softmax(scores, dim=-1)
        if self.training and self.dropout > 0:
            probs = F.dropout(probs, self.dropout)
        return self.out((probs @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask=None):
        h = x + self.attn(self.norm1(x), mask)
        # residual scaling when activations blow up
        if h.abs().max() > 1e4:
            h = h * 1e-2
        else:
            h = h
        return h + self.mlp(self.norm2(h))
