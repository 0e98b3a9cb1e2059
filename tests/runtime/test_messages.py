"""Runtime findings say what the Python did, once, in the words the static rules use: no aten op, no dynamo
stack slot or guard syntax, no graph-break reason that repeats its type (issue #38, item 4)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("torch")

from cslint.runtime import RuntimeReport, check  # noqa: E402
from cslint.runtime.wording import guard_expression, op_words, title_and_reason  # noqa: E402
from tests.runtime.test_runtime import FAMILIES, TARGETS, expected_line  # noqa: E402

INTERNAL = re.compile(r"\baten\.|_local_scalar_dense|___\w+|\b[LG]\['")
REPEATED = re.compile(r"\(([^()]+): \1\)")


def run(target: str, backends: tuple[str, ...]) -> RuntimeReport:
    report = check(target, backends, isolate=False)
    assert not report.error, report.error
    return report


@pytest.mark.parametrize("factory, said", [
    ("control_flow", "graph break: `if` on a tensor condition (Data-dependent branching)"),
    ("host_transfer", "graph break: `.item()` (Unsupported Tensor.item() call with capture_scalar_outputs=False)"),
])
def test_a_graph_break_whose_reason_is_its_type_says_it_once(factory: str, said: str) -> None:
    (finding,) = run(f"{FAMILIES}:{factory}", ("dynamo",)).findings
    assert finding.message == said and not REPEATED.search(finding.message), finding.message


@pytest.mark.parametrize("factory, said", [
    ("control_flow", "`if` on a tensor condition: a tensor's value is read on the host while tracing in `forward`"),
    ("host_transfer", "`.item()`: a tensor's value is read on the host while tracing in `forward`"),
    ("wide_dtype", "a conversion (`.to()`, `.double()`): a float64/complex tensor is created"),
])
def test_a_lazy_finding_says_the_python_not_the_aten_op(factory: str, said: str) -> None:
    (finding,) = run(f"{FAMILIES}:{factory}", ("lazy",)).findings
    assert not INTERNAL.search(finding.message) and finding.message.startswith(said), finding.message


def test_a_stability_finding_names_the_operation_in_python() -> None:
    report = run(f"{FAMILIES}:python_counter", ("lazy",))
    (changed,) = [f for f in report.findings if f.backend == "stability"]
    assert not INTERNAL.search(changed.message), changed.message
    assert "a multiplication (`*`) on this line gets a different Python value (0.1 -> 0.2)" in changed.message


def test_a_recompile_on_a_value_dynamo_keeps_on_its_stack_is_said_in_words() -> None:
    """SpecAugment's draw: the frame resumed after `.item()` guards `___stack0 == 0.49...`, the drawn number."""
    path = TARGETS / "recompiles.py"
    report = run(f"{path}:spec_augment", ("dynamo",))
    assert not [f.message for f in report.findings if INTERNAL.search(f.message)], report.findings
    draw = next(f for f in report.findings if f.code == "WSC704" and f.line == expected_line(path, "HOST-DRAW"))
    assert "recompiled on step 2 because a Python value the step reads changed" in draw.message, draw.message


def test_a_recompile_names_the_users_expression() -> None:
    report = run(f"{FAMILIES}:python_counter", ("dynamo",))
    (counter,) = [f for f in report.findings if f.code == "WSC702"]
    assert "because `self.calls == 0` no longer holds" in counter.message, counter.message


@pytest.mark.parametrize("guard, expression", [
    ("self.calls == 0", "self.calls == 0"),
    ("L['self'].calls == 0", "self.calls == 0"),
    ("len(G['schedule']) == 3", "len(schedule) == 3"),
    ("___stack0 == 4.343012809753418", None),
    ("___check_obj_id(L['self'].mode, 140215)", None),
    ("___tuple_iterator_len(L['it']) == 2", None),
])
def test_a_guard_is_the_users_expression_or_nothing(guard: str, expression: str | None) -> None:
    assert guard_expression(guard) == expression


def test_a_reason_is_kept_only_when_it_adds_to_its_title() -> None:
    assert title_and_reason("Data-dependent branching", "Data-dependent branching") == "Data-dependent branching"
    assert title_and_reason("Data dependent operator", "") == "Data dependent operator"
    assert title_and_reason("Unsupported method call", "call_method UserDefinedObjectVariable(Foo) bar") == \
        "Unsupported method call: call_method UserDefinedObjectVariable(Foo) bar"


@pytest.mark.parametrize("op, words", [
    ("aten._local_scalar_dense.default", "a read of a tensor value into Python (`.item()`)"),
    ("aten.mul.Tensor", "a multiplication (`*`)"),
    ("aten.add_.Tensor", "an in-place addition (`+=`, `.add_()`)"),
    ("aten.nonzero.default", "`torch.nonzero()`"),
    ("aten._fused_sdp_choice.default", "an op the step runs"),
])
def test_an_op_is_said_in_python(op: str, words: str) -> None:
    assert op_words(op) == words
