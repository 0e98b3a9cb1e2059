"""Prodigy / D-Adaptation-style blocks guarded by a tensor condition that nest `if`s on Python values: the
optional first moment (`if beta1 > 0:` binding `exp_avg` from the state), two update formulas chosen by
a flag, and a distributed branch (`if fsdp_in_use:`) that builds and reduces its own tensor. Each block
runs every step; the nested `if`s stay, and torch.where keeps the results where the condition holds
(unsafe)."""

import torch
import torch.distributed as dist


class Prodigy(torch.optim.Optimizer):
    def __init__(self, params, lr=1.0, beta1=0.9, safeguard_warmup=False, fsdp_in_use=False):
        super().__init__(params, dict(lr=lr, beta1=beta1, safeguard_warmup=safeguard_warmup, d=1e-2))
        self.fsdp_in_use = fsdp_in_use
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["s"] = torch.zeros_like(p)
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        d_denom = torch.zeros(())
        d = self.param_groups[0]["d"]
        lr = torch.stack([torch.as_tensor(group["lr"]) for group in self.param_groups]).max()
        for group in self.param_groups:
            group_lr = group["lr"]
            beta1 = group["beta1"]
            for p in group["params"]:
                grad = p.grad
                state = self.state[p]
                s = state["s"]
                exp_avg_sq = state["exp_avg_sq"]
                if group_lr > 0.0:
                    if beta1 > 0:
                        exp_avg = state["exp_avg"]
                        exp_avg.mul_(beta1).add_(grad, alpha=d * (1 - beta1))
                    exp_avg_sq.mul_(0.99).addcmul_(grad, grad, value=d * d * 0.01)
                    if group["safeguard_warmup"]:
                        s.mul_(0.9).add_(grad, alpha=d)
                    else:
                        s.mul_(0.9).add_(grad * group_lr * d)
                    d_denom += s.abs().sum()
                p.sub_(group_lr * exp_avg_sq.sqrt() * state["exp_avg"].sign())
        d_hat = d
        if lr > 0.0:
            if self.fsdp_in_use:
                dist_tensor = torch.zeros(1)
                dist_tensor[0] = d_denom
                dist.all_reduce(dist_tensor, op=dist.ReduceOp.SUM)
                global_d_denom = dist_tensor[0]
            else:
                global_d_denom = d_denom
            d_hat = global_d_denom * 0.5
            d = torch.clamp(torch.as_tensor(d_hat), min=d)
        return d_hat + d


def _groups(device="cpu"):
    first = [torch.nn.Parameter(torch.randn(4, 3, device=device))]
    second = [torch.nn.Parameter(torch.randn(5, device=device))]
    return [{"params": first, "lr": 1e-2}, {"params": second, "lr": 0.0, "safeguard_warmup": True}]


def run(seed):
    torch.manual_seed(seed)
    groups = _groups()
    opt = Prodigy(groups)
    estimates = []
    for _ in range(5):
        for group in groups:
            for p in group["params"]:
                p.grad = torch.randn_like(p)
        estimates.append(torch.as_tensor(opt.step()))
    return torch.cat([p.detach().flatten() for group in groups for p in group["params"]] + [torch.stack(estimates)])


def runtime_target(device):
    """One traced step with the learning rates tensors on the device (as a scheduler makes them)."""
    from cslint.runtime import Step

    groups = _groups(device)
    opt = Prodigy(groups)
    for group in opt.param_groups:
        group["lr"] = torch.tensor(group["lr"], device=device)
    params = [p for group in groups for p in group["params"]]

    def step(scale):
        for p in params:
            p.grad = p.detach() * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
