"""The editor's open documents, analysed in their projects as unsaved buffers (no LSP types here).

An analysis after an edit loads only what the edited documents' findings can depend on (see
neighbourhood.py): the open documents of the project that import the edited one or that it reaches,
their callers as the project's cache last recorded them, and what all of those import. Each document
is its unsaved text over the files on disk (overlay.py), so an edit to a helper's buffer changes the
findings of an open file whose `forward` calls it, and the indexes of unchanged files and the parsed
functions of unchanged text are kept between analyses (`analysis/warm.WarmIndexes`). Settings are read from
the project's pyproject.toml on every analysis (an edited configuration applies at once), with the
client's initializationOptions on top. When neither names a target, it is inferred from the project's
files on disk as `cslint check` infers it (target_inference.py), once per project and again after
files are saved, created or deleted.

The project's cache (`.cslint_cache`, the answers `cslint check` stores about the files on disk) says
which files' traced code reaches which. It is brought up to date in the background, as `cslint check`
would (never with text that is not on disk): when a project is first analysed and after saves. Until
then the documents are analysed with their callers as the cache last knew them, if at all.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from cslint.core.config import ConfigError, Settings, load_settings, settings_from_table
from cslint.lsp.neighbourhood import Neighbourhood
from cslint.lsp.notebooks import python_of
from cslint.core.notebook import NotebookError, is_notebook
from cslint.analysis.warm import WarmIndexes, warm_analyses
from cslint.core.unsaved import unsaved_buffers
from cslint.support.progress import Progress
from cslint.core.report import BUG_HINT, INTERNAL_ERROR, Diagnostic
from cslint.core.run_result import RunResult
from cslint.engine.runner import FixChoice

_FIELDS = {f.name for f in fields(Settings)}
TOLD_EVERY = 0.5  # seconds between reports of a background check's progress


@dataclass
class Document:
    path: Path
    text: str
    version: int | None = None


class Workspace:
    def __init__(self, options: dict[str, Any] | None = None,
                 on_warm: Callable[[Path], None] | None = None,
                 on_progress: Callable[[Path, str, int | None], None] | None = None) -> None:
        self.options = dict(options or {})  # [tool.cslint] keys, from initializationOptions
        self.on_warm = on_warm  # told (from another thread) when a project's cache is up to date
        self.on_progress = on_progress  # told (from that thread) how bringing it up to date goes
        self.documents: dict[Path, Document] = {}
        self.findings: dict[Path, tuple[Document, list[Diagnostic]]] = {}  # each open document's last analysis
        self.traced: dict[Path, list[tuple[list[str], str]]] = {}  # its traced functions' chains and reasons
        self._files: dict[Path, list[Path]] = {}  # each project's Python files on disk
        self._hoods: dict[Path, Neighbourhood] = {}  # each project's files, module names and imports
        self._modules: dict[Path, dict[str, Path]] = {}  # each project's module names
        self._defs: dict[Path, tuple[str, dict[str, tuple[int, int]]]] = {}  # a file's text, where its defs are
        self._caches: dict[tuple[Path, str], Any] = {}  # each project's cache of answers about saved files
        self._updating: dict[tuple[Path, str], threading.Thread] = {}  # caches being brought up to date
        self._saved: set[Path] = set()  # projects with files saved since their cache was brought up to date
        self._warm: dict[tuple[Path, str], WarmIndexes] = {}  # each project's indexes kept between analyses
        self._targets: dict[Path, tuple[Settings, Settings]] = {}  # a project's settings, then with its target

    # ---- documents -------------------------------------------------------------------------------

    def open(self, path: Path, text: str, version: int | None = None) -> None:
        self.documents[_key(path)] = Document(_key(path), text, version)

    def change(self, path: Path, text: str, version: int | None = None) -> None:
        self.open(path, text, version)

    def close(self, path: Path) -> None:
        for warm in self._warm.values():
            warm.forget_buffer(path)
        self.documents.pop(_key(path), None)
        self.findings.pop(_key(path), None)
        self.traced.pop(_key(path), None)

    def files_changed(self) -> None:
        """Files were created, saved or deleted on disk: list the projects' files again, and bring their
        caches up to date (in the background)."""
        self._files.clear()
        self._hoods.clear()
        self._modules.clear()
        self._targets.clear()  # a saved file may import another accelerator's package
        for warm in self._warm.values():
            warm.forget_paths()
        self._saved.update(root for root, _ in self._caches)

    # ---- settings --------------------------------------------------------------------------------

    def settings_for(self, path: Path) -> Settings:
        settings = load_settings(None, path)
        if self.options:
            given = settings_from_table(self.options, None)
            chosen = {key.replace("-", "_") for key in self.options} & _FIELDS
            if "extend-ignore" in self.options:
                chosen.add("ignore")
            if "target" in self.options:
                chosen.add("target_reason")
            settings = replace(settings, **{name: getattr(given, name) for name in chosen})
        return self._with_target(self.project_of(path), settings)

    def is_baseline(self, path: Path) -> bool:
        """Whether `path` is its project's baseline file (saving it changes which findings are shown)."""
        if path in self.documents or path.suffix == ".py":
            return False
        try:
            return load_settings(None, path).baseline == Path(os.path.abspath(path))
        except ConfigError:
            return False

    def _with_target(self, root: Path, settings: Settings) -> Settings:
        """`settings` with the target inferred from the project's files (unless they name one) and the
        packages it imports, as `cslint check` runs with them."""
        from cslint.store.cache import default_cache_dir
        from cslint.store.import_memo import ImportMemo
        from cslint.engine.target_inference import with_inferred_target

        known = self._targets.get(root)
        if known is not None and known[0] == settings:
            return known[1]
        memo = None if os.environ.get("CSLINT_NO_CACHE") else ImportMemo(default_cache_dir(settings)).load()
        inferred = with_inferred_target(settings, self._project_files(root, settings), memo)
        self._targets[root] = (settings, inferred)
        return inferred

    def project_of(self, path: Path) -> Path:
        try:
            root = load_settings(None, path).project_root
        except ConfigError:
            root = None
        return _key(root) if root is not None else _key(path).parent

    # ---- analysis --------------------------------------------------------------------------------

    def analyse(self, path: Path) -> dict[Path, tuple[Document, list[Diagnostic]]]:
        """Lint the open documents of `path`'s project whose findings an edit of `path` can change: each
        one as analysed, with its diagnostics. A failure becomes one diagnostic per document, never an
        exception."""
        root = self.project_of(path)
        snapshot = {p: d for p, d in list(self.documents.items()) if _under(p, root)}
        if not snapshot:
            return {}
        chosen = list(snapshot)
        try:
            settings = self.settings_for(path)
            linted = _not_excluded(snapshot, settings)
            texts = {str(p): d.text for p, d in linted.items()}
            hood = self._neighbourhood(root, settings, linted)
            cache = self._cache(settings, root)
            edited = str(_key(path))
            imported = hood.closure({edited}, texts)  # its roots may call into these
            affected = {d for d in texts if d in imported or edited in hood.closure({d}, texts)
                        or edited in _reach(cache, d) or d in _reach(cache, edited)}
            chosen = [p for p in snapshot if str(p) in affected or p not in linted]  # excluded: no findings
            result = self._run(settings, root, hood, texts, affected, cache)
            found: dict[Path, list[Diagnostic]] = {p: [] for p in chosen}
            for d in result.diagnostics:
                found.setdefault(_key(d.path), []).append(d)
            for error in result.errors:
                for p in chosen:
                    if error.startswith(f"{p}:"):
                        found[p].append(_whole_file(p, INTERNAL_ERROR, f"cslint: {error[len(str(p)) + 1:].strip()}"))
        except ConfigError as exc:
            found = {p: [_whole_file(p, INTERNAL_ERROR, f"cslint configuration: {exc}")] for p in chosen}
        except Exception as exc:  # a bug in cslint: shown on the document, the server goes on
            message = f"internal error: {type(exc).__name__}: {exc}; {BUG_HINT}"
            found = {p: [_whole_file(p, INTERNAL_ERROR, message)] for p in chosen}
        analysed = {p: (snapshot[p], found.get(p, [])) for p in chosen}
        self.findings.update((p, value) for p, value in analysed.items() if p in self.documents)
        return analysed

    def _run(self, settings: Settings, root: Path, hood: Neighbourhood, texts: dict[str, str], wanted: set[str],
             cache: Any, fix: bool | FixChoice = False, unsafe: bool = False) -> RunResult:
        """Analyse the `wanted` documents with their callers as roots and what all of those import; report
        (and with `fix`, fix) only the documents. A caller imports the document, directly or not (names
        resolve through imports only), and may hold a root; with a record in the cache, its traced code
        reached the document when the files on disk were last checked. The cache's record also names
        the files that only share a helper with the document (all of transformers' models share some):
        they are left out, so such a helper is analysed with the documents' arguments alone."""
        from cslint.support.deep_stack import run_with_deep_stack
        from cslint.engine.incremental import TREE_BUDGET_BYTES
        from cslint.engine.runner import Linter
        from cslint.engine.selection import enabled_rules

        roots = set(wanted)
        for key in wanted:
            entry = cache.entries.get(key) if cache is not None else None
            if entry is not None and entry.diagnostics is not None:  # its recorded reach that still imports it
                importing = {k for k in entry.reach if k != key and key in hood.closure({k}, texts)}
            else:  # every file importing it (the first time, a scan of the project's imports)
                importing = hood.importers({key}, texts)
            roots |= {k for k in importing if settings.trace_roots or hood.may_hold_roots(k, texts)}
        files = hood.ordered(hood.closure(roots, texts))
        names = {path: hood.names[path] for path in files}
        linter = Linter(settings, enabled_rules(settings), tree_budget=None if fix else TREE_BUDGET_BYTES)
        linter.aliases = {alias: path for alias, path in hood.aliases.items() if path in names}
        linter.only_in = {p for p in files if str(p) in wanted}
        buffers = {Path(key): text for key, text in texts.items()}
        own = [p for p in files if str(p) in wanted]

        def run() -> RunResult:  # on the deep stack's own thread, so the buffers are set there
            with unsaved_buffers(buffers), warm_analyses(self._warm_indexes(settings, root)):
                return linter.run(own, fix=fix, unsafe_fixes=unsafe,
                                  context=[p for p in files if str(p) not in wanted], names=names,
                                  roots_in=[p for p in files if str(p) in roots])

        result = run_with_deep_stack(run)
        if not fix:
            self.traced.update((_key(p), linter.traced.get(p, [])) for p in own if _key(p) in self.documents)
        return result

    def locate(self, qualname: str, near: Path, root: Path | None = None) -> tuple[Path, int, int] | None:
        """Where the function (or class) named `qualname` is defined, in the project of `near` (`root`,
        when the caller knows it)."""
        from cslint.analysis.module_names import assign_module_names
        from cslint.lsp.convert import def_positions

        root = root if root is not None else self.project_of(near)
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
            if is_notebook(path):  # its code cells, as one module
                text = python_of(text)
            known = self._defs.get(path)
            if known is None or known[0] != text:  # each text is parsed once, however many chains pass
                tree = next((w.take_buffer_tree(path, text) for (r, _), w in self._warm.items() if r == root), None)
                known = self._defs[path] = (text, def_positions(text, tree))  # the analysis's tree of an edit
            found = known[1].get(".".join(parts[end:]))
            return (path, *found) if found is not None else None
        return None

    def fixed_text(self, path: Path, unsafe: bool, choice: FixChoice | None = None,
                   document: Document | None = None) -> str | None:
        """The document's text (a notebook's JSON) with its fixes (or the one `choice` picks) applied; None
        if none applies. `document`: the version of it to fix (an edit is for the text it was computed
        on), else the open one as it is now."""
        key = _key(path)
        document = document or self.documents.get(key)
        if document is None or key not in self.documents:
            return None
        root = self.project_of(key)
        snapshot = {p: d for p, d in list(self.documents.items()) if _under(p, root)} | {key: document}
        settings = self.settings_for(key)
        result = self._run(settings, root, self._neighbourhood(root, settings, snapshot),
                           {str(p): d.text for p, d in snapshot.items()}, {str(key)}, self._cache(settings, root),
                           fix=choice or True, unsafe=unsafe)
        changed = [s for s in result.changed_files if _key(s.path) == key]
        if not changed:
            return None
        if changed[0].notebook is None:
            return changed[0].text
        try:  # a notebook's fixed code cells, back in its JSON (as `cslint check --fix` writes it)
            return changed[0].notebook.with_python(changed[0].text)
        except NotebookError:  # a fix that would move a cell boundary is not applied
            return None

    def _warm_indexes(self, settings: Settings, root: Path) -> WarmIndexes:
        """The project's indexes kept between analyses under these settings (one set: a settings change
        drops the others)."""
        from cslint.store.cache import settings_key

        key = (root, settings_key(settings, _codes(settings)))
        if key not in self._warm:
            for other in [k for k in self._warm if k[0] == root]:
                del self._warm[other]
            self._warm[key] = WarmIndexes()
        return self._warm[key]

    def _project_files(self, root: Path, settings: Settings) -> list[Path]:
        from cslint.engine.discovery import collect_files

        if root not in self._files:
            self._files[root] = collect_files([root], settings) if root.is_dir() else []
        return self._files[root]

    def _neighbourhood(self, root: Path, settings: Settings, documents: dict[Path, Document]) -> Neighbourhood:
        hood = self._hoods.get(root)
        if hood is None or not hood.knows(documents) or hood.max_bytes != settings.max_file_size:
            # a new file, not yet saved, is part of the project; a new size limit changes what is scanned
            files = set(self._project_files(root, settings)) | set(documents)
            hood = self._hoods[root] = Neighbourhood(files, [root], settings.max_file_size)
        return hood

    def _cache(self, settings: Settings, root: Path) -> Any:
        """The project's cache as it is now, brought up to date with the files on disk in the background
        (as `cslint check` would) when first used and after saves; None without a cache."""
        from cslint.store.cache import Cache, default_cache_dir, settings_key

        if os.environ.get("CSLINT_NO_CACHE"):
            return None
        key = (root, settings_key(settings, _codes(settings)))
        cache = self._caches.get(key)
        if cache is None:
            cache = self._caches[key] = Cache(default_cache_dir(settings), key[1]).load()
            self._saved.add(root)
        if root in self._saved and key not in self._updating:
            self._saved.discard(root)
            self._updating[key] = threading.Thread(target=self._update, args=(key, settings, cache),
                                                   name="cslint-cache", daemon=True)
            self._updating[key].start()
        return cache.read_only()

    def _update(self, key: tuple[Path, str], settings: Settings, cache: Any) -> None:
        from cslint.support.deep_stack import run_with_deep_stack
        from cslint.engine.incremental import Session

        root = key[0]
        try:
            files = self._project_files(root, settings)
            progress = _Told(lambda message, percentage: self.on_progress(root, message, percentage)) \
                if self.on_progress is not None else None
            session = Session(settings, _codes(settings), cache=cache, jobs=_cores(), progress=progress)
            run_with_deep_stack(lambda: session.run(files))
        except Exception:  # the cache is a help: analyses go on without it being up to date
            logging.getLogger(__name__).exception("cslint: bringing the cache of %s up to date failed", root)
        finally:
            self._updating.pop(key, None)
        if self.on_warm is not None:
            self.on_warm(root)


