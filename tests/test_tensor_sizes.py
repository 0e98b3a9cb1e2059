"""WSC207: a tensor where Python needs an int (slice bounds, sizes, shapes, counts), in every target."""

from __future__ import annotations

import pytest

from tests.conftest import codes

TARGETS = ("wsc", "xla", "rdu", "compile")

SCHEDULER = """
import torch
import torch.nn.functional as F
from torch import nn


class SpanPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(config.hidden, config.hidden)
        self.max_spans = config.max_spans

    def forward(self, hidden, span_starts, span_lengths, image):
        start = span_starts[0]
        length = span_lengths.max()
        span = hidden[:, start:start + length]
        positions = torch.arange(length, device=hidden.device)
        out = self.proj(span).view(length, -1)
        grid = F.interpolate(image, size=(length, length))
        return out + positions[:, None], grid
"""


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_sizes_are_found_in_every_target(lint, target):
    found = [(c, line) for c, line in codes(lint(SCHEDULER, target=target)) if c == "WSC207"]
    assert found == [("WSC207", 15), ("WSC207", 16), ("WSC207", 17), ("WSC207", 18)], found


@pytest.mark.parametrize("target", TARGETS)
def test_static_sizes_are_quiet(lint, target):
    code = """
    import torch
    import torch.nn.functional as F
    from torch import nn

    class SpanPooler(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.max_spans = config.max_spans
            self.size = (config.height, config.width)

        def forward(self, hidden, image, chunks: int = 2):
            b, n, d = hidden.shape
            span = hidden[:, : self.max_spans]
            positions = torch.arange(n, device=hidden.device)
            parts = hidden.view(b, n, -1).repeat(1, chunks, 1).chunk(chunks, dim=1)
            pad = torch.zeros(b, self.max_spans - n, d)
            grid = F.interpolate(image, size=self.size, mode="bilinear")
            firsts = [hidden[:, i] for i in range(min(n, self.max_spans))]
            return span, positions, parts, pad, grid, firsts
    """
    assert codes(lint(code, target=target)) == []


def test_a_trip_count_is_reported_once(lint):
    code = """
    import torch
    from torch import nn

    class Repeat(nn.Module):
        def forward(self, x, n):
            for _ in range(n.max()):
                x = x * 0.5
            return x
    """
    assert [c for c, _ in codes(lint(code))] == ["WSC107"]


def test_tensor_sizes_outside_traced_code_are_quiet(lint):
    code = """
    import torch

    def pad_batch(sequences, lengths):
        max_len = lengths.max()
        out = torch.zeros(len(sequences), max_len)
        for i, seq in enumerate(sequences):
            out[i, : lengths[i]] = seq[: lengths[i]]
        return out.view(max_len, -1), list(range(max_len))
    """
    assert codes(lint(code)) == []


