"""Steps whose compiled graph changes from one step to the next under dynamo, in the shapes real packages
have (torch-optimizer's Lamb, Whisper's SpecAugment), written for the runtime checker's tests."""

import numpy as np
import torch
from torch import nn


class TrustRatioSGD(torch.optim.Optimizer):
    """Lamb's shape (torch-optimizer): state made behind `if len(state) == 0:` on the first step, a Python-number
    step counter in it, and a sparse-gradient check that dynamo cannot trace, so the parameter loop is a frame
    resumed after a break, which reads `self.state` itself."""

    def __init__(self, params, lr=1e-3, beta=0.9):
        super().__init__(params, dict(lr=lr, beta=beta))

    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                if grad.is_sparse:
                    raise RuntimeError("sparse gradients are not supported")
                state = self.state[p]
                if len(state) == 0:  # runtime: LAZY-STATE
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                state["step"] += 1  # runtime: PY-COUNTER
                exp_avg = state["exp_avg"]
                exp_avg.mul_(group["beta"]).add_(grad, alpha=1 - group["beta"])
                correction = 1 - group["beta"] ** state["step"]
                norm = exp_avg.norm()
                if norm == 0:
                    trust_ratio = 1
                else:
                    trust_ratio = p.data.norm() / norm
                p.data.sub_(group["lr"] / correction * trust_ratio * exp_avg)


def trust_ratio_step(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
    opt = TrustRatioSGD(model.parameters())

    def step(x):
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    x = torch.randn(4, 8, device=device)
    return step, [(x,), (x,), (x,)]


def _masked_spans(shape, mask_prob, span):
    """Whisper's `_compute_mask_indices` shape: a host draw rounded into a count by a nested helper, then
    span starts drawn with NumPy."""
    batch, length = shape
    epsilon = np.random.rand(1).item()  # runtime: HOST-DRAW

    def spans_for(n):
        return max(int(mask_prob * n / span + epsilon), 1)

    most = spans_for(length)  # runtime: FIRST-USE
    mask = np.zeros((batch, length), dtype=bool)
    for row in range(batch):
        starts = np.random.choice(np.arange(length - span), spans_for(length), replace=False)  # runtime: CHOICE
        mask[row, starts[:most]] = True
    return mask


class SpecAugment(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, features):
        spans = _masked_spans(features.shape[:2], 0.3, 2)
        mask = torch.tensor(spans, device=features.device, dtype=torch.bool)
        return self.proj(features.masked_fill(mask[..., None], 0)).square().mean()


def spec_augment(device):
    torch.manual_seed(0)
    model = SpecAugment().to(device)

    def step(x):
        loss = model(x)
        loss.backward()
        model.zero_grad()
        return loss.detach()
    x = torch.randn(2, 10, 8, device=device)
    return step, [(x,), (x,), (x,)]


class SignMomentum(torch.optim.Optimizer):
    """Lion's shape (lion-pytorch): state made on the first step, read through a tuple assignment; nothing
    breaks the graph inside step(), so dynamo guards the state where the user's step calls `opt.step()`."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), decoupled_wd=False):
        super().__init__(params, dict(lr=lr, betas=betas))
        self.decoupled_wd = decoupled_wd  # an attribute an Optimizer's pickled state leaves out

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in filter(lambda p: p.grad is not None, group["params"]):
                grad, lr, beta1, beta2, state = p.grad, group["lr"], *group["betas"], self.state[p]
                if self.decoupled_wd:
                    lr = lr / group["lr"]
                if len(state) == 0:  # runtime: SIGN-STATE
                    state["exp_avg"] = torch.zeros_like(p)
                exp_avg = state["exp_avg"]
                update = exp_avg.clone().mul_(beta1).add(grad, alpha=1 - beta1).sign_()
                p.add_(update, alpha=-lr)
                exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)


def sign_momentum_step(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
    opt = SignMomentum(model.parameters())

    def step(x):
        model(x).pow(2).mean().backward()
        opt.step()  # runtime: SIGN-STEP
        opt.zero_grad()
    x = torch.randn(4, 8, device=device)
    return step, [(x,), (x,), (x,)]


class GroupStepTiger(torch.optim.Optimizer):
    """pytorch-optimizer's shape: state made by `init_group` on the first step, a Python counter in the group."""

    def __init__(self, params, lr=1e-3, beta=0.965):
        super().__init__(params, dict(lr=lr, beta=beta))

    def init_group(self, group):
        for p in group["params"]:
            state = self.state[p]
            if "exp_avg" not in state:  # runtime: TIGER-STATE
                state["exp_avg"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            if "step" not in group:
                self.init_group(group)
                group["step"] = 1
            else:
                group["step"] += 1  # runtime: TIGER-COUNTER
            for p in group["params"]:
                exp_avg = self.state[p]["exp_avg"]
                exp_avg.mul_(group["beta"]).add_(p.grad, alpha=1.0 - group["beta"])
                p.add_(torch.sign(exp_avg), alpha=-group["lr"] / group["step"])


def group_step_tiger(device):
    torch.manual_seed(0)
    model = nn.Linear(8, 2).to(device)
    opt = GroupStepTiger(model.parameters())

    def step(x):
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    x = torch.randn(4, 8, device=device)
    return step, [(x,), (x,), (x,), (x,)]
