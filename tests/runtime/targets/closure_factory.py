"""A step factory as users write it: no `device`, the step closes over the model and a hand-written optimizer."""

import functools

import torch
from torch import nn


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.99)):
        super().__init__(params, dict(lr=lr, betas=betas))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["exp_avg"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                exp_avg = self.state[p]["exp_avg"]
                p.add_(exp_avg.mul(beta1).add(p.grad, alpha=1 - beta1).sign_(), alpha=-group["lr"])
                exp_avg.mul_(beta2).add_(p.grad, alpha=1 - beta2)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.head = nn.Linear(8, 16, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.embed(ids))


def closure():
    torch.manual_seed(0)
    model = TinyLM()
    opt = Lion(model.parameters())
    scale = nn.Parameter(torch.ones(()))

    def step(ids):
        loss = (model(ids) * scale).logsumexp(-1).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    ids = torch.randint(0, 16, (2, 4))
    return step, [(ids,), (ids,)]


class Trainer:
    def __init__(self):
        self.model = TinyLM()
        self.opt = Lion(self.model.parameters())

    def train_step(self, ids, weight):
        loss = self.model(ids).logsumexp(-1).mean() * weight
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss.detach()


def bound_partial():
    torch.manual_seed(0)
    trainer = Trainer()
    ids = torch.randint(0, 16, (2, 4))
    return functools.partial(trainer.train_step, weight=torch.tensor(2.0)), [(ids,), (ids,)]
