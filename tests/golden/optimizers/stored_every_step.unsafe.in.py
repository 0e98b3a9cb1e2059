"""LAMB-style diagnostics stored in state on every step (`state["trust_ratio"] = trust_ratio`): new
entries step() creates. Each gets a zero-dimensional tensor in preinitialize() and the step copies its
value in (unsafe: the entries exist, as zero, before the first step). Three entries, one method: the
fixes extend preinitialize() one pass after another."""

import torch


class TrustRatioAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, betas=(0.9, 0.999), eps=1e-6, clamp_value=10.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))
        self.clamp_value = clamp_value
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["exp_avg"] = torch.zeros_like(p)
                self.state[p]["exp_avg_sq"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(p.grad * (1 - beta1))
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                adam_step = exp_avg / exp_avg_sq.sqrt().add(group["eps"])
                weight_norm = torch.norm(p).clamp(0, self.clamp_value)
                adam_norm = torch.norm(adam_step)
                trust_ratio = torch.where(adam_norm > 0, weight_norm / adam_norm, 1.0)
                state["weight_norm"] = weight_norm
                state["adam_norm"] = adam_norm
                state["trust_ratio"] = trust_ratio
                p.sub_(group["lr"] * trust_ratio * adam_step)


def run(seed):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    opt = TrustRatioAdam(params)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    ratios = torch.stack([opt.state[p]["trust_ratio"] for p in params])
    return torch.cat([p.detach().flatten() for p in params] + [ratios])


def runtime_target():
    return TrustRatioAdam([torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))])
