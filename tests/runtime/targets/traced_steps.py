"""Training-step shapes real models have, written for the runtime checker's tests."""

import functools
import gc
import logging

import numpy as np
import torch
from torch import nn

log = logging.getLogger("train")


class TinyAttention(nn.Module):
    """Position ids and a causal mask made inside the step, heads split from one projection."""

    def __init__(self, width=8):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.pos = nn.Embedding(16, width)

    def forward(self, x):
        n = x.shape[1]
        positions = torch.arange(n, device=x.device).unsqueeze(0)
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()[None].expand(x.shape[0], n, n)
        h = x + self.pos(positions)
        q, k, v = self.qkv(h).split(h.shape[-1], dim=-1)
        scores = (q @ k.transpose(-1, -2)).masked_fill(~causal, -1e4).softmax(-1)
        left, right = (scores @ v).chunk(2, dim=-1)
        rows = torch.stack([r.sum() for r in (left * right).unbind(0)])
        return rows.sum()


def created_tensors_and_split_heads(device):
    model = TinyAttention().to(device)

    def step(x):
        loss = model(x)
        loss.backward()
        return loss.detach()
    return step, torch.randn(2, 5, 8, device=device)


@torch.library.custom_op("cslint_tests::host_only", mutates_args=())
def host_only(x: torch.Tensor) -> torch.Tensor:
    """An op with no device kernel: it answers on the CPU, whatever the input's device."""
    return x.to("cpu") * 2


@host_only.register_fake
def _(x):
    return torch.empty_like(x)


def leaves_the_device(device):
    def step(x):
        y = host_only(x)  # runtime: LEAVES
        return (y + 1).sum()
    return step, torch.randn(4, device=device)


def trip_count_from_tensor(device):
    def step(x, n):
        for _ in range(int(n)):  # runtime: WSC107
            x = x * 0.5
        return x.sum()
    return step, (torch.randn(4, device=device), torch.tensor(3, device=device))


def clip_nonfinite(device):
    model = nn.Linear(4, 2).to(device)

    def step(x):
        model(x).square().mean().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)  # runtime: WSC803
        return model.weight.grad.detach()
    return step, torch.randn(3, 4, device=device)


def adamw_step(device):
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(x):
        loss = model(x).square().mean()
        loss.backward()  # runtime: BACKWARD
        optimizer.step()  # runtime: WSC301
        optimizer.zero_grad()  # runtime: ZERO_GRAD
        return loss.detach()
    x = torch.randn(3, 4, device=device)
    return step, [(x,), (x,)]


def bound_optimizer_step(device):
    params = [nn.Parameter(torch.randn(4, 2, device=device))]
    for p in params:
        p.grad = torch.ones_like(p)
    optimizer = torch.optim.AdamW(params, lr=1e-3)
    return optimizer.step, [()]


def logs_a_tensor(device):
    model = nn.Linear(4, 2).to(device)

    def step(x):
        loss = model(x).square().mean()
        log.warning("loss %.3f", loss)  # runtime: WSC701
        return loss
    return step, torch.randn(3, 4, device=device)


def branch_picks_the_graph(device):
    """A tensor `if` sends the second batch down the other branch: the graph changes because of the `if`."""
    scale = nn.Linear(4, 4)
    nn.init.constant_(scale.weight, 0.1)
    nn.init.zeros_(scale.bias)
    scale.to(device)

    def step(x):
        h = scale(x)
        if h.sum() > 0:  # runtime: WSC101
            h = h * 2
        else:
            h = h.relu().exp()
        return h.sum()
    positive = torch.ones(2, 4, device=device)
    return step, [(positive,), (-positive,)]


def keeps_options(forward):
    """A decorator every module's `forward` shares: one code object entered with different arguments (the
    model with keywords only, a layer with positional tensors), so dynamo compiles it once per variant."""
    @functools.wraps(forward)
    def wrapper(*args, **kwargs):
        kwargs.pop("return_dict", None)
        return forward(*args, **kwargs)
    return wrapper


