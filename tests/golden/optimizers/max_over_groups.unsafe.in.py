"""D-Adaptation-style: the largest learning rate over the parameter groups, taken with Python's max() over
a generator. With traced learning rates max() compares tensors with bool(); the fix stacks them and takes
the maximum on the device (unsafe: a Python-float lr is compared as float32)."""

import torch


class LayerScaled(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        lr = max(group["lr"] for group in self.param_groups)
        for group in self.param_groups:
            scale = group["lr"] / lr
            for p in group["params"]:
                p.sub_(p.grad * scale * lr)


def _groups(device="cpu"):
    first = [torch.nn.Parameter(torch.randn(4, 3, device=device))]
    second = [torch.nn.Parameter(torch.randn(5, device=device))]
    return [{"params": first, "lr": 1e-2}, {"params": second, "lr": 3e-3}]


def run(seed):
    torch.manual_seed(seed)
    groups = _groups()
    opt = LayerScaled(groups)
    for _ in range(5):
        for group in groups:
            for p in group["params"]:
                p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for group in groups for p in group["params"]])


def runtime_target(device):
    """One traced step with the learning rates tensors on the device (as a scheduler makes them)."""
    from cslint.runtime import Step

    groups = _groups(device)
    opt = LayerScaled(groups)
    for group in opt.param_groups:
        group["lr"] = torch.tensor(group["lr"], device=device)
    params = [p for group in groups for p in group["params"]]

    def step(scale):
        for p in params:
            p.grad = p.detach() * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
