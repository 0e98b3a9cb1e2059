"""What the torch cslint supports is, for guards that ask it: `torch.__version__ < "1.7"`,
`version.parse(torch.__version__) >= version.parse("1.10")`, `hasattr(torch, "nextafter")`.

Libraries keep fallbacks for old torch versions behind such guards; on the torch cslint targets (2.x and
newer) the guard decides which side runs, so the fallback is dead code. Only evidence decides: a version
above the oldest supported one, or a name the installed torch does not define (it may be made at run
time), is left undecided. Nothing is imported: the torch installed for the linted code (the `python` setting's
environment, the one the report cache is keyed on) has its sources and stubs read as text.
"""

from __future__ import annotations

import os
import re
import weakref

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.index import ModuleInfo
from cslint.analysis.library_env import Environment

OLDEST_SUPPORTED = (2, 0)
# Calls that turn a version string into a comparable version (the torch version or a literal).
_VERSION_PARSERS = frozenset({"packaging.version.parse", "packaging.version.Version", "pkg_resources.parse_version",
                              "distutils.version.LooseVersion", "distutils.version.StrictVersion",
                              "looseversion.LooseVersion"})
_TORCH_VERSIONS = frozenset({"torch.__version__", "torch.version.__version__"})
_FLIPPED: dict[type, type] = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan,
                              cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThanEqual,
                              cst.Equal: cst.Equal, cst.NotEqual: cst.NotEqual}


def _version_tuple(text: str) -> tuple[int, ...] | None:
    match = re.match(r"\s*(\d+(?:\.\d+)*)", text)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def _is_torch_version(module: ModuleInfo, expr: cst.BaseExpression) -> bool:
    if type(expr) is cst.Call and len(expr.args) == 1 and module.imports.resolve(expr.func) in _VERSION_PARSERS:
        return _is_torch_version(module, expr.args[0].value)
    return module.imports.resolve(expr) in _TORCH_VERSIONS


def _literal_version(module: ModuleInfo, expr: cst.BaseExpression) -> tuple[int, ...] | None:
    if type(expr) is cst.Call and len(expr.args) == 1 and module.imports.resolve(expr.func) in _VERSION_PARSERS:
        return _literal_version(module, expr.args[0].value)
    if type(expr) is cst.SimpleString:
        value = expr.evaluated_value
        return _version_tuple(value) if isinstance(value, str) else None
    return None


def version_guard(module: ModuleInfo, test: cst.Comparison) -> bool | None:
    """The truth of a comparison of the torch version with a literal one, on every supported torch: decided
    only where the literal is at or below the oldest supported version."""
    if len(test.comparisons) != 1:
        return None
    operator, right = type(test.comparisons[0].operator), test.comparisons[0].comparator
    if _is_torch_version(module, test.left):
        literal = _literal_version(module, right)
    elif _is_torch_version(module, right) and operator in _FLIPPED:
        literal, operator = _literal_version(module, test.left), _FLIPPED[operator]
    else:
        return None
    if literal is None:
        return None
    below = literal < OLDEST_SUPPORTED  # every supported version is above it
    at_or_below = literal <= OLDEST_SUPPORTED
    decided: dict[type, tuple[bool, bool]] = {  # (holds, when) where `when` says the literal decides it
        cst.LessThan: (False, at_or_below), cst.LessThanEqual: (False, below),
        cst.GreaterThan: (True, below), cst.GreaterThanEqual: (True, at_or_below),
        cst.Equal: (False, below), cst.NotEqual: (True, below),
    }
    holds, when = decided.get(operator, (False, False))
    return holds if when else None


def attribute_guard(module: ModuleInfo, call: cst.Call, environment: Environment | None) -> bool | None:
    """`hasattr(torch.X, "name")`: True when the torch installed in `environment` defines `name` there; never
    False (a name it does not define in its sources may still be made at run time). Undecided with no
    environment (`python = "none"`)."""
    if len(call.args) != 2 or type(call.args[1].value) is not cst.SimpleString:
        return None
    owner = module.imports.qualify(dotted_name(call.args[0].value) or "")
    name = call.args[1].value.evaluated_value
    if environment is None or not isinstance(name, str) or not (owner == "torch" or owner.startswith("torch.")):
        return None
    return True if name in torch_names(environment, owner) else None


# Per environment, which environment_for makes afresh when a distribution is installed or removed there: a
# long-lived server never answers from the torch it saw before an upgrade.
_NAMES: weakref.WeakKeyDictionary[Environment, dict[str, frozenset[str]]] = weakref.WeakKeyDictionary()


def torch_names(environment: Environment, module: str) -> frozenset[str]:
    """The names the torch installed in `environment` defines in `module`, read from its sources and stubs
    (empty when torch is not installed there)."""
    known = _NAMES.setdefault(environment, {})
    if module not in known:
        known[module] = _defined_names(environment, module)
    return known[module]


def _defined_names(environment: Environment, module: str) -> frozenset[str]:
    found = environment.find(module)
    if found is None:
        return frozenset()
    path, is_package = found
    files = [path, re.sub(r"\.py$", ".pyi", path)]
    if module == "torch":  # the functions torch re-exports from its C extension
        files.append(os.path.join(os.path.dirname(path), "_C", "_VariableFunctions.pyi"))
    names: set[str] = set()
    for file in files:
        try:
            with open(file, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            continue
        names.update(g for groups in _DEFINITION.findall(text) for g in groups if g)
        names.update(m for group in _IMPORTED.findall(text) for m in re.findall(r"\b(\w+)\s*(?:,|$)", group))
    if is_package:
        directory = os.path.dirname(path)
        names.update(entry.removesuffix(".py") for entry in os.listdir(directory)
                     if entry.endswith(".py") or os.path.isfile(os.path.join(directory, entry, "__init__.py")))
    return frozenset(names)


_DEFINITION = re.compile(r"(?m)^\s*(?:async\s+)?(?:def|class)\s+(\w+)|^(?:\s*)(\w+)\s*(?::[^=\n]*)?=(?!=)|\bas\s+(\w+)")
_IMPORTED = re.compile(r"(?m)^\s*from\s+\S+\s+import\s+\(?([\w\s,]+)\)?")
