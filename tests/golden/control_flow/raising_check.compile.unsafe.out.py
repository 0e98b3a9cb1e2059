"""D-Adaptation-style validation inside step(): with traced learning rates the check needs their values
while tracing. Under --target compile the fix keeps it as a device-side assertion, `torch._assert_async` of the
membership test made of tensor comparisons (unsafe: it raises RuntimeError when the value is computed)."""

import torch


class LayerScaled(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["momentum"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        lr = self.param_groups[0]["lr"]
        for group in self.param_groups:
            group_lr = group["lr"]
            torch._assert_async(torch.logical_or(torch.as_tensor(group_lr == lr), torch.as_tensor(group_lr == 0.0)), "different lr values in different parameter groups are only supported for 0")
            for p in group["params"]:
                buf = self.state[p]["momentum"]
                buf.mul_(0.9).add_(p.grad)
                p.sub_(group_lr * buf)


def _params(device="cpu"):
    return [torch.nn.Parameter(torch.randn(4, 3, device=device)), torch.nn.Parameter(torch.randn(5, device=device))]


def run(seed):
    torch.manual_seed(seed)
    params = _params()
    opt = LayerScaled(params, lr=1e-2)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])


def runtime_target(device):
    """One traced step with the learning rate a tensor on the device (as a scheduler makes it)."""
    from cslint.runtime import Step

    params = _params(device)
    opt = LayerScaled(params, lr=1e-2)
    for group in opt.param_groups:
        group["lr"] = torch.tensor(group["lr"], device=device)

    def step(scale):
        for p in params:
            p.grad = p.detach() * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
