"""Lion-style step: the state is bound by a tuple assignment with a starred value, inside a loop over the
parameters that have a gradient. preinitialize() binds only the state (`state = self.state[p]`)."""

import torch


def exists(value):
    return value is not None


def update_fn(p, grad, exp_avg, lr, wd, beta1, beta2):
    p.data.mul_(1.0 - lr * wd)
    update = exp_avg.clone().mul_(beta1).add(grad * (1.0 - beta1)).sign_()
    p.add_(update * -lr)
    exp_avg.mul_(beta2).add_(grad * (1.0 - beta2))


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in filter(lambda p: exists(p.grad), group["params"]):
                grad, lr, wd, beta1, beta2, state = p.grad, group["lr"], group["weight_decay"], *group["betas"], \
                    self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(p)
                exp_avg = state["exp_avg"]
                update_fn(p, grad, exp_avg, lr, wd, beta1, beta2)


def run(seed):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    opt = Lion(params, lr=0.01, weight_decay=0.1)
    for _ in range(5):
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])
