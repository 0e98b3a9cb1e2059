"""Optimizers for the state checks: stock ones with lazy state, and one honouring the Cerebras contract."""

import torch


def _params():
    return [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(3))]


class PreinitSGD(torch.optim.Optimizer):
    """Momentum SGD whose state all exists before the first step."""

    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__(params, dict(lr=lr, momentum=momentum))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["momentum_buffer"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                buf = self.state[p]["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(p.grad)
                p.add_(-group["lr"] * buf)


class HalfPreinitAdam(torch.optim.Optimizer):
    """preinitialize() forgets `exp_avg_sq`; step() creates it."""

    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["exp_avg"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if "exp_avg_sq" not in state:
                    state["exp_avg_sq"] = torch.zeros_like(p)  # runtime: WSC301
                state["exp_avg"].mul_(0.9).add_(p.grad)
                state["exp_avg_sq"].mul_(0.99).addcmul_(p.grad, p.grad)
                p.sub_(group["lr"] * state["exp_avg"] / (state["exp_avg_sq"].sqrt() + 1e-8))


class CountingSGD(torch.optim.Optimizer):
    """Keeps its step counter as a Python int in state."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["step"] = 0

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["step"] += 1  # runtime: WSC303
                p.add_(-group["lr"] / self.state[p]["step"] * p.grad)


def adam():
    return torch.optim.Adam(_params(), lr=1e-3)


def sgd_momentum():
    return torch.optim.SGD(_params(), lr=0.1, momentum=0.9)


def preinit_sgd():
    return PreinitSGD(_params())


def half_preinit_adam():
    return HalfPreinitAdam(_params())


def counting_sgd():
    return CountingSGD(_params())
