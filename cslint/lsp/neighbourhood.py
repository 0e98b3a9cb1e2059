"""The files an editor's analysis of a few open documents needs, found without surveying the project.

`cslint check` stats, hashes and scans every file of the project and consults its cache for each one;
an editor wants answers about a few documents after every keystroke. A `Neighbourhood` lists the
project's files and their module names once (again when files are created or deleted) and scans a
file's imports only when an analysis first needs them (again when its text changes). An analysis of
some documents then loads them, the files whose traced code reaches them (their callers, as the
project's cache recorded them; without a record, the files importing them, directly or not, that may
hold a root), and everything those import, directly or not, to resolve names: the files `cslint check`
would load to analyse the same documents.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from cslint.analysis.graph import reachable
from cslint.analysis.import_scan import scan_imports
from cslint.analysis.module_names import assign_module_names, defining_module, import_aliases
from cslint.lsp.notebooks import python_of
from cslint.core.notebook import SUFFIX as NOTEBOOK
from cslint.core.sources import ReadError, read_regular, text_size
from cslint.engine.untraced import may_hold_roots


class Neighbourhood:
    def __init__(self, files: Iterable[Path], roots: list[Path], max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes  # `max-file-size`: a larger file or buffer is not scanned (nor linted)
        keys = sorted({_key(p) for p in files})  # the order of `cslint check`'s survey (incremental.py)
        self.names = assign_module_names([Path(k) for k in keys])
        self.keys = {_key(p): p for p in self.names}
        self.by_module = {name: _key(path) for path, (name, _) in self.names.items()}
        self.aliases = import_aliases(self.names, roots)
        for alias, path in self.aliases.items():
            self.by_module.setdefault(alias, _key(path))
        self._imports: dict[str, tuple[str | None, set[str], bool]] = {}  # key -> text scanned, files, rooted
        self._importers: dict[str, set[str]] | None = None  # from the files on disk

    def knows(self, paths: Iterable[Path]) -> bool:
        return all(_key(p) in self.keys for p in paths)

    def imports(self, key: str, buffers: Mapping[str, str]) -> set[str]:
        """The project files `key` imports: from its buffer's text if it has one, else from the disk."""
        return self._scan(key, buffers)[1]

    def may_hold_roots(self, key: str, buffers: Mapping[str, str]) -> bool:
        return self._scan(key, buffers)[2]

    def _scan(self, key: str, buffers: Mapping[str, str]) -> tuple[str | None, set[str], bool]:
        text = buffers.get(key)
        known = self._imports.get(key)
        if known is not None and known[0] == text:
            return known
        if text is None:
            try:  # as `cslint check` reads it: a regular file within the size limit
                source = read_regular(key, self.max_bytes)[0].decode("utf-8", errors="replace")
            except (OSError, ReadError):
                source = ""
        elif self.max_bytes is not None and text_size(text, self.max_bytes) > self.max_bytes:
            source = ""
        else:
            source = text
        if key.lower().endswith(NOTEBOOK):  # its code cells are the module
            source = python_of(source)
        name, is_package = self.names[self.keys[key]]
        found = {defining_module(target, self.by_module) for target in scan_imports(source, name, is_package)}
        scanned = (text, {f for f in found if f is not None and f != key},
                   may_hold_roots(source.encode("utf-8", errors="surrogatepass")))
        self._imports[key] = scanned
        return scanned

    def importers(self, keys: Iterable[str], buffers: Mapping[str, str]) -> set[str]:
        """The files importing `keys`, directly or not (the first call scans every file of the project)."""
        if self._importers is None:
            self._importers = {}
            for key in self.keys:
                for target in self.imports(key, {}):
                    self._importers.setdefault(target, set()).add(key)
        by_buffer: dict[str, set[str]] = {}
        for key in buffers:
            if key in self.keys:
                for target in self.imports(key, buffers):
                    by_buffer.setdefault(target, set()).add(key)

        def importing(key: str) -> set[str]:
            on_disk = self._importers.get(key, set()) - buffers.keys()  # type: ignore[union-attr]
            return on_disk | by_buffer.get(key, set())

        return reachable(set(keys), importing) - set(keys)

    def closure(self, keys: Iterable[str], buffers: Mapping[str, str]) -> set[str]:
        """`keys` and every project file they import, directly or not."""
        return set(reachable({k for k in keys if k in self.keys}, lambda key: self.imports(key, buffers)))

    def ordered(self, keys: Iterable[str]) -> list[Path]:
        """The files, in the survey's order (which decides the order roots are met in)."""
        wanted = set(keys)
        return [path for key, path in self.keys.items() if key in wanted]


def _key(path: Path | str) -> str:
    return os.path.abspath(path)
