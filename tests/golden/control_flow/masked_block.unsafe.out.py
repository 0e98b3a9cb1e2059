"""D-Adaptation-style block guarded by a tensor condition (`if group_lr > 0.0:`): accumulations, an
in-place state update and reads of the updated state. The block runs every step and torch.where keeps
its results where the condition holds; the state is updated in place through copy_ (unsafe)."""

import torch


class DAdaptSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=1.0):
        super().__init__(params, dict(lr=lr))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["s"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        numerator = torch.zeros(())
        sk_sq = torch.zeros(())
        dlr = 0.5
        for group in self.param_groups:
            group_lr = group["lr"]
            for p in group["params"]:
                grad = p.grad.data
                s = self.state[p]["s"]
                taken = torch.as_tensor(group_lr > 0.0)
                numerator_taken = numerator + (dlr * torch.dot(grad.flatten(), s.flatten()))
                s_taken = s.data.add(grad, alpha=dlr)
                sk_sq_taken = sk_sq + (s_taken * s_taken).sum()
                numerator = torch.where(taken, numerator_taken, numerator)
                s.data.copy_(torch.where(taken, s_taken, s.data))
                sk_sq = torch.where(taken, sk_sq_taken, sk_sq)
                p.data.sub_(grad * group_lr * sk_sq)
        return numerator


def _groups(device="cpu"):
    first = [torch.nn.Parameter(torch.randn(4, 3, device=device))]
    second = [torch.nn.Parameter(torch.randn(5, device=device))]
    return [{"params": first, "lr": 1e-2}, {"params": second, "lr": 0.0}]


def run(seed):
    torch.manual_seed(seed)
    groups = _groups()
    opt = DAdaptSGD(groups)
    numerators = []
    for _ in range(5):
        for group in groups:
            for p in group["params"]:
                p.grad = torch.randn_like(p)
        numerators.append(opt.step())
    return torch.cat([p.detach().flatten() for group in groups for p in group["params"]] + [torch.stack(numerators)])


def runtime_target(device):
    """One traced step with the learning rates tensors on the device (as a scheduler makes them)."""
    from cslint.runtime import Step

    groups = _groups(device)
    opt = DAdaptSGD(groups)
    for group in opt.param_groups:
        group["lr"] = torch.tensor(group["lr"], device=device)
    params = [p for group in groups for p in group["params"]]

    def step(scale):
        for p in params:
            p.grad = p.detach() * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
