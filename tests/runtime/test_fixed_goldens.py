"""The runtime checker on golden fixes: where a golden file defines `runtime_target()`, the checker finds
the problem in the original and nothing in the fixed code (the fix removed what the device would see)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import check  # noqa: E402

GOLDEN = Path(__file__).parents[1] / "golden"
CASES = sorted(c for c in GOLDEN.rglob("*.in.py") if "def runtime_target(" in c.read_text(encoding="utf-8"))


def _found(path: Path, backends: tuple[str, ...]) -> set[str]:
    report = check(f"{path}:runtime_target", backends, isolate=False)
    assert not report.error, report.error
    return {f"{f.code} line {f.line}" for f in report.findings}


@pytest.mark.parametrize("case", CASES, ids=[str(c.relative_to(GOLDEN)) for c in CASES])
def test_the_runtime_checker_no_longer_finds_it(tmp_path: Path, case: Path) -> None:
    before = tmp_path / "before" / "target.py"
    after = tmp_path / "after" / "target.py"
    for copy, source in ((before, case), (after, case.with_name(case.name.replace(".in.py", ".out.py")))):
        copy.parent.mkdir()
        copy.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    # a golden fixed for --target compile is checked by the tracer of that target
    backends = ("dynamo",) if ".compile." in case.name else ("lazy", "dynamo")
    assert _found(before, backends), "the original has no problem the runtime checker sees"
    assert _found(after, backends) == set()
