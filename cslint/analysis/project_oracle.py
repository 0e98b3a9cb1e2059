"""What inference needs to know beyond the function it walks: callees' return kinds, the kinds of a class's
attributes (read by analysing the methods that set them), optimizer state and param-group entries, the
functions a class keeps in a table."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

import libcst as cst

from cslint.analysis.index import ClassInfo, FunctionInfo
from cslint.analysis.inference import FunctionInference
from cslint.analysis.kinds import STATIC, TENSOR, Kind, fixed_before_tracing, join, obj
from cslint.analysis.optimizer_entries import group_tensor_entries, state_entry_kinds
from cslint.analysis.factories import factory_classes
from cslint.analysis.project import Project
from cslint.analysis.signatures import all_params, first_param, signature_kind
from cslint.analysis.step_functions import function_table_kind
from cslint.analysis.walk import iter_nodes

if TYPE_CHECKING:
    from cslint.analysis.reuse import KeptAnalyses

_Answer = TypeVar("_Answer")


def _group_entries_of(klass: ClassInfo) -> set[str]:
    return group_tensor_entries([m.node for m in klass.methods.values()])


def _state_entries_of(klass: ClassInfo, tensor_group_keys: frozenset[str]) -> dict[str, Kind | None]:
    return state_entry_kinds([m.node for m in klass.methods.values()], tensor_group_keys)


# Methods whose `self.x = ...` assignments define instance attributes (analysing every method of every
# class costs more than the rest of the analysis; attributes are nearly always set in these).
ATTRIBUTE_SETTING_METHODS = ("__init__", "__post_init__", "__setstate__", "reset", "_reset", "init", "_init",
                             "setup", "build", "_build", "forward", "preinitialize")

# Methods that run before any step: what they compute from tensor data is a constant at trace time
CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__setstate__"})


class ProjectOracle:
    """What inference needs to know beyond the function: callees' return kinds, class attributes."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.returns: dict[str, Kind] = {}
        self._attributes: dict[str, dict[str, Kind]] = {}
        self._computing: set[str] = set()
        self._state_entries: dict[str, dict[str, Kind]] = {}
        self._own_state_entries: dict[tuple[str, frozenset[str]], dict[str, Kind | None]] = {}
        self._function_tables: dict[str, Kind | None] = {}
        self._group_entries: dict[str, frozenset[str]] = {}
        # an editor's analyses kept between runs (reuse.KeptAnalyses): the methods read for `attributes`
        # are analysed through it too, so a class is not read again on every keystroke
        self.kept: KeptAnalyses | None = None

    def return_kind(self, func: FunctionInfo) -> Kind | None:
        """What the function returns for its callers together, once analysed; before, for a factory (one that
        returns an instance of one of the project's classes on every path: factories.py), that instance."""
        known = self.returns.get(func.qualname)
        if known is not None:
            return known
        made = factory_classes(self.project, func)
        if not made:
            return None
        kind = self.self_kind(made[0])
        for cls in made[1:]:
            kind = join(kind, self.self_kind(cls))
        return kind

    def call_return(self, qualname: str, given: dict[str, Kind]) -> Kind | None:
        """What the project function returns for one call's arguments, when that can be told apart from
        what it returns for all its callers together (`return_kind`); None when it cannot."""
        return None

    def self_kind(self, cls: ClassInfo) -> Kind:
        if self.project.is_optimizer_class(cls):
            return obj("optimizer", cls.qualname)
        if self.project.is_module_class(cls):
            return obj("module", cls.qualname)
        return obj("object", cls.qualname)

    def state_entries(self, cls: ClassInfo) -> dict[str, Kind]:
        """Optimizer-state entries that every method of the optimizer only ever sets to Python numbers
        (`state['step'] = 0`, `state['v'] = torch.sum(d * d).item()`): Python values wherever they are read,
        in `step()` or a helper handed the state, not tensors."""
        found = self._state_entries.get(cls.qualname)
        if found is None:
            merged: dict[str, Kind | None] = {}
            tensor_group_keys = self.group_entries(cls)
            for klass in self.project.mro(cls):  # each class's own assignments are read once per run
                own = self._own_state_entries.get((klass.qualname, tensor_group_keys))
                if own is None:
                    own = self._own_state_entries[klass.qualname, tensor_group_keys] = self._of_methods(
                        "state entries", klass, partial(_state_entries_of, klass, tensor_group_keys), tensor_group_keys)
                for key, kind in own.items():
                    old = merged.get(key, kind)
                    merged[key] = None if kind is None or old is None else join(old, kind)
            found = self._state_entries[cls.qualname] = {k: v for k, v in merged.items() if v is not None}
        return found

    def group_entries(self, cls: ClassInfo) -> frozenset[str]:
        """Param-group entries the optimizer (or a base) stores a tensor into: tensors wherever they are read."""
        found = self._group_entries.get(cls.qualname)
        if found is None:
            found = self._group_entries[cls.qualname] = frozenset().union(*(self._of_methods(
                "group entries", klass, partial(_group_entries_of, klass)) for klass in self.project.mro(cls)))
        return found

    def _of_methods(self, question: str, klass: ClassInfo, answer: Callable[[], _Answer],
                    extra: Hashable = None) -> _Answer:
        """`answer()`, read from the class's methods alone: in an editor, as an earlier analysis answered it
        for methods of the same text (every optimizer class of the project is asked on every keystroke)."""
        return answer() if self.kept is None else self.kept.class_answer(question, klass, answer, extra)

    def instance_kind(self, cls: ClassInfo) -> Kind:
        return self.self_kind(cls)

    def function_table(self, cls_name: str) -> Kind | None:
        """What subscripting an instance gives when the class (or a base) keeps a dict of functions as a class
        attribute (`_global_mapping = {"sdpa": sdpa_attention, ...}`): one of those functions."""
        if cls_name not in self._function_tables:
            cls = self.project.lookup_class(cls_name)
            found: Kind | None = None
            for klass in self.project.mro(cls) if cls is not None else ():
                for entries in klass.function_tables.values():
                    kind = function_table_kind(self.project, klass.module, entries)
                    if kind is not None:
                        found = kind if found is None else join(found, kind)
            self._function_tables[cls_name] = found
        return self._function_tables[cls_name]

    def attributes(self, cls_name: str) -> dict[str, Kind]:
        """Kinds of `self.<attr>` as the class's methods assign them (joined over all assignments)."""
        if cls_name in self._attributes:
            return self._attributes[cls_name]
        cls = self.project.lookup_class(cls_name)
        if cls is None or cls_name in self._computing:
            return {}
        self._computing.add(cls_name)
        merged: dict[str, Kind] = {}
        for klass in reversed(list(self.project.mro(cls))):
            for method in klass.methods.values():
                if not method.name.startswith(ATTRIBUTE_SETTING_METHODS) or not _sets_own_attributes(method):
                    continue
                # constructor and setup arguments are configuration; forward's are tensors
                unannotated = TENSOR if method.name == "forward" else STATIC
                params = {p.name.value: signature_kind(p, unannotated) for p in all_params(method.node)}
                params[first_param(method.node) or "self"] = self.self_kind(cls)
                analysis = self.kept.analyse(self.project, self, method, params, {}, None) if self.kept is not None \
                    else FunctionInference(self.project, self, method, params).run()
                constructed = method.name in CONSTRUCTORS
                for key, kind in analysis.attribute_assignments.items():
                    kind = fixed_before_tracing(kind) if constructed else kind
                    merged[key] = join(merged[key], kind) if key in merged else kind
        self._computing.discard(cls_name)
        self._attributes[cls_name] = merged
        return merged


