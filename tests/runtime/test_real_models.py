"""Full Hugging Face training steps (tiny configs, random weights) traced to the end on both backends.

llama runs in the default suite; the other four families take a minute or more each on a loaded machine
and run with CSLINT_RUNTIME_MODELS=1 (`bench/runtime.py` times all five).
"""

from __future__ import annotations

import linecache
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from cslint.runtime import check  # noqa: E402
from tests.runtime.test_runtime import expected_line  # noqa: E402

STEPS = Path(__file__).parent / "targets" / "real_steps.py"
ALL = os.environ.get("CSLINT_RUNTIME_MODELS") == "1"
slow = pytest.mark.skipif(not ALL, reason="set CSLINT_RUNTIME_MODELS=1 for every model family")


@pytest.mark.parametrize("family", ["llama", pytest.param("mixtral", marks=slow), pytest.param("gpt2", marks=slow),
                                    pytest.param("bert", marks=slow), pytest.param("t5", marks=slow)])
def test_training_step_is_traced_to_the_end(family: str) -> None:
    report = check(f"{STEPS}:{family}", isolate=False)
    assert not report.error, report.error
    assert report.status == {"lazy": "complete", "dynamo": "complete"}, report.status
    lines = {(f.path, f.line) for f in report.findings}
    assert (str(STEPS), expected_line(STEPS, "BACKWARD")) not in lines
    assert (str(STEPS), expected_line(STEPS, "ZERO_GRAD")) not in lines
    at_step = {f.code for f in report.findings if (f.path, f.line) == (str(STEPS), expected_line(STEPS, "OPTIMIZER"))}
    assert {"WSC301", "WSC201"} <= at_step, report.findings  # AdamW's state and its `.item()`, at the user's line
    assert not [f for f in report.findings if f.code == "WSC703"], report.findings  # the graph is stable
    inside = [f for f in report.findings if "site-packages" in f.path or "dist-packages" in f.path]
    assert all("/transformers/" in f.path for f in inside), inside  # never torch's or the stdlib's own files
    assert all(f.chain and f.chain[0].startswith(f"{STEPS}:") for f in report.findings if f.backend != "dynamo")
    if family in ("llama", "mixtral", "gpt2"):  # the causal-mask helper reads the padding mask on the host
        assert any(f.path.endswith("transformers/masking_utils.py") for f in report.findings), report.findings
    if family == "mixtral":  # the expert loop: which experts were hit, the skip, the per-expert index reads
        moe = {(f.code, linecache.getline(f.path, f.line).strip()) for f in report.findings
               if f.path.endswith("models/mixtral/modeling_mixtral.py")}
        assert any(code == "WSC501" and ".nonzero()" in text for code, text in moe), moe
        assert any(code == "WSC101" and text.startswith("if expert_idx ==") for code, text in moe), moe
        assert any(code == "WSC207" and "[expert_idx]" in text for code, text in moe), moe
