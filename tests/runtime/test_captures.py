"""A factory without `device` whose step closes over a model, an optimizer and tensors: the checker moves them."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import check  # noqa: E402

TARGET = Path(__file__).parent / "targets" / "closure_factory.py"


@pytest.mark.parametrize("factory", ["closure", "bound_partial"])
def test_captured_model_optimizer_and_tensors_are_moved_to_the_lazy_device(factory: str) -> None:
    report = check(f"{TARGET}:{factory}", ("lazy",), isolate=False)
    assert not report.error, report.error
    assert report.status == {"lazy": "complete"}, report.status
