"""The linted tree as one program: cross-file name lookup and the class hierarchy."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import libcst as cst

from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis.walk import iter_nodes

if TYPE_CHECKING:
    from cslint.analysis.kinds import Kind
    from cslint.analysis.library_env import Environment, Summary

class InstalledLibraries(Protocol):
    """What the analysis asks of the installed libraries' functions (analysis/libraries.Libraries, which
    analyses them with the analysis itself: the project only holds it)."""

    project: Project
    store: Any
    environment: Environment  # the `python` setting's: where the libraries and torch are read from

    def lookup(self, qualified: str) -> FunctionInfo | ClassInfo | ModuleInfo | None: ...

    def instance_kind(self, cls: ClassInfo, node: cst.Call | None = None, arg_kinds: list[Kind] | None = None
                      ) -> Kind: ...

    def module_objects(self, project: Project, module: ModuleInfo, known: dict[str, Kind]) -> dict[str, Kind]: ...

    def summary(self, func: FunctionInfo, given: dict[str, Kind], tracer: str | None) -> Summary: ...


# Bases outside the linted tree whose subclasses are nn.Modules / optimizers.
MODULE_BASE_PREFIXES = ("torch.nn.", "cerebras.pytorch.nn.")
MODULE_BASES = {
    "torch.nn.Module", "torch.nn.modules.module.Module", "transformers.PreTrainedModel",
    "transformers.modeling_utils.PreTrainedModel",
}
MODULE_CLASSES = {"torch.nn.modules.module.Module"}
OPTIMIZER_CLASSES = {"torch.optim.optimizer.Optimizer"}
OPTIMIZER_BASE_PREFIXES = ("torch.optim.", "cerebras.pytorch.optim.")
OPTIMIZER_EXCLUDED = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")


def is_external_module_base(name: str) -> bool:
    if name in MODULE_BASES:
        return True
    if not name.startswith(MODULE_BASE_PREFIXES):
        return False
    last = name.rsplit(".", 1)[-1]
    # torch.nn.Module, nn.Linear, nn.modules.loss._Loss: classes; torch.nn.functional.x is not a base.
    return bool(last) and (last[0].isupper() or last.startswith("_") and last[1:2].isupper())


# Bases outside the linted tree whose subclasses are custom autograd functions (`MyFn.apply(x)` runs their
# `forward` in the step and their `backward` in the step's backward).
AUTOGRAD_FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function",
                                     "torch.autograd.function.InplaceFunction"})


def is_external_optimizer_base(name: str) -> bool:
    if not name.startswith(OPTIMIZER_BASE_PREFIXES) or name.startswith(OPTIMIZER_EXCLUDED):
        return False
    last = name.rsplit(".", 1)[-1]
    return bool(last) and last[0].isupper()


class LazyModules(Mapping[str, ModuleInfo]):
    """Modules by name: those given, and any other the project holds, indexed (by `load`) when first
    asked for. A group's analysis looks up names in a few of the files its files import, directly or
    not; where imports are dense, or form long chains, that closure is much of the tree, and indexing
    it (or even listing it) for every group made the run quadratic. `load(name)`: the module, or None
    when the project holds none of that name or its file cannot be indexed (as absent as from a dict
    of them all); `rank(name)`: its place in the project's order (None: the project holds none);
    `names()`: every name the project holds, in order. Iterating loads every module."""

    def __init__(self, given: dict[str, ModuleInfo], load: Callable[[str], ModuleInfo | None],
                 rank: Callable[[str], int | None], names: Callable[[], list[str]]) -> None:
        self.loaded = dict(given)
        self.given = tuple(given)  # the modules analysed together (a group's own), as opposed to those loaded later
        self._asked = set(given)
        self._load = load
        self.rank = rank
        self.names = names

    def __getitem__(self, name: str) -> ModuleInfo:
        found = self.loaded.get(name)
        if found is None and name not in self._asked:
            self._asked.add(name)
            found = self._load(name)
            if found is not None:
                self.loaded[name] = found
        if found is None:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[str]:
        return (name for name in self.names() if name in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def in_order(self) -> list[str]:
        """The names loaded so far, in the project's order."""
        return sorted(self.loaded, key=lambda name: _or_first(self.rank(name)))


def _or_first(rank: int | None) -> int:
    return -1 if rank is None else rank


