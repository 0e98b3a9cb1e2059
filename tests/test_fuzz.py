"""Property tests: on any program, cslint does not crash, its JSON is valid, and --fix is sound.

Generated programs come from hypothesmith (the Python grammar) and from mutating real model code.
Every function is made a traced root so the rules see all of it. Bounded for the suite; set
CSLINT_FUZZ_EXAMPLES=2000 for a long run.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cslint.core.config import Settings
from cslint.support.deep_stack import run_with_deep_stack
from cslint.output import FormatOptions
from cslint.output.json_format import render
from cslint.engine.runner import INTERNAL_ERROR, Linter
from cslint.engine.selection import enabled_rules

hypothesmith = pytest.importorskip("hypothesmith")

EXAMPLES = int(os.environ.get("CSLINT_FUZZ_EXAMPLES", "30"))
ROOT = Path(__file__).resolve().parent.parent
SEEDS = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "tests" / "golden").rglob("*.in.py"))
SETTINGS = Settings(trace_roots=("*",), select=("WSC",))


def _lint_and_fix(code: str) -> None:
    linter = Linter(SETTINGS, enabled_rules(SETTINGS))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fuzzed.py"
        path.write_text(code, encoding="utf-8")
        result = run_with_deep_stack(lambda: linter.run([path]))
        assert not [d for d in result.diagnostics if d.code == INTERNAL_ERROR], result.diagnostics
        json.loads(render(result, FormatOptions()))
        if any(d.code == "WSC001" for d in result.diagnostics):
            return
        fixed = run_with_deep_stack(lambda: linter.run([path], fix=True, unsafe_fixes=True))
        assert not fixed.errors, fixed.errors
        if not fixed.changed_files:
            return  # nothing written (the input may be Python that only `ast` accepts: not analysed by libcst)
        text = fixed.changed_files[0].text
        cst.parse_module(text)
        path.write_text(text, encoding="utf-8")
        again = run_with_deep_stack(lambda: linter.run([path], fix=True, unsafe_fixes=True))
        assert not again.changed_files or again.changed_files[0].text == text, "second --fix changed the file"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_generated_programs(code: str) -> None:
    _lint_and_fix(code)


@st.composite
def mutated_model_code(draw: st.DrawFn) -> str:
    """Real model code with lines deleted, duplicated, swapped or re-indented."""
    seed = draw(st.sampled_from(SEEDS))
    lines = seed.read_text(encoding="utf-8").splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["delete", "duplicate", "swap", "indent", "dedent"]))
        if action == "delete":
            del lines[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
        elif action == "swap" and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif action == "indent":
            lines[i] = "    " + lines[i]
        elif action == "dedent" and lines[i].startswith("    "):
            lines[i] = lines[i][4:]
    return "".join(lines)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_model_code())
def test_mutated_real_code(code: str) -> None:
    _lint_and_fix(code)
