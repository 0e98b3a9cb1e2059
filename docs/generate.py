"""Regenerate docs/rules/ from the rules' metadata: `python docs/generate.py`.

One page per rule (`docs/rules/WSC101.md`) and the index `docs/rules/index.md`; pages of rules that no
longer exist are removed. `tests/test_docs.py` fails when a page is missing or stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

RULES_DIR = Path(__file__).resolve().parent / "rules"


def expected_pages() -> dict[str, str]:
    from cslint.docs import render_rule_index, render_rule_page
    from cslint.rules import all_rules

    pages = {f"{rule.code}.md": render_rule_page(rule) for rule in all_rules()}
    pages["index.md"] = render_rule_index(all_rules())
    return pages


def main() -> int:
    RULES_DIR.mkdir(exist_ok=True)
    pages = expected_pages()
    for stale in RULES_DIR.glob("*.md"):
        if stale.name not in pages:
            stale.unlink()
            print(f"removed {stale.name}")
    for name, text in pages.items():
        path = RULES_DIR / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
