"""Module-level objects a traced step function uses, and the kinds of that function's parameters.

A training script builds its objects at module level and traces one step function:

    model = GPT(config)
    compiled = cstorch.compile(model, backend)
    optimizer = AdamW(model.parameters(), lr=1e-4)

    @cstorch.trace
    def training_step(batch):
        loss = compiled(batch["input_ids"])
        loss.backward()
        optimizer.step()

Inside `training_step`, `compiled` and `optimizer` are globals. Knowing which class each was built from
lets inference follow `compiled(...)` into `GPT.forward` and `optimizer.step()` into `AdamW.step`, so
findings there carry the chain from the step function. Only constructions are recorded (project classes,
torch modules/optimizers/schedulers/grad scalers, and `compile`/`.to()` wrappers around them): any other
global stays a static value, as before.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import libcst as cst

from cslint.analysis.bindings import Binding, Value, cst_bindings, cst_value
from cslint.analysis.function_tables import Table
from cslint.analysis.imports import dotted_name
from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis import torch_api as api
from cslint.analysis.kinds import (
    FLOAT64, FLOAT64_DTYPE, MODULE, STATIC, TENSOR, Kind, Tag, element_of, is_float64, join, obj, sequence_of,
    tensor,
)
from cslint.analysis.project import Project
from cslint.core.targets import trace_wrappers

# Calls that return the model they are given (compiled or moved, still the same forward).
MODEL_WRAPPERS = frozenset({"torch.compile", "cerebras.pytorch.compile", "torch_xla.compile"})
# Methods of a module that return the module itself.
SELF_RETURNING_METHODS = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "bfloat16",
                                    "requires_grad_", "apply", "share_memory"})
LR_SCHEDULER_PREFIXES = ("torch.optim.lr_scheduler.", "cerebras.pytorch.optim.lr_scheduler.")
GRAD_SCALER_CLASSES = frozenset({"torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.cpu.amp.GradScaler",
                                 "torch.amp.grad_scaler.GradScaler", "cerebras.pytorch.amp.GradScaler"})
OPTIMIZER_PREFIXES = ("torch.optim.", "cerebras.pytorch.optim.")
MODULE_PREFIXES = ("torch.nn.", "cerebras.pytorch.nn.")

# Parameter names of a step function that conventionally hold these objects (when nothing else says).
MODEL_PARAM_NAMES = frozenset({"model", "net", "network", "module", "compiled_model", "loss_fn", "criterion"})
OPTIMIZER_PARAM_NAMES = frozenset({"optimizer", "optim", "opt"})
SCHEDULER_PARAM_NAMES = frozenset({"scheduler", "lr_scheduler", "sched"})
SCALER_PARAM_NAMES = frozenset({"scaler", "grad_scaler", "loss_scaler"})

# per project: what a name is bound to depends on the files analysed with the module (an index is shared
# by the analyses of a run: see index_store.py)
_CACHE: weakref.WeakKeyDictionary[Project, dict[ModuleInfo, dict[str, Kind]]] = weakref.WeakKeyDictionary()


def external_object_kind(qualified: str) -> Kind | None:
    """The kind of an instance of a class outside the project, when it is one cslint tracks."""
    last = qualified.rsplit(".", 1)[-1]
    if not last[:1].isupper():
        return None
    if qualified in GRAD_SCALER_CLASSES:
        return obj("grad_scaler", qualified)
    if qualified.startswith(LR_SCHEDULER_PREFIXES):
        return obj("lr_scheduler", qualified)
    if qualified.startswith(OPTIMIZER_PREFIXES):
        return obj("optimizer", qualified)
    if qualified.startswith(MODULE_PREFIXES):
        return obj("module", qualified)
    return None


def class_instance_kind(project: Project, qualified: str) -> Kind | None:
    """The kind of `Cls(...)` for a project class or a tracked external class."""
    cls = project.lookup_class(qualified)
    if cls is None:
        known = external_object_kind(qualified)
        if known is None and project.libraries is not None:  # `scheduler = DDPMScheduler(...)`, installed
            found = project.libraries.lookup(qualified)
            if isinstance(found, ClassInfo):
                return project.libraries.instance_kind(found)
        return known
    if project.is_optimizer_class(cls):
        return obj("optimizer", cls.qualname)
    if project.is_module_class(cls):
        return obj("module", cls.qualname)
    return obj("object", cls.qualname)


def expression_kind(project: Project, module: ModuleInfo, expr: cst.BaseExpression,
                    known: dict[str, Kind]) -> Kind | None:
    return value_kind(project, module, cst_value(expr), known)


def value_kind(project: Project, module: ModuleInfo, value: Value, known: dict[str, Kind]) -> Kind | None:
    """The kind of a value summarised as bindings.py does: a tracked object (`known` holds the module's
    names bound so far), else None."""
    if value is None:
        return None
    if value[0] == "or":
        return value_kind(project, module, value[1], known)
    if value[0] == "name":
        return known.get(value[1]) or _function_named(project, module, value[1])
    if value[0] == "attribute":  # `TIME_DTYPE = torch.float64`
        return FLOAT64_DTYPE if module.imports.qualify(value[1]) in api.FLOAT64_DTYPES else None
    _, dotted, method, receiver, first, dtype = value
    made = _float64_constant(project, module, dotted, method, receiver, dtype, known)
    if made is not None:
        return made
    if method in SELF_RETURNING_METHODS:
        kind = value_kind(project, module, receiver, known)
        if kind is not None and kind.role == "module":
            return kind
    if dotted is None:
        return None
    qualified = module.imports.qualify(dotted)
    if qualified in MODEL_WRAPPERS and first:
        return value_kind(project, module, first[0], known)
    return class_instance_kind(project, qualified)


def _function_named(project: Project, module: ModuleInfo, name: str) -> Kind | None:
    """`_rfft = _new_rfft`: a function of the module, or of the project imported into it, under another name."""
    func = module.functions.get(name) or project.lookup_function(module.imports.qualify(name)) \
        if name in module.functions or name in module.imports.names else None
    return obj("function", func.qualname) if func is not None else None


def _float64_constant(project: Project, module: ModuleInfo, dotted: str | None, method: str | None, receiver: Value,
                      dtype: Value, known: dict[str, Kind]) -> Kind | None:
    """A float64 tensor made at import: `torch.tensor([...], dtype=torch.float64)` (or a dtype named by a module-level
    constant), `torch.tensor(v).double()`."""
    qualified = module.imports.qualify(dotted) if dotted is not None else ""
    if method is not None and method in api.FLOAT64_METHODS:
        made = value_kind(project, module, receiver, known) if receiver is not None else None
        return tensor(dtype=FLOAT64) if made is not None and made.tag is Tag.TENSOR or \
            receiver is not None and receiver[0] == "call" and _is_torch_call(module, receiver) else None
    if qualified.startswith("torch.") and dtype is not None:
        given = value_kind(project, module, dtype, known)
        return tensor(dtype=FLOAT64) if given is not None and is_float64(given) else None
    return None


def _is_torch_call(module: ModuleInfo, value: Value) -> bool:
    return value[1] is not None and module.imports.qualify(value[1]).startswith("torch.")


def _toplevel_assignments(module: ModuleInfo) -> list[Binding]:
    """Assignments at module level, including those under `if __name__ == "__main__":`: from the file's
    index when it has them (an `ast`-indexed file, never parsed with libcst for them), else its tree."""
    if module.object_bindings is not None:
        return module.object_bindings
    found: list[tuple[cst.Assign | cst.AnnAssign, bool]] = []

    def scan(statements: Sequence[cst.CSTNode], alternative: bool) -> None:
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine):
                found.extend((s, alternative) for s in stmt.body if isinstance(s, cst.Assign)
                             or isinstance(s, cst.AnnAssign) and s.value is not None)
            elif isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock):
                scan(stmt.body.body, alternative)
                if isinstance(stmt.orelse, cst.If):  # `elif`
                    scan([stmt.orelse], True)
                elif stmt.orelse is not None:
                    scan(_statements(stmt.orelse.body), True)
            elif isinstance(stmt, cst.Try):
                scan(_statements(stmt.body), alternative)
                for handler in stmt.handlers:
                    scan(_statements(handler.body), True)
                if stmt.orelse is not None:
                    scan(_statements(stmt.orelse.body), alternative)

    scan(module.tree.body, False)
    return cst_bindings(found)


def _statements(suite: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    """A block's statements; a one-line block's (`else: x = y`) as one line, as `ast` reads it."""
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    assert isinstance(suite, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(body=suite.body)]


def module_objects(project: Project, module: ModuleInfo) -> dict[str, Kind]:
    """Module-level names bound to objects cslint tracks; the last assignment of a name wins."""
    per_module = _CACHE.setdefault(project, {})
    cached = per_module.get(module)
    if cached is not None:
        return cached
    known: dict[str, Kind] = {}
    for targets, value in _toplevel_assignments(module):
        kind = value_kind(project, module, value, known)
        for target in targets:
            if value is not None and value[0] == "or":  # an `else` branch's: that or what it held before
                if kind is not None:
                    known[target] = join(known[target], kind) if target in known else kind
            elif kind is None:
                known.pop(target, None)
            else:
                known[target] = kind
    for name, entries in module.function_tables.items():  # `ATTENTION = {"eager": eager_attention, ...}`
        table = table_kind(project, module, entries)
        if table is not None:
            known[name] = table
    per_module[module] = known
    if project.libraries is not None:
        # instances of installed libraries' classes with what their construction decides (analysis/constructed.py),
        # whose walk of the module's top-level code reads the names bound so far from `known`
        known = per_module[module] = project.libraries.module_objects(project, module, known)
    return known


def table_kind(project: Project, module: ModuleInfo, entries: Table) -> Kind | None:
    """What these entries of a table of functions are (function_tables.py): where their keys are all used up,
    the project's functions they name (a call through it is followed into each); else a table of what lies
    below. None when they name none of the project's functions."""
    functions = {f.qualname for f in (project.lookup_function(module.imports.qualify(name))
                                      for path, name in entries if not path) if f is not None}
    below = [(path[1:], name) for path, name in entries if path]
    inner = table_kind(project, module, tuple(below)) if below else None
    found = obj("function", "|".join(sorted(functions))) if functions else None
    if inner is not None:
        inner = sequence_of(inner)
        found = inner if found is None else join(found, inner)
    return found


