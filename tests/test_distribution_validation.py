"""WSC108: a torch.distributions distribution made in traced code with argument validation on.

Its constructor tests each parameter's values and `log_prob` each value it is given
(`if not torch._is_all_true(valid): raise`): on a lazy-tensor trace each test reads a tensor on the host
(held-out set 2's M8: a probabilistic-programming library's distributions, reported by the runtime as
branches on tensor data at the package lines that make them). dynamo's first use in a process turns
validation off, so the rule does not run under torch.compile.
"""

from __future__ import annotations

import pytest

from tests.conftest import codes

POLICY = """
import torch
from torch import nn
from torch.distributions import Categorical, Normal


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, n_actions, act_dim):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh())
        self.mu = nn.Linear(64, act_dim)
        self.log_std = nn.Parameter(torch.zeros(act_dim))
        self.logits = nn.Linear(64, n_actions)

    def forward(self, obs, action, choice):
        h = self.body(obs)
        continuous = Normal(self.mu(h), self.log_std.exp())
        discrete = Categorical(logits=self.logits(h))
        log_prob = continuous.log_prob(action).sum(-1) + discrete.log_prob(choice)
        return -(log_prob + 0.01 * discrete.entropy()).mean()
"""

VAE = """
import torch
import torch.distributions as td
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim, latent):
        super().__init__()
        self.net = nn.Linear(dim, 2 * latent)

    def forward(self, x):
        mean, log_var = self.net(x).chunk(2, dim=-1)
        posterior = td.Independent(td.normal.Normal(mean, (0.5 * log_var).exp()), 1)
        prior = td.Normal(0.0, 1.0)
        z = posterior.rsample()
        return z, prior.log_prob(z).sum(-1) - posterior.log_prob(z)
"""


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.lstrip("\n").splitlines(), 1) if needle in line)


MADE = [("WSC108", line_of(POLICY, "continuous = Normal")), ("WSC108", line_of(POLICY, "discrete = Categorical"))]


def test_distributions_made_in_a_forward_are_reported(lint):
    assert codes(lint(POLICY, target="wsc")) == MADE


def test_a_distribution_of_python_numbers_and_a_module_path_are_reported(lint):
    # the runtime's lazy backend reports all three (the Independent around the posterior tests each value
    # given to its `log_prob`; the prior of Python numbers tests `z`, the step's tensor)
    posterior, prior = line_of(VAE, "posterior = td.Independent"), line_of(VAE, "prior = td.Normal")
    assert codes(lint(VAE, target="wsc")) == [("WSC108", posterior), ("WSC108", posterior), ("WSC108", prior)]


@pytest.mark.parametrize("target", ["xla", "rdu"])
def test_every_lazy_target_reports_it(lint, target):
    assert [c for c, _ in codes(lint(POLICY, target=target))] == ["WSC108", "WSC108"]


def test_torch_compile_traces_the_checks(lint):
    assert codes(lint(POLICY, target="compile")) == []


def test_validation_turned_off_or_left_to_the_code_is_quiet(lint):
    code = POLICY.replace("self.log_std.exp())", "self.log_std.exp(), validate_args=False)").replace(
        "logits=self.logits(h))", "logits=self.logits(h), validate_args=self.validate)")
    assert codes(lint(code, target="wsc")) == []
    explicit = POLICY.replace("self.log_std.exp())", "self.log_std.exp(), validate_args=True)")
    assert codes(lint(explicit, target="wsc")) == MADE


def test_a_file_that_turns_validation_off_for_the_run_is_quiet(lint):
    code = POLICY + "\n\ntorch.distributions.Distribution.set_default_validate_args(False)\n"
    assert codes(lint(code, target="wsc")) == []


def test_quiet_outside_traced_code(lint):
    code = """
    import torch
    from torch.distributions import Categorical


    def sample_actions(policy, obs):
        with torch.no_grad():
            logits = policy(obs)
        return Categorical(logits=logits).sample()


    class Buffer:
        def add(self, logits):
            self.dists = [Categorical(logits=logits)]
    """
    assert codes(lint(code, target="wsc")) == []