class _Told(Progress):
    """A background check's progress, told to `tell(message, percentage)` at most every `TOLD_EVERY` seconds
    and at each new phase."""

    def __init__(self, tell: Callable[[str, int | None], None]) -> None:
        super().__init__()
        self.tell = tell
        self._told = (float("-inf"), "")  # when, and in which phase, it was last told

    def _show(self, force: bool = False) -> None:  # called with the lock held, after each change
        if self.name == self._told[1] and self.clock() - self._told[0] < TOLD_EVERY:
            return
        self._told = (self.clock(), self.name)
        counted = f" ({self.done:,}/{self.total:,} files)" if self.total else ""
        self.tell(f"{self.name}{counted}", min(100, 100 * self.done // self.total) if self.total else None)


def _cores() -> int:
    from cslint.support.cores import available_cores

    return available_cores()


def _codes(settings: Settings) -> list[str]:
    from cslint.engine.selection import enabled_codes

    return enabled_codes(settings)


def _reach(cache: Any, key: str) -> list[str]:
    """The files whose traced code reached `key` when the project's cache last checked it."""
    entry = cache.entries.get(key) if cache is not None else None
    return entry.reach if entry is not None else []


def _key(path: Path) -> Path:
    return Path(os.path.abspath(path))


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _not_excluded(documents: dict[Path, Document], settings: Settings) -> dict[Path, Document]:
    """The documents `exclude`/`extend-exclude` leave to be linted: as ruff's server does, an open document
    is held to them as `cslint check --force-exclude` holds a file named to it."""
    from cslint.engine.discovery import force_excluded

    return {p: d for p, d in documents.items() if not force_excluded(p, settings)}


def _whole_file(path: Path, code: str, message: str) -> Diagnostic:
    return Diagnostic(path, 1, 1, 1, 1, code, message)
