"""`cslint rule`: a rule found by code or by name, and its description as JSON, as `ruff rule`.

`cslint rule WSC101` and `cslint rule tensor-if` show the same page; `--output-format json` gives ruff's
fields where cslint has them: `name`, `code`, `linter` ("cslint"), `summary`, `fix` and
`fix_availability` (ruff's wording: "Fix is sometimes available." / "Sometimes"; every cslint fix depends
on the code it rewrites, so none is "Always"), `explanation` (the page, markdown) and `preview` (false).
cslint adds `url`, `default_enabled` and `targets` (where the rule runs). ruff's `message_formats` is
left out: a cslint rule writes each message from the code it reports, with no fixed template to list.
"""

from __future__ import annotations

import difflib
import json
import shutil
import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cslint.rules import Rule

PAGE_WIDTH = 88  # the widest a rule page is printed (as ruff's own line length), narrower on a narrower terminal


def find_rule(name: str) -> type[Rule] | None:
    from cslint.rules import all_rules, rule_by_code

    return rule_by_code(name) or next((r for r in all_rules() if r.name == name.strip().lower()), None)


def unknown_rule_message(name: str) -> str:
    from cslint.rules import all_rules

    known = [r.code for r in all_rules()] + [r.name for r in all_rules()]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    return f"unknown rule `{name}`{hint} (see `cslint rule --all`)"


def rule_dict(rule: type[Rule]) -> dict[str, Any]:
    from cslint.output.docs import has_fix, render_rule, rule_url
    from cslint.core.targets import TARGETS

    fixable = has_fix(rule)
    return {
        "name": rule.name,
        "code": rule.code,
        "linter": "cslint",
        "summary": " ".join(rule.summary.split()),
        "fix": "Fix is sometimes available." if fixable else "Fix is not available.",
        "fix_availability": "Sometimes" if fixable else "None",
        "explanation": render_rule(rule),
        "preview": False,
        "url": rule_url(rule.code),
        "default_enabled": rule.default_enabled,
        "targets": [name for name, target in TARGETS.items() if target.runs(rule.code)],
    }


def rules_json(rules: list[type[Rule]] | tuple[type[Rule], ...]) -> str:
    return json.dumps([rule_dict(r) for r in rules], indent=2) + "\n"


def rule_json(rule: type[Rule]) -> str:
    return json.dumps(rule_dict(rule), indent=2) + "\n"


def page_width() -> int:
    return max(min(shutil.get_terminal_size((PAGE_WIDTH, 24)).columns, PAGE_WIDTH), 40)


def wrap_page(text: str, width: int) -> str:
    """The rule page with its prose wrapped to `width`; code blocks, headings and lines that are already
    short are left as they are (code is not reflowed)."""
    out: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if line.startswith("```"):
            in_code = not in_code
            out.append(line)
        elif in_code or len(line) <= width or line.startswith("#"):
            out.append(line)
        else:
            bullet = len(line) - len(line.lstrip(" -*"))
            out.extend(textwrap.wrap(line, width, subsequent_indent=" " * bullet, break_long_words=False,
                                     break_on_hyphens=False) or [""])
    return "\n".join(out)
