"""A2Grad-style state started with `copy.deepcopy(grad)` and `copy.deepcopy(p.data)` behind a lazy guard.
The running average is scaled by the step count (0 on the first step) before the gradient is added, so a
zero buffer gives the same values: preinitialize() creates it as `torch.zeros_like(p)` (unsafe: state
copied from a gradient) and copies the parameter as it is when the optimizer is built."""

import copy

import torch


class A2GradUni(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, beta=10.0):
        super().__init__(params, dict(lr=lr, beta=beta))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = torch.tensor(0.0, dtype=torch.float32, device=p.device)
                state["avg_grad"] = torch.zeros_like(p)
                state["x_k"] = copy.deepcopy(p.data)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad.data
                state = self.state[p]
                avg_grad = state["avg_grad"]
                avg_grad.mul_(state["step"])
                avg_grad.add_(grad)
                avg_grad.div_(state["step"] + 1)
                x_k = state["x_k"]
                x_k.sub_(group["lr"] * grad)
                p.data.mul_(0.5).add_(0.5 * x_k).sub_(group["lr"] * avg_grad / group["beta"])
                state["step"] += 1


def _params(device="cpu"):
    return [torch.nn.Parameter(torch.randn(4, 3, device=device)), torch.nn.Parameter(torch.randn(5, device=device))]


def run(seed):
    torch.manual_seed(seed)
    params = _params()
    opt = A2GradUni(params)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])


def runtime_target(device):
    """One traced step with the learning rate a tensor on the device, the state created beforehand."""
    from cslint.runtime import Step

    params = _params(device)
    opt = A2GradUni(params)
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
