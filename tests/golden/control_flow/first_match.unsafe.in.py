"""AdamP-style projection: try two views of the weight and project the update for the first one whose
cosine similarity with the gradient is small, returning from inside the loop. Every iteration runs and
keeps its block's results only for the first match (unsafe)."""

import math

import torch


class ProjectedSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1, delta=0.5, wd_ratio=0.1):
        super().__init__(params, dict(lr=lr, delta=delta, wd_ratio=wd_ratio))

    @staticmethod
    def _channel_view(x):
        return x.view(x.size(0), -1)

    @staticmethod
    def _layer_view(x):
        return x.view(1, -1)

    def _projection(self, p, grad, perturb, delta, wd_ratio):
        wd = 1.0
        expand_size = [-1] + [1] * (len(p.shape) - 1)
        for view_func in [self._channel_view, self._layer_view]:
            x, y = view_func(grad), view_func(p)
            cosine_sim = (x * y).sum(dim=1).abs() / x.norm(dim=1).add(1e-8) / y.norm(dim=1).add(1e-8)
            if cosine_sim.max() < delta / math.sqrt(view_func(p).size(1)):
                p_n = p / view_func(p).norm(dim=1).view(expand_size).add(1e-8)
                perturb -= p_n * view_func(p_n * perturb).sum(dim=1).view(expand_size)
                wd = wd_ratio
                return perturb, wd
        return perturb, wd

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                perturb = p.grad.clone()
                perturb, wd = self._projection(p, p.grad, perturb, group["delta"], group["wd_ratio"])
                p.mul_(1 - 0.01 * wd)
                p.sub_(group["lr"] * perturb)


def _params(device="cpu"):
    return [torch.nn.Parameter(torch.randn(4, 3, device=device)), torch.nn.Parameter(torch.randn(3, 5, device=device))]


def run(seed):
    torch.manual_seed(seed)
    params = _params()
    opt = ProjectedSGD(params, delta=0.8)
    for step in range(5):
        for p in params:  # gradients along the weight (no projection) on even steps, random on odd ones
            p.grad = p.detach() * 0.5 if step % 2 == 0 else torch.randn_like(p)
        opt.step()
    return torch.cat([p.detach().flatten() for p in params])


def runtime_target(device):
    """One traced step with the learning rate a tensor on the device (as a scheduler makes it)."""
    from cslint.runtime import Step

    params = _params(device)
    opt = ProjectedSGD(params)
    for group in opt.param_groups:
        group["lr"] = torch.tensor(0.1, device=device)

    def step(scale):
        for p in params:
            p.grad = torch.ones_like(p) * scale
        opt.step()
        return [p.detach() for p in params]

    return Step(step, [(torch.tensor(0.5, device=device),) for _ in range(2)])
