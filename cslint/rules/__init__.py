"""The rule registry: every `Rule` subclass with a code, in every module of this package."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Finding, Fix
from cslint.rules.base import Example, Rule

__all__ = ["Example", "Finding", "Fix", "Rule", "RuleContext", "all_rules", "rule_by_code"]


@cache
def all_rules() -> tuple[type[Rule], ...]:
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")
    found: dict[str, type[Rule]] = {}
    stack = list(Rule.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        code = getattr(cls, "code", None)
        if code and cls.__module__.startswith(f"{__name__}."):  # not rules defined by tests or plugins
            if code in found and found[code] is not cls:
                raise RuntimeError(f"rule code {code} is defined twice: {found[code].__name__}, {cls.__name__}")
            found[code] = cls
    return tuple(sorted(found.values(), key=lambda r: r.code))


def rule_by_code(code: str) -> type[Rule] | None:
    return next((r for r in all_rules() if r.code == code.upper()), None)
