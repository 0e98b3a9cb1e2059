"""`--statistics`: findings counted per rule, most frequent first."""

from __future__ import annotations

from collections import Counter

from cslint.core.report import INTERNAL_ERROR, SYNTAX_ERROR

from cslint.core.run_result import RunResult


def statistics_rows(result: RunResult) -> list[tuple[str, str, int, bool]]:
    """(code, rule name, count, whether any of them has a fix), most frequent first."""
    from cslint.rules import rule_by_code

    counts = Counter(d.code for d in result.diagnostics)
    fixable = {d.code for d in result.diagnostics if d.fix is not None}
    special = {SYNTAX_ERROR: "syntax-error", INTERNAL_ERROR: "internal-error", "WSC004": "not-analysed"}
    rows = []
    for code in sorted(counts, key=lambda c: (-counts[c], c)):
        rule = rule_by_code(code)
        rows.append((code, rule.name if rule else special.get(code, "unknown"), counts[code], code in fixable))
    return rows