class TinyExperts(nn.Module):
    """A mixture-of-experts layer that loops over the experts the router picked, as MoE models do."""

    def __init__(self, width=8, experts=4):
        super().__init__()
        self.experts = experts
        self.up = nn.Parameter(torch.randn(experts, width, 2 * width) / width)
        self.down = nn.Parameter(torch.randn(experts, width, width) / width)

    @keeps_options
    def forward(self, hidden, chosen, weights):
        out = torch.zeros_like(hidden)
        with torch.no_grad():
            mask = nn.functional.one_hot(chosen, self.experts + 1).permute(2, 1, 0)
            hit = (mask.sum(dim=(-1, -2)) > 0).nonzero()  # runtime: HIT
        for expert in hit:
            expert = expert[0]
            if expert == self.experts:  # runtime: EXPERT-IF
                continue
            slot, token = torch.where(mask[expert])  # runtime: WHERE
            gate, up = (hidden[token] @ self.up[expert]).chunk(2, dim=-1)  # runtime: UP
            moved = (nn.functional.silu(gate) * up) @ self.down[expert]  # runtime: DOWN
            out.index_add_(0, token, moved * weights[token, slot, None])
        return out


class TinyMoE(nn.Module):
    def __init__(self, width=8, experts=4):
        super().__init__()
        self.router = nn.Linear(width, experts)
        self.experts = TinyExperts(width, experts)

    @keeps_options
    def forward(self, hidden=None, return_dict=True):
        weights, chosen = self.router(hidden).softmax(-1).topk(2, dim=-1)
        return self.experts(hidden, chosen, weights).square().mean()


def mixture_of_experts(device):
    torch.manual_seed(0)
    model = TinyMoE().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        loss = model(hidden=x, return_dict=False)
        loss.backward()  # runtime: MOE-BACKWARD
        optimizer.step()
        optimizer.zero_grad()
        return loss.detach()
    x = torch.randn(6, 8, device=device)
    return step, [(x,), (x,)]


class RoutedExperts(nn.Module):
    """Experts looped over by number, each one's tokens found with a one-argument `torch.where`, an expert
    with no tokens skipped (the first one never gets any): under dynamo every site after the first break in
    the loop used to go unseen, the whole frame run eagerly."""

    def __init__(self, width=8, experts=4):
        super().__init__()
        self.experts = experts
        self.router = nn.Linear(width, experts)
        with torch.no_grad():
            self.router.bias[0] = -100.0
        self.w = nn.Parameter(torch.randn(experts, width, width) / width)

    def forward(self, hidden):
        mask = nn.functional.one_hot(self.router(hidden).argmax(-1), self.experts).T.bool()
        out = torch.zeros_like(hidden)
        for expert in range(self.experts):
            idx = torch.where(mask[expert])  # runtime: RANGE-WHERE
            if idx[0].numel() == 0:
                continue
            tokens = hidden[idx[0]]
            scale = tokens.abs().amax().clamp_min(1e-6).item()  # runtime: RANGE-ITEM
            out = out.index_add(0, idx[0], tokens @ self.w[expert] / scale)
        return out.square().mean()


def routed_experts(device, experts=4):
    torch.manual_seed(0)
    model = RoutedExperts(experts=experts).to(device)

    def step(x):
        loss = model(x)
        loss.backward()
        model.zero_grad()
        return loss.detach()
    x = torch.randn(16, 8, device=device)
    return step, [(x,), (x,)]


def many_routed_experts(device):
    """More iterations than dynamo compiles one frame for (its recompile limit, 8)."""
    return routed_experts(device, experts=12)


