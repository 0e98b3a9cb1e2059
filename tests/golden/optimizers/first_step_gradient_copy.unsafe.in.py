"""Adan-style previous gradient: `if state["step"] == 0: state["pre_grad"] = grad.clone()` starts the
entry from the first gradient, under a condition, so it is new state inside step(). It is created as
zeros in preinitialize() and the first step copies the gradient into it with torch.where (unsafe)."""

import torch


class Adan(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, betas=(0.9, 0.92)):
        super().__init__(params, dict(lr=lr, betas=betas))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                grad = p.grad.data
                state = self.state[p]
                if "step" not in state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_diff"] = torch.zeros_like(p)
                if state["step"] == 0:
                    state["pre_grad"] = grad.clone()
                grad_diff = grad - state["pre_grad"]
                state["exp_avg"].mul_(beta1).add_(grad, alpha=1 - beta1)
                state["exp_avg_diff"].mul_(beta2).add_(grad_diff, alpha=1 - beta2)
                state["step"] += 1
                p.data.sub_(group["lr"] * (state["exp_avg"] + beta2 * state["exp_avg_diff"]))
                state["pre_grad"].copy_(grad)


def _params(device="cpu"):
    return [torch.nn.Parameter(torch.randn(4, 3, device=device)), torch.nn.Parameter(torch.randn(5, device=device))]


def run(seed):
    torch.manual_seed(seed)
    params = _params()
    opt = Adan(params)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])


def runtime_target(device):
    """One traced step with the learning rate a tensor on the device, the state created beforehand."""
    from cslint.runtime import Step

    params = _params(device)
    opt = Adan(params)
    if hasattr(opt, "preinitialize"):
        for state in opt.state.values():
            state.clear()
        opt.preinitialize()
    for group in opt.param_groups:
        group["lr"] = torch.tensor(1e-2, device=device)

    def step(scale):
        for p in params:
            p.grad = p.detach() * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
