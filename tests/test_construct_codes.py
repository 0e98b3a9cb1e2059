"""A call on a tensor gets one code wherever it is seen: the rule that names it in `tensor_methods`/`builtins`
reports it in the step, the runtime classifier gives a call it catches running the same code, and a library
summary records it under that code (cslint/core/rule_table.py, generated from the rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.core.rule_table import BUILTINS, IN_LIBRARIES, RULE_CODES, TENSOR_METHODS
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
# reported only in a context this model lacks: `.to` naming the CPU, `range`/`len` as a loop's trip count
NEEDS_CONTEXT = {"to", "range", "len"}

CALLS = [(f"x.{name}()", code) for name, code in sorted(TENSOR_METHODS.items()) if name not in NEEDS_CONTEXT] + \
    [(f"{name}(x)", code) for name, code in sorted(BUILTINS.items()) if name not in NEEDS_CONTEXT]


@pytest.mark.parametrize(("call", "code"), CALLS)
def test_the_static_rule_and_the_runtime_classifier_give_a_call_the_tables_code(
        call: str, code: str, lint, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = MODEL.format(call=call)
    assert code in {d.code for d in lint(source) if d.line == LINE}, call
    path = tmp_path / "runtime_model.py"
    path.write_text(source, encoding="utf-8")
    classified = classify_line(str(path), LINE)
    assert classified is not None and classified.code == code, (call, classified)


def test_the_table_is_what_the_rules_declare_and_names_each_call_once() -> None:
    from cslint.rules import all_rules

    rules = all_rules()
    declared_methods = [(name, rule.code) for rule in rules for name in rule.tensor_methods]
    declared_builtins = [(name, rule.code) for rule in rules for name in rule.builtins]
    assert sorted(declared_methods) == sorted(TENSOR_METHODS.items())  # a call two rules claim appears twice
    assert sorted(declared_builtins) == sorted(BUILTINS.items())
    assert IN_LIBRARIES == {rule.code for rule in rules if rule.in_libraries}
    assert set(TENSOR_METHODS.values()) | set(BUILTINS.values()) | IN_LIBRARIES <= {code for code, _ in RULE_CODES}
