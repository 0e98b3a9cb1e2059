"""WSC101's fix for a guard that only skips a masked store which would write nothing (issue 37,
fixers/noop_store_guard.py): `if X.max() > c: X[X > c] = v` loses its `if`; safe on NumPy host data,
unsafe on a tensor (the in-place store runs every step); refused where the store could write something
while the test is false, or where more than such stores is skipped."""

from __future__ import annotations

import pytest

CODE = """
import numpy as np
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x, starts, limit: int = 7):
        idx = starts.detach().numpy() + np.arange(3)
        ids = x.long()
{body}
        return x.sum() + torch.as_tensor(idx).sum() + ids.sum()
"""


def _guard_findings(lint, body):  # type: ignore[no-untyped-def]
    return [d for d in lint(CODE.format(body=body), target="compile") if d.code == "WSC101"]


def _indent(*lines: str) -> str:
    return "\n".join("        " + line for line in lines)


@pytest.mark.parametrize(("body", "applicability"), [
    (_indent("if idx.max() > limit - 1:", "    idx[idx > limit - 1] = limit - 1"), "safe"),
    (_indent("if idx.min() <= 0:", "    idx[idx <= 0] = 0"), "safe"),
    (_indent("if limit < idx.max():", "    idx[idx > limit] = limit"), "safe"),  # read from the other side
    (_indent("if np.max(idx) >= limit:", "    idx[idx >= limit] = limit"), "safe"),
    (_indent("if (ids < 0).any():", "    ids[ids < 0] = 0"), "unsafe"),  # a tensor: the store runs every step
    (_indent("if torch.any(ids > limit):", "    ids[ids > limit] = limit", "    x[ids > limit] = 0.0"), "unsafe"),
])
def test_a_guard_of_a_noop_store_is_removed(lint, fix, body, applicability):
    found = _guard_findings(lint, body)
    assert len(found) == 1 and found[0].fix is not None and found[0].fix.applicability == applicability
    assert "writes nothing" in found[0].fix.message
    fixed = fix(CODE.format(body=body), unsafe=True, target="compile")
    assert "        if " not in fixed.split("def forward")[1]
    store = body.splitlines()[1].strip()
    assert f"\n        {store}\n" in fixed


@pytest.mark.parametrize("body", [
    _indent("if idx.max() > limit:", "    idx[idx >= limit] = limit"),  # `>=` stores where max == limit too
    _indent("if idx.max() < limit:", "    idx[idx < limit] = 0"),  # max below: every element matches
    _indent("if idx.max() > limit:", "    idx[idx > limit] = limit", "    limit = 0"),  # skips more than stores
    _indent("if idx.max() > limit:", "    idx[idx > limit] = limit", "else:", "    idx = idx + 1"),
    _indent("if (ids < 0).any():", "    ids[ids < 0] = x.long()[ids < 0]"),  # a tensor of values: not empty
    _indent("if (ids < 0).any():", "    ids[ids > 0] = 0"),  # another mask than the test's
    _indent("if (ids < 0).any():", "    ids[ids < 0] = np.random.randint(3)"),  # a draw, now made every time
])
def test_no_fix_when_the_store_could_write_or_more_is_skipped(lint, body):
    found = _guard_findings(lint, body)
    assert found and all(d.fix is None or "writes nothing" not in d.fix.message for d in found)


def test_the_guarded_store_writes_nothing_when_the_test_is_false():
    """The reasoning of the fix, on both array kinds: the test false means an all-false mask, and a store
    through an all-false mask leaves the array as it was."""
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    for array in (np.arange(6).reshape(2, 3), torch.arange(6).reshape(2, 3)):
        before = array.copy() if isinstance(array, np.ndarray) else array.clone()
        assert not bool(array.max() > 5)
        array[array > 5] = 5
        assert (array == before).all()
