"""No fix ever deletes a check: over every golden input and generated steps, on every target, `--fix
--unsafe-fixes` never lowers the number of `raise`, `assert`, `torch._check*` and `torch._assert_async`
statements."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cslint.core.targets import TARGETS
from tests.conftest import run_linter

GOLDEN = Path(__file__).parent / "golden"
CHECK_CALLS = ("_assert_async", "_assert", "_check")


class _Checks(cst.CSTVisitor):
    def __init__(self) -> None:
        self.count = 0

    def visit_Raise(self, node: cst.Raise) -> None:
        self.count += 1

    def visit_Assert(self, node: cst.Assert) -> None:
        self.count += 1

    def visit_Call(self, node: cst.Call) -> None:
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else \
            node.func.value if isinstance(node.func, cst.Name) else ""
        if name.startswith(CHECK_CALLS):
            self.count += 1


def checks(source: str) -> int:
    visitor = _Checks()
    cst.parse_module(source).visit(visitor)
    return visitor.count


def _fixed(root: Path, source: str, target: str) -> str:
    _, texts = run_linter(root, {"model.py": source}, fix=True, unsafe=True, target=target)
    return texts["model.py"]


def test_checks_counts_what_a_fix_could_delete() -> None:
    assert checks("if x: raise ValueError('a')\nassert y\ntorch._check(n > 0)\ntorch._assert_async(t, 'm')\n"
                  "torch._check_tensor_all(t)\nf(x)\n") == 5


GOLDEN_WITH_CHECKS = sorted(p for p in GOLDEN.rglob("*.in.py") if checks(p.read_text(encoding="utf-8")))


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("case", GOLDEN_WITH_CHECKS, ids=[str(c.relative_to(GOLDEN)) for c in GOLDEN_WITH_CHECKS])
def test_no_fix_deletes_a_check_in_a_golden_input(tmp_path: Path, case: Path, target: str) -> None:
    source = case.read_text(encoding="utf-8")
    assert checks(_fixed(tmp_path, source, target)) >= checks(source)


CONDITIONS = ["x.max() > limit", "torch.isfinite(x).all()", "(x == 0).any()", "x.sum() != 0",
              "labels is not None and labels.max() >= limit", "limit not in [x.min(), 0.0]", "not (x < 0).all()",
              "x.max() > limit and (x < 0).any()", "x.norm()"]
CHECKS = [  # statement shapes, indented from the statement's own column
    "if {cond}:\n    raise ValueError('bad {n}')",
    "if {cond}:\n    raise RuntimeError(f'bad value {{limit}}')",
    "if {cond}:\n    raise ValueError(f'bad value {{x.max()}}')",
    "if {cond}:\n    x = x * 0\n    raise ValueError('bad')",
    "assert {cond}",
    "assert {cond}, 'bad {n}'",
    "if {cond}:\n    raise ValueError('bad')\nelse:\n    x = x + 1",
]
STEP = """import torch
from torch import nn


class Block(nn.Module):
    def forward(self, x, labels=None, limit=3.0):
{body}
        return x * 2
"""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(CHECKS), st.sampled_from(CONDITIONS)), min_size=1, max_size=3),
       st.sampled_from(sorted(TARGETS)))
def test_no_fix_deletes_a_generated_check(tmp_path_factory: pytest.TempPathFactory,
                                          shapes: list[tuple[str, str]], target: str) -> None:
    body = "\n".join(shape.format(cond=cond, n=n) for n, (shape, cond) in enumerate(shapes))
    source = STEP.format(body="\n".join(" " * 8 + line for line in body.splitlines()))
    assert checks(_fixed(tmp_path_factory.mktemp("gen"), source, target)) >= checks(source)
