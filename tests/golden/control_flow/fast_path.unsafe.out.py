"""Mask helpers with a fast path on the mask's values (transformers' `_ignore_causal_mask_sdpa` and
`_ignore_bidirectional_mask_sdpa`): when no token is padded, attention skips the mask. Their tracing guard
takes the general path under torch.compile; lazy tracing is none of the tracers it knows, so
`padding_mask.all()` syncs the host. The fix drops the tensor test: the mask is always built, which gives
the same attention (unsafe: verified by `run`)."""

import torch
import torch.nn.functional as F
from torch import nn


def is_tracing(tensor=None):
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


def can_skip_causal_mask(padding_mask, q_length, kv_length):
    if torch.compiler.is_exporting() or (padding_mask is not None and is_tracing(padding_mask)):
        return False
    if q_length == kv_length and (padding_mask is None):
        return True
    return False


def can_skip_padding_mask(padding_mask):
    if (
        not (torch.compiler.is_exporting() or (padding_mask is not None and is_tracing(padding_mask)))
        and (padding_mask is None)
    ):
        return True
    return False


class Attention(nn.Module):
    def __init__(self, dim=8, heads=2, causal=True):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.heads = heads
        self.causal = causal

    def forward(self, x, padding_mask):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        mask = padding_mask[:, None, None, :]
        if self.causal:
            mask = mask & torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            skip = can_skip_causal_mask(padding_mask, n, n)
        else:
            skip = can_skip_padding_mask(padding_mask)
        if skip:
            mask = None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.causal and mask is None)
        return out.transpose(1, 2).reshape(b, n, d)


class Model(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.encoder = Attention(dim, causal=False)
        self.decoder = Attention(dim, causal=True)

    def forward(self, x, padding_mask):
        return self.decoder(self.encoder(x, padding_mask), padding_mask).pow(2).mean()


def _batch(seed, device="cpu"):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, 8, generator=generator)
    padding_mask = torch.ones(2, 5, dtype=torch.bool)
    if seed % 2:  # right padding in one sequence: the general path; the other seeds have none
        padding_mask[1, 3:] = False
    return x.to(device), padding_mask.to(device)


def run(seed):
    torch.manual_seed(0)
    model = Model()
    loss = model(*_batch(seed))
    loss.backward()
    return torch.cat([loss.reshape(1)] + [p.grad.flatten() for p in model.parameters()])


def runtime_target(device):
    """One traced training step, no padding (the fast path's case)."""
    from cslint.runtime import Step

    torch.manual_seed(0)
    model = Model().to(device)

    def step(x, padding_mask):
        loss = model(x, padding_mask)
        return loss, torch.autograd.grad(loss, list(model.parameters()))

    return Step(step, [_batch(0, device), _batch(2, device)])
