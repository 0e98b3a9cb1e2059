"""WSC201's fix for `.item()` of a one-element NumPy draw (issue 37, fixers/numpy_draws.py): the scalar draw,
the same number from the same generator call; the draw's own WSC704 stays."""

from __future__ import annotations

from pathlib import Path

import pytest

CODE = """
import numpy as np
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        eps = {draw}.item()
        return x * 2 + eps
"""

# (the one-element draw, the scalar draw that equals it)
DRAWS = [
    ("np.random.rand(1)", "np.random.rand()"),
    ("np.random.rand(1, 1)", "np.random.rand()"),
    ("np.random.randn(1)", "np.random.randn()"),
    ("np.random.random(1)", "np.random.random()"),
    ("np.random.random_sample(size=1)", "np.random.random_sample()"),
    ("np.random.standard_normal((1,))", "np.random.standard_normal()"),
    ("np.random.uniform(0.2, 3.0, 1)", "np.random.uniform(0.2, 3.0)"),
    ("np.random.normal(1.0, 2.0, size=1)", "np.random.normal(1.0, 2.0)"),
    ("np.random.randint(0, 100, size=[1])", "np.random.randint(0, 100)"),
]


def _item_findings(lint, draw):  # type: ignore[no-untyped-def]
    return [d for d in lint(CODE.format(draw=draw), target="compile") if d.code == "WSC201"]


@pytest.mark.parametrize(("draw", "scalar"), DRAWS)
def test_a_one_element_draw_read_with_item_becomes_the_scalar_draw(lint, fix, draw, scalar):
    found = _item_findings(lint, draw)
    assert len(found) == 1 and found[0].fix is not None and found[0].fix.applicability == "safe"
    fixed = fix(CODE.format(draw=draw), target="compile")
    assert f"eps = {scalar}\n" in fixed


@pytest.mark.parametrize(("draw", "scalar"), DRAWS)
def test_the_scalar_draw_is_the_same_number(draw, scalar):
    np = pytest.importorskip("numpy")
    for seed in range(10):
        np.random.seed(seed)
        before = [eval(draw, {"np": np}).item() for _ in range(3)]
        np.random.seed(seed)
        after = [eval(scalar, {"np": np}) for _ in range(3)]
        assert before == after and [type(v) for v in before] == [type(v) for v in after]


@pytest.mark.parametrize("draw", [
    "np.random.rand(2)",  # two numbers: `.item()` raises, the scalar draw would not
    "np.random.rand(n)",  # a size not known to be 1
    "np.random.uniform(0.0, 1.0, size=k)",
    "np.random.permutation(1)",  # not a draw of numbers from a distribution listed
])
def test_other_draws_get_no_such_fix(lint, draw):
    code = CODE.replace("def forward(self, x):", "def forward(self, x, n: int = 1, k: int = 1):")
    found = [d for d in lint(code.format(draw=draw), target="compile") if d.code == "WSC201"]
    assert all(d.fix is None or "Draw the number itself" not in d.fix.message for d in found)


def test_the_runtime_checker_no_longer_sees_the_read(tmp_path):
    """Dynamo breaks at the draw (WSC704) and again at `.item()` of the drawn array (WSC201); after the fix
    only the draw's break is left."""
    pytest.importorskip("torch")
    from cslint.runtime import check

    golden = Path(__file__).parent / "golden" / "host_transfer"
    found = {}
    for name in ("in", "out"):
        target = tmp_path / name / "target.py"
        target.parent.mkdir()
        target.write_text((golden / f"numpy_scalar_draw.compile.{name}.py").read_text(encoding="utf-8"),
                          encoding="utf-8")
        report = check(f"{target}:runtime_step", ("dynamo",), isolate=False)
        assert not report.error, report.error
        found[name] = {(f.code, f.line) for f in report.findings}
    assert {("WSC201", 18), ("WSC201", 19)} <= found["in"]
    assert not any(code == "WSC201" for code, _ in found["out"])
    assert ("WSC704", 18) in found["out"]  # the host draw itself is still a break: not hidden
