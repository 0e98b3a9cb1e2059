"""Module names of files: what `from pkg.mod import x` refers to in the linted tree (no parser needed)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from cslint.core.sources import safe_resolve

T = TypeVar("T")

__all__ = ["PackageTree", "assign_module_names", "import_aliases", "module_name_for"]


class PackageTree:
    """Real directories and the package names above them, worked out once per directory (a large tree
    has a hundred files per directory, and resolving each file's path would stat every component)."""

    def __init__(self, links: set[str] | None = None) -> None:
        self.links = links  # every symbolic link among the files, when the caller knows them from a stat
        self.real: dict[str, str] = {}  # directories
        self.files: dict[Path, str] = {}
        self.parts: dict[str, list[str]] = {}
        self.has_init: dict[str, bool] = {}  # the directories asked whether they hold an __init__.py
        self.followed_links = False  # a file or directory was a link, resolved

    def real_path(self, path: Path) -> str:
        found = self.files.get(path)
        if found is None:
            text = os.path.abspath(path)
            if text in self.links if self.links is not None else os.path.islink(text):
                self.followed_links = True
                found = str(safe_resolve(path))
            else:
                directory, name = os.path.split(text)
                found = os.path.join(self.real_directory(directory), name)
            self.files[path] = found
        return found

    def real_directory(self, directory: str) -> str:
        """A directory's real path from its parent's: one lstat per directory, where `realpath` would
        lstat every component of every directory again."""
        real = self.real.get(directory)
        if real is None:
            parent = os.path.dirname(directory)
            if parent == directory or os.path.islink(directory):
                self.followed_links |= parent != directory
                real = str(safe_resolve(Path(directory)))
            else:
                real = os.path.join(self.real_directory(parent), os.path.basename(directory))
            self.real[directory] = real
        return real

    def package_parts(self, directory: str) -> list[str]:
        """The dotted parts of the package a real directory is (empty if it has no __init__.py)."""
        found = self.parts.get(directory)
        if found is None:
            parent = os.path.dirname(directory)
            has_init = self.has_init[directory] = parent != directory and \
                os.path.exists(os.path.join(directory, "__init__.py"))
            if has_init:
                found = [*self.package_parts(parent), os.path.basename(directory)]
            else:
                found = []
            self.parts[directory] = found
        return found


def module_name_for(path: Path, packages: PackageTree | None = None) -> tuple[str, bool]:
    """Dotted module name from the package directories (those with __init__.py) above the file."""
    packages = packages or PackageTree()
    directory, filename = os.path.split(packages.real_path(path))
    stem = os.path.splitext(filename)[0]
    is_package = filename == "__init__.py"
    parts = packages.package_parts(directory) + ([] if is_package else [stem])
    return ".".join(parts) or stem, is_package


def assign_module_names(paths: list[Path], links: set[str] | None = None,
                        packages: PackageTree | None = None) -> dict[Path, tuple[str, bool]]:
    """Module names for a set of files; two scripts with the same name in different folders (no
    packages around them) get their last folders prepended, so both stay in the project. `links`: the
    absolute paths of those that are symbolic links, if the caller knows them (or give `packages`, made
    with them, to reuse what it worked out)."""
    names: dict[Path, tuple[str, bool]] = {}
    taken: set[str] = set()
    packages = packages or PackageTree(links)
    for path in paths:
        name, is_package = module_name_for(path, packages)
        if name in taken:
            name = ".".join(path.with_suffix("").parts[-3:])
        taken.add(name)
        names[path] = (name, is_package)
    return names


def import_aliases(names: dict[Path, tuple[str, bool]], roots: Iterable[Path],
                   packages: PackageTree | None = None) -> dict[str, Path]:
    """The other names Python imports files by when a project root (and its `src/`) is on `sys.path`.
    A directory without `__init__.py` there is a namespace package (PEP 420): `pkg/layers.py` is
    `pkg.layers`, and a vendored `torch/optim/` without `torch/__init__.py` is `torch.optim`, while the
    assigned names (`layers`, `optim`) stay what a script beside them or an installed package imports.
    A name already assigned to a file, or claimed by two files, is no alias. `packages`: the tree that
    named the files, whose real paths are known."""
    packages = packages or PackageTree()
    search = []
    for root in roots:
        real = os.path.realpath(root)
        search += [os.path.join(real, "src") + os.sep, real + os.sep]
    taken = {name for name, _ in names.values()}
    found: dict[str, Path] = {}
    claimed: set[str] = set()
    for path, (name, is_package) in names.items():
        real = packages.real_path(path)
        for base in search:
            if not real.startswith(base):
                continue
            parts = os.path.splitext(real[len(base):])[0].split(os.sep)
            if is_package:
                parts = parts[:-1]
            alias = ".".join(parts)
            if parts and all(part.isidentifier() for part in parts) and alias != name and alias not in taken:
                if alias in claimed:
                    found.pop(alias, None)
                else:
                    found[alias] = path
                    claimed.add(alias)
            break
    return found


def defining_module(target: str, modules: Mapping[str, T]) -> T | None:
    """What `modules` holds for the module a qualified name resolves in: the longest dotted prefix of
    `target` that is a module (Project.lookup), and only there; what that module re-exports is its own."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        found = modules.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None
