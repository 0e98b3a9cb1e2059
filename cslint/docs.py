"""Rule documentation, rendered from each rule's metadata (the single source for `cslint rule` and docs/)."""

from __future__ import annotations

from cslint.rules import Rule


def render_rule(rule: type[Rule]) -> str:
    return "\n".join([
        f"# {rule.code} {rule.name}",
        "",
        "## What it does",
        rule.summary,
        "",
        "## Why it breaks a static graph",
        rule.why,
        "",
        "## Example",
        "```python",
        rule.example.strip(),
        "```",
        "",
        "## Use instead",
        "```python",
        rule.use_instead.strip(),
        "```",
        "",
        "## Fix safety",
        rule.fix_safety,
        "",
    ])
