"""AdaMod-style bounded step: a per-element step size filled from a value computed from the learning
rate. `torch.full_like` takes its fill value as a Python number, so a traced lr is read while tracing;
adding the tensor to zeros keeps the same values and dtype."""

import torch


class BoundedStep(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, beta=0.9, beta3=0.999, eps=1e-8):
        super().__init__(params, dict(lr=lr, beta=beta, beta3=beta3, eps=eps))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["exp_avg_sq"] = torch.zeros_like(p)
                self.state[p]["exp_avg_lr"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                exp_avg_sq, exp_avg_lr = state["exp_avg_sq"], state["exp_avg_lr"]
                exp_avg_sq.mul_(group["beta"]).addcmul_(p.grad, p.grad, value=1 - group["beta"])
                denom = exp_avg_sq.sqrt().add_(group["eps"])
                step_size = group["lr"] * 2.0
                step_size = torch.full_like(denom, step_size, memory_format=torch.preserve_format)
                step_size.div_(denom)
                exp_avg_lr.mul_(group["beta3"]).add_(step_size * (1 - group["beta3"]))
                p.sub_(torch.min(step_size, exp_avg_lr) * p.grad)


def run(seed):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    opt = BoundedStep(params, lr=1e-2)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])


def runtime_target(device):
    """One traced optimizer step with the learning rate a tensor on the device (as a scheduler makes it)."""
    from cslint.runtime import Step

    params = [torch.nn.Parameter(torch.randn(4, 3, device=device)), torch.nn.Parameter(torch.randn(5, device=device))]
    opt = BoundedStep(params, lr=1e-2)
    for group in opt.param_groups:
        group["lr"] = torch.tensor(group["lr"], device=device)

    def step(scale):
        for p in params:
            p.grad = p.detach() * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
