"""A mode switch (the SWATS shape): `group["mode"]` is a Python string that a tensor test switches from
"adaptive" to "plain" (`if ... settled.allclose(estimate) ...: group["mode"] = "plain"; group["lr"] =
settled.item()`), read by the next parameters' and steps' `if group["mode"] == "plain": ...; continue`.
The entry becomes a tensor code made in preinitialize(), the switch a torch.where, the plain branch and
the rest of the loop body it skips with `continue` masked as an if/else; the momentum buffer aliased by
`grad = buf` keeps the in-place updates made through `grad` (unsafe)."""

import torch


class Switching(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, betas=(0.9, 0.999), eps=1e-12, nesterov=False):
        defaults = dict(lr=lr, betas=betas, eps=eps, mode=0, nesterov=nesterov)
        super().__init__(params, defaults)
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            group["mode"] = torch.as_tensor(group["mode"], device=group["params"][0].device)
            for p in group["params"]:
                state = self.state[p]
                state["step"] = torch.tensor(0.0, dtype=torch.float32, device=p.device)
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
                state["scale"] = torch.zeros(1, device=p.device)
                state["velocity"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                grad = p.grad.data
                state = self.state[p]
                state["step"] += 1
                taken3 = torch.as_tensor(group["mode"] == 1)
                buf = state["velocity"]
                buf_taken = buf.mul(beta1).add(grad)
                grad_taken = buf_taken
                buf_taken = buf_taken.mul(1 - beta1)
                grad_taken = buf_taken
                if group["nesterov"]:
                    buf_taken = buf_taken.add(buf_taken, alpha=beta1)
                    grad_taken = buf_taken
                p_taken = p.data.add(-group["lr"] * grad_taken)
                buf.copy_(torch.where(taken3, buf_taken, buf))
                grad = torch.where(taken3, grad_taken, grad)
                p.data.copy_(torch.where(taken3, p_taken, p.data))
                taken4 = torch.logical_not(taken3)
                exp_avg = state["exp_avg"]
                exp_avg_sq = state["exp_avg_sq"]
                exp_avg_taken = exp_avg.mul(beta1).add(grad, alpha=1 - beta1)
                exp_avg_sq_taken = exp_avg_sq.mul(beta2).addcmul(grad, grad, value=1 - beta2)
                correction1 = -torch.expm1(torch.log1p(torch.as_tensor(beta1 - 1)) * state["step"])
                correction2 = -torch.expm1(torch.log1p(torch.as_tensor(beta2 - 1)) * state["step"])
                update = -group["lr"] * (correction2 ** 0.5) / correction1 * exp_avg_taken / (exp_avg_sq_taken.sqrt() + group["eps"])
                p_taken2 = p.data.add(update)
                flat = update.view(-1)
                along = flat.dot(grad.view(-1))
                taken2 = along != 0
                estimate = flat.dot(flat) / -along
                scale_taken = state["scale"].mul(beta2).add(estimate, alpha=1 - beta2)
                settled = scale_taken / correction2
                taken = torch.logical_and(torch.logical_and(torch.as_tensor(state["step"] > 1), torch.isclose(settled, estimate, rtol=1e-6).all()), settled > 0)
                group["mode"] = torch.where(torch.reshape(taken4, ()), torch.where(torch.reshape(taken2, ()), torch.where(torch.reshape(taken, ()), 1, group["mode"]), group["mode"]), group["mode"])
                group["lr"] = torch.where(torch.reshape(taken4, ()), torch.where(torch.reshape(taken2, ()), torch.where(torch.reshape(taken, ()), settled.detach().reshape(()), group["lr"]), group["lr"]), group["lr"])
                scale_taken2 = torch.where(taken2, scale_taken, state["scale"])
                exp_avg.copy_(torch.where(taken4, exp_avg_taken, exp_avg))
                exp_avg_sq.copy_(torch.where(taken4, exp_avg_sq_taken, exp_avg_sq))
                p.data.copy_(torch.where(taken4, p_taken2, p.data))
                state["scale"].copy_(torch.where(taken4, scale_taken2, state["scale"]))


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
