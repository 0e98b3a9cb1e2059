"""Which rules run: `select`/`extend-select` minus `ignore`, by code or prefix, as in ruff."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from typing import TYPE_CHECKING

from cslint.core.config import ConfigError, Settings
from cslint.core.rule_table import RULE_CODES
from cslint.core.sources import safe_resolve
from cslint.core.targets import get_target, runs_on_target

if TYPE_CHECKING:
    from cslint.rules import Rule

GENERIC_PREFIXES = ("ALL", "WSC")


def validate_codes(codes: tuple[str, ...], option: str) -> None:
    known = [code for code, _ in RULE_CODES] + ["WSC001", "WSC002", "WSC004"]
    for code in codes:
        if code == "ALL":
            continue
        if not any(k.startswith(code) for k in known):
            raise ConfigError(f"unknown rule code or prefix `{code}` in {option} (see `cslint rule --all`)")


def _longest(code: str, prefixes: tuple[str, ...]) -> int:
    best = -1
    for prefix in prefixes:
        if prefix == "ALL" or code.startswith(prefix):
            best = max(best, 0 if prefix == "ALL" else len(prefix))
    return best


def is_selected(code: str, settings: Settings, default_enabled: bool = True) -> bool:
    selectors = settings.select + settings.extend_select
    chosen = _longest(code, selectors)
    if chosen < 0:
        return False
    if not default_enabled:
        # opt-in families need a selector more specific than the generic ones
        if not any(code.startswith(p) for p in selectors if p not in GENERIC_PREFIXES):
            return False
    return chosen > _longest(code, settings.ignore)


def enabled_codes(settings: Settings) -> list[str]:
    """The codes of the rules that run, from the code list alone (no rule, and no libcst, imported)."""
    validate_codes(settings.select, "--select")
    validate_codes(settings.extend_select, "--extend-select")
    validate_codes(settings.ignore, "--ignore")
    target = get_target(settings.target)
    selectors = settings.select + settings.extend_select
    return [code for code, default_enabled in RULE_CODES if is_selected(code, settings, default_enabled)
            and runs_on_target(code, target, selectors)]


def enabled_rules(settings: Settings) -> list[type[Rule]]:
    from cslint.rules import all_rules

    codes = set(enabled_codes(settings))
    return [r for r in all_rules() if r.code in codes]


def ignored_for_file(path: Path, settings: Settings) -> tuple[str, ...]:
    if not settings.per_file_ignores:
        return ()
    root = settings.project_root or Path.cwd()
    try:
        relative = safe_resolve(path).relative_to(safe_resolve(root)).as_posix()
    except ValueError:
        relative = path.as_posix()
    codes: list[str] = []
    for pattern, ignored in settings.per_file_ignores.items():
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern):
            codes.extend(ignored)
    return tuple(codes)


def rules_for_target(rules: list[type[Rule]], settings: Settings, target: str) -> list[type[Rule]]:
    """The rules that check the roots of `target` in a run for `settings.target` that runs `rules`: those the
    settings enable for `target` when `rules` are the run's own selection, else those of `rules` that run on
    `target` (a caller's hand-picked rules stay hand-picked)."""
    if {rule.code for rule in rules} == set(enabled_codes(settings)):
        return enabled_rules(settings.with_overrides(target=target))
    selectors = settings.select + settings.extend_select
    return [rule for rule in rules if runs_on_target(rule.code, get_target(target), selectors)]
