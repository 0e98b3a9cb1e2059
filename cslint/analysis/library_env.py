"""Where installed libraries are, and what a summary of one of their functions says (analysis/libraries.py).

Kept apart from the analysis itself, without libcst: the cache key and the command line ask for the
environment on runs that parse nothing.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cslint.analysis.call_depth import Reach
from cslint.analysis.kinds import Kind, join

if TYPE_CHECKING:
    from cslint.analysis.index import ModuleInfo

# What a summary's effect is: the code of a call cslint/core/rule_table.py says a summary records (`t.item()`
# is WSC201, `int(t)` WSC203), or one of these
BRANCH = "branch"  # `if`/`while`/ternary/`assert` on a tensor
SHAPE = "shape"  # an op whose output shape depends on values (`nonzero`, one-argument `torch.where`)
MASK_STORE = "mask_store"  # a store through a boolean mask (`x[mask] = 0`)

MAX_DEPTH = 3  # library functions called through library functions, from the user's call (cost: see docs/accuracy.md)
MAX_FILE_BYTES = 3_000_000
# Parts of torch read as a library: what the API tables do not describe (optimizer helpers, nn.utils).
# The rest of torch is tensor operations (torch_api) or tracer internals.
TORCH_LIBRARY_MODULES = ("torch.optim", "torch.nn.utils")
NEVER_READ = ("numpy", "einops", "torch_xla", "cerebras", "jax", "triton")


@dataclass(frozen=True)
class Effect:
    what: str  # a rule's code (a call of the rule table), BRANCH, SHAPE or MASK_STORE
    text: str  # the code, one line
    via: tuple[str, ...]  # the library function called, then each one it calls down to the one with the code
    path: str
    line: int

    def describe(self) -> str:
        """Where the library does it: `in `fn` (file.py:12)`."""
        return f"in `{self.via[-1].rsplit('.', 1)[-1]}` ({os.path.basename(self.path)}:{self.line})"

    def trail(self) -> str:
        """How the call gets there, and the code that does it."""
        return f"via {' -> '.join(self.via)}: `{self.text}`"


@dataclass(frozen=True)
class Summary:
    returns: Kind
    effects: tuple[Effect, ...] = ()
    uses: tuple[str, ...] = ()  # `top=name-version` of every distribution whose code it was computed from
    reach: Reach | None = field(default=None, compare=False)  # how deep it went (call_depth.py); None: unknown
    # what it does only if a call in it runs a particular one of the functions it may run (a table's entry for a
    # key not known there): the opt-in tier's (`include-uncertain`)
    possible: tuple[Effect, ...] = ()


def both(first: Summary, then: Summary) -> Summary:
    """What a call running `first` and then `then` does (an autograd Function's forward and backward)."""
    return Summary(join(first.returns, then.returns), _union(first.effects, then.effects),
                   tuple(sorted(set(first.uses) | set(then.uses))), first.reach, _union(first.possible, then.possible))


def either(one: Summary, other: Summary) -> Summary:
    """What a call running one of two functions, which one not known, does: surely the kinds of thing both do
    (each place that does them named), possibly the rest."""
    kinds = {e.what for e in one.effects} & {e.what for e in other.effects}
    effects = _union(one.effects, other.effects)
    sure = tuple(e for e in effects if e.what in kinds)
    return Summary(join(one.returns, other.returns), sure, tuple(sorted(set(one.uses) | set(other.uses))), one.reach,
                   _union(tuple(e for e in effects if e.what not in kinds), _union(one.possible, other.possible)))


def _union(first: tuple[Effect, ...], second: tuple[Effect, ...]) -> tuple[Effect, ...]:
    return first + tuple(e for e in second if e not in first)


class SummaryStore(Protocol):
    """Summaries kept between runs, per distribution and version (cslint/store/library_cache.py)."""

    def get(self, distribution: tuple[str, str], key: str) -> Summary | None: ...

    def put(self, distribution: tuple[str, str], key: str, summary: Summary) -> None: ...


# ---- where libraries are ---------------------------------------------------------------------------

class Environment:
    """The directories a Python looks for third-party modules in, and the distributions installed there."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self._found: dict[str, tuple[str, bool] | None] = {}
        self._distributions: dict[str, tuple[str, str]] | None = None
        self._sources: list[str] = []  # search directories that hold source, not installed distributions
        # shared by every analysis of the process: library modules read, and summaries worked out
        self.modules: dict[str, ModuleInfo | None] = {}
        self.summaries: dict[str, Summary] = {}
        self.shared: dict[str, Any] = {}  # what analysis/libraries.py keeps of the libraries as a project

    def module(self, name: str) -> ModuleInfo | None:
        """The index of an installed module, read the first time it is asked for."""
        if name not in self.modules:
            self.modules[name] = self._read(name) if readable_library_module(name) else None
        return self.modules[name]

    def _read(self, name: str) -> ModuleInfo | None:
        found = self.find(name)
        if found is None:
            return None
        path, is_package = found
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                return None
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            tree = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        import libcst as cst

        from cslint.analysis.index import index_module_from_ast

        info = index_module_from_ast(Path(path), text, tree, name, is_package, loader=lambda: cst.parse_module(text))
        info.piece_parser = cst.parse_module
        info.library = self.distribution(name.partition(".")[0]) or (name.partition(".")[0], "")
        return info

    @classmethod
    def of_running_python(cls) -> Environment:
        """The environment cslint runs in: `sys.path` without the working directory and the standard library."""
        stdlib = {os.path.realpath(p) for p in _stdlib_paths()}
        cwd = os.path.realpath(os.getcwd())
        paths = []
        for entry in sys.path:
            real = os.path.realpath(entry) if entry else cwd
            if real != cwd and real not in stdlib and os.path.isdir(real) and real not in paths:
                paths.append(real)
        return cls(paths)

    def find(self, module: str) -> tuple[str, bool] | None:
        """The file of a module (its `__init__.py` for a package) and whether it is a package; None when no
        search directory has it. Nothing is imported."""
        if module in self._found:
            return self._found[module]
        found: tuple[str, bool] | None = None
        parent, _, last = module.rpartition(".")
        if not all(part.isidentifier() for part in module.split(".")):
            found = None
        elif parent:
            above = self.find(parent)
            if above is not None and above[1]:
                found = _in_directory(os.path.dirname(above[0]), last)
        else:
            for directory in self.paths:
                found = _in_directory(directory, module)
                if found is not None:
                    break
        self._found[module] = found
        return found

    def distribution(self, top: str) -> tuple[str, str] | None:
        """(name, version) of the installed distribution that provides the top-level package `top`. An
        editable install (`pip install -e`) has no version here: its code changes while its version does not,
        so nothing read from it is kept by version."""
        if self._distributions is None:
            self._distributions = {}
            self._sources = []
            for directory in self.paths:
                try:
                    names = sorted(os.listdir(directory))
                except OSError:
                    continue
                if not any(name.endswith(".dist-info") for name in names):
                    self._sources.append(directory)  # a directory of source, not of installations
                for name in names:
                    if name.endswith(".dist-info"):
                        dist, _, version = name[:-len(".dist-info")].partition("-")
                        info = os.path.join(directory, name)
                        for provided in _top_level(info, dist):
                            self._distributions.setdefault(provided, (dist.lower(), "" if _editable(info) else version))
        return self._distributions.get(top)

    def digest_text(self, project_root: str | None = None) -> str:
        """Every distribution installed, with its version, and the state of every source directory on the
        path outside the project (an editable install's, or one a `.pth` file adds): a change means what
        traced calls into libraries do may have changed."""
        self.distribution("")
        assert self._distributions is not None
        installed = ";".join(f"{top}={name}-{version}" for top, (name, version) in sorted(self._distributions.items()))
        inside = os.path.realpath(project_root) + os.sep if project_root else None
        sources = [_source_state(d) for d in self._sources if inside is None or not (d + os.sep).startswith(inside)]
        return ";".join([installed, *sources])


class LibraryPathError(Exception):
    """The Python named for libraries cannot be asked where they are; the message says why."""


_ENVIRONMENTS: dict[str, Environment | None] = {}
def environment_for(python: str | None) -> Environment | None:
    """The environment of the `python` setting: None or "" for the Python cslint runs in, "none" for no
    libraries, else the installation of the interpreter it names, found from its files (`_installed`)."""
    key = python or ""
    if key in _ENVIRONMENTS:
        listing = _listing(_ENVIRONMENTS[key])
        if listing is not None and listing == _LISTED.get(key):
            return _ENVIRONMENTS[key]
    if key.lower() == "none":
        _ENVIRONMENTS[key] = None
    elif not key:
        _ENVIRONMENTS[key] = Environment.of_running_python()
    else:
        _ENVIRONMENTS[key] = _installed(key)
    _LISTED[key] = _listing(_ENVIRONMENTS[key])
    return _ENVIRONMENTS[key]


# When an environment was made, the modification times of its directories: a process that lives on (the hook
# server, whose children inherit what it read, or the language server) makes it afresh once a distribution
# was installed or removed there.
_LISTED: dict[str, tuple[int, ...] | None] = {}


def _listing(environment: Environment | None) -> tuple[int, ...] | None:
    """The search directories' modification times; None when one is too recent to rest on."""
    from cslint.core.file_times import settled

    times = []
    for directory in environment.paths if environment is not None else []:
        try:
            info = os.stat(directory)
        except OSError:
            times.append(-1)
            continue
        if not settled(info):
            return None
        times.append(info.st_mtime_ns)
    return tuple(times)


def _installed(python: str) -> Environment:
    """The libraries of the installation an interpreter belongs to, found from its files and never by
    running it (a path in a repository's configuration could name any program): the `site-packages` (or
    Debian's `dist-packages`) of the virtual environment or prefix above `bin/python`, or of the
    directory named; the Python version its `pyvenv.cfg` names when it has several."""
    path = Path(python).expanduser()
    if not path.exists():
        raise LibraryPathError(f"{python} does not exist")
    prefix = path if path.is_dir() else path.parent.parent  # not resolved: a venv's python links elsewhere
    versions = ["python*", "python3"]
    named = _pyvenv_version(prefix)
    if named:
        versions = [f"python{named}", "python3"]
    found: list[str] = []
    for lib in ("lib", "lib64"):
        for version in versions:
            for kind in ("site-packages", "dist-packages"):
                for directory in sorted(prefix.glob(f"{lib}/{version}/{kind}")):
                    real = os.path.realpath(directory)
                    if os.path.isdir(real) and real not in found:
                        found.append(real)
    windows = prefix / "Lib" / "site-packages"
    if windows.is_dir() and os.path.realpath(windows) not in found:
        found.append(os.path.realpath(windows))
    if not found:
        raise LibraryPathError(f"no site-packages under {prefix} (cslint reads the installation {python} belongs to; "
                               "it does not run it)")
    return Environment(found)


def _pyvenv_version(prefix: Path) -> str | None:
    """`3.11` from a virtual environment's `pyvenv.cfg` (`version = 3.11.7` or `version_info = 3.11.7...`)."""
    try:
        text = (prefix / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            parts = value.strip().split(".")
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                return f"{parts[0]}.{parts[1]}"
    return None


def _stdlib_paths() -> list[str]:
    import sysconfig

    paths = sysconfig.get_paths()
    found = [paths.get("stdlib", ""), paths.get("platstdlib", "")]
    return [p for p in found if p] + [os.path.join(p, "lib-dynload") for p in found if p]


def _in_directory(directory: str, name: str) -> tuple[str, bool] | None:
    package = os.path.join(directory, name, "__init__.py")
    if os.path.isfile(package):
        return package, True
    module = os.path.join(directory, name + ".py")
    if os.path.isfile(module):
        return module, False
    return None


def _top_level(dist_info: str, dist: str) -> list[str]:
    text = _small_file(os.path.join(dist_info, "top_level.txt"))
    listed = [line.strip() for line in text.splitlines() if line.strip()]
    return listed or [dist.lower().replace("-", "_").replace(".", "_")]


def _editable(dist_info: str) -> bool:
    """Whether a distribution was installed editable (PEP 610's direct_url.json)."""
    try:
        data = json.loads(_small_file(os.path.join(dist_info, "direct_url.json")) or "{}")
        return isinstance(data, dict) and isinstance(data.get("dir_info"), dict) and \
            data["dir_info"].get("editable") is True
    except ValueError:
        return False


def _source_state(directory: str) -> str:
    """A digest of the Python files under a source directory (names, sizes and modification times)."""
    digest = hashlib.blake2b(directory.encode("utf-8", "surrogateescape"), digest_size=12)
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules"))
        for name in sorted(files):
            if name.endswith(".py"):
                try:
                    info = os.stat(os.path.join(root, name))
                except OSError:
                    continue
                digest.update(f"{root}/{name}:{info.st_size}:{info.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return f"{directory}@{digest.hexdigest()}"


def _small_file(path: str, limit: int = 65536) -> str:
    """The text of a regular file of at most `limit` bytes, else "": an installation named by a repository
    may hold a pipe (opened without waiting for a writer) or a link to a device there."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return ""
        return os.read(fd, limit).decode("utf-8", errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def readable_library_module(name: str) -> bool:
    """Whether a module's source is read as a library: not the standard library, not what the API tables
    describe (torch's tensor operations, NumPy), not tracer internals."""
    top = name.partition(".")[0]
    if top in sys.stdlib_module_names or top in NEVER_READ or top in ("cslint", "__future__"):
        return False
    if top == "torch":
        return any(name == m or name.startswith(m + ".") for m in TORCH_LIBRARY_MODULES)
    return True
