"""Every rule's own VALID/INVALID examples and its documentation, as tests (Fixit style).

An INVALID example marks each line that must be reported with `# expect: CODE`; the rule must report
exactly those lines. A VALID example must give no finding of that rule.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from cslint.rules import Rule, all_rules

EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


def _cases(attr: str) -> list[tuple[type[Rule], int, str]]:
    return [(rule, i, code) for rule in all_rules() for i, code in enumerate(getattr(rule, attr))]


def _ids(cases: list[tuple[type[Rule], int, str]]) -> list[str]:
    return [f"{rule.code}-{i}" for rule, i, _ in cases]


def expected_lines(code: str, rule_code: str) -> set[int]:
    lines = set()
    for number, line in enumerate(textwrap.dedent(code).lstrip("\n").splitlines(), start=1):
        match = EXPECT.search(line)
        if match and rule_code in [c.strip() for c in match.group(1).split(",")]:
            lines.add(number)
    return lines


@pytest.mark.parametrize(("rule", "index", "code"), _cases("INVALID"), ids=_ids(_cases("INVALID")))
def test_invalid_example_is_reported(lint, rule: type[Rule], index: int, code: str) -> None:
    expected = expected_lines(code, rule.code)
    assert expected, f"{rule.code} INVALID[{index}] marks no line with `# expect: {rule.code}`"
    found = {d.line for d in lint(code, select=(rule.code,), **_target(rule)) if d.code == rule.code}
    assert found == expected


@pytest.mark.parametrize(("rule", "index", "code"), _cases("VALID"), ids=_ids(_cases("VALID")))
def test_valid_example_is_quiet(lint, rule: type[Rule], index: int, code: str) -> None:
    assert [d for d in lint(code, select=(rule.code,), **_target(rule)) if d.code == rule.code] == []


def _target(rule: type[Rule]) -> dict[str, str]:
    return {"target": rule.example_target} if rule.example_target else {}


@pytest.mark.parametrize("rule", all_rules(), ids=[r.code for r in all_rules()])
def test_rule_is_documented_with_examples(rule: type[Rule]) -> None:
    for field in ("name", "summary", "why", "example", "use_instead", "fix_safety"):
        assert getattr(rule, field, "").strip(), f"{rule.code} has no {field}"
    assert rule.VALID and rule.INVALID, f"{rule.code} needs VALID and INVALID examples"
    assert re.fullmatch(r"WSC(00[3-9]|[1-9]\d\d)", rule.code)  # 00x: engine-level (WSC003 unused-noqa)
