"""AdaBound-style step: the groups are walked together with their base learning rates
(`for group, base_lr in zip(self.param_groups, self.base_lrs)`); the guard reads neither base_lr nor the
gradient, so preinitialize() walks `self.param_groups` alone."""

import torch


class BoundedAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), final_lr=0.1, eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, final_lr=final_lr, eps=eps))
        self.base_lrs = [group["lr"] for group in self.param_groups]

    @torch.no_grad()
    def step(self):
        for group, base_lr in zip(self.param_groups, self.base_lrs):
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                beta1, beta2 = group["betas"]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(p.grad * (1 - beta1))
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                final_lr = group["final_lr"] * group["lr"] / base_lr
                step = exp_avg / (exp_avg_sq.sqrt() + group["eps"])
                p.sub_(torch.clamp(step * group["lr"], -final_lr, final_lr))


def run(seed):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    opt = BoundedAdam(params, lr=1e-2)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])


def runtime_target():
    return BoundedAdam([torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))], lr=1e-2)