class Project:
    """`aliases`: other names modules are imported by (namespace packages: see module_names.import_aliases),
    each to the module's own name. `modules` may be a `LazyModules`: what a lookup needs is indexed then."""

    def __init__(self, modules: Iterable[ModuleInfo] | LazyModules, aliases: dict[str, str] | None = None) -> None:
        if isinstance(modules, LazyModules):
            self.modules: Mapping[str, ModuleInfo] = modules
        else:
            self.modules = {module.name: module for module in modules}
        self._aliases = dict(aliases or {})
        self._aliases_of: dict[str, list[str]] = {}
        for alias, name in self._aliases.items():
            self._aliases_of.setdefault(name, []).append(alias)
        self._kind_cache: dict[tuple[str, str], bool] = {}
        self._lookup_cache: dict[str, ModuleInfo | ClassInfo | FunctionInfo | None] = {}
        self._ranks: dict[str, int] | None = None
        self._subclasses: dict[str, list[ClassInfo]] | None = None
        self._overrides: dict[tuple[str, str], tuple[FunctionInfo, ...]] = {}
        # installed libraries whose functions traced code calls (analysis/libraries.py); None: not looked in
        self.libraries: InstalledLibraries | None = None
        # names a package's `from .core import *` re-exports are looked up there (the installed libraries': a linted
        # tree's star imports are not followed, which keeps what its analysis reaches as it was)
        self.star_exports = False

    def module_names(self) -> list[str]:
        """The names of the project's modules in its order (with a `LazyModules`, also those that turn
        out not to index: nothing is loaded to list them)."""
        return self.modules.names() if isinstance(self.modules, LazyModules) else list(self.modules)

    def rank(self, name: str) -> int | None:
        """Module `name`'s place in the project's order; None if the project holds no module of that name."""
        if isinstance(self.modules, LazyModules):
            return self.modules.rank(name)
        if self._ranks is None:
            self._ranks = {module: i for i, module in enumerate(self.modules)}
        return self._ranks.get(name)

    def _aliased(self, alias: str) -> ModuleInfo | None:
        """The module imported under another name (an alias that is itself a module's name is that module)."""
        name = self._aliases.get(alias)
        if name is None or alias in self.modules:
            return None
        return self.modules.get(name)

    # ---- lookup ----------------------------------------------------------------------------------

    def lookup(self, qualname: str, _depth: int = 0) -> ModuleInfo | ClassInfo | FunctionInfo | None:
        """Find what a qualified name names in the project, following `from .x import y` re-exports."""
        if _depth == 0:
            if qualname not in self._lookup_cache:
                self._lookup_cache[qualname] = self._lookup(qualname, 0)
            return self._lookup_cache[qualname]
        return self._lookup(qualname, _depth)

    def _lookup(self, qualname: str, _depth: int) -> ModuleInfo | ClassInfo | FunctionInfo | None:
        if _depth > 8 or not qualname:
            return None
        found_module = self.modules.get(qualname) or self._aliased(qualname)
        if found_module is not None:
            return found_module
        parts = qualname.split(".")
        for split in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:split])
            module = self.modules.get(prefix) or self._aliased(prefix)
            if module is None:
                continue
            rest = parts[split:]
            head = rest[0]
            found: ModuleInfo | ClassInfo | FunctionInfo | None = None
            if head in module.classes:
                found = module.classes[head]
            elif head in module.functions:
                found = module.functions[head]
            elif head in module.imports.names:
                target = module.imports.names[head]
                if target != qualname and not target.startswith(qualname + "."):
                    found = self.lookup(target, _depth + 1)
            elif self.star_exports and not head.startswith("_"):  # `from .core import *` in a package: its names
                for star in module.imports.stars:
                    found = self.lookup(f"{star}.{head}", _depth + 1)
                    if found is not None:
                        break
            if found is None:
                return None
            for attr in rest[1:]:
                if isinstance(found, ClassInfo):
                    found = self.find_method(found, attr)
                elif isinstance(found, ModuleInfo):
                    found = self.lookup(f"{found.name}.{attr}", _depth + 1)
                else:
                    return None
                if found is None:
                    return None
            return found
        return None

    def lookup_class(self, qualname: str) -> ClassInfo | None:
        found = self.lookup(qualname)
        return found if isinstance(found, ClassInfo) else None

    def lookup_function(self, qualname: str) -> FunctionInfo | None:
        found = self.lookup(qualname)
        return found if isinstance(found, FunctionInfo) else None

    # ---- classes ---------------------------------------------------------------------------------

    def mro(self, cls: ClassInfo) -> Iterator[ClassInfo]:
        """The class and its project bases, depth first (close enough to the C3 order for lookups)."""
        seen: set[str] = set()
        stack = [cls]
        while stack:
            current = stack.pop(0)
            if current.qualname in seen:
                continue
            seen.add(current.qualname)
            yield current
            for base in current.bases:
                found = self.lookup_class(base)
                if found is not None:
                    stack.append(found)

    def find_method(self, cls: ClassInfo, name: str, after: ClassInfo | None = None) -> FunctionInfo | None:
        skipping = after is not None
        for klass in self.mro(cls):
            if skipping:
                if klass.qualname == after.qualname:  # type: ignore[union-attr]
                    skipping = False
                continue
            if name in klass.methods:
                return klass.methods[name]
        return None

    def overrides(self, caller: FunctionInfo, name: str) -> tuple[FunctionInfo, ...]:
        """The methods `name` defined by the project's subclasses of `caller`'s class (directly or not)
        whose instances run `caller`: they inherit it, or the override of it they run calls `super()`.
        Where `self.name()` in `caller` can also go, in the project's order."""
        key = (caller.qualname, name)
        if key not in self._overrides:
            self._overrides[key] = self._find_overrides(caller, name)
        return self._overrides[key]

    def _find_overrides(self, caller: FunctionInfo, name: str) -> tuple[FunctionInfo, ...]:
        cls = caller.cls
        if cls is None:
            return ()
        if self._subclasses is None:
            self._subclasses = self._subclass_index()
        found: dict[str, FunctionInfo] = {}
        seen = {cls.qualname}
        stack = [cls.qualname]
        while stack:
            for sub in self._subclasses.get(stack.pop(), ()):
                if sub.qualname not in seen:
                    seen.add(sub.qualname)
                    stack.append(sub.qualname)
                    if name in sub.methods and self._runs(sub, caller):
                        found.setdefault(sub.methods[name].qualname, sub.methods[name])
        return tuple(sorted(found.values(), key=lambda f: (_or_first(self.rank(f.module.name)), f.qualname)))

    def _runs(self, sub: ClassInfo, method: FunctionInfo) -> bool:
        """Whether an instance of `sub` runs `method` of a base class: it inherits it, or the override it
        runs calls `super()` (a subclass's own `forward` that never does is not a way into the base's)."""
        runs = self.find_method(sub, method.name)
        if runs is None or runs is method:
            return runs is method
        return any(isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super"
                   for node in iter_nodes(runs.node))

    def _subclass_index(self) -> dict[str, list[ClassInfo]]:
        """Each project class's direct subclasses, made once from the modules analysed together (with
        `LazyModules`, the group's own: a file defining a subclass imports its base, so the grouping
        puts them together; the files loaded on demand for lookups are not listed, which would load
        them all)."""
        names = self.modules.given if isinstance(self.modules, LazyModules) else list(self.modules)
        index: dict[str, list[ClassInfo]] = {}
        for module_name in names:
            module = self.modules.get(module_name)
            for cls in module.classes.values() if module is not None else ():
                for base in cls.bases:
                    found = self.lookup_class(base)
                    if found is not None and found.qualname != cls.qualname:
                        index.setdefault(found.qualname, []).append(cls)
        return index

    def external_bases(self, cls: ClassInfo) -> Iterator[str]:
        for klass in self.mro(cls):
            for base in klass.bases:
                if self.lookup_class(base) is None:
                    yield base

    def _is(self, cls: ClassInfo, what: str) -> bool:
        key = (cls.qualname, what)
        if key not in self._kind_cache:
            check = is_external_module_base if what == "module" else is_external_optimizer_base
            # when torch itself is linted, nn.Module and Optimizer are classes of the project
            own = MODULE_CLASSES if what == "module" else OPTIMIZER_CLASSES
            self._kind_cache[key] = any(check(base) for base in self.external_bases(cls)) or any(
                name in own for klass in self.mro(cls) for name in self.qualnames(klass))
        return self._kind_cache[key]

    def qualnames(self, cls: ClassInfo) -> list[str]:
        """A class's qualified name, and the same under each other name its module is imported by."""
        module = cls.module.name
        rest = cls.qualname[len(module):]
        others = (alias for alias in self._aliases_of.get(module, ()) if alias not in self.modules)
        return [cls.qualname, *(alias + rest for alias in others)]

    def is_module_class(self, cls: ClassInfo) -> bool:
        return self._is(cls, "module")

    def is_optimizer_class(self, cls: ClassInfo) -> bool:
        return self._is(cls, "optimizer")

    def is_autograd_function_class(self, cls: ClassInfo) -> bool:
        return any(base in AUTOGRAD_FUNCTION_BASES for base in self.external_bases(cls)) or any(
            name in AUTOGRAD_FUNCTION_BASES for klass in self.mro(cls) for name in self.qualnames(klass))

    def functions(self) -> Iterator[FunctionInfo]:
        for module in self.modules.values():
            yield from module.functions.values()
            for cls in module.classes.values():
                yield from cls.methods.values()
