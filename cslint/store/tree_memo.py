"""The project's tree as the last runs saw it: the Python files a walk of a directory collects, and the
module names (and namespace-package aliases) a set of files gets, remembered so that a run on a tree
whose directories did not change (a pre-commit hook, a check after an edit) neither walks nor names the
whole project again.

A walk depends only on directory listings (and on settings and paths that are part of its key). A
directory's modification time changes whenever its listing does: a file created, removed or renamed in
it, an editor's save by rename too (git's untracked cache relies on the same); an edit in place changes
the file, not the listing. So a walk is reused while every directory it listed has the modification time
recorded, and that time is settled (`cache.settled`: not so recent that a second change could hide in
the same clock tick); a walk that met a link, a file it could not read or a temporary file it removed
is not remembered. Module names depend on which directories hold an `__init__.py` and on no directory
being a link: what the naming looked at is recorded and looked at again. Anything else is worked out
anew. The memo is kept as cslint/store/memo_file.py keeps memos beside the cache.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cslint import __version__

from cslint.store import memo_file
from cslint.analysis.module_names import PackageTree, assign_module_names, import_aliases
from cslint.core.file_times import settled
from cslint.core.sources import content_hash

FORMAT = 1
KEPT = 4  # walks, and namings, remembered: a project's, and a few narrower runs'

Names = dict[Path, tuple[str, bool]]
Aliases = dict[str, Path]
Listings = dict[str, int]  # directory -> modification time (ns) when it was listed


def name_project(paths: list[Path], links: set[str], roots: list[Path]) -> tuple[Names, Aliases, PackageTree]:
    """Module names and aliases of `paths` (`links`: those that are symbolic links), worked out."""
    packages = PackageTree(links=links)
    names = assign_module_names(paths, packages=packages)
    return names, import_aliases(names, roots, packages), packages


class TreeMemo:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.name = f"v{__version__}-tree.memo"
        self.walks: dict[str, dict[str, Any]] = {}
        self.namings: dict[str, dict[str, Any]] = {}
        self._changed = False
        self._listed: set[str] = set()  # directories a remembered walk listed, unchanged in this run
        self._naming: dict[str, Any] | None = None  # the entry of the last `names`, and its key
        self._naming_key = ""

    def load(self) -> TreeMemo:
        found = memo_file.read(self.directory, self.name, _parse)
        if found is not None:
            self.walks, self.namings = dict(found[0]), dict(found[1])
        return self

    def save(self) -> None:
        if self._changed:
            walks = {key: {"listings": walk["listings"], "files": walk["files"]} for key, walk in self.walks.items()}
            memo_file.write(self.directory, self.name, {"format": FORMAT, "walks": walks, "namings": self.namings})
            self._changed = False

    def walk(self, key: str, walk: Callable[[], tuple[list[Path], Listings | None]]) -> list[Path]:
        """The files a walk keyed `key` finds: remembered while its directories are unchanged, else
        `walk()`ed (which also gives the listings it depended on, or None when it cannot be reused)."""
        known = self.walks.get(key)
        if known is not None and _unchanged(known["listings"], self._listed):
            return list(known["paths"])
        files, listings = walk()
        self._remember(self.walks, key, None if listings is None else
                       {"listings": listings, "files": [str(p) for p in files], "paths": list(files)})
        # A naming remembered before this walk's listings may rest on what they no longer hold; one made
        # after a walk can trust that walk's unchanged listings (`_same_packages`).
        self.namings.clear()
        return files

    def names(self, paths: list[Path], keys: list[str], links: set[str], roots: list[Path]) -> tuple[Names, Aliases]:
        """`name_project(paths, links, roots)` (`keys`: the paths made absolute), remembered while what it
        looked at is unchanged."""
        real_roots = [os.path.realpath(root) for root in roots]
        key = content_hash(json.dumps([keys, sorted(links), real_roots]).encode("utf-8", "surrogateescape"))
        self._naming_key = key
        known = self._naming = self.namings.get(key)
        if known is not None and self._same_packages(known["plain_directories"], known["packages"]):
            names = {path: (name, is_package) for path, (name, is_package) in zip(paths, known["names"])}
            return names, {alias: paths[index] for alias, index in known["aliases"].items()}
        names, aliases, packages = name_project(paths, links, roots)
        remembered = None
        if not packages.followed_links:
            index = {path: i for i, path in enumerate(paths)}
            remembered = {"plain_directories": sorted(d for d in packages.real if os.path.dirname(d) != d),
                          "packages": packages.has_init,
                          "names": [list(names[path]) for path in paths],
                          "aliases": {alias: index[path] for alias, path in aliases.items()}}
        self._remember(self.namings, key, remembered)
        self._naming = remembered
        return names, aliases

    def known_edges(self) -> dict[str, list[Any]]:
        """The import edges remembered with the naming `names` gave last: by position among its paths,
        [the file's content hash, the positions it imports]. Edges depend on a file's text and the module
        names only."""
        return self._naming.get("edges", {}) if self._naming is not None else {}

    def remember_edges(self, edges: dict[str, list[Any]]) -> None:
        if self._naming is None:
            return
        known = self.known_edges()
        if any(known.get(position) != found for position, found in edges.items()):
            self._naming = self.namings[self._naming_key] = {**self._naming, "edges": {**known, **edges}}
            self._changed = True

    def _same_packages(self, plain_directories: list[str], packages: dict[str, bool]) -> bool:
        """No directory the naming resolved has become a link, and each directory it asked still has (or
        still lacks) an `__init__.py`. A directory whose listing a remembered walk found unchanged is
        neither: `_unchanged` saw it is a directory, and its listing is what it was when this naming was
        made or last confirmed (a walk made afresh forgets the namings before it)."""
        listed = self._listed
        return not any(os.path.islink(d) for d in plain_directories if d not in listed) and \
            all(os.path.exists(os.path.join(d, "__init__.py")) == has for d, has in packages.items() if d not in listed)

    def _remember(self, table: dict[str, dict[str, Any]], key: str, value: dict[str, Any] | None) -> None:
        table.pop(key, None)
        if value is not None:
            table[key] = value
            for old in list(table)[:-KEPT]:  # the least recently remembered first
                del table[old]
        self._changed = True


def _unchanged(listings: Listings, listed: set[str]) -> bool:
    """Whether every directory still has the modification time it had when it was listed, settled;
    those that do are added to `listed`."""
    for directory, mtime_ns in listings.items():
        if directory in listed:
            continue
        try:
            info = os.lstat(directory)
        except OSError:
            return False
        if info.st_mtime_ns != mtime_ns or not stat.S_ISDIR(info.st_mode) or not settled(info):
            return False
        listed.add(directory)
    return True


def _parse(raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    if raw.get("format") != FORMAT:
        return {}, {}
    walks = {key: {**walk, "paths": [Path(p) for p in walk["files"]]} for key, walk in raw["walks"].items()}
    for walk in walks.values():
        for path in walk["paths"]:
            os.fspath(path)  # a path keeps its text once made: in the server, for every child
    return walks, dict(raw["namings"])


def preload(directory: Path) -> None:
    memo_file.preload(directory, f"v{__version__}-tree.memo", _parse)