class MaskedAttention(nn.Module):
    """Decoder ids shifted right into a new tensor, a padding mask read per batch and key with broadcast
    indices, and SDPA over it with one query row fully masked (its softmax is the "safe" one)."""

    def __init__(self, vocab=16, width=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, ids, padding):
        shifted = ids.new_zeros(ids.shape)
        shifted[..., 1:] = ids[..., :-1].clone()
        q, k, v = self.qkv(self.embed(shifted)).chunk(3, dim=-1)
        batch = torch.arange(ids.shape[0], device=ids.device)[:, None, None]
        keys = torch.arange(ids.shape[1], device=ids.device)[None, None, :]
        mask = padding[batch, keys].expand(-1, ids.shape[1], -1)
        mask = torch.cat([mask[:, :1] & False, mask[:, 1:]], dim=1)  # the first query sees nothing
        out = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return out.square().mean()


def masked_attention(device):
    torch.manual_seed(0)
    model = MaskedAttention().to(device)

    def step(ids, padding):
        loss = model(ids, padding)
        loss.backward()
        return loss.detach()
    ids = torch.randint(0, 16, (2, 5), device=device)
    padding = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.bool, device=device)
    return step, [(ids, padding)]


class MaskedFrames(nn.Module):
    """Speech models' SpecAugment: time spans chosen on the host (NumPy), copied to the device inside the step
    and viewed there, then written through as a boolean mask; a scale made on the CPU and moved in the step."""

    def __init__(self, width=8):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, features):
        batch, hidden, length = features.shape
        spans = np.zeros((batch, length), dtype=bool)
        spans[:, 1:3] = True
        mask = torch.tensor(spans, device=features.device, dtype=torch.bool)
        mask = mask[:, None].expand(-1, hidden, -1)  # the view that stopped the run
        features[mask] = 0  # runtime: WSC502-STORE
        scale = torch.linspace(0.5, 1.5, hidden).to(features.device)[None, :, None]
        return self.proj((features * scale).transpose(1, 2)).square().mean()


def masked_frames(device):
    torch.manual_seed(0)
    model = MaskedFrames().to(device)

    def step(x):
        loss = model(x.clone())
        loss.backward()
        model.zero_grad()
        return loss.detach()
    x = torch.randn(2, 8, 6, device=device)
    return step, [(x,), (x,)]


def collects_garbage(device):
    """`gc.collect()` in the step: dynamo cannot trace it (a graph break), a static-graph device never sees it."""
    model = nn.Linear(4, 2).to(device)

    def step(x):
        loss = model(x).square().mean()
        gc.collect()  # runtime: UNCOVERED
        return (loss * 2).detach()
    x = torch.randn(3, 4, device=device)
    return step, [(x,), (x,)]


class SlicedAdam(torch.optim.Optimizer):
    """An optimizer of the user's own (or a package's, as prodigyopt's): its state is made in step()."""

    def __init__(self, params, lr=1e-3, slice_p=2):
        super().__init__(params, dict(lr=lr, slice_p=slice_p))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if "step" not in state:
                    state["step"] = torch.zeros(())  # runtime: CUSTOM-STATE
                    state["s"] = torch.zeros_like(p.flatten()[::group["slice_p"]])
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"].add_(1)
                state["exp_avg_sq"].mul_(0.99).addcmul_(p.grad, p.grad, value=0.01)
                state["s"].add_(p.grad.flatten()[::group["slice_p"]])
                update = p.grad / (state["exp_avg_sq"].sqrt() + 1e-8)
                state["update_norm"] = update.norm()  # runtime: CUSTOM-EVERY-STEP
                p.sub_(group["lr"] * update)


def custom_optimizer_step(device):
    model = torch.nn.Linear(8, 4).to(device)
    opt = SlicedAdam(model.parameters())

    def step(x):
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()  # runtime: CUSTOM-STEP
        opt.zero_grad()
        return loss.detach()

    return step, [(torch.randn(2, 8, device=device),), (torch.randn(2, 8, device=device),)]


def sliced_adam_alone():
    return SlicedAdam(torch.nn.Linear(8, 4).parameters())
