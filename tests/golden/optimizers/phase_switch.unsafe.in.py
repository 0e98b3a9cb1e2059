"""A mode switch (the SWATS shape): `group["mode"]` is a Python string that a tensor test switches from
"adaptive" to "plain" (`if ... settled.allclose(estimate) ...: group["mode"] = "plain"; group["lr"] =
settled.item()`), read by the next parameters' and steps' `if group["mode"] == "plain": ...; continue`.
The entry becomes a tensor code made in preinitialize(), the switch a torch.where, the plain branch and
the rest of the loop body it skips with `continue` masked as an if/else; the momentum buffer aliased by
`grad = buf` keeps the in-place updates made through `grad` (unsafe)."""

import torch


class Switching(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, betas=(0.9, 0.999), eps=1e-12, nesterov=False):
        defaults = dict(lr=lr, betas=betas, eps=eps, mode="adaptive", nesterov=nesterov)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                grad = p.grad.data
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                    state["scale"] = torch.zeros(1, device=p.device)
                    state["velocity"] = torch.zeros_like(p)
                state["step"] += 1
                if group["mode"] == "plain":
                    buf = state["velocity"]
                    buf.mul_(beta1).add_(grad)
                    grad = buf
                    grad.mul_(1 - beta1)
                    if group["nesterov"]:
                        grad.add_(buf, alpha=beta1)
                    p.data.add_(grad, alpha=-group["lr"])
                    continue
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                correction1 = 1 - beta1 ** state["step"]
                correction2 = 1 - beta2 ** state["step"]
                update = -group["lr"] * (correction2 ** 0.5) / correction1 * exp_avg / (exp_avg_sq.sqrt() + group["eps"])
                p.data.add_(update)
                flat = update.view(-1)
                along = flat.dot(grad.view(-1))
                if along != 0:
                    estimate = flat.dot(flat) / -along
                    state["scale"].mul_(beta2).add_(estimate, alpha=1 - beta2)
                    settled = state["scale"] / correction2
                    if state["step"] > 1 and settled.allclose(estimate, rtol=1e-6) and settled > 0:
                        group["mode"] = "plain"
                        group["lr"] = settled.item()


def _params(seed, device="cpu"):
    torch.manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(4, 3, device=device)), torch.nn.Parameter(torch.randn(5, device=device))]


def run(seed):
    """Even seeds: constant gradients, so the step size settles and the mode switches at step 2 (at the
    first parameter: the second takes the plain branch in the same step). Odd seeds: random gradients, no
    switch. Nesterov on for seeds 2 and 3."""
    params = _params(seed)
    opt = Switching(params, nesterov=seed in (2, 3))
    constant = [torch.randn_like(p) for p in params]
    out = []
    for _ in range(6):
        for p, g in zip(params, constant):
            p.grad = g.clone() if seed % 2 == 0 else torch.randn_like(p)
        opt.step()
        out.append(torch.cat([p.detach().flatten() for p in params]))
    return torch.cat(out)


def switching_step(device):
    """Two traced steps with lr a tensor on the device, the state created beforehand."""
    from cslint.runtime import Step

    params = _params(0, device)
    opt = Switching(params)
    if hasattr(opt, "preinitialize"):
        for state in opt.state.values():
            state.clear()
        opt.preinitialize()
    for group in opt.param_groups:
        group["lr"] = torch.tensor(group["lr"], device=device)

    def step(scale):
        for p in params:
            p.grad = p.detach() * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