SAMPLER = """
import torch
from torch import nn


class StepScheduler:
    def __init__(self, steps):
        self.timesteps = torch.arange(steps - 1, -1, -1)

    def previous_timestep(self, timestep):
        index = (self.timesteps == timestep).nonzero(as_tuple=True)[0][0]
        return self.timesteps[index + 1]


class Sampler(nn.Module):
    def __init__(self, denoiser, timesteps):
        super().__init__()
        self.denoiser = denoiser
        self.scales = nn.Parameter(torch.ones(8))
        self.scheduler = StepScheduler(timesteps)

    def forward(self, sample, t, routing):
        for row in routing.nonzero():
            expert = row[0]
            sample = sample * self.scales[expert]
        best = sample.flatten().argmax()
        prev_t = self.scheduler.previous_timestep(t)
        return self.denoiser(sample, prev_t) + sample.flatten()[best]
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_zero_dimensional_index_is_found_in_every_target(lint, target):
    findings = [f for f in lint(SAMPLER, target=target) if f.code == "WSC207"]
    assert [(f.line, f.message.split("`")[1]) for f in findings] == [
        (11, "index + 1"), (24, "expert"), (27, "best")], findings
    assert "0-dim tensor used as an index" in findings[0].message


@pytest.mark.parametrize("target", TARGETS)
def test_indices_with_dimensions_are_quiet(lint, target):
    code = """
    import torch
    from torch import nn

    class Gather(nn.Module):
        def forward(self, hidden, mask, scores, lengths, cache: dict):
            rows = mask.nonzero()
            picked = hidden[rows]                         # a gather by a 2-dim index
            columns = mask.nonzero(as_tuple=True)
            kept = hidden[columns] + hidden[columns[1]]   # a tuple of 1-dim indices, a 1-dim index
            top = scores.argmax(-1)
            best = hidden[top] + hidden[scores.sum(-1)]   # reductions over one dimension keep the others
            first = hidden[lengths[0:1]] + hidden[0] + hidden[-1, None]
            return picked, kept, best, first, cache[scores.sum()]
    """
    assert [c for c, _ in codes(lint(code, target=target)) if c == "WSC207"] == []


def test_a_zero_dimensional_index_outside_traced_code_is_quiet(lint):
    code = """
    import torch

    def decode(logits, vocab):
        best = logits.argmax()
        return vocab[best], logits[best]
    """
    assert codes(lint(code)) == []


SCHEDULER_STEP = """
import torch


class Scheduler:
    def __init__(self, steps):
        self.timesteps = torch.arange(steps - 1, -1, -1)
        self.alphas = torch.linspace(0.99, 0.5, steps)

    def previous_timestep(self, timestep: int) -> int | torch.Tensor:
        return timestep - 1

    def step(self, out, timestep: int, sample, order: list[int]):
        alpha = self.alphas[timestep]
        alpha_prev = self.alphas[self.previous_timestep(timestep)]
        return sample * alpha / alpha_prev + out + self.alphas[order].sum()


scheduler = Scheduler(10)


@torch.compile
def sample_step(x, t, order):
    return scheduler.step(x * 2, t, x, order)
"""


# the same sampling step as a module's forward: a root of the run's target (a `@torch.compile` function is
# checked for compile whatever the run's target, docs/targets.md)
SCHEDULER_MODULE_STEP = SCHEDULER_STEP.replace("""@torch.compile
def sample_step(x, t, order):
    return""", """class Sampler(torch.nn.Module):
    def forward(self, x, t, order):
        return""")


@pytest.mark.parametrize("target", ("wsc", "xla", "rdu"))
def test_a_tensor_given_where_a_number_is_declared_is_a_zero_dimensional_index(lint, target):
    """`timestep: int` (and `-> int | torch.Tensor`) given a tensor by the traced caller: one number, so
    indexing by it reads it under lazy tracing; `order: list[int]` given a tensor is a gather."""
    assert SCHEDULER_MODULE_STEP != SCHEDULER_STEP
    findings = [f for f in lint(SCHEDULER_MODULE_STEP, target=target) if f.code == "WSC207"]
    assert [(f.line, f.message.split("`")[1]) for f in findings] == [
        (13, "timestep"), (14, "self.previous_timestep(timestep)")], findings
    assert "`timestep` is annotated `int`, but the traced callers pass a tensor" in findings[0].notes


def test_under_compile_a_declared_number_is_not_known_to_be_zero_dimensional(lint):
    """Dynamo gathers by a 0-dim tensor that enters the graph (the compiled function's `t`, passed on as
    `timestep`) and reads only one computed in the graph (`index + 1` in the first test above)."""
    assert [c for c, _ in codes(lint(SCHEDULER_STEP, target="compile")) if c == "WSC207"] == []


def test_a_number_declared_and_given_is_not_an_index_finding(lint):
    code = SCHEDULER_STEP.replace("scheduler.step(x * 2, t, x, order)", "scheduler.step(x * 2, 3, x, [0, 1])")
    assert [c for c, _ in codes(lint(code, target="wsc")) if c == "WSC207"] == []
