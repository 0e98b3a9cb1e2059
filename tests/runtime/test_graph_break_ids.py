"""The acceptance check of graph-break ids: on a step with one breaking construct per line, every static
finding with an id (--target compile) is a line where dynamo reports a break with that same id.

    cslint check --target compile tests/runtime/targets/graph_breaks.py
    cslint runtime tests/runtime/targets/graph_breaks.py:step --backend dynamo
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.cli.main import main  # noqa: E402
from cslint.runtime import check  # noqa: E402

STEP = Path(__file__).parent / "targets" / "graph_breaks.py"


def test_static_and_runtime_ids_agree_line_by_line(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--no-cache", "--exit-zero", "--isolated", "--target", "compile", "--output-format", "json",
          str(STEP)])
    static = {d["line"]: d["graph_break"]["id"] for d in json.loads(capsys.readouterr().out) if "graph_break" in d}
    report = check(f"{STEP}:step", backends=("dynamo",), isolate=False)
    assert report.status == {"dynamo": "complete"}, report
    runtime: dict[int, set[str]] = {}
    for finding in report.findings:
        if os.path.samefile(finding.path, STEP):
            runtime.setdefault(finding.line, set()).add(finding.graph_break)
    assert len(static) >= 16  # if, while, ifexp, and, float, item, int, math, print, log, np/py random, range, mask,
    # out= into a slice of a buffer, cudnn.flags
    agree = {line for line, gb in static.items() if gb in runtime.get(line, set())}
    assert agree == set(static), {line: (static[line], runtime.get(line)) for line in set(static) - agree}
    assert all(ids <= set(static.values()) for ids in runtime.values())  # no break the static pass has no id for
