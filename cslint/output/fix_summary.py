"""`--show-fixes`: the fixes applied, per file and rule, as ruff prints them:

    Fixed 3 findings:
    - model.py:
        2 × WSC101 (tensor-dependent-if)
        1 × WSC203 (host-transfer-item)

Files sorted by path, rules by count (most first). The counts are of the fixes applied, over every pass.
"""

from __future__ import annotations

from cslint.output.escape import escape_text
from cslint.output.style import PLAIN, Style
from cslint.core.run_result import RunResult


def rule_name(code: str) -> str:
    from cslint.core.report import ENGINE_NAMES
    from cslint.rules import rule_by_code

    rule = rule_by_code(code)
    return rule.name if rule is not None else ENGINE_NAMES.get(code, "unknown")


def fix_summary(result: RunResult, style: Style = PLAIN) -> list[str]:
    tables = {path: counts for path, counts in result.fixed_codes.items() if any(counts.values())}
    total = sum(sum(counts.values()) for counts in tables.values())
    if not total:
        return []
    width = len(str(max(max(counts.values()) for counts in tables.values())))
    lines = [style(f"Fixed {total} finding{'s' if total != 1 else ''}:", "bold", "green")]
    for path in sorted(tables, key=str):
        lines.append(f"{style('-', 'cyan')} {style(escape_text(str(path)), 'bold')}{style(':', 'cyan')}")
        for code, count in sorted(tables[path].items(), key=lambda item: (-item[1], item[0])):
            lines.append(f"    {count:>{width}} × {style(code, 'red', 'bold')} ({rule_name(code)})")
    return lines
