"""Module names of files: what `from pkg.mod import x` refers to in the linted tree (no parser needed)."""

from __future__ import annotations

from pathlib import Path

from cslint.sources import safe_resolve

__all__ = ["assign_module_names", "module_name_for"]


def module_name_for(path: Path) -> tuple[str, bool]:
    """Dotted module name from the package directories (those with __init__.py) above the file."""
    path = safe_resolve(path)
    is_package = path.name == "__init__.py"
    parts = [] if is_package else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").exists() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    return ".".join(parts) or path.stem, is_package


def assign_module_names(paths: list[Path]) -> dict[Path, tuple[str, bool]]:
    """Module names for a set of files; two scripts with the same name in different folders (no
    packages around them) get their last folders prepended, so both stay in the project."""
    names: dict[Path, tuple[str, bool]] = {}
    taken: set[str] = set()
    for path in paths:
        name, is_package = module_name_for(path)
        if name in taken:
            name = ".".join(path.with_suffix("").parts[-3:])
        taken.add(name)
        names[path] = (name, is_package)
    return names
