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
