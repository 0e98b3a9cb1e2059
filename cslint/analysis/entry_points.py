"""A library's entry points: the functions a user's step can call, traced as roots when the project linted
has no step of its own.

A package such as an ODE solver or a graph library holds no training step: the user's step calls its public
functions (`odeint(field, y0, t)`, `to_dense_batch(x, batch)`) and the methods of its public classes
(`solver.integrate(t)`), and everything those call runs in the step's trace. With no step in view, nothing
would reach them. So when the run has no step of its own (`Settings.entry_points`, decided from the
project's imports by engine/target_inference.py), each public function and each public method of a public
class in the modules searched for roots is a root, unless its structure says it runs at construction or
configuration time, or outside any step:

- a name with a leading underscore (private helpers, `__init__`, `__repr__` and the other dunders): a
  private helper is traced when an entry point calls it, as every callee is;
- `extra_repr` and `reset_parameters` (what `nn.Module` calls from its constructor and its printing),
  properties (read, not called), and classmethods named `from_*` (alternative constructors);
- a function that rebinds a module global (`global _VALIDATION_ENABLED`): a setter of the module's
  configuration, called around steps, not in them;
- a `Dataset` subclass's methods (torch.utils.data's loaders call them, in worker processes);
- the functions of a script (a module with an `if __name__ == "__main__":` block, or one that imports
  `argparse`) and of a test file (`test_*.py`, `*_test.py`, `conftest.py`), and functions named `test_*`;
- a function every caller of which in view runs around steps (`_Callers`): a kernel builder only an
  `__init__` calls, a helper only a `Dataset`'s or a sampler's methods call, one called at import time.
  Callers are read from the text by name (call_names.py); a function with no caller in view stays one.

An entry point's inputs are unknown, not assumed tensors (param_kinds.helper_param_kinds with no caller):
a finding in it rests on what its body shows (a torch op's result, a tensor method, a `Tensor` annotation,
a parameter or buffer of its module).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

import libcst as cst

from cslint.analysis.call_names import IMPORT_TIME, CallNames
from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis.project import Project

REASON = "library entry point"  # the start of an entry point's reason (`TracedFunction.reason`)

# Methods nn.Module runs while it is built or printed.
CONSTRUCTION_METHODS = frozenset({"extra_repr", "reset_parameters"})
# Methods that build an instance: they run where its class is called
BUILDERS = frozenset({"__init__", "__new__", "__post_init__"})
# Methods that run around steps wherever they are defined: printing, unpickling, class definition, and
# what nn.Module runs while it is built
AROUND_STEPS = CONSTRUCTION_METHODS | {"__repr__", "__str__", "__setstate__", "__init_subclass__", "__set_name__"}
_MAIN_GUARD = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.MULTILINE)
_GLOBAL = re.compile(r"^[ \t]+global[ \t]", re.MULTILINE)
_CLI_IMPORT = re.compile(r"^\s*(?:import\s+argparse\b|from\s+argparse\s+import\b)", re.MULTILINE)


def entry_points(project: Project, modules: Iterable[ModuleInfo]) -> Iterator[tuple[FunctionInfo, str]]:
    """The entry points of `modules`, each with the reason it is a root."""
    modules = list(modules)
    callers = _Callers(project, modules)
    for module in modules:
        if _outside_steps(module):
            continue
        for func in module.functions.values():
            if _public(func) and not callers.only_around_steps(func):
                yield func, f"{REASON}: public function {func.name}, which a user's step may call"
        for cls in module.classes.values():
            if not _public_name(cls.name) or _loaded_by_data_loaders(project, cls):
                continue
            for func in cls.methods.values():
                if _public(func) and not callers.only_around_steps(func):
                    yield func, f"{REASON}: public method {cls.name}.{func.name}, which a user's step may call"


class _Callers:
    """Whether every caller a function has in view runs around steps, not in them: an nn.Module's constructor
    (`__init__` and the methods nn.Module runs while it is built; a plain class's constructor when every call of
    the class runs around steps), a method of a class torch.utils.data's
    loaders drive (a `Dataset`, a `DataLoader`, a `Sampler`), a script's or a test's function, a setter of
    module configuration, code run at import (module level, a class body), or a function whose own callers
    are all such. A function with no caller in view is not settled by them: the user's step may call it."""

    def __init__(self, project: Project, modules: list[ModuleInfo]) -> None:
        self.project = project
        self.modules = modules
        self._names: CallNames | None = None
        self._known: dict[str, bool] = {}

    def only_around_steps(self, func: FunctionInfo) -> bool:
        key = func.qualname
        if key not in self._known:
            self._known[key] = False  # a cycle of calls: not settled by it
            self._known[key] = self._decide(func)
        return self._known[key]

    def _decide(self, func: FunctionInfo) -> bool:
        if self._names is None:
            self._names = CallNames(self.modules)
        if self._names.handed_on(func.name):  # a callback: called where the value goes
            return False
        return self._only_called_around_steps(func.name, lambda caller: caller is func)

    def _only_called_around_steps(self, name: str, inside: Callable[[FunctionInfo | str], bool]) -> bool:
        """`name` has call sites (other than those `inside` the callee itself) and every one runs around steps."""
        if self._names is None:
            self._names = CallNames(self.modules)
        sites = [site for site in self._names.sites(name) if not inside(site.caller)]
        return bool(sites) and all(self._around_steps(site.caller, site.module) for site in sites)

    def _around_steps(self, caller: FunctionInfo | str, module: ModuleInfo) -> bool:
        if caller == IMPORT_TIME:
            return True
        if not isinstance(caller, FunctionInfo):
            return False  # a call in a file that cannot say where
        if _outside_steps(module) or _sets_module_state(caller):
            return True
        cls = caller.cls
        if cls is not None and _loaded_by_data_loaders(self.project, cls):
            return True
        if caller.name in AROUND_STEPS:
            return True
        if caller.name in BUILDERS and cls is not None:
            # an nn.Module is built before the steps that run it; an instance of a plain class may be made in a
            # step (a loss's helper object), so its constructor runs where the class is called
            return self.project.is_module_class(cls) or self._class_made_around_steps(cls)
        return self.only_around_steps(caller)

    def _class_made_around_steps(self, cls: ClassInfo) -> bool:
        key = f"class:{cls.qualname}"
        if key not in self._known:
            self._known[key] = False  # a cycle of calls: not settled by it
            self._known[key] = self._only_called_around_steps(
                cls.name, lambda caller: isinstance(caller, FunctionInfo) and caller.cls is cls)
        return self._known[key]


