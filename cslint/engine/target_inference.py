"""Which accelerator a project targets, read from what it imports, when neither `--target` nor the
configuration names one.

A project that imports `cerebras.pytorch` is `wsc`, one that imports `torch_xla` is `xla`, one that
imports SambaNova's `samba`/`sambaflow` is `rdu`, and one that hands its model or training step to
`torch.compile` is `compile`; otherwise the default target (`wsc`). A `torch.compile` of an internal function
only (an optimizer's `torch.compile(_update_fn)`, cslint/engine/compile_uses.py) does not make the project a
`torch.compile` project: its other roots keep the default, and the reason says so. The scan reads the
import lines of the files being checked (only a file that calls `torch.compile` is parsed, with `ast`, and
none is executed), so it is cheap, and what a file imports is remembered from one run to the
next (cslint/store/import_memo.py). It also records the top-level packages those files import:
a fix never adds an import of any other package (no `import cerebras.pytorch` into a torch.compile
project).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cslint.analysis.dynamo_config import assigned_settings, project_settings
from cslint.engine.compile_uses import compile_uses
from cslint.core.config import DEFAULT_MAX_FILE_SIZE, Settings
from cslint.support.deferred import defer
from cslint.store.import_memo import FileImports, ImportMemo
from cslint.core.targets import DEFAULT_TARGET, platform_imports

_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b|import[ \t]+([\w. \t,]+?)[ \t]*(?:#.*)?$)",
                     re.MULTILINE)
# a call or a decorator, not prose in a docstring ("... for torch.compile support"), and not in a comment.
# Each match starts with a literal, so `re` finds it by a fast scan; where it stands on its line is then
# checked by `_uses_torch_compile` (a leading `\b` or `^[^#\n]*` made `re` try every position of every
# file, before any worker starts).
_TORCH_COMPILE = re.compile(r"torch\.compile(?:[ \t]*\(|\b)|from[ \t]+torch[ \t]+import\b[^#\n]*\bcompile\b")


@dataclass(frozen=True)
class TargetChoice:
    target: str
    reason: str  # one clause: why this target ("the project imports torch_xla (train.py)")
    packages: tuple[str, ...]  # top-level packages the scanned files import, sorted
    dynamo_config: tuple[str, ...] = ()  # the dynamo settings the scanned files turn on (dynamo_config.py)
    # the project has a step of its own: it imports an accelerator package or hands its model or step to
    # torch.compile (not only a model its callers give a compile wrapper of its own). Without one it is a
    # library, whose public functions are roots when uncertain findings are asked for (analysis/entry_points.py)
    own_step: bool = True


def imported_modules(text: str) -> set[str]:
    """Dotted names of the modules a source text imports (relative imports excluded)."""
    found: set[str] = set()
    for match in _import_lines(text):
        if match.group(1):
            if not match.group(1).startswith("."):
                found.add(match.group(1))
        else:
            for part in match.group(2).split(","):
                name = part.split(" as ")[0].strip() if " as " in part else part.strip()
                if name:
                    found.add(name.split()[0])
    return found


def _import_lines(text: str) -> Iterator[re.Match[str]]:
    """`_IMPORT`'s match on each line that says `import`: found by a literal search, as `re` cannot skip
    ahead to a `^[ \t]*` line start and tries the pattern at every position of the file."""
    end = 0
    position = text.find("import")
    while position >= 0:
        if position >= end:  # not on the line just read
            start = text.rfind("\n", 0, position) + 1
            end = text.find("\n", position)
            end = len(text) if end < 0 else end
            match = _IMPORT.match(text, start, end)
            if match is not None:
                yield match
        position = text.find("import", position + 6)


def _imports(modules: Iterable[str], wanted: str) -> bool:
    return any(m == wanted or m.startswith(wanted + ".") for m in modules)


def file_imports(path: Path, max_size: int) -> FileImports | None:
    """What the file imports, or None for one that is unreadable or over the size limit (the check
    reports it)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(max_size + 1)
    except OSError:
        return None
    if len(data) > max_size:
        return None
    text = data.decode("utf-8", errors="replace")
    modules = imported_modules(text)
    uses = compile_uses(text) if "compile" in text and _imports(modules, "torch") and _uses_torch_compile(text) \
        else None
    return FileImports(frozenset(modules), uses is not None and uses.compiles_entry,
                       assigned_settings(text) if _imports(modules, "torch") else (),
                       uses.helpers if uses is not None else (), uses is not None and uses.passes_through)


