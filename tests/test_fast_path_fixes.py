"""The fast-path fix of WSC101 (issue 37, fixers/fast_paths.py): a shortcut on a tensor's value that the
code's own tracing guard skips under torch.compile loses its tensor test on a static graph. Offered only
where the guard returns what the function ends by returning; refused when the dropped test is not only a
test, and never for a check that raises."""

from __future__ import annotations

import pytest

HELPER = """
import torch


def is_tracing(tensor=None):
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


def can_skip(mask, q_len, kv_len):
    if {guard}:
        return {guard_returns}
    if {test}:
        return True
    return False


class Block(torch.nn.Module):
    def forward(self, x, mask):
        if can_skip(mask, x.shape[1], x.shape[1]):
            return x
        return x * mask[:, :, None]
"""

GUARD = "torch.compiler.is_exporting() or (mask is not None and is_tracing(mask))"
TEST = "q_len == kv_len and (mask is None or mask.all())"


def _fast_path(lint, target="wsc", **parts):  # type: ignore[no-untyped-def]
    values = {"guard": GUARD, "guard_returns": "False", "test": TEST} | parts
    found = [d for d in lint(HELPER.format(**values), target=target) if d.code == "WSC101" and d.line == 11]
    return found


def test_the_shortcut_after_a_compile_guard_loses_its_tensor_test(lint, fix):
    found = _fast_path(lint)
    assert len(found) == 1 and found[0].fix is not None and found[0].fix.applicability == "unsafe"
    assert "general path" in found[0].fix.message and "`mask.all()`" in found[0].fix.message
    fixed = fix(HELPER.format(guard=GUARD, guard_returns="False", test=TEST), unsafe=True)
    assert "    if q_len == kv_len and (mask is None):\n        return True\n" in fixed
    assert GUARD in fixed


def test_a_test_of_tensor_values_only_removes_the_shortcut(fix):
    fixed = fix(HELPER.format(guard=GUARD, guard_returns="False", test="mask.all()"), unsafe=True)
    assert "mask.all()" not in fixed and "return True" not in fixed and fixed.count("return False") == 2


@pytest.mark.parametrize("guard, guard_returns", [
    ("mask is None", "False"),  # no tracing predicate: nothing says the general path is right
    (GUARD, "True"),  # the guard answers what the shortcut answers, not what the function ends with
])
def test_no_fix_without_a_guard_that_takes_the_general_path(lint, guard, guard_returns):
    found = _fast_path(lint, guard=guard, guard_returns=guard_returns)
    assert len(found) == 1 and found[0].fix is None


REGISTERED = """

CALLS = []


def registered(n):
    CALLS.append(n)
    return True
"""


@pytest.mark.parametrize("test", [
    "q_len == kv_len and mask.add_(1).all()",  # modifies the mask
    "torch.rand(()) > 0.5",  # draws random numbers
    "registered(q_len) and mask.all()",  # a call of Python code the new test would no longer make
])
def test_no_fix_when_the_test_is_not_only_a_test(lint, test):
    code = HELPER.format(guard=GUARD, guard_returns="False", test=test) + REGISTERED
    found = [d for d in lint(code, target="wsc") if d.code == "WSC101" and d.line == 11]
    assert len(found) == 1 and found[0].fix is None, found[0].fix


def test_a_raising_check_after_the_guard_is_kept(lint):
    code = HELPER.format(guard=GUARD, guard_returns="False", test=TEST).replace(
        "    if " + TEST + ":\n        return True\n",
        "    if " + TEST + ":\n        raise ValueError('no padding')\n")
    found = [d for d in lint(code, target="wsc") if d.code == "WSC101" and d.line == 11]
    assert len(found) == 1 and found[0].fix is None


def test_under_compile_the_shortcut_is_dead(lint):
    assert _fast_path(lint, target="compile") == []


TRANSFORMERS_HELPER = """
import torch
from transformers.utils.import_utils import is_torchdynamo_exporting, is_tracing


def can_skip(mask):
    if is_torchdynamo_exporting() or (mask is not None and is_tracing(mask)):
        return False
    if mask is None or mask.all():
        return True
    return False


class Block(torch.nn.Module):
    def forward(self, x, mask):
        return x if can_skip(mask) else x * mask
"""


def test_transformers_tracing_helpers_guard_when_transformers_is_not_linted(lint):
    """`is_tracing` is true under dynamo: the shortcut after it is dead under compile (it was reported,
    as if traced, while transformers' utils were not among the linted files), and fixed under wsc."""
    assert [d.line for d in lint(TRANSFORMERS_HELPER, target="compile") if d.code == "WSC101"] == []
    found = [d for d in lint(TRANSFORMERS_HELPER, target="wsc") if d.code == "WSC101"]
    assert [d.line for d in found] == [8] and found[0].fix is not None


def test_an_early_return_of_the_general_answer_is_kept(lint):
    """transformers' `if local_size is not None and kv_length >= local_size: return False` (a mask is needed
    whatever the padding) with kv_length taken for a tensor: dropping it would let the shortcuts after it
    answer True for a sliding-window layer."""
    code = HELPER.format(guard=GUARD, guard_returns="False", test="mask.sum() >= q_len").replace(
        "    if mask.sum() >= q_len:\n        return True\n",
        "    if mask.sum() >= q_len:\n        return False\n    if mask is None:\n        return True\n")
    found = [d for d in lint(code, target="wsc") if d.code == "WSC101" and d.line == 11]
    assert len(found) == 1 and found[0].fix is None, found[0].fix