def is_entry_point(reason: str) -> bool:
    return reason.startswith(REASON)


def _public_name(name: str) -> bool:
    return not name.startswith("_")


def _public(func: FunctionInfo) -> bool:
    if not _public_name(func.name) or func.name in CONSTRUCTION_METHODS or func.name.startswith("test_"):
        return False
    if func.is_property or any(d.rsplit(".", 1)[-1] in ("setter", "deleter") for d in func.decorators):
        return False
    if func.name.startswith("from_") and any(d.rsplit(".", 1)[-1] == "classmethod" for d in func.decorators):
        return False
    return not _sets_module_state(func)


def _sets_module_state(func: FunctionInfo) -> bool:
    """The function declares a `global`: read from its text, so that finding entry points parses nothing."""
    if func.span is not None:
        return bool(_GLOBAL.search(func.module.source, func.span.start, func.span.end))
    return any(isinstance(s, cst.Global) for line in func.node.body.body if isinstance(line, cst.SimpleStatementLine)
               for s in line.body)


def _outside_steps(module: ModuleInfo) -> bool:
    """A script, a command-line module or a test file: its functions run on the host, around any step."""
    filename = module.path.name
    if filename.startswith("test_") or filename.endswith("_test.py") or filename == "conftest.py":
        return True
    return bool(_MAIN_GUARD.search(module.source) or _CLI_IMPORT.search(module.source))


def _loaded_by_data_loaders(project: Project, cls: ClassInfo) -> bool:
    return any(base.startswith("torch.utils.data.") for base in project.external_bases(cls))
