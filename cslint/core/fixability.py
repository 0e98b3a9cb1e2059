"""Which rules' fixes are offered and applied: `fixable` (default: all) plus `extend-fixable`, minus
`unfixable`, by code or prefix, as ruff's `lint.fixable` / `lint.unfixable` / `lint.extend-fixable`.

A finding of a rule that is not fixable is still reported; it shows no fix (no `[*]`) and `--fix`, the
editor and the hooks leave it alone. The most specific selector wins, as for `select`/`ignore`; a tie
goes to `unfixable`.
"""

from __future__ import annotations

from cslint.core.config import Settings


def _longest(code: str, prefixes: tuple[str, ...]) -> int:
    best = -1
    for prefix in prefixes:
        if prefix == "ALL" or code.startswith(prefix):
            best = max(best, 0 if prefix == "ALL" else len(prefix))
    return best


def is_fixable(code: str, settings: Settings) -> bool:
    chosen = _longest(code, settings.fixable + settings.extend_fixable)
    return chosen >= 0 and chosen > _longest(code, settings.unfixable)