def function_table_kind(project: Project, module: ModuleInfo, entries: Table) -> Kind | None:
    """What a value of a table of functions is, called: one of the project's functions it names, None when it
    names none of them."""
    table = table_kind(project, module, entries)
    return element_of(table) if table is not None else None


def table_entries(project: Project, module: ModuleInfo, name: str) -> tuple[ModuleInfo, Table] | None:
    """The table of functions a name at the top of `module` is bound to, there or in the module it is imported
    from, with the module whose names its entries are written in."""
    table = module.function_tables.get(name)
    if table is not None:
        return module, table
    qualified = module.imports.names.get(name)
    if qualified is None or "." not in qualified:
        return None
    home, _, attr = qualified.rpartition(".")
    found = project.lookup(home)
    if not isinstance(found, ModuleInfo):
        return None
    table = found.function_tables.get(attr)
    return (found, table) if table is not None else None


def imported_object_kind(project: Project, qualified: str) -> Kind | None:
    """`ALL_ATTENTION: AttentionRegistry = AttentionRegistry()` in the module an import names."""
    module_name, _, name = qualified.rpartition(".")
    module = project.lookup(module_name) if module_name else None
    if not isinstance(module, ModuleInfo):
        return None
    return module_objects(project, module).get(name)


def global_kind(project: Project, module: ModuleInfo, name: str) -> Kind:
    """Kind of a name that is not local to the function: a tracked module-level object, else static."""
    return module_objects(project, module).get(name, STATIC)


