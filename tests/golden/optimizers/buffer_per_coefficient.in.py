"""AggMo-style state: one momentum buffer per beta, kept in a dict the guard fills in a loop of its own
(the loop's name `beta` is bound inside the guard, not copied from step())."""

import torch


class MultiMomentum(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.0, 0.9, 0.99)):
        super().__init__(params, dict(lr=lr, betas=betas))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            betas = group["betas"]
            total = float(len(betas))
            for p in group["params"]:
                if p.grad is None:
                    continue
                param_state = self.state[p]
                if "momentum_buffer" not in param_state:
                    param_state["momentum_buffer"] = {}
                    for beta in betas:
                        param_state["momentum_buffer"][beta] = torch.zeros_like(p)
                for beta in betas:
                    buf = param_state["momentum_buffer"][beta]
                    buf.mul_(beta).add_(p.grad)
                    p.sub_(buf * (group["lr"] / total))


def run(seed):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    opt = MultiMomentum(params, lr=1e-2)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])


def runtime_target():
    return MultiMomentum([torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))], lr=1e-2)
