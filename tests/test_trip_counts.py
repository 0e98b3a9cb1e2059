"""WSC107 needs a trip count that depends on tensor values, not any list read from a tensor.

Seen in a speech model's SpecAugment (written anew here): `input_lengths = attention_mask.sum(-1).tolist()`
then `for input_length in input_lengths:` loops once per batch row, a static shape; the read itself is
WSC201's. The list of a `unique()` / `nonzero()` result has as many entries as the data says.
"""

from __future__ import annotations

import pytest

from tests.conftest import codes

SPEC_AUGMENT = """
import torch
from torch import nn


class SpecAugment(nn.Module):
    def forward(self, features, attention_mask):
        input_lengths = attention_mask.detach().sum(-1).tolist()
        for input_length in input_lengths:
            features = features * 0.5
        rows = len(input_lengths)
        if rows > 1:
            features = features[:rows]
        return features
"""


def _line(code: str, text: str) -> int:
    return next(i for i, line in enumerate(code.lstrip("\n").splitlines(), 1) if text in line)


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_a_loop_over_the_list_of_a_tensor_of_static_shape_is_not_a_trip_count(lint, target):
    found = codes(lint(SPEC_AUGMENT, target=target))
    assert [c for c in found if c[0] in ("WSC107", "WSC101")] == []
    assert ("WSC201", _line(SPEC_AUGMENT, ".tolist()")) in found  # the read itself is still reported


@pytest.mark.parametrize("target", ("wsc", "compile"))
@pytest.mark.parametrize("values", (
    "attention_mask.unique().tolist()",  # as many entries as distinct values
    "torch.nonzero(attention_mask[0]).flatten().tolist()",  # as many as the nonzero entries
    "attention_mask.sum(-1).tolist() if self.training else attention_mask.unique().tolist()",  # either
))
def test_a_loop_over_a_list_whose_length_is_data_is_a_trip_count(lint, target, values):
    code = SPEC_AUGMENT.replace("attention_mask.detach().sum(-1).tolist()", values)
    found = codes(lint(code, target=target))
    assert ("WSC107", _line(code, "for input_length")) in found
    assert ("WSC101", _line(code, "if rows > 1")) in found  # its length is a value read from the data


def test_trip_counts_outside_traced_code_stay_quiet(lint):
    code = SPEC_AUGMENT.replace("class SpecAugment(nn.Module):", "class SpecAugment:").replace(
        "attention_mask.detach().sum(-1).tolist()", "attention_mask.unique().tolist()")
    assert codes(lint(code)) == []
