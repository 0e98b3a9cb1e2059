"""One table maps a call on a tensor to its code (cslint/core/constructs.py): the static rules and the runtime
classifier give every call it names the same code, and a library summary counts the same calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.core.constructs import BUILTINS, CONVERSIONS, FORMATTERS, PYTHON_REDUCTIONS, READ_METHODS, TENSOR_METHODS
from cslint.runtime.classify import classify_line

MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        y = {call}
        return x
"""
LINE = 7

CALLS = [(f"x.{name}()", TENSOR_METHODS[name]) for name in sorted(READ_METHODS)] + \
    [(f"{name}(x)", BUILTINS[name]) for name in sorted(CONVERSIONS | PYTHON_REDUCTIONS | FORMATTERS)]


@pytest.mark.parametrize(("call", "code"), CALLS)
def test_the_static_rule_and_the_runtime_classifier_give_a_call_the_tables_code(
        call: str, code: str, lint, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = MODEL.format(call=call)
    assert code in {d.code for d in lint(source) if d.line == LINE}, call
    path = tmp_path / "runtime_model.py"
    path.write_text(source, encoding="utf-8")
    classified = classify_line(str(path), LINE)
    assert classified is not None and classified.code == code, (call, classified)


def test_the_table_names_each_call_once_and_only_rule_codes() -> None:
    from cslint.core.rule_codes import RULE_CODES

    known = {code for code, _ in RULE_CODES}
    assert set(TENSOR_METHODS.values()) | set(BUILTINS.values()) <= known
    assert {"item", "tolist", "numpy"} == READ_METHODS and "complex" in CONVERSIONS
