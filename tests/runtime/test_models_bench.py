"""bench/models.py (issue 37): how it counts and compares, on made-up runs (fast), and one real model end to
end with CSLINT_BENCH_MODELS=1 (a few minutes on a loaded machine: three child processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import models  # noqa: E402

SLOW = pytest.mark.skipif(os.environ.get("CSLINT_BENCH_MODELS") != "1",
                          reason="set CSLINT_BENCH_MODELS=1 to run one real model through the bench")


def _run(sites: dict[str, set[models.Site]], outputs: list[object], error: str = "",
         steps: int = 3) -> models.Run:
    status = {backend: "complete" for backend in sites}
    return models.Run(status, error, steps, outputs, sites)


def test_outputs_compare_loss_and_every_gradient_at_every_step() -> None:
    before = [[1.0, [[0.5, 0.25]], [1.0]]] * 3  # loss, one gradient, which parameters had one
    assert models.equal_outputs(before, [[1.0 + 1e-7, [[0.5, 0.25]], [1.0]]] * 3) is True
    assert models.equal_outputs(before, [[1.0, [[0.5, 0.26]], [1.0]]] * 3) is False  # one gradient entry
    assert models.equal_outputs(before, before[:2]) is False  # a step missing
    assert models.equal_outputs(before, [[1.0, [1.0]]] * 3) is False  # a gradient missing
    assert models.equal_outputs(before, []) is None  # no outputs: not a pass


def test_a_gradient_none_before_and_zero_after_is_equal_and_reported() -> None:
    skipped = [[1.0, [[0.5, 0.25]], [[0.0, 0.0]], [1.0, 0.0]]]  # the second parameter's layer was skipped
    runs = [[1.0, [[0.5, 0.25]], [[0.0, 0.0]], [1.0, 1.0]]]  # the fix runs the layer and discards it
    assert models.equal_outputs(skipped, runs) is True
    assert models.gradients_made_zero(skipped, runs) == 1
    assert models.gradients_made_zero(skipped, skipped) == 0
    assert models.equal_outputs(skipped, [[1.0, [[0.5, 0.25]], [[0.0, 0.1]], [1.0, 1.0]]]) is False
    row = models.Row("m", _run({"lazy": set()}, skipped), {"wsc": _run({"lazy": set()}, runs)})
    assert row.problems() == ["after wsc: 1 parameter gradients none before, zero after "
                              "(a skipped layer now runs and is discarded)"]


def test_counts_totals_and_sites_left_per_target(tmp_path: Path) -> None:
    kept = models.Site("pkg/mod.py", 2, "WSC101", "graph break: `if` on a tensor condition")
    gone = models.Site("pkg/mod.py", 1, "WSC201", "host sync")
    for tree in ("compile", "wsc"):
        (tmp_path / tree / "pkg").mkdir(parents=True)
        (tmp_path / tree / "pkg" / "mod.py").write_text("x = t.item()\nif t:\n", encoding="utf-8")
    out = [[1.0, [0.5], [1.0]]] * 3  # the loss, one gradient, which parameters had one
    row = models.Row("bert", _run({"lazy": {kept, gone}, "dynamo": {kept, gone}}, out),
                     {"compile": _run({"dynamo": {kept}}, out), "wsc": _run({"lazy": {kept}}, [[2.0, [0.5], [1.0]]] * 3)})
    failed = models.Row("gpt2", _run({"lazy": set(), "dynamo": {gone}}, out),
                        {"compile": _run({"dynamo": set()}, [], error="Traceback\nValueError: boom", steps=0),
                         "wsc": _run({"lazy": set()}, out)})
    assert (row.count("compile", "before"), row.count("compile", "after")) == (2, 1)
    assert row.equal("compile") is True and row.equal("wsc") is False
    assert not failed.stepped("compile") and failed.problems() == ["after compile: ValueError: boom"]
    text = models.table([row, failed], {"compile": "c", "wsc": "w"}, tmp_path)
    assert "`--target compile` (dynamo graph-break sites, summed over models): 3 before, 1 after, 2 removed " \
           "(66.7%)" in text
    assert "`--target wsc` (lazy-tensor sync/shape sites, summed over models): 2 before, 1 after, 1 removed" in text
    assert "Loss and gradients equal: 1 of 2 (compile), 1 of 2 (wsc)" in text
    assert "- compile: `pkg/mod.py:2` `if t:` (bert)" in text and "- wsc: `pkg/mod.py:2` `if t:` (bert)" in text
    assert "pkg/mod.py:1" not in text.split("Sites left")[1]


@SLOW
def test_one_model_end_to_end(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCH / "models.py"), "--models", "vector_quantize", "--keep",
                           str(tmp_path / "work")], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| vector_quantize |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert int(cells[2]) >= 1 and int(cells[4]) >= 1, row  # `if self.initted:` breaks and syncs before fixing
    assert cells[7] == "yes, yes", row  # the fixed copy stepped three times on both targets
