"""D-Adapt AdaGrad-style guard: extra state only for sparse gradients (`if grad.is_sparse:`). Before the
first step there is no gradient, so preinitialize() tests the parameter's layout instead (unsafe: a
dense parameter with sparse gradients, as nn.Embedding(sparse=True) makes, gets no such state)."""

import torch


class AdaGrad(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, eps=1e-6):
        super().__init__(params, dict(lr=lr, eps=eps))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["alphak"] = torch.full_like(p, fill_value=group["eps"])
                if p.is_sparse:
                    state["weighted_sk"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad.data
                state = self.state[p]
                alphak = state["alphak"]
                alphak.add_(grad * grad)
                p.sub_(group["lr"] * grad / alphak.sqrt())


def run(seed):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    opt = AdaGrad(params)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])


def runtime_target():
    return AdaGrad([torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))])
