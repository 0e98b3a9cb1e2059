"""docs/rules/ matches the rules' metadata: one current page per rule, no orphans. Fix: `python docs/generate.py`."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from cslint.output.docs import render_rule, render_rule_page
from cslint.rules import all_rules

DOCS = Path(__file__).resolve().parent.parent / "docs"
REGENERATE = "run `python docs/generate.py`"


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("rule", all_rules(), ids=[r.code for r in all_rules()])
def test_rule_page_exists_and_is_current(rule) -> None:
    page = DOCS / "rules" / f"{rule.code}.md"
    assert page.exists(), f"{rule.code} has no page docs/rules/{rule.code}.md; {REGENERATE}"
    assert page.read_text(encoding="utf-8") == render_rule_page(rule), f"{page} is stale; {REGENERATE}"


def test_no_orphan_pages_and_index_is_current() -> None:
    expected = _generator().expected_pages()
    on_disk = {p.name for p in (DOCS / "rules").glob("*.md")}
    assert on_disk == set(expected), f"pages without a rule or rules without a page; {REGENERATE}"
    assert (DOCS / "rules" / "index.md").read_text(encoding="utf-8") == expected["index.md"], REGENERATE


def test_page_has_the_sections_users_expect() -> None:
    rule = all_rules()[0]
    headings = re.findall(r"^## (.+)$", render_rule_page(rule), flags=re.M)
    assert headings == ["What it does", "Why it breaks a static graph", "Example", "Use instead", "Fix safety"]
    assert render_rule(rule) in render_rule_page(rule)  # `cslint rule CODE` prints the same text


def test_staleness_is_detected(tmp_path: Path, monkeypatch) -> None:
    generator = _generator()
    monkeypatch.setattr(generator, "RULES_DIR", tmp_path)
    (tmp_path / "WSC999999.md").write_text("orphan")
    assert generator.main() == 0
    assert not (tmp_path / "WSC999999.md").exists()
    rule = all_rules()[0]
    assert (tmp_path / f"{rule.code}.md").read_text() == render_rule_page(rule)


def test_the_rule_table_is_current() -> None:
    """cslint/core/rule_table.py lets cached runs select rules, and the layers below the rules read the calls and
    graph breaks each code stands for, without importing them (or libcst)."""
    generator = _generator()
    assert generator.RULE_TABLE_FILE.read_text(encoding="utf-8") == generator.expected_rule_table_module(), \
        f"cslint/core/rule_table.py is stale; {REGENERATE}"


def test_rule_pages_say_whether_the_rule_has_a_fix(lint) -> None:
    """"Report only" or "has an autofix" on a rule's page (and in `cslint rule --all`) is true of the rule's
    own examples: a rule documented without a fix never offers one, and WSC301 (a safe fix) is not
    "report only"."""
    from cslint.output.docs import has_fix, render_rule_page
    from cslint.rules import all_rules, rule_by_code

    wsc301 = rule_by_code("WSC301")
    assert wsc301 is not None and has_fix(wsc301) and "has an autofix" in render_rule_page(wsc301)
    for rule in all_rules():  # a fix may depend on settings (WSC701: the target), so only one way round
        offered = [d for code in rule.INVALID for d in lint(code, select=(rule.code,))
                   if d.code == rule.code and d.fix is not None]
        if offered:
            assert has_fix(rule), f"{rule.code} offers a fix on its examples but is documented as report only"
        assert ("has an autofix" if has_fix(rule) else "report only") in render_rule_page(rule)