def is_step_function(func: FunctionInfo) -> bool:
    """A function traced because of a decorator or wrapper (not a forward/step found by class)."""
    return func.step_function or func.cls is None and any(d in trace_wrappers() for d in func.decorators)


def _annotation_object_kind(project: Project, module: ModuleInfo, param: cst.Param) -> Kind | None:
    if param.annotation is None:
        return None
    dotted = dotted_name(param.annotation.annotation)
    if dotted is None:
        return None
    qualified = module.imports.qualify(dotted)
    kind = class_instance_kind(project, qualified)
    if kind is not None and kind.tag is Tag.OBJECT and kind.role != "object":
        return kind
    return None


def step_param_kind(project: Project, func: FunctionInfo, param: cst.Param, default: Kind,
                    fallback: Kind = TENSOR) -> Kind:
    """What a step function's parameter holds: its annotation's class, the module-level object of the
    same name (`def step(model, batch)` called as `step(model, batch)`), a conventional object name
    (`optimizer`, `scaler`), else `default` when the signature says what it is, else `fallback` (a batch
    of tensors; unknown for the parameters of a function holding a training loop)."""
    from_annotation = _annotation_object_kind(project, func.module, param)
    if from_annotation is not None:
        return from_annotation
    name = param.name.value
    if default.tag is not Tag.TENSOR:
        return default  # annotated or defaulted as a Python value
    same_name = module_objects(project, func.module).get(name)
    if same_name is not None:
        return same_name
    conventional = conventional_kind(name)
    if conventional is not None:
        return conventional
    return TENSOR if param.annotation is not None else fallback


def conventional_kind(name: str) -> Kind | None:
    if name in MODEL_PARAM_NAMES or name.endswith("_model"):
        return MODULE
    if name in OPTIMIZER_PARAM_NAMES or name.endswith("_optimizer"):
        return obj("optimizer")
    if name in SCHEDULER_PARAM_NAMES or name.endswith("_scheduler"):
        return obj("lr_scheduler")
    if name in SCALER_PARAM_NAMES:
        return obj("grad_scaler")
    return None