_REGISTRATIONS = frozenset({"register_buffer", "register_parameter", "add_module"})


_SETS_OWN: weakref.WeakKeyDictionary[FunctionInfo, bool] = weakref.WeakKeyDictionary()


def _sets_own_attributes(method: FunctionInfo) -> bool:
    """Whether a method may set an attribute of its instance (`self.x = ...`, `self.x["k"] += ...`,
    `for self.i in ...`, `self.register_buffer(...)`, in a nested function too): one that does not (a forward
    that only reads them) adds nothing to `attributes`, and is not analysed for it. A function of the
    method's text, which its index entry keeps: an editor asks it of every class on every keystroke."""
    sets = _SETS_OWN.get(method)
    if sets is None:
        sets = _SETS_OWN[method] = _walk_sets_own_attributes(method)
    return sets


def _walk_sets_own_attributes(method: FunctionInfo) -> bool:
    node = method.node
    own = first_param(node) if not method.is_static_method else None
    if own is None:
        return False  # no receiver: the analysis binds no `self.<attr>`
    for part in iter_nodes(node.body):
        kind = type(part)
        if kind is cst.Assign:
            targets: list[cst.CSTNode] = [t.target for t in part.targets]  # type: ignore[attr-defined]
        elif kind in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr):
            targets = [part.target]  # type: ignore[attr-defined]
        elif kind is cst.WithItem and part.asname is not None:  # type: ignore[attr-defined]
            targets = [part.asname.name]  # type: ignore[attr-defined]
        elif kind is cst.Call:
            func = part.func  # type: ignore[attr-defined]
            if type(func) is cst.Attribute and func.attr.value in _REGISTRATIONS and _is_name(func.value, own):
                return True
            continue
        else:
            continue
        for target in targets:
            if any(type(n) is cst.Attribute and _is_name(n.value, own) for n in iter_nodes(target)):
                return True
    return False


def _is_name(node: cst.CSTNode, name: str) -> bool:
    return type(node) is cst.Name and node.value == name
