"""The source lookups behind every runtime finding's code, on a file indexed one function at a time."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from cslint.runtime.classify import called_name, classify, classify_guard_line, classify_line, guard_origin

SOURCE = '''\
import functools

LIMIT = 3


def retry(fn):
    return fn


class Model:
    @retry
    @functools.wraps(print)
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        for _ in range(int(x.max())):
            pass
        return x

    def log(self, x):
        print(x)
        self.calls = 1


def free(x):
    return x.item() if LIMIT else float(x)
'''


def _span(path: Path, text: str) -> tuple[int, int, int, int]:
    """The span of the first expression whose source is `text`, as the bytecode positions give it."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and ast.unparse(node) == text:
            return node.lineno, node.end_lineno or node.lineno, node.col_offset, node.end_col_offset or 0
    raise AssertionError(text)


def test_lookups_in_methods_decorated_functions_and_module_code(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(SOURCE)
    lines = SOURCE.splitlines()
    line = lambda text: next(i for i, t in enumerate(lines, 1) if text in t)  # noqa: E731
    assert classify("scalar", str(path), _span(path, "x.sum() > 0")).code == "WSC101"
    assert classify("scalar", str(path), _span(path, "int(x.max())")).code == "WSC107"
    assert classify("scalar", str(path), _span(path, "x.item()")).code == "WSC201"
    assert classify("scalar", str(path), _span(path, "float(x)")).code == "WSC203"
    assert classify_line(str(path), line("if x.sum()")).code == "WSC101"
    assert classify_line(str(path), line("@functools.wraps")) is None  # a decorator forces nothing
    assert called_name(str(path), line("print(x)")) == "print"
    assert classify_guard_line(str(path), line("self.calls = 1")).code == "WSC702"
    assert classify_guard_line(str(path), line("LIMIT = 3")).code == "WSC703"


def test_an_edited_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "step.py"
    path.write_text("def step(x):\n    if x:\n        pass\n")
    assert classify_line(str(path), 2).code == "WSC101"
    path.write_text("def step(x):\n    while x:\n        pass\n")
    os.utime(path, ns=(1, 1))
    assert classify_line(str(path), 2).code == "WSC102"


def test_a_break_that_reads_no_value_on_an_if_line_is_not_a_tensor_condition(tmp_path: Path) -> None:
    """Lamb's `if grad.is_sparse:`, in its parameter loop, breaks dynamo's graph for a reason of dynamo's own
    ("Unsupported python_type() call"): no rule covers it, while a data-dependent branch there is WSC101."""
    import pytest

    pytest.importorskip("torch")
    from cslint.runtime.dynamo_backend import Break, _break_code

    path = tmp_path / "opt.py"
    path.write_text("def step(grad):\n    if grad.is_sparse:\n        raise RuntimeError\n")
    stack = ((str(path), 2, "step"),)
    assert _break_code(Break("Unsupported python_type() call", "", stack), str(path), 2) is None
    branch = _break_code(Break("Data-dependent branching", "", stack), str(path), 2)
    assert branch is not None and branch.code == "WSC101"


def test_a_read_break_on_a_line_naming_no_call_takes_the_code_the_rules_give_that_call(tmp_path: Path) -> None:
    """`np.asarray(h)` calls `h.numpy()` inside torch: the line names no call on a tensor, the break's type
    does, and its code is the one the rule owning that call declares (cslint/core/rule_table.py)."""
    import pytest

    pytest.importorskip("torch")
    from cslint.core.rule_table import TENSOR_METHODS
    from cslint.runtime.dynamo_backend import Break, _break_code

    path = tmp_path / "gate.py"
    path.write_text("import numpy as np\n\n\ndef gate(h):\n    values = np.asarray(h)\n    return values\n")
    stack = ((str(path), 5, "gate"),)
    for gb_type, method in (("Tensor.numpy() with trace_numpy=False", "numpy"),
                            ("Tensor.tolist() with non-integer tensor", "tolist"),
                            ("Unsupported Tensor.item() call with capture_scalar_outputs=False", "item")):
        found = _break_code(Break(gb_type, "", stack), str(path), 5)
        assert found is not None and found.code == TENSOR_METHODS[method], gb_type


GUARDED = '''\
import random

import numpy as np


def spans(shape, p):
    batch, length = shape
    epsilon = np.random.rand(1).item()
    count = int(p * length + epsilon)
    for row in range(batch):
        starts = np.random.choice(np.arange(length), count)
    return starts


def jitter(x):
    return x * random.uniform(0.9, 1.1)


class Opt:
    def step(self):
        for p in self.params:
            state = self.state[p]
            other = self.state[p]
            if "step" not in state:
                state["step"] = 0
'''


def test_a_failed_guard_is_put_where_its_value_comes_from(tmp_path: Path) -> None:
    path = tmp_path / "guarded.py"
    path.write_text(GUARDED)
    lines = GUARDED.splitlines()
    line = lambda text: next(i for i, t in enumerate(lines, 1) if text in t)  # noqa: E731
    draw, count, choice = line("epsilon ="), line("count ="), line("np.random.choice")
    resumed = f"torch_dynamo_resume_in_spans_at_{draw}"
    # the value the break left on the stack, and a local assigned before the resume point
    at_draw = guard_origin(str(path), count, "___stack0 == 0.25", resumed)
    assert at_draw is not None and at_draw[0] == draw and at_draw[1] is not None and at_draw[1].code == "WSC704"
    later = f"torch_dynamo_resume_in_spans_at_{choice}"
    assert guard_origin(str(path), choice, "epsilon == 0.25", later)[:1] == (draw,)  # type: ignore[index]
    assert guard_origin(str(path), choice, "count == 2", later) == (count, None)
    assert guard_origin(str(path), choice, "row == 1", later) is None  # another iteration's variant
    # not a resumed frame: the line dynamo gives
    assert guard_origin(str(path), count, "epsilon == 0.25", "spans") == (count, None)
    # an emptied container: the `if` that tests what was read from it on that line
    state = line("state = self.state[p]")
    lazy = guard_origin(str(path), state, "not self.state", "step")
    assert lazy is not None and lazy[0] == line('if "step" not in state') and lazy[1].code == "WSC703"  # type: ignore
    assert guard_origin(str(path), line("other = "), "not self.state", "step") == (line("other = "), None)
    assert guard_origin(str(path), state, "not self.buffers", "step") == (state, None)


def test_a_break_in_a_host_draw_is_wsc704_after_any_read_the_user_wrote(tmp_path: Path) -> None:
    path = tmp_path / "guarded.py"
    path.write_text(GUARDED)
    lines = GUARDED.splitlines()
    line = lambda text: next(i for i, t in enumerate(lines, 1) if text in t)  # noqa: E731
    assert classify_line(str(path), line("np.random.choice")).code == "WSC704"  # type: ignore[union-attr]
    assert classify_line(str(path), line("random.uniform")).code == "WSC704"  # type: ignore[union-attr]
    assert classify_line(str(path), line("epsilon =")).code == "WSC201"  # type: ignore[union-attr]
    (tmp_path / "local.py").write_text("def f(random, x):\n    return x * random.uniform(0.9, 1.1)\n")
    assert classify_line(str(tmp_path / "local.py"), 2) is None  # a parameter named `random`
