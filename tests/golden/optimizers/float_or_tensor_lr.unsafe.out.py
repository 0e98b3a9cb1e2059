"""An optimizer whose bookkeeping reads `lr` with Python's max() and a ternary. Ported, it must run with
a Python-float lr (CPU/GPU) and with a tensor lr (a scheduler on the device): operands that may be
Python numbers go through torch.as_tensor. The first-step flag read before the lazy guard is kept as a
test on the step counter (an emptiness test would always be False once preinitialize has run)."""

import torch


class ScaledMomentum(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, lr_floor=0.01, beta=0.9):
        super().__init__(params, dict(lr=lr, lr_floor=lr_floor, beta=beta))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = torch.tensor(0.0, dtype=torch.float32, device=p.device)
                state["m"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr = group["lr"]
            lr_used = torch.clamp(torch.as_tensor(lr), min=group["lr_floor"])
            inverse = torch.where(torch.as_tensor(lr != 0.0), 1.0 / torch.as_tensor(lr), 1.0)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                first = state["step"] == 0
                state["step"] += 1
                m = state["m"]
                if first:
                    m.copy_(p.grad)
                else:
                    m.mul_(group["beta"]).add_(p.grad, alpha=1 - group["beta"])
                p.add_((-lr_used * inverse * lr) * m)


def _trajectory(seed, lr):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    opt = ScaledMomentum(params, lr=lr)
    steps = []
    for _ in range(4):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
        steps.append(torch.cat([p.detach().flatten() for p in params]))
    return torch.stack(steps)


def run(seed):
    lr = 0.05 * (seed + 1) if seed < 4 else 0.0
    return torch.cat([_trajectory(seed, lr), _trajectory(seed, torch.tensor(lr))])
