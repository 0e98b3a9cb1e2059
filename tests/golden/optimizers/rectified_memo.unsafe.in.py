"""A rectified Adam written the way RAdam's forks are: the rectification terms are a function of the step
counter, memoised per step in a param-group cache whose first slot records the step it holds; the update
picks one of two formulas (and a third, degenerate one) on the rectification term; the parameters are
updated through `.data` outside `torch.no_grad()`. Ported: the counter is a tensor (preinitialize), the
cache is recomputed, each `if`/`elif`/`else` on the term becomes a masked update, and `1 - beta2_t` keeps
float64 accuracy through expm1/log1p (a float32 `1 - beta2_t` moves the term by 0.5% at step 6)."""

import math

import torch


class RectifiedAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, degenerate_to_sgd=True):
        defaults = dict(lr=lr, betas=betas, eps=eps, cache=[[None, None, None] for _ in range(10)])
        super().__init__(params, defaults)
        self.degenerate_to_sgd = degenerate_to_sgd

    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p.data)
                    state["v"] = torch.zeros_like(p.data)
                m, v = state["m"], state["v"]
                m.mul_(beta1).add_(grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                state["step"] += 1

                # the terms depend on the step alone: computed once per step for the whole group
                entry = group["cache"][int(state["step"] % 10)]
                if state["step"] == entry[0]:
                    rho, scale = entry[1], entry[2]
                else:
                    entry[0] = state["step"]
                    beta2_t = beta2 ** state["step"]
                    rho_inf = 2 / (1 - beta2) - 1
                    rho = rho_inf - 2 * state["step"] * beta2_t / (1 - beta2_t)
                    entry[1] = rho
                    if rho >= 5:
                        scale = math.sqrt(
                            (1 - beta2_t) * (rho - 4) / (rho_inf - 4) * (rho - 2) / rho * rho_inf / (rho_inf - 2)
                        ) / (1 - beta1 ** state["step"])
                    elif self.degenerate_to_sgd:
                        scale = 1.0 / (1 - beta1 ** state["step"])
                    else:
                        scale = -1
                    entry[2] = scale

                if rho >= 5:
                    denom = v.sqrt().add_(group["eps"])
                    p.data.addcdiv_(m, denom, value=-scale * group["lr"])
                elif scale > 0:
                    p.data.add_(m, alpha=-scale * group["lr"])


def _trajectory(seed, lr, degenerate_to_sgd):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(4, 3) * 0.1), torch.nn.Parameter(torch.randn(5) * 0.1)]
    opt = RectifiedAdam(params, lr=lr, degenerate_to_sgd=degenerate_to_sgd)
    steps = []
    for _ in range(14):  # past step 6, where the rectified formula takes over, and past the cache's 10 slots
        for p in params:
            p.grad = torch.randn_like(p)
        opt.step()
        steps.append(torch.cat([p.detach().flatten() for p in params]))
    return torch.stack(steps)


def run(seed):
    lr = 0.01 * (seed + 1)
    return torch.cat([_trajectory(seed, lr, True), _trajectory(seed, lr, False)])


def runtime_target(device):
    """Two optimizer steps with lr a tensor on the traced device."""
    from cslint.runtime import Step

    torch.manual_seed(0)
    model = torch.nn.Linear(6, 3).to(device)
    opt = RectifiedAdam(model.parameters(), lr=0.01)
    if hasattr(opt, "preinitialize"):
        opt.preinitialize()
    for group in opt.param_groups:
        group["lr"] = torch.tensor(group["lr"], device=device)

    def step(x):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        return [p.detach() for p in model.parameters()]

    return Step(step, [(torch.randn(8, 6, device=device),) for _ in range(2)])