def _uses_torch_compile(text: str) -> bool:
    """A call of `torch.compile`, a `@torch.compile` decorator or `from torch import compile`, at a word's
    start and before any `#` on its line."""
    match = _TORCH_COMPILE.search(text)
    while match is not None:
        start = match.start()
        before = text[text.rfind("\n", 0, start) + 1:start]
        word_start = not before or not (before[-1].isalnum() or before[-1] == "_")
        if word_start and "#" not in before and (
                match.group().endswith("(") or match.group().startswith("from") or before.lstrip(" \t") == "@"):
            return True
        match = _TORCH_COMPILE.search(text, start + 1)
    return False


def _imports_of(path: Path, max_size: int, memo: ImportMemo | None) -> FileImports | None:
    if memo is None:
        return file_imports(path, max_size)
    key = os.path.abspath(path)
    try:
        stat = os.stat(key)
    except OSError:
        return None
    if stat.st_size > max_size:
        return None
    return memo.imports(key, stat, lambda: file_imports(path, max_size))


def infer_target(paths: Iterable[Path], max_size: int = DEFAULT_MAX_FILE_SIZE,
                 memo: ImportMemo | None = None) -> TargetChoice:
    """The target the project's imports point to, with the reason and the packages it imports. Files over
    `max_size` bytes are not read (the check does not analyse them either). With a `memo`, a file
    unchanged since an earlier run is not read again."""
    packages: set[str] = set()
    first_with: dict[str, Path] = {}
    compile_file: Path | None = None
    own_compile = False  # some file compiles a model or step of its own, not only what its callers hand it
    helper_compiled: tuple[str, Path] | None = None  # the first internal function handed to torch.compile
    assigned: list[tuple[tuple[str, bool], ...]] = []
    seen: set[str] = set()
    platforms = platform_imports()  # (target, the modules whose import decides it), in order of precedence
    platform_packages = frozenset(name.partition(".")[0] for _, names in platforms for name in names)
    for path in paths:
        key = os.path.abspath(path)
        if key in seen:  # a checked file is also in its project's context: read it once
            continue
        seen.add(key)
        found = _imports_of(path, max_size, memo)
        if found is None:
            continue
        packages |= found.packages
        if found.dynamo_config:
            assigned.append(found.dynamo_config)
        if not found.packages.isdisjoint(platform_packages):
            for target, names in platforms:
                if target not in first_with and any(_imports(found.modules, n) for n in names):
                    first_with[target] = path
        if compile_file is None and found.uses_compile:
            compile_file = path
        own_compile = own_compile or found.uses_compile and not found.compile_wrapper
        if helper_compiled is None and found.compiled_helpers:
            helper_compiled = (found.compiled_helpers[0], path)
    if memo is not None:
        defer(memo.save)  # in a server's child, after the client has its answer
    settings = project_settings(assigned)
    for target, names in platforms:
        if target in first_with:
            return TargetChoice(target, f"inferred: the project imports {names[0]} ({first_with[target].name})",
                                tuple(sorted(packages)), settings)
    if compile_file is not None:
        return TargetChoice("compile", f"inferred: the project hands its model or step to torch.compile "
                                       f"({compile_file.name}) and imports no accelerator package",
                            tuple(sorted(packages)), settings, own_step=own_compile)
    if helper_compiled is not None:
        name, path = helper_compiled
        return TargetChoice(DEFAULT_TARGET, f"default: the project imports no accelerator package, and torch.compile "
                                            f"is given only internal functions (`{name}` in {path.name}), not a model "
                                            "or a training step", tuple(sorted(packages)), settings, own_step=False)
    return TargetChoice(DEFAULT_TARGET, "default: the project imports no accelerator package and does not use "
                                        "torch.compile", tuple(sorted(packages)), settings, own_step=False)


def with_inferred_target(settings: Settings, paths: Iterable[Path], memo: ImportMemo | None = None) -> Settings:
    """`settings` with the project's packages recorded and, unless `--target` or the configuration gave a
    target (their `target_reason` says which), the inferred one."""
    choice = infer_target(paths, settings.max_file_size, memo)
    entry_points = settings.include_uncertain and not choice.own_step and not settings.trace_roots
    if settings.target_reason:
        return settings.with_overrides(project_packages=choice.packages, dynamo_config=choice.dynamo_config,
                                       entry_points=entry_points)
    return settings.with_overrides(target=choice.target, target_reason=choice.reason,
                                   project_packages=choice.packages, dynamo_config=choice.dynamo_config,
                                   entry_points=entry_points)
