"""The ground truth behind #36's F19 and F5 (tests/test_heldout4_false_classes.py): what `cslint runtime` reports
on steps of those shapes, and that the static pass reports the same lines per target."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import check  # noqa: E402
from tests.conftest import run_linter  # noqa: E402
from tests.runtime.test_runtime import expected_line  # noqa: E402

STEPS = Path(__file__).parent / "targets" / "cpu_made.py"


def runtime_lines(factory: str, backend: str) -> set[int]:
    report = check(f"{STEPS}:{factory}", (backend,), isolate=False)
    assert not report.error, report.error
    assert report.status == {backend: "complete"}, report.status
    return {f.line for f in report.findings}


def static_lines(tmp_path: Path, target: str, function_line: int, end_line: int) -> set[int]:
    result, _ = run_linter(tmp_path, {"steps.py": STEPS.read_text()}, target=target)
    return {d.line for d in result.diagnostics if function_line <= d.line <= end_line}


def _lines(*markers: str) -> set[int]:
    return {expected_line(STEPS, marker) for marker in markers}


def _span(name: str) -> tuple[int, int]:
    lines = STEPS.read_text().splitlines()
    start = next(i for i, text in enumerate(lines, start=1) if text.startswith(f"class {name}"))
    end = next((i for i, text in enumerate(lines, start=1) if i > start and text and not text[0].isspace()),
               len(lines))
    return start, end


@pytest.mark.parametrize(("backend", "target"), [("lazy", "wsc"), ("dynamo", "compile")])
def test_a_tensor_compared_with_none_by_equality_reads_nothing(tmp_path: Path, backend: str, target: str) -> None:
    assert runtime_lines("none_comparisons", backend) == _lines("WSC101")
    assert static_lines(tmp_path, target, *_span("Neuron")) == _lines("WSC101")


def test_copies_of_tensors_made_on_the_cpu_read_nothing_on_lazy_tensors(tmp_path: Path) -> None:
    expected = _lines("CPU-ITEM", "DEVICE-TOLIST", "MOVED-TOLIST")
    assert runtime_lines("cpu_copies", "lazy") == expected
    assert static_lines(tmp_path, "wsc", *_span("Encoder")) == expected


def test_under_dynamo_each_tolist_is_a_break(tmp_path: Path) -> None:
    breaks = _lines("CPU-TOLIST", "CPU-CAT-TOLIST", "CPU-ITEM", "DEVICE-TOLIST", "MOVED-TOLIST")
    assert runtime_lines("cpu_copies", "dynamo") == breaks
    assert breaks <= static_lines(tmp_path, "compile", *_span("Encoder"))
