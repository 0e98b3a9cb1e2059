"""`Step(fn, loader=...)`: the checker runs the step on the batches the user's own DataLoader yields, and a
batch of another shape that changes the graph is reported at the line that built the loader, under the
static rule's code."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import RuntimeReport, check  # noqa: E402
from tests.runtime.test_runtime import expected_line  # noqa: E402

LOADERS = Path(__file__).parent / "targets" / "loaders.py"


def run(factory: str, backends: tuple[str, ...] = ("lazy",)) -> RuntimeReport:
    report = check(f"{LOADERS}:{factory}", backends, isolate=False)
    assert not report.error, report.error
    assert report.complete, report.status
    return report


def test_a_last_partial_batch_is_reported_at_the_loaders_line() -> None:
    report = run("partial_last_batch")
    assert [(f.code, f.line) for f in report.findings] == [("WSC551", expected_line(LOADERS, "WSC551"))]
    assert "the last of its 3 batches has 2 samples where the first has 4" in report.findings[0].message
    assert "drop_last=True" in report.findings[0].message


def test_dynamo_recompiling_for_the_last_batch_is_the_same_finding() -> None:
    """torch.compile(dynamic=False) recompiles the step for the smaller batch; its guard names no user line."""
    report = run("partial_last_batch", ("dynamo",))
    assert [(f.code, f.line, f.backend) for f in report.findings] == \
        [("WSC551", expected_line(LOADERS, "WSC551"), "dynamo")]
    both = run("partial_last_batch", ("lazy", "dynamo"))
    assert [(f.code, f.backend) for f in both.findings] == [("WSC551", "stability+dynamo")]


def test_drop_last_gives_no_finding() -> None:
    report = run("full_batches", ("lazy", "dynamo"))
    assert report.findings == []
    assert report.steps == 2


def test_a_loader_built_when_the_module_is_imported_is_reported_there() -> None:
    report = run("loader_from_the_module")
    assert [(f.code, f.line) for f in report.findings] == [("WSC551", expected_line(LOADERS, "MODULE"))]


def test_padding_to_the_longest_in_the_batch_is_wsc552() -> None:
    report = run("padded_to_the_longest")
    assert [(f.code, f.line) for f in report.findings] == [("WSC552", expected_line(LOADERS, "WSC552"))]


def test_an_iterable_that_is_not_a_dataloader_is_reported_at_the_factory() -> None:
    report = run("batches_in_a_list")
    assert [(f.code, f.line) for f in report.findings] == [("WSC551", expected_line(LOADERS, "LIST"))]


def test_an_endless_loader_is_a_clear_error_not_a_hang() -> None:
    report = check(f"{LOADERS}:endless_stream", ("lazy",), isolate=False)
    assert "the loader yielded more than 10000 batches" in report.error
    assert not report.complete

