"""The editor's open documents, analysed in their projects as unsaved buffers (no LSP types here).

Every analysis lints all open documents of one project together, each as its unsaved text over the
files on disk (`overlay.lint_texts`), so an edit to a helper's buffer changes the findings of an open
file whose `forward` calls it. Settings are read from the project's pyproject.toml on every analysis (an
edited configuration applies at once), with the client's initializationOptions on top.

An analysis of unsaved text reads the cache and never writes it, so without a filled cache every
analysis would re-check the whole project. The first analysis in a project therefore first checks its
saved files as `cslint check` does (filling `.cslint_cache` with answers about the files on disk, kept
in memory too), and again, incrementally, after a save: then an edit re-checks only what it can reach.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from cslint.config import ConfigError, Settings, load_settings, settings_from_table
from cslint.overlay import lint_texts
from cslint.report import BUG_HINT, INTERNAL_ERROR, Diagnostic
from cslint.runner import FixChoice

_FIELDS = {f.name for f in fields(Settings)}


@dataclass
class Document:
    path: Path
    text: str
    version: int | None = None


class Workspace:
    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.options = dict(options or {})  # [tool.cslint] keys, from initializationOptions
        self.documents: dict[Path, Document] = {}
        self.findings: dict[Path, tuple[Document, list[Diagnostic]]] = {}  # each open document's last analysis
        self._files: dict[Path, list[Path]] = {}  # each project's Python files on disk
        self._modules: dict[Path, dict[str, Path]] = {}  # each project's module names
        self._caches: dict[tuple[Path, str], Any] = {}  # each project's cache of answers about saved files
        self._saved: set[Path] = set()  # projects with files saved since their cache was brought up to date

    # ---- documents -------------------------------------------------------------------------------

    def open(self, path: Path, text: str, version: int | None = None) -> None:
        self.documents[_key(path)] = Document(_key(path), text, version)

    def change(self, path: Path, text: str, version: int | None = None) -> None:
        self.open(path, text, version)

    def close(self, path: Path) -> None:
        self.documents.pop(_key(path), None)
        self.findings.pop(_key(path), None)

    def files_changed(self) -> None:
        """Files were created, saved or deleted on disk: list the projects' files again, and bring their
        caches up to date before the next analysis."""
        self._files.clear()
        self._modules.clear()
        self._saved.update(root for root, _ in self._caches)

    # ---- settings --------------------------------------------------------------------------------

    def settings_for(self, path: Path) -> Settings:
        settings = load_settings(None, path)
        if not self.options:
            return settings
        given = settings_from_table(self.options, None)
        chosen = {key.replace("-", "_") for key in self.options} & _FIELDS
        if "extend-ignore" in self.options:
            chosen.add("ignore")
        return replace(settings, **{name: getattr(given, name) for name in chosen})

    def project_of(self, path: Path) -> Path:
        try:
            root = load_settings(None, path).project_root
        except ConfigError:
            root = None
        return _key(root) if root is not None else _key(path).parent

    # ---- analysis --------------------------------------------------------------------------------

    def analyse(self, path: Path) -> dict[Path, tuple[Document, list[Diagnostic]]]:
        """Lint the open documents of `path`'s project: each one as analysed, with its diagnostics. A
        failure becomes one diagnostic per document, never an exception."""
        root = self.project_of(path)
        snapshot = {p: d for p, d in list(self.documents.items()) if _under(p, root)}
        documents = {p: d.text for p, d in snapshot.items()}
        if not documents:
            return {}
        try:
            settings = self.settings_for(path)
            result = lint_texts(documents, settings, _codes(settings), unsafe_fixes=settings.unsafe_fixes,
                                cache=self._cache(settings, root), context=self._project_files(root, settings))
            found: dict[Path, list[Diagnostic]] = {p: [] for p in documents}
            for d in result.diagnostics:
                found.setdefault(_key(d.path), []).append(d)
            for error in result.errors:
                for p in documents:
                    if error.startswith(f"{p}:"):
                        found[p].append(_whole_file(p, INTERNAL_ERROR, f"cslint: {error[len(str(p)) + 1:].strip()}"))
        except ConfigError as exc:
            found = {p: [_whole_file(p, INTERNAL_ERROR, f"cslint configuration: {exc}")] for p in documents}
        except Exception as exc:  # a bug in cslint: shown on the document, the server goes on
            message = f"internal error: {type(exc).__name__}: {exc}; {BUG_HINT}"
            found = {p: [_whole_file(p, INTERNAL_ERROR, message)] for p in documents}
        analysed = {p: (snapshot[p], found.get(p, [])) for p in snapshot}
        self.findings.update((p, value) for p, value in analysed.items() if p in self.documents)
        return analysed

    def locate(self, qualname: str, near: Path) -> tuple[Path, int, int] | None:
        """Where the function (or class) named `qualname` is defined, in the project of `near`."""
        from cslint.analysis.module_names import assign_module_names
        from cslint.lsp.convert import def_position

        root = self.project_of(near)
        modules = self._modules.get(root)
        if modules is None:
            files = self._project_files(root, self.settings_for(near))
            modules = self._modules[root] = {name: _key(p) for p, (name, _) in assign_module_names(files).items()}
        parts = qualname.split(".")
        for end in range(len(parts) - 1, 0, -1):
            path = modules.get(".".join(parts[:end]))
            if path is None:
                continue
            document = self.documents.get(path)
            try:
                text = document.text if document is not None else path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            found = def_position(text, parts[end:])
            return (path, *found) if found is not None else None
        return None

    def fixed_text(self, path: Path, unsafe: bool, choice: FixChoice | None = None) -> str | None:
        """The document's text with its fixes (or the one `choice` picks) applied; None if none applies."""
        key = _key(path)
        document = self.documents.get(key)
        if document is None:
            return None
        settings = self.settings_for(key)
        result = lint_texts({key: document.text}, settings, _codes(settings), fix=choice or True,
                            unsafe_fixes=unsafe, cache=self._cache(settings, self.project_of(key)),
                            context=self._project_files(self.project_of(key), settings))
        changed = [s for s in result.changed_files if _key(s.path) == key]
        return changed[0].text if changed else None

    def _project_files(self, root: Path, settings: Settings) -> list[Path]:
        from cslint.discovery import collect_files

        if root not in self._files:
            self._files[root] = collect_files([root], settings) if root.is_dir() else []
        return self._files[root]

    def _cache(self, settings: Settings, root: Path) -> Any:
        """The project's cache, brought up to date with the files on disk (see the module's docstring)."""
        from cslint.cache import Cache, default_cache_dir, settings_key
        from cslint.deep_stack import run_with_deep_stack
        from cslint.incremental import Session

        if os.environ.get("CSLINT_NO_CACHE"):
            return None
        key = (root, settings_key(settings, _codes(settings)))
        cache = self._caches.get(key)
        if cache is not None and root not in self._saved:
            return cache
        if cache is None:
            cache = self._caches[key] = Cache(default_cache_dir(settings), key[1]).load()
        self._saved.discard(root)
        files = self._project_files(root, settings)
        session = Session(settings, _codes(settings), cache=cache, jobs=_cores())
        run_with_deep_stack(lambda: session.run(files))
        return cache


def _cores() -> int:
    from cslint.cli import available_cores

    return available_cores()


def _codes(settings: Settings) -> list[str]:
    from cslint.selection import enabled_codes

    return enabled_codes(settings)


def _key(path: Path) -> Path:
    return Path(os.path.abspath(path))


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _whole_file(path: Path, code: str, message: str) -> Diagnostic:
    return Diagnostic(path, 1, 1, 1, 1, code, message)
