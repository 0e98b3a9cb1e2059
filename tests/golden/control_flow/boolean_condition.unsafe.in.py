"""LAMB/LARS-style trust ratios: conditions joined with `or`/`and` on tensors. Python's `and`/`or` call
bool() on the first tensor; torch.logical_and / torch.logical_or evaluate both on the device (unsafe:
the division is computed where the condition excluded it, and a Python 1 becomes a tensor)."""

import torch


class TrustRatioSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, weight_decay=0.1):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                weight_norm = torch.norm(p).clamp(0, 10)
                grad_norm = torch.norm(p.grad)
                if weight_norm == 0 or grad_norm == 0:
                    trust_ratio = 1
                else:
                    trust_ratio = weight_norm / grad_norm
                d_p = p.grad
                if weight_norm != 0 and grad_norm != 0:
                    lars_lr = weight_norm / (grad_norm + weight_norm * group["weight_decay"])
                    lars_lr *= 0.5
                    d_p = d_p.add(p * group["weight_decay"])
                    d_p *= lars_lr
                p.sub_(group["lr"] * trust_ratio * d_p)


def _params(device="cpu"):
    return [torch.nn.Parameter(torch.randn(4, 3, device=device)), torch.nn.Parameter(torch.zeros(5, device=device))]


def run(seed):
    torch.manual_seed(seed)
    params = _params()
    opt = TrustRatioSGD(params)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])


def runtime_target(device):
    from cslint.runtime import Step

    params = _params(device)
    opt = TrustRatioSGD(params)

    def step(scale):
        for p in params:
            p.grad = torch.ones_like(p) * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
