"""A policy whose distributions validate their arguments (WSC108), and the same policy with validation off."""

import torch
from torch import nn
from torch.distributions import Categorical, Normal


class GaussianPolicy(nn.Module):
    def __init__(self, validate=True):
        super().__init__()
        self.mu = nn.Linear(4, 2)
        self.logits = nn.Linear(4, 3)
        self.validate = validate

    def forward(self, obs, action, choice):
        if self.validate:
            move = Normal(self.mu(obs), torch.ones(2, device=obs.device))  # runtime: WSC108
            log_prob = move.log_prob(action).sum(-1)
        else:
            move = Normal(self.mu(obs), torch.ones(2, device=obs.device), validate_args=False)
            log_prob = move.log_prob(action).sum(-1)
        pick = Categorical(logits=self.logits(obs), validate_args=False)
        return -(log_prob + pick.log_prob(choice)).mean()


def _step(model):
    def step(obs, action, choice):
        loss = model(obs, action, choice)
        loss.backward()
        return loss
    return step


def validating(device):
    from cslint.runtime import Step
    batch = (torch.randn(8, 4, device=device), torch.randn(8, 2, device=device), torch.randint(0, 3, (8,), device=device))
    return Step(_step(GaussianPolicy().to(device)), [batch])


def unvalidated(device):
    from cslint.runtime import Step
    batch = (torch.randn(8, 4, device=device), torch.randn(8, 2, device=device), torch.randint(0, 3, (8,), device=device))
    return Step(_step(GaussianPolicy(validate=False).to(device)), [batch])
