"""D-Adaptation-style early return on a tensor (`if sk_l1 == 0: return loss`: no gradient has moved the
estimate yet, so the step changes nothing). The rest of the step runs every time and keeps what it
stores only where the condition is false: the in-place parameter updates through copy_, the stored state
entries (a step counter) through torch.where (unsafe)."""

import logging

import torch


class DAdaptSign(torch.optim.Optimizer):
    def __init__(self, params, lr=1.0, beta=0.9, d0=1e-2, log_every=0):
        super().__init__(params, dict(lr=lr, beta=beta, d=d0, log_every=log_every))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["s"] = torch.zeros_like(p)
                self.state[p]["k"] = torch.zeros((), device=p.device)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        first = self.param_groups[0]
        d = first["d"]
        sk_l1 = torch.zeros(())
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p]["s"]
                s.mul_(group["beta"]).add_(p.grad * group["lr"])
                sk_l1 += s.abs().sum()
        proceed = torch.logical_not(torch.as_tensor(sk_l1 == 0))
        if first["log_every"] > 0:
            logging.info("step over %d groups", len(self.param_groups))
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                state["k"] = torch.where(proceed, state["k"] + 1, state["k"])
                p.data.copy_(torch.where(proceed, p.data.sub(d * state["s"].sign() / state["k"]), p.data))
        return loss


def _groups(device="cpu"):
    return [{"params": [torch.nn.Parameter(torch.randn(4, 3, device=device))]},
            {"params": [torch.nn.Parameter(torch.randn(5, device=device))]}]


def run(seed):
    torch.manual_seed(seed)
    groups = _groups()
    opt = DAdaptSign(groups, lr=0.1)
    for step in range(6):
        for group in groups:
            for p in group["params"]:  # the first two steps have zero gradients: the step ends early
                p.grad = torch.randn_like(p) if step >= 2 else torch.zeros_like(p)
        opt.step()
    counters = [opt.state[p]["k"].reshape(1) for group in groups for p in group["params"]]
    return torch.cat([p.detach().flatten() for group in groups for p in group["params"]] + counters)


def runtime_target(device):
    """One traced step with the learning rate a tensor on the device (as a scheduler makes it)."""
    from cslint.runtime import Step

    groups = _groups(device)
    opt = DAdaptSign(groups)
    for group in opt.param_groups:
        group["lr"] = torch.tensor(0.1, device=device)
    params = [p for group in groups for p in group["params"]]

    def step(scale):
        for p in params:
            p.grad = p.detach() * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
