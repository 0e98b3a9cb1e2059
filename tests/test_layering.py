"""The engine (`cslint/analysis/`) depends on nothing above it: not on rules, fixers, targets or the CLI.

Every import in every analysis module counts, at any depth of the file (inside functions and
`if TYPE_CHECKING:` too), and so do the cslint modules those imports reach in turn.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cslint

PACKAGE = Path(cslint.__file__).parent
FORBIDDEN = ("cslint.rules", "cslint.fixers", "cslint.targets", "cslint.cli", "cslint.__main__", "cslint.checker",
             "cslint.runner")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_path(name: str) -> Path | None:
    base = PACKAGE.parent.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_modules(path: Path, name: str | None = None, *, on_import: bool = False) -> set[str]:
    """The cslint modules `path` (the module `name`) imports, relative imports resolved: all of them, or
    with `on_import` only those importing the module runs (its top-level statements, not function bodies
    or `if TYPE_CHECKING:`)."""
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body if on_import else ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from cslint import rules`
    return {m for m in found if m == "cslint" or m.startswith("cslint.")}


def reached_from(start: list[Path]) -> dict[str, str]:
    """Every cslint module reached from `start`, mapped to the module that first imported it: every import
    of `start`'s modules, and what importing the modules they name imports in turn (a function of another
    package that imports more when called is not the engine's dependency)."""
    seen: dict[str, str] = {}
    queue = [(module_name(p), p) for p in start]
    while queue:
        importer, path = queue.pop()
        for target in imported_modules(path, on_import=path not in start):
            target_path = module_path(target)
            if target in seen or target_path is None:
                continue
            seen[target] = importer
            queue.append((target, target_path))
    return seen


def test_analysis_imports_nothing_above_the_engine() -> None:
    analysis = sorted((PACKAGE / "analysis").glob("*.py"))
    assert len(analysis) > 5  # the glob found the engine
    reached = reached_from(analysis)
    bad = {m: by for m, by in reached.items() if m.startswith(FORBIDDEN)}
    assert not bad, "analysis reaches " + ", ".join(f"{m} (imported by {by})" for m, by in sorted(bad.items()))


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The walker finds nested, relative and TYPE_CHECKING imports (so the test above can fail)."""
    probe = tmp_path / "probe.py"
    probe.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..targets import Target\n"
                     "def f():\n    from cslint.rules import sambanova\n", encoding="utf-8")
    assert {"cslint.targets", "cslint.rules.sambanova"} <= imported_modules(probe, "cslint.analysis.probe")
