"""Flow-sensitive tensor-value inference over one function body.

Walks the statements in order with an environment `name -> Kind`, joins environments where control
flow merges, and records the kind of every expression it evaluates. Rules read those kinds; the call
graph reads the call sites (callee, kinds of its arguments) to analyse helpers with what they are given.
Attribute and item paths (`self.count`, `state["step"]`) are tracked like names, so a value assigned
earlier in the same function is known where it is read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.imports import dotted_name
from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis.kinds import (
    BOOL_TENSOR, DYN_TENSOR, HOST, HOST_LIST, MODULE, STATIC, TENSOR, UNKNOWN, Kind, Tag, as_boolean, combine,
    element_of, is_none, join, obj, sequence_of, tensor, tuple_of,
)
from cslint.analysis.none_arguments import literal_nones, none_truth, with_none_arguments
from cslint.analysis.project import Project
from cslint.analysis.ranks import elementwise_rank, function_rank, method_rank, subscript_rank
from cslint.analysis.step_functions import function_table_kind, global_kind, imported_object_kind
from cslint.analysis.walk import iter_nodes
from cslint.analysis.tracing_guards import DYNAMO, LAZY, Guards, guard_text

if TYPE_CHECKING:
    from cslint.analysis.library_env import Summary

Env = dict[str, Kind]

# Methods whose `self.x = ...` assignments define instance attributes (analysing every method of every
# class costs more than the rest of the analysis; attributes are nearly always set in these).
ATTRIBUTE_SETTING_METHODS = ("__init__", "__post_init__", "__setstate__", "reset", "_reset", "init", "_init",
                             "setup", "build", "_build", "forward", "preinitialize")
# numpy.random functions that set up or read the generator rather than draw numbers
NUMPY_RANDOM_STATE = frozenset({"seed", "default_rng", "RandomState", "Generator", "get_state", "set_state",
                                "PCG64", "SeedSequence", "BitGenerator", "MT19937", "Philox", "SFC64"})
STATIC_FLAG_PREFIXES = ("use_", "return_", "output_", "is_", "has_", "do_", "enable_", "training")


# The `ctx` autograd passes a custom Function's `forward` and `backward`.
AUTOGRAD_CONTEXT = obj("autograd_context")


@dataclass
class CallSite:
    node: cst.Call
    callee: FunctionInfo
    args: dict[str, Kind]
    overriding: str | None = None  # reached as a subclass's override of this method (see _overrides_reached)


@dataclass
class FunctionAnalysis:
    func: FunctionInfo
    params: dict[str, Kind]
    kinds: dict[int, Kind] = field(default_factory=dict)
    bound_before: dict[int, dict[str, Kind]] = field(default_factory=dict)
    calls: dict[tuple[int, str], CallSite] = field(default_factory=dict)  # (id(call), callee)
    return_kind: Kind = STATIC
    returns_value: bool = False
    # Parts the tracer never runs (`if torch.compiler.is_compiling(): return` under torch.compile), and parts
    # that run traced after a tracing guard that does not hold for this tracer (id -> the guard's text).
    dead: set[int] = field(default_factory=set)
    unguarded: dict[int, str] = field(default_factory=dict)
    # calls into installed libraries (analysis/libraries.py): id(call) -> (function called, its summary)
    library_calls: dict[int, tuple[str, Summary]] = field(default_factory=dict)

    def kind(self, node: cst.CSTNode) -> Kind:
        return self.kinds.get(id(node), UNKNOWN)


def path_key(node: cst.BaseExpression) -> str | None:
    """`self.count` -> "self.count", `state["step"]` -> "state['step']"; None for other expressions."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = path_key(node.value)
        return f"{base}.{node.attr.value}" if base else None
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            base = path_key(node.value)
            return f"{base}[{index.value.value}]" if base else None
    return None


def string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        text = node.value
        for quote in ('"""', "'''", '"', "'"):
            if text.endswith(quote):
                start = text.find(quote)
                return text[start + len(quote): -len(quote)]
    return None


def annotation_kind(annotation: cst.Annotation | None) -> Kind | None:
    if annotation is None:
        return None
    return _annotated_kind(annotation.annotation)


# Generic containers by the position of their element type (`dict[str, Tensor]`: the values).
_CONTAINER_ANNOTATIONS = {
    "list": 0, "List": 0, "Sequence": 0, "MutableSequence": 0, "Iterable": 0, "Iterator": 0, "set": 0,
    "Set": 0, "frozenset": 0, "FrozenSet": 0, "Collection": 0, "deque": 0, "Deque": 0,
    "dict": -1, "Dict": -1, "Mapping": -1, "MutableMapping": -1, "OrderedDict": -1, "DefaultDict": -1,
    "defaultdict": -1, "tuple": None, "Tuple": None,
}
BARE_CONTAINER = sequence_of(UNKNOWN)  # `list`, `dict`, `Sequence`: nothing said about the elements


def _annotated_kind(node: cst.BaseExpression) -> Kind:
    """`Tensor` is a tensor; `dict[str, Tensor]`, `list[Tensor] | None`, `tuple[Tensor, ...]` are containers
    of tensors (`"labels" in inputs` asks about a key); `int`, `str`, a config class are Python values."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.BitOr:  # `X | None`
        return join(_annotated_kind(node.left), _annotated_kind(node.right))
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):  # a forward reference: `"Tensor"`
        text = string_value(node) if type(node) is cst.SimpleString else None
        try:
            return _annotated_kind(cst.parse_expression(text)) if text else STATIC
        except cst.ParserSyntaxError:
            return TENSOR if "Tensor" in text or "Parameter" in text else STATIC
    if type(node) is cst.Subscript:
        head = (dotted_name(node.value) or "").rsplit(".", 1)[-1]
        args = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        if head in ("Optional", "Union", "Annotated") and args:
            members = args[:1] if head == "Annotated" else args
            kind = _annotated_kind(members[0])
            for member in members[1:]:
                kind = join(kind, _annotated_kind(member))
            return kind
        if head in _CONTAINER_ANNOTATIONS and args:
            position = _CONTAINER_ANNOTATIONS[head]
            elements = [a for a in args if type(a) is not cst.Ellipsis]
            if position is None:  # `tuple[Tensor, int]`, `tuple[Tensor, ...]`
                return tuple_of(*map(_annotated_kind, elements)) if len(elements) == len(args) else \
                    sequence_of(_annotated_kind(elements[0]) if elements else UNKNOWN)
            return sequence_of(_annotated_kind(args[position]))
        if head in _CONTAINER_ANNOTATIONS:
            return BARE_CONTAINER
        if _annotated_kind(node.value).is_tensor or head in ("Callable", "type", "Type", "Literal", "ClassVar"):
            return _annotated_kind(node.value)
        # `Float[Tensor, "b n"]` (jaxtyping) is a tensor; `MyBox[int]` is not
        return TENSOR if any(_annotated_kind(a).is_tensor for a in args) else STATIC
    name = dotted_name(node)
    if name is not None:
        last = name.rsplit(".", 1)[-1]
        if "Tensor" in last or "Parameter" in last:
            return BOOL_TENSOR if last == "BoolTensor" else TENSOR
        if last in _CONTAINER_ANNOTATIONS:
            return BARE_CONTAINER
    return STATIC  # int, str, None, a config object or other user class: its attributes are static


def _python_literals(node: cst.BaseExpression | None) -> bool:
    """`[1, 2, 2]`, `("a", -1)`: a non-empty list, tuple or set of number and string literals."""
    if type(node) not in (cst.List, cst.Tuple, cst.Set) or not node.elements:  # type: ignore[union-attr]
        return False
    for element in node.elements:  # type: ignore[union-attr]
        value = element.value
        if type(value) is cst.UnaryOperation:
            value = value.expression
        if type(value) not in (cst.Integer, cst.Float, cst.SimpleString):
            return False
    return True


def default_kind(param: cst.Param) -> Kind | None:
    default = param.default
    if default is None:
        return None
    if isinstance(default, cst.Name) and default.value == "None":
        name = param.name.value
        # `use_cache=None`, `return_dict=None`: flags, not optional tensors
        return STATIC if name.startswith(STATIC_FLAG_PREFIXES) else None
    return STATIC


def signature_kind(param: cst.Param, unannotated: Kind) -> Kind:
    """Kind of a parameter from its annotation or default, else `unannotated`. `*args` and `**kwargs` are
    containers of such values (the keys of `kwargs` are strings)."""
    from_annotation = annotation_kind(param.annotation)
    if param.star in ("*", "**"):
        return sequence_of(from_annotation if from_annotation is not None else unannotated)
    if from_annotation is not None:
        if from_annotation == BARE_CONTAINER and _python_literals(param.default):
            return sequence_of(STATIC)  # `patch_size: list = [1, 2, 2]`: the default tells what the elements are
        return from_annotation
    from_default = default_kind(param)
    return from_default if from_default is not None else unannotated


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
        self.kept: Any = None

    def return_kind(self, func: FunctionInfo) -> Kind | None:
        return self.returns.get(func.qualname)

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
                    own = self._own_state_entries[klass.qualname, tensor_group_keys] = state_entry_kinds(
                        [m.node for m in klass.methods.values()], tensor_group_keys)
                for key, kind in own.items():
                    old = merged.get(key, kind)
                    merged[key] = None if kind is None or old is None else join(old, kind)
            found = self._state_entries[cls.qualname] = {k: v for k, v in merged.items() if v is not None}
        return found

    def group_entries(self, cls: ClassInfo) -> frozenset[str]:
        """Param-group entries the optimizer (or a base) stores a tensor into: tensors wherever they are read."""
        found = self._group_entries.get(cls.qualname)
        if found is None:
            found = self._group_entries[cls.qualname] = frozenset().union(
                *(group_tensor_entries([m.node for m in klass.methods.values()]) for klass in self.project.mro(cls)))
        return found

    def instance_kind(self, cls: ClassInfo) -> Kind:
        return self.self_kind(cls)

    def function_table(self, cls_name: str) -> Kind | None:
        """What subscripting an instance gives when the class (or a base) keeps a dict of functions as a class
        attribute (`_global_mapping = {"sdpa": sdpa_attention, ...}`): one of those functions."""
        if cls_name not in self._function_tables:
            cls = self.project.lookup_class(cls_name)
            found: Kind | None = None
            for klass in self.project.mro(cls) if cls is not None else ():
                for values in klass.function_tables.values():
                    kind = function_table_kind(self.project, klass.module, values)
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
                params = {p.name.value: signature_kind(p, unannotated) for p in _all_params(method.node)}
                params[_first_param(method.node) or "self"] = self.self_kind(cls)
                analysis = self.kept.analyse(self.project, self, method, params, {}, None) if self.kept is not None \
                    else FunctionInference(self.project, self, method, params).run()
                for key, kind in analysis_attributes(analysis).items():
                    merged[key] = join(merged[key], kind) if key in merged else kind
        self._computing.discard(cls_name)
        self._attributes[cls_name] = merged
        return merged


_REGISTRATIONS = frozenset({"register_buffer", "register_parameter", "add_module"})


def _sets_own_attributes(method: FunctionInfo) -> bool:
    """Whether a method may set an attribute of its instance (`self.x = ...`, `self.x["k"] += ...`,
    `for self.i in ...`, `self.register_buffer(...)`, in a nested function too): one that does not (a forward
    that only reads them) adds nothing to `attributes`, and is not analysed for it."""
    node = method.node
    own = _first_param(node) if not method.is_static_method else None
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
            if any(type(n) is cst.Attribute and _is_name(n.value, own) for n in iter_nodes(target)):  # type: ignore[attr-defined]
                return True
    return False


def _is_name(node: cst.CSTNode, name: str) -> bool:
    return type(node) is cst.Name and node.value == name  # type: ignore[attr-defined]


def state_entry_kinds(methods: list[cst.FunctionDef],
                      tensor_group_keys: frozenset[str] = frozenset()) -> dict[str, Kind | None]:
    """Keys of `<...state...>['key'] = value` assignments: the Python number every value is (a literal:
    STATIC; a read of tensor data, `.item()` or `float(...)`: HOST), or None when some value is not one.
    An update computed only from Python numbers, param-group hyperparameters (on WSC `group['lr']` and the
    entries `tensor_group_keys` a tensor is stored into are traced tensors, the rest are Python) and such
    entries, itself included (`state['d'] = beta2 * state['d'] + (1.0 - beta2)`), is a Python number too."""
    kinds: dict[str, Kind | None] = {}
    reads: dict[str, set[str]] = {}  # the entries an update of each entry reads
    passed = _hyperparameters_passed(methods, tensor_group_keys)
    for method in methods:
        hyperparameters = _hyperparameter_names(method, tensor_group_keys, passed.get(method.name.value, frozenset()))
        for node in iter_nodes(method):
            if type(node) is not cst.Assign:
                continue
            for target in node.targets:  # type: ignore[attr-defined]
                key = _state_key(target.target)
                if key is None:
                    continue
                kind = _python_number_kind(node.value)  # type: ignore[attr-defined]
                if kind is None:
                    entries = _python_arithmetic_reads(node.value, hyperparameters,  # type: ignore[attr-defined]
                                                       tensor_group_keys)
                    if entries is not None:
                        reads.setdefault(key, set()).update(entries)
                        kind = STATIC  # Python arithmetic adds no tensor: the entries it reads decide
                old = kinds.get(key, kind) if key in kinds else kind
                kinds[key] = None if kind is None or old is None else join(old, kind)
    changed = True
    while changed:  # an entry computed from an entry that is not a Python number is not one either
        changed = False
        for key, entries in reads.items():
            kind = kinds[key]
            for entry in entries:
                read = kinds.get(entry)
                kind = None if kind is None or read is None else join(kind, read)
            if kind != kinds[key]:
                kinds[key] = kind
                changed = True
    return kinds


def _python_arithmetic_reads(value: cst.BaseExpression, hyperparameters: frozenset[str],
                             tensor_group_keys: frozenset[str]) -> set[str] | None:
    """The state entries arithmetic over Python numbers, hyperparameters and state entries reads, or None
    when it holds anything else."""
    kind = type(value)
    if kind in (cst.Integer, cst.Float) or (kind is cst.Name and value.value in hyperparameters):  # type: ignore[attr-defined]
        return set()
    if kind is cst.IfExp:  # `group['beta'] if group['beta'] is not None else beta2`: one of two values
        body = _python_arithmetic_reads(value.body, hyperparameters, tensor_group_keys)  # type: ignore[attr-defined]
        orelse = _python_arithmetic_reads(value.orelse, hyperparameters,  # type: ignore[attr-defined]
                                          tensor_group_keys)
        return None if body is None or orelse is None else body | orelse
    if kind is cst.UnaryOperation:
        return _python_arithmetic_reads(value.expression, hyperparameters,  # type: ignore[attr-defined]
                                        tensor_group_keys)
    if kind is cst.BinaryOperation:
        left = _python_arithmetic_reads(value.left, hyperparameters, tensor_group_keys)  # type: ignore[attr-defined]
        right = _python_arithmetic_reads(value.right, hyperparameters,  # type: ignore[attr-defined]
                                         tensor_group_keys)
        return None if left is None or right is None else left | right
    key = _state_key(value)
    if key is not None:
        return {key}
    return set() if _is_group_hyperparameter(value, tensor_group_keys) else None


def _hyperparameter_names(method: cst.FunctionDef, tensor_group_keys: frozenset[str],
                          passed: frozenset[str] = frozenset()) -> frozenset[str]:
    """Local names every binding of which in the method is a Python hyperparameter of a param group
    (`beta1, beta2 = group['betas']`, `eps = group['eps']`), not `lr` nor a tensor entry; `passed`: the
    method's parameters that every call gives such a value (`_hyperparameters_passed`)."""
    good: set[str] = set(passed)
    bad: set[str] = set()
    own = {id(p) for p in _all_params(method)}
    for node in iter_nodes(method):
        kind = type(node)
        if kind is cst.Param:
            if id(node) not in own or node.name.value not in passed:  # type: ignore[attr-defined]
                bad.add(node.name.value)  # type: ignore[attr-defined]
        elif kind is cst.Assign:
            hyper = _is_group_hyperparameter(node.value, tensor_group_keys)  # type: ignore[attr-defined]
            for target in node.targets:  # type: ignore[attr-defined]
                t = target.target
                names = [t] if type(t) is cst.Name else [e.value for e in t.elements] \
                    if type(t) in (cst.Tuple, cst.List) else []
                for name in names:
                    if type(name) is cst.Name:
                        (good if hyper else bad).add(name.value)
        elif kind in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.AsName):
            bound = node.target if kind is not cst.AsName else node.name  # type: ignore[attr-defined]
            bad.update(n.value for n in iter_nodes(bound) if type(n) is cst.Name)
    return frozenset(good - bad)


def _hyperparameters_passed(methods: list[cst.FunctionDef],
                            tensor_group_keys: frozenset[str]) -> dict[str, frozenset[str]]:
    """Per method of the class, the parameters that every call of it from the class's methods
    (`self.init_preconditioner(state, frequency=group['frequency'])`) gives a Python hyperparameter or a
    Python number, or leaves at a Python-number default: hyperparameters inside it, as the group entries they
    come from are (so an entry copied from one into the state is a Python number, the learning rate a tensor).
    A method no call in the class reaches has none: its callers are not known."""
    by_name = {m.name.value: m for m in methods}
    calls = [(caller, call) for caller in methods for call in _self_calls(caller, by_name)]
    passed: dict[str, frozenset[str]] = {}
    while True:  # a parameter handed on from a caller's parameter needs the caller's answer first
        names = {m.name.value: _hyperparameter_names(m, tensor_group_keys, passed.get(m.name.value, frozenset()))
                 for m in methods}
        found: dict[str, frozenset[str]] = {}
        for caller, call in calls:
            callee = call.func.attr.value  # type: ignore[attr-defined]
            given = _python_arguments(by_name[callee], call, names[caller.name.value], tensor_group_keys)
            found[callee] = given & found[callee] if callee in found else given
        if found == passed:
            return passed
        passed = found


def _self_calls(caller: cst.FunctionDef, methods: dict[str, cst.FunctionDef]) -> list[cst.Call]:
    """`self.<method>(...)` calls of the class's own methods in `caller`."""
    first = _first_param(caller)
    return [node for node in iter_nodes(caller) if type(node) is cst.Call
            and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name  # type: ignore[attr-defined]
            and node.func.value.value == first and node.func.attr.value in methods]  # type: ignore[attr-defined]


def _python_arguments(callee: cst.FunctionDef, call: cst.Call, hyperparameters: frozenset[str],
                      tensor_group_keys: frozenset[str]) -> frozenset[str]:
    """The parameters of `callee` this call gives a Python hyperparameter or number (or leaves at one)."""
    if any(arg.star for arg in call.args):
        return frozenset()  # `*args`, `**kwargs`: which value goes where is not known
    p = callee.params
    positional = [*p.posonly_params, *p.params]
    if not any(type(d.decorator) is cst.Name and d.decorator.value == "staticmethod" for d in callee.decorators):
        positional = positional[1:]
    values: dict[str, cst.BaseExpression | None] = {
        param.name.value: param.default for param in (*positional, *p.kwonly_params)}
    for i, arg in enumerate(call.args):
        if arg.keyword is not None:
            if arg.keyword.value in values:
                values[arg.keyword.value] = arg.value
        elif i < len(positional):
            values[positional[i].name.value] = arg.value
    return frozenset(name for name, value in values.items() if value is not None and (
        _python_number_kind(value) is STATIC
        or _python_arithmetic_reads(value, hyperparameters, tensor_group_keys) == set()))


def _is_group_hyperparameter(value: cst.BaseExpression, tensor_group_keys: frozenset[str]) -> bool:
    """`group['eps']`, `group['betas'][1]`: a param-group entry that is a Python value on WSC."""
    while type(value) is cst.Subscript and type(value.value) is cst.Subscript:  # type: ignore[attr-defined]
        value = value.value  # type: ignore[attr-defined]
    if type(value) is not cst.Subscript or len(value.slice) != 1 or not isinstance(value.slice[0].slice, cst.Index):
        return False
    key = string_value(value.slice[0].slice.value)
    base = cst.Module([]).code_for_node(value.value)
    return key is not None and key != "lr" and key not in tensor_group_keys and "group" in base and "state" not in base


def group_tensor_entries(methods: list[cst.FunctionDef]) -> set[str]:
    """Keys of `<...group...>['key'] = torch.<function>(...)`: a tensor stored into a param group (the masked
    fixes' `group["d"] = torch.where(proceed, d, group["d"])`), which later steps read back."""
    keys: set[str] = set()
    for method in methods:
        for node in iter_nodes(method):
            if type(node) is not cst.Assign or type(node.value) is not cst.Call:  # type: ignore[attr-defined]
                continue
            func = dotted_name(node.value.func)  # type: ignore[attr-defined]
            if func is None or not func.startswith("torch."):
                continue
            for target in node.targets:  # type: ignore[attr-defined]
                t = target.target
                if type(t) is cst.Subscript and len(t.slice) == 1 and isinstance(t.slice[0].slice, cst.Index):
                    key = string_value(t.slice[0].slice.value)
                    if key is not None and "group" in cst.Module([]).code_for_node(t.value):
                        keys.add(key)
    return keys


def _state_key(target: cst.BaseExpression) -> str | None:
    if type(target) is not cst.Subscript or len(target.slice) != 1:
        return None
    index = target.slice[0].slice
    key = string_value(index.value) if isinstance(index, cst.Index) else None
    base = cst.Module([]).code_for_node(target.value) if key is not None else ""
    return key if "state" in base else None


def _python_number_kind(value: cst.BaseExpression) -> Kind | None:
    if type(value) is cst.UnaryOperation:
        value = value.expression
    if type(value) in (cst.Integer, cst.Float) or (type(value) is cst.Name and value.value in ("True", "False")):
        return STATIC
    if type(value) is cst.Call:
        func = value.func
        if type(func) is cst.Attribute and func.attr.value == "item" and not value.args:
            return HOST
        if type(func) is cst.Name and func.value in ("float", "int"):
            return HOST
    return None


def _first_param(node: cst.FunctionDef) -> str | None:
    p = node.params
    positional = [*p.posonly_params, *p.params]
    return positional[0].name.value if positional else None


def analysis_attributes(analysis: FunctionAnalysis) -> dict[str, Kind]:
    return analysis.attribute_assignments  # type: ignore[attr-defined, no-any-return]


class FunctionInference:
    def __init__(self, project: Project, oracle: ProjectOracle, func: FunctionInfo, params: dict[str, Kind],
                 unannotated_param: Kind = TENSOR, keywords: dict[str, Kind] | None = None,
                 guards: Guards | None = None,
                 wrapped: tuple[tuple[str, ...], dict[str, Kind]] | None = None) -> None:
        """`keywords`: what callers pass through `**kwargs` by name, handed on where this function calls
        another with `**kwargs` (a `forward(*args, **kwargs)` wrapper passes its callers' kinds)."""
        self.project = project
        self.oracle = oracle
        self.func = func
        self.module: ModuleInfo = func.module
        self.result = FunctionAnalysis(func=func, params=params)
        self.result.attribute_assignments = {}  # type: ignore[attr-defined]
        self.self_name = _first_param(func.node) if func.cls is not None and not func.is_static_method else None
        self.unannotated_param = unannotated_param
        self.keywords = keywords or {}
        self.guards = guards
        # a decorator: the wrapped function's positional parameter names and kinds, which the wrapper it
        # defines (and returns) is called with
        self.wrapped = wrapped
        # the statement just analysed always leaves its block (a guard's taken `return`: True; the id of an `if`
        # a None decided: see _none_if)
        self._left: bool | int = False
        self._guard_note = ""  # ... or is a guard that does not hold here and whose body leaves: its text
        self._nested: dict[str, cst.FunctionDef] = {}  # local functions by name (see _nested_function)
        self._nested_pending: dict[int, tuple[cst.FunctionDef, Env]] = {}
        self._nested_active: set[int] = set()
        star_kwarg = func.node.params.star_kwarg
        self.star_kwarg = star_kwarg.name.value if isinstance(star_kwarg, cst.Param) else None
        # a parameter is None for this analysis (a library's, per call): tests on it decide branches, settled
        # once the function is done (`_settle_none_tests`)
        self._nones = any(is_none(kind) for kind in params.values())
        self._none_tests: dict[int, tuple[cst.If | cst.IfExp, set[bool | None]]] = {}
        self._none_rest: dict[int, set[int]] = {}  # after a decided `if x is None: return`: the rest of the block

    # ---- driver ----------------------------------------------------------------------------------

    def run(self) -> FunctionAnalysis:
        env: Env = dict(self.result.params)
        self._block(self.func.node.body, env)
        self._uncalled_nested_functions()
        if self._nones:
            self._settle_none_tests()
        return self.result

    def _settle_none_tests(self) -> None:
        """A branch that a test on a None decided the same way each time it was analysed (a loop analyses its
        body twice, and the name may be bound again in between) never runs."""
        dead = self.result.dead
        for key, (node, outcomes) in self._none_tests.items():
            if len(outcomes) != 1 or None in outcomes:
                continue
            holds = True in outcomes
            skipped = node.orelse if holds else node.body
            if skipped is not None:
                dead.add(id(skipped))
            if holds:
                dead.update(self._none_rest.get(key, ()))

    def _none_test(self, node: cst.If | cst.IfExp, env: Env) -> bool | None:
        """The truth of the test of `node` where names known to be None decide it (noted for the settling)."""
        known = none_truth(node.test, env)
        self._none_tests.setdefault(id(node), (node, set()))[1].add(known)
        return known

    def _record(self, node: cst.CSTNode, kind: Kind) -> Kind:
        kinds = self.result.kinds
        key = id(node)
        old = kinds.get(key)
        kinds[key] = kind if old is None or old is kind else join(old, kind)
        return kind

    # ---- statements ------------------------------------------------------------------------------

    def _block(self, block: cst.BaseSuite | Sequence[cst.BaseStatement], env: Env) -> None:
        if isinstance(block, cst.IndentedBlock):
            body: Sequence[cst.CSTNode] = block.body
        elif isinstance(block, cst.SimpleStatementSuite):
            body = block.body
        else:
            body = block  # type: ignore[assignment]
        for i, stmt in enumerate(body):
            self._statement(stmt, env)
            if self._left:  # after `if <guard that holds>: return`, the rest of the block never runs
                left, self._left = self._left, False
                rest = (id(rest) for rest in body[i + 1:])
                if left is True:
                    self.result.dead.update(rest)
                else:  # decided by a None: settled at the end
                    self._none_rest.setdefault(left, set()).update(rest)
                return
            if self._guard_note:  # after `if <guard that does not hold>: return`, the rest runs traced
                for rest in body[i + 1:]:
                    self.result.unguarded.setdefault(id(rest), self._guard_note)
                self._guard_note = ""

    def _statement(self, stmt: cst.CSTNode, env: Env) -> None:
        kind_of_stmt = type(stmt)  # exact types: isinstance() against libcst's ABCs is slow
        if kind_of_stmt is cst.SimpleStatementLine:
            for small in stmt.body:  # type: ignore[attr-defined]
                self._small(small, env)
        elif kind_of_stmt in _SMALL_STATEMENTS:
            self._small(stmt, env)  # type: ignore[arg-type]
        elif kind_of_stmt is cst.If:
            self._if(stmt, env)
        elif kind_of_stmt is cst.For:
            self._for(stmt, env)
        elif kind_of_stmt is cst.While:
            self._while(stmt, env)
        elif kind_of_stmt is cst.With:
            for item in stmt.items:
                kind = self.ev(item.item, env)
                if item.asname is not None:
                    self._bind(item.asname.name, kind if kind.is_tensor else UNKNOWN, env)
            self._block(stmt.body, env)
        elif kind_of_stmt in (cst.Try, cst.TryStar):
            self._try(stmt, env)
        elif kind_of_stmt is cst.FunctionDef:
            self._nested_function(stmt, env)
        elif kind_of_stmt is cst.Match:
            self.ev(stmt.subject, env)
            branches = []
            for case in stmt.cases:
                branch = dict(env)
                if case.guard is not None:
                    self.ev(case.guard, branch)
                self._block(case.body, branch)
                branches.append(branch)
            self._merge_into(env, branches + [dict(env)])

    def _small(self, stmt: cst.BaseSmallStatement, env: Env) -> None:
        kind_of_stmt = type(stmt)
        if kind_of_stmt is cst.Assign:
            kind = self.ev(stmt.value, env)
            for target in stmt.targets:
                self._bind(target.target, self._spread(stmt.value, kind, target.target), env)
        elif kind_of_stmt is cst.AnnAssign:
            if stmt.value is not None:
                kind = self.ev(stmt.value, env)
                self._bind(stmt.target, kind, env)
        elif kind_of_stmt is cst.AugAssign:
            old = self.ev(stmt.target, env)
            new = combine(old, self.ev(stmt.value, env))
            if old.tag in (Tag.OBJECT, Tag.SEQUENCE, Tag.UNKNOWN) and new.tag is Tag.UNKNOWN:
                new = old
            elif old.boolean and new.tag is Tag.TENSOR:  # `mask &= valid` updates the mask in place: still one
                new = as_boolean(new)
            self._bind(stmt.target, new, env, record=False)
        elif kind_of_stmt is cst.Expr:
            self.ev(stmt.value, env)
        elif kind_of_stmt is cst.Return:
            if stmt.value is not None:
                kind = self.ev(stmt.value, env)
                res = self.result
                res.return_kind = join(res.return_kind, kind) if res.returns_value else kind
                res.returns_value = True
        elif kind_of_stmt is cst.Assert:
            self.ev(stmt.test, env)
            if stmt.msg is not None:
                self.ev(stmt.msg, env)
        elif kind_of_stmt is cst.Raise:
            if stmt.exc is not None:
                self.ev(stmt.exc, env)

    def _spread(self, value: cst.BaseExpression, kind: Kind, target: cst.BaseExpression) -> Kind:
        """`grad, lr, beta1, beta2, state = p.grad, group["lr"], *group["betas"], self.state[p]`: the value's
        elements before the star from the start and after it from the end; the names between take the
        starred value's elements."""
        if kind.items is not None or type(value) is not cst.Tuple or type(target) not in (cst.Tuple, cst.List):
            return kind
        elements = value.elements
        stars = [i for i, e in enumerate(elements) if type(e) is cst.StarredElement]
        names = target.elements  # type: ignore[attr-defined]
        spread = len(names) - (len(elements) - 1)
        if len(stars) != 1 or spread < 0 or any(type(e) is cst.StarredElement for e in names):
            return kind
        kinds = [self.result.kind(e.value) for e in elements]
        star = stars[0]
        return tuple_of(*kinds[:star], *[element_of(kinds[star])] * spread, *kinds[star + 1:])

    def _merge_into(self, env: Env, branches: list[Env]) -> None:
        """Set `env` to the join of the branches' environments (each started as a copy of `env`)."""
        merged = dict(branches[0])
        for branch in branches[1:]:
            for key, kind in branch.items():
                old = merged.get(key)
                if old is None:
                    merged[key] = kind
                elif old is not kind:
                    merged[key] = join(old, kind)
        env.update(merged)

    def _if(self, stmt: cst.If, env: Env) -> None:
        self.result.bound_before.setdefault(id(stmt), dict(env))
        self.ev(stmt.test, env)
        decided = self.guards.value(self.module, stmt.test) if self.guards is not None else None
        if decided is not None:
            self._decided_if(stmt, env, decided)
            return
        if self._nones:
            known = self._none_test(stmt, env)
            if known is not None:
                self._none_if(stmt, env, known)
                return
        body_env = dict(env)
        self._narrow(stmt.test, body_env)
        else_env = dict(env)
        self._narrow(stmt.test, else_env, holds=False)
        narrowed = {key: (body_env[key], else_env[key]) for key in env
                    if body_env[key] is not env[key] or else_env[key] is not env[key]}
        self._block(stmt.body, body_env)
        if isinstance(stmt.orelse, cst.If):
            self._if(stmt.orelse, else_env)
        elif isinstance(stmt.orelse, cst.Else):
            self._block(stmt.orelse.body, else_env)
        before = {key: env[key] for key in narrowed}
        self._merge_into(env, [body_env, else_env])
        for key, (in_body, in_else) in narrowed.items():  # narrowed, not reassigned: what it was before the if
            if body_env.get(key) is in_body and else_env.get(key) is in_else:
                env[key] = before[key]
        if stmt.orelse is None and self.guards is not None and _leaves(stmt.body):
            self._none_after_guard(stmt.test, env)

    def _none_after_guard(self, test: cst.BaseExpression, env: Env) -> None:
        """After `if is_exporting() or (mask is not None and is_tracing(mask)): return False`, where the
        tracing predicate holds for this tracer, the test was false: `mask` is None (a Python value) in the
        rest of the block."""
        parts = [test]
        while parts and type(parts[-1]) is cst.BooleanOperation and type(parts[-1].operator) is cst.Or:
            last = parts.pop()
            parts += [last.left, last.right]  # type: ignore[attr-defined]
        for part in parts:
            conjuncts = [part]
            while type(conjuncts[0]) is cst.BooleanOperation and type(conjuncts[0].operator) is cst.And:
                first = conjuncts.pop(0)
                conjuncts[:0] = [first.left, first.right]  # type: ignore[attr-defined]
            open_ = [c for c in conjuncts if self.guards.value(self.module, c) is not True]  # type: ignore[union-attr]
            if len(open_) != 1 or len(conjuncts) < 2 or type(open_[0]) is not cst.Comparison:
                continue
            compared = open_[0]
            if len(compared.comparisons) == 1 and type(compared.comparisons[0].operator) is cst.IsNot and \
                    type(compared.comparisons[0].comparator) is cst.Name and \
                    compared.comparisons[0].comparator.value == "None":
                key = path_key(compared.left)
                if key is not None and key in env:
                    env[key] = STATIC

    def _decided_if(self, stmt: cst.If, env: Env, holds: bool) -> None:
        """An `if` on tracing predicates: only the branch the tracer takes runs. When that is the `else` (the
        guard does not hold for this tracer), what runs is noted with the guard, so a finding can say it."""
        if holds:
            if stmt.orelse is not None:
                self.result.dead.add(id(stmt.orelse))
            self._block(stmt.body, env)
            self._left = _leaves(stmt.body)
            return
        self.result.dead.add(id(stmt.body))
        text = guard_text(stmt.test)
        if isinstance(stmt.orelse, cst.If):
            self.result.unguarded[id(stmt.orelse)] = text
            self._if(stmt.orelse, env)
        elif isinstance(stmt.orelse, cst.Else):
            self.result.unguarded[id(stmt.orelse)] = text
            self._block(stmt.orelse.body, env)
        if _leaves(stmt.body):
            self._guard_note = text

    def _none_if(self, stmt: cst.If, env: Env, holds: bool) -> None:
        """An `if` that a None decides here: only the branch taken is analysed (which branch never runs is
        settled at the end: `_settle_none_tests`)."""
        if holds:
            self._block(stmt.body, env)
            if _leaves(stmt.body):
                self._left = id(stmt)
        elif isinstance(stmt.orelse, cst.If):
            self._if(stmt.orelse, env)
        elif isinstance(stmt.orelse, cst.Else):
            self._block(stmt.orelse.body, env)

    def _narrow(self, test: cst.BaseExpression, env: Env, holds: bool = True) -> None:
        """What `test` being `holds` says about a value: in `if isinstance(x, SomeCache):` x is that object,
        not a tensor (`past_key_values=None`); `torch.is_tensor(x)` / `isinstance(x, torch.Tensor)` make x
        a tensor where they hold and a Python value where they do not."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            self._narrow(test.expression, env, not holds)
            return
        if type(test) is cst.BooleanOperation and type(test.operator) is (cst.And if holds else cst.Or):
            self._narrow(test.left, env, holds)
            self._narrow(test.right, env, holds)
            return
        if type(test) is cst.BooleanOperation and self.guards is not None:
            # `mask is not None and is_tracing(mask)` false where the tracing predicate holds: mask is None
            sides = [test.left, test.right]
            undecided = [side for side in sides if self.guards.value(self.module, side) is not (
                type(test.operator) is cst.And)]
            if len(undecided) == 1:
                self._narrow(undecided[0], env, holds)
            return
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            compared = test.comparisons[0]
            if type(compared.comparator) is cst.Name and compared.comparator.value == "None" and \
                    type(compared.operator) in (cst.Is, cst.IsNot) and holds is (type(compared.operator) is cst.Is):
                key = path_key(test.left)
                if key is not None and key in env:
                    env[key] = STATIC  # None
            return
        if type(test) is not cst.Call or not test.args:
            return
        key = path_key(test.args[0].value)
        if key is None or key not in env:
            return
        callee = self.module.imports.resolve(test.func) if dotted_name(test.func) else None
        # Where a tensor test fails the value is a Python one. Where it holds, what was known stays: a known
        # Python value's tensor branch never runs, and an unknown value's is usually written with care
        # (`if differentiable and isinstance(beta2, Tensor):`).
        if callee in api.TENSOR_PREDICATES and len(test.args) == 1:
            if not holds:
                env[key] = STATIC
            return
        if not isinstance(test.func, cst.Name) or test.func.value != "isinstance" or len(test.args) != 2:
            return
        classes = test.args[1].value
        names = [e.value for e in classes.elements] if type(classes) is cst.Tuple else [classes]
        qualified = [self.module.imports.resolve(n) or dotted_name(n) or "" for n in names]
        if not qualified:
            return
        tensor_classes = [q.endswith(("Tensor", "Parameter")) for q in qualified]
        if all(tensor_classes):
            if not holds:
                env[key] = STATIC
        elif holds and not any(tensor_classes) and not any(q.startswith("torch.") for q in qualified):
            env[key] = obj("object")

    def _for(self, stmt: cst.For, env: Env) -> None:
        iter_kind = self.ev(stmt.iter, env)
        for _ in range(2):  # a second pass sees what the first iteration assigned
            loop_env = dict(env)
            self._bind(stmt.target, element_of(iter_kind), loop_env)
            self._block(stmt.body, loop_env)
            self._merge_into(env, [env, loop_env])
        if stmt.orelse is not None:
            self._block(stmt.orelse.body, env)

    def _while(self, stmt: cst.While, env: Env) -> None:
        for _ in range(2):
            self.ev(stmt.test, env)
            loop_env = dict(env)
            self._block(stmt.body, loop_env)
            self._merge_into(env, [env, loop_env])
        if stmt.orelse is not None:
            self._block(stmt.orelse.body, env)

    def _try(self, stmt: cst.Try | cst.TryStar, env: Env) -> None:
        body_env = dict(env)
        self._block(stmt.body, body_env)
        branches = [body_env]
        for handler in stmt.handlers:
            h_env = dict(env)
            if handler.name is not None:
                self._bind(handler.name.name, STATIC, h_env)
            self._block(handler.body, h_env)
            branches.append(h_env)
        self._merge_into(env, branches)
        if stmt.orelse is not None:
            self._block(stmt.orelse.body, env)
        if stmt.finalbody is not None:
            self._block(stmt.finalbody.body, env)

    def _nested_function(self, node: cst.FunctionDef, env: Env) -> None:
        """A local function is analysed where it is called, with what it is given there (a closure's
        `compute_span(input_length)` called with Python ints); one never called here (a callback handed
        to checkpointing) is analysed at the end with parameters as the enclosing function assumes."""
        name = node.name.value
        self._nested[name] = node
        self._nested_pending[id(node)] = (node, dict(env))
        env[name] = obj("nested", name)

    def _run_nested(self, node: cst.FunctionDef, params: Env, env: Env) -> Kind:
        if id(node) in self._nested_active:  # recursion: what it returns is not known yet
            return UNKNOWN
        self._nested_active.add(id(node))
        self._nested_pending.pop(id(node), None)
        inner = dict(env)
        inner.update(params)
        res = self.result
        saved = (res.return_kind, res.returns_value, self._left, self._guard_note)
        res.return_kind, res.returns_value = STATIC, False
        self._left, self._guard_note = False, ""
        self._block(node.body, inner)
        kind = res.return_kind if res.returns_value else STATIC
        res.return_kind, res.returns_value, self._left, self._guard_note = saved
        self._nested_active.discard(id(node))
        return kind

    def _call_nested(self, node: cst.Call, name: str, arg_kinds: list[Kind], env: Env) -> Kind:
        func = self._nested.get(name)
        if func is None:
            return _fallback(arg_kinds)
        p = func.params
        positional = [param.name.value for param in (*p.posonly_params, *p.params)]
        bound: Env = {}
        index = 0
        for arg, kind in zip(node.args, arg_kinds):
            if arg.keyword is not None:
                bound[arg.keyword.value] = kind
            elif arg.star:
                for pname in positional[index:]:
                    bound[pname] = element_of(kind)
                index = len(positional)
            elif index < len(positional):
                bound[positional[index]] = kind
                index += 1
        params = {param.name.value: bound[param.name.value] if param.name.value in bound
                  else signature_kind(param, UNKNOWN) for param in _all_params(func)}
        return self._run_nested(func, params, env)

    def _uncalled_nested_functions(self) -> None:
        while self._nested_pending:
            node, env = self._nested_pending.pop(next(iter(self._nested_pending)))
            unannotated = self.unannotated_param if self.wrapped is None else UNKNOWN
            params = {param.name.value: signature_kind(param, unannotated) for param in _all_params(node)}
            if self.wrapped is not None:  # `def wrapper(self, x, position_ids):` takes what the wrapped one is given
                positional, kinds = self.wrapped
                p = node.params
                for mine, theirs in zip((q.name.value for q in (*p.posonly_params, *p.params)), positional):
                    if theirs in kinds:
                        params[mine] = kinds[theirs]
                for name in params:
                    if name in kinds and name not in positional:
                        params[name] = kinds[name]
            self._run_nested(node, params, env)

    # ---- binding ---------------------------------------------------------------------------------

    def _bind(self, target: cst.BaseExpression, kind: Kind, env: Env, record: bool = True) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            star = next((i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement)), None)
            items = kind.items
            if items is not None and (len(items) != len(elements) if star is None else len(items) < len(elements) - 1):
                items = None
            for i, element in enumerate(elements):
                if i == star:  # `first, *rest, last = t`: what lies between the ends
                    middle = items[i: len(items) - (len(elements) - 1 - i)] if items is not None else None
                    self._bind(element.value, tuple_of(*middle) if middle is not None else
                               sequence_of(element_of(kind)), env)
                elif items is None:
                    self._bind(element.value, element_of(kind), env)
                else:  # before a star from the start, after it from the end
                    self._bind(element.value, items[i] if star is None or i < star else
                               items[len(items) - (len(elements) - i)], env)
            return
        if isinstance(target, cst.Subscript):
            self.ev(target.value, env)
            for element in target.slice:
                if isinstance(element.slice, cst.Index):
                    self.ev(element.slice.value, env)
        elif isinstance(target, cst.Attribute):
            self.ev(target.value, env)
        key = path_key(target)
        if key is None:
            return
        env[key] = kind
        if record:
            self._record(target, kind)
        if self.self_name and key.startswith(self.self_name + ".") and key.count(".") == 1:
            attrs = self.result.attribute_assignments  # type: ignore[attr-defined]
            attr = key.split(".", 1)[1]
            attrs[attr] = join(attrs[attr], kind) if attr in attrs else kind

    # ---- expressions -----------------------------------------------------------------------------

    def ev(self, node: cst.BaseExpression, env: Env) -> Kind:
        return self._record(node, self._ev(node, env))

    def _ev(self, node: cst.BaseExpression, env: Env) -> Kind:
        # dispatch on the exact type: isinstance() against libcst's ABC-based classes is slow
        handler = _EXPRESSION_HANDLERS.get(type(node))
        return handler(self, node, env) if handler is not None else STATIC  # literals, strings, ellipsis

    def _binary(self, node: cst.BinaryOperation, env: Env) -> Kind:
        left, right = self.ev(node.left, env), self.ev(node.right, env)
        result = combine(left, right)
        if result.tag is Tag.TENSOR:
            rank = elementwise_rank(node.operator, ((node.left, left), (node.right, right)))
            boolean = type(node.operator) in _BITWISE and (left.boolean or right.boolean)  # `mask & (x > 0)`
            return result if rank is None and not boolean else tensor(rank=rank, boolean=boolean)
        return result

    def _unary(self, node: cst.UnaryOperation, env: Env) -> Kind:
        operand = self.ev(node.expression, env)
        if type(node.operator) is cst.Not:
            return HOST if operand.is_data_dependent else combine(operand)
        return operand if operand.tag in (Tag.TENSOR, Tag.HOST) else combine(operand)

    def _boolean(self, node: cst.BooleanOperation, env: Env) -> Kind:
        left = self.ev(node.left, env)
        if type(node.left) not in (cst.Call, cst.UnaryOperation, cst.BooleanOperation):
            return join(left, self.ev(node.right, env))
        # the right side runs only where the left one is true (`and`) or false (`or`): in
        # `isinstance(norm, torch.Tensor) or norm != 1.0` the comparison is on a Python number
        right_env = dict(env)
        self._narrow(node.left, right_env, holds=type(node.operator) is cst.And)
        narrowed = {key for key, kind in right_env.items() if env.get(key) is not kind}
        right = self.ev(node.right, right_env if narrowed else env)
        if narrowed:  # what the right side binds (`:=`) stays bound
            env.update({key: kind for key, kind in right_env.items() if key not in narrowed})
        return join(left, right)

    def _ifexp(self, node: cst.IfExp, env: Env) -> Kind:
        self.ev(node.test, env)
        decided = self.guards.value(self.module, node.test) if self.guards is not None else None
        if decided is not None:  # `x if torch.jit.is_scripting() else y`: only one side is traced
            self.result.dead.add(id(node.orelse if decided else node.body))
            return self.ev(node.body if decided else node.orelse, env)
        if self._nones:
            known = self._none_test(node, env)
            if known is not None:  # the other side is settled at the end
                return self.ev(node.body if known else node.orelse, env)
        body_env, else_env = dict(env), dict(env)
        self._narrow(node.test, body_env)
        self._narrow(node.test, else_env, holds=False)
        return join(self.ev(node.body, body_env), self.ev(node.orelse, else_env))

    def _sequence(self, node: cst.Tuple | cst.List | cst.Set, env: Env) -> Kind:
        kinds = [self.ev(e.value, env) for e in node.elements]
        starred = [i for i, e in enumerate(node.elements) if type(e) is cst.StarredElement]
        if type(node) is cst.Tuple and not starred:
            return tuple_of(*kinds)
        if type(node) is cst.Tuple and len(starred) == 1 and kinds[starred[0]].items is not None:
            i = starred[0]  # `a, *group["betas"], b` with the starred value's positions known
            return tuple_of(*kinds[:i], *kinds[i].items, *kinds[i + 1:])
        elem = kinds[0] if kinds else UNKNOWN
        for k in kinds[1:]:
            elem = join(elem, k)
        return sequence_of(elem)

    def _dict(self, node: cst.Dict, env: Env) -> Kind:
        elem = UNKNOWN
        for element in node.elements:
            if type(element) is cst.DictElement:
                self.ev(element.key, env)
                value = self.ev(element.value, env)
            else:
                value = element_of(self.ev(element.value, env))
            elem = value if elem is UNKNOWN else join(elem, value)
        return sequence_of(elem)

    def _element_comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp, env: Env) -> Kind:
        inner = self._comprehension(node.for_in, env)
        return sequence_of(self.ev(node.elt, inner))

    def _dict_comprehension(self, node: cst.DictComp, env: Env) -> Kind:
        inner = self._comprehension(node.for_in, env)
        self.ev(node.key, inner)
        return sequence_of(self.ev(node.value, inner))

    def _named(self, node: cst.NamedExpr, env: Env) -> Kind:
        kind = self.ev(node.value, env)
        self._bind(node.target, kind, env)
        return kind

    def _fstring(self, node: cst.FormattedString, env: Env) -> Kind:
        for part in node.parts:
            if type(part) is cst.FormattedStringExpression:
                self.ev(part.expression, env)
        return STATIC

    def _starred(self, node: cst.StarredElement, env: Env) -> Kind:
        return self.ev(node.value, env)

    def _comprehension(self, for_in: cst.CompFor, env: Env) -> Env:
        inner = dict(env)
        current: cst.CompFor | None = for_in
        while current is not None:
            iter_kind = self.ev(current.iter, inner)
            self._bind(current.target, element_of(iter_kind), inner)
            for cond in current.ifs:
                self.ev(cond.test, inner)
            current = current.inner_for_in
        return inner

    def _name(self, node: cst.Name, env: Env) -> Kind:
        if node.value in env:
            return env[node.value]
        qualified = self.module.imports.names.get(node.value)
        if qualified is not None and isinstance(self.project.lookup(qualified), FunctionInfo):
            # `func = _single_tensor_sgd; func(...)`: remember which function, so the call is followed
            return obj("function", qualified)
        if qualified is not None:  # an object built at the top of the module it is imported from
            imported = self._object_in_module(qualified)
            if imported is not None:
                return imported
        # module-level objects (`model = Net()`) have their class; other globals, builtins, imports are static
        return self._global(node.value)

    def _object_in_module(self, qualified: str) -> Kind | None:
        """The kind of `pkg.mod.name` when it is an object built at the top of `pkg.mod` (its own method, so
        an analysis kept for reuse can record the answer: see reuse.py)."""
        return imported_object_kind(self.project, qualified)

    def _global(self, name: str) -> Kind:
        """The kind of a name at the top of this function's module."""
        return global_kind(self.project, self.module, name)

    def _is_import(self, node: cst.BaseExpression, env: Env) -> str | None:
        """Qualified name when `node` is a reference through an import (not shadowed by a local)."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head = dotted.split(".")[0]
        if head in env:
            return None
        return self.module.imports.resolve(node)

    def _attribute(self, node: cst.Attribute, env: Env) -> Kind:
        key = path_key(node)
        if key is not None and key in env:
            self.ev(node.value, env)
            return env[key]
        base = self.ev(node.value, env)
        attr = node.attr.value
        if base.tag is Tag.TENSOR:
            if attr in api.SHAPE_ATTRIBUTES and base.dynamic_shape:
                return HOST
            if attr in api.STATIC_TENSOR_ATTRIBUTES:
                return STATIC
            return base if attr in ("T", "mT", "H", "mH", "data", "real", "imag") else TENSOR
        if base.tag is Tag.OBJECT:
            return self._object_attribute(base, attr)
        if base.tag is Tag.HOST:
            return HOST
        if base.tag is Tag.SEQUENCE:
            return UNKNOWN
        return base  # STATIC stays static (config.hidden_size), UNKNOWN stays unknown

    def _object_attribute(self, base: Kind, attr: str) -> Kind:
        if base == AUTOGRAD_CONTEXT:
            if attr == "saved_tensors":
                return sequence_of(TENSOR)
            return sequence_of(STATIC) if attr == "needs_input_grad" else UNKNOWN
        if base.role == "optimizer":
            if attr == "param_groups":
                return sequence_of(obj("group"))
            if attr == "state":
                return obj("state_map")
            if attr == "defaults":
                return STATIC
        if base.cls:
            attrs = self.oracle.attributes(base.cls)
            if attr in attrs:
                return attrs[attr]
            cls = self.project.lookup_class(base.cls)
            method = self.project.find_method(cls, attr) if cls is not None else None
            if method is not None:  # `self.loss_map = {"ce": self.ce_loss, ...}`: remember which method
                return obj("method", method.qualname)
        if base.role == "module":
            if attr == "training":
                return STATIC
            if attr in ("weight", "bias", "running_mean", "running_var", "in_proj_weight"):
                return TENSOR
        return UNKNOWN

    def _subscript(self, node: cst.Subscript, env: Env) -> Kind:
        key = path_key(node)
        base = self.ev(node.value, env)
        index_kinds = []
        tensor_index = False
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                index_kinds.append(self.ev(element.slice.value, env))
                tensor_index = tensor_index or index_kinds[-1].tag is Tag.TENSOR
            else:
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        index_kinds.append(self.ev(part, env))
        if key is not None and key in env:
            return env[key]
        if base.tag is Tag.TENSOR:  # `mask[:, None]` is still a mask, `mask[idx]` a gather of one
            return tensor(rank=subscript_rank(base.rank, node.slice), boolean=base.boolean and not tensor_index)
        if base.tag is Tag.SEQUENCE:
            if base.items is not None and len(node.slice) == 1:
                index = node.slice[0].slice
                if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                    i = int(index.value.value)
                    if -len(base.items) <= i < len(base.items):
                        return base.items[i]
            if base.dynamic_shape:
                return element_of(base)
            return element_of(base)
        if base.tag is Tag.OBJECT:
            if base.role == "group":
                index = node.slice[0].slice if len(node.slice) == 1 else None
                name = string_value(index.value) if isinstance(index, cst.Index) else None
                if name == "lr":
                    return TENSOR
                if name == "params":
                    return sequence_of(TENSOR)
                cls = self.func.cls
                if name is not None and cls is not None and name in self.oracle.group_entries(cls):
                    return TENSOR
                return STATIC
            if base.role == "state_map":
                return obj("opt_state")
            if base.role == "opt_state":
                index = node.slice[0].slice if len(node.slice) == 1 else None
                name = string_value(index.value) if isinstance(index, cst.Index) else None
                cls = self.func.cls
                if name is not None and cls is not None and self.project.is_optimizer_class(cls):
                    return self.oracle.state_entries(cls).get(name, TENSOR)
                return TENSOR
            if base.role == "module":
                return MODULE
            return self.oracle.function_table(base.cls) or UNKNOWN  # `ATTENTION_FUNCTIONS[name]`
        if base.tag is Tag.HOST:
            return HOST
        if base.tag is Tag.STATIC:
            return combine(STATIC, *index_kinds) if any(k.tag is Tag.HOST for k in index_kinds) else STATIC
        return UNKNOWN

    def _comparison(self, node: cst.Comparison, env: Env) -> Kind:
        kinds = [self.ev(node.left, env)]
        for target in node.comparisons:
            kinds.append(self.ev(target.comparator, env))
        operators = [t.operator for t in node.comparisons]
        if all(isinstance(op, (cst.Is, cst.IsNot)) for op in operators):
            return STATIC
        if any(type(n) in _STRING_NODES for n in (node.left, *(t.comparator for t in node.comparisons))):
            return STATIC  # `layer_type == "full"`, `"labels" in inputs`: a question about strings or keys
        if all(isinstance(op, (cst.In, cst.NotIn)) for op in operators):
            # `"exp_avg" in state`, `k in config`: membership of a key; `x in tensor` reads values
            container = kinds[-1]
            if container.tag is Tag.TENSOR or kinds[0].tag is Tag.TENSOR:
                return HOST
            return HOST if kinds[0].tag is Tag.HOST else STATIC
        result = combine(*kinds)
        return BOOL_TENSOR if result.tag is Tag.TENSOR else result

    # ---- calls -----------------------------------------------------------------------------------

    def _call(self, node: cst.Call, env: Env) -> Kind:
        arg_kinds = [self.ev(arg.value, env) for arg in node.args]
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "apply":
            applied = self._autograd_function(func.value, env)
            if applied is not None:
                self._record(func, STATIC)
                return self._apply_autograd_function(node, *applied, arg_kinds)
        qualified = self._is_import(func, env)
        if qualified is not None and not (isinstance(func, cst.Attribute) and self._imported_object(func.value, env)):
            self._record(func, STATIC)
            kind = self._call_qualified(qualified, node, arg_kinds, env)
            if kind.tag is Tag.TENSOR and not kind.boolean and \
                    self._function_makes_mask(qualified, node, arg_kinds, env):
                return as_boolean(kind)
            return kind
        if isinstance(func, cst.Name) and func.value not in env:
            self._record(func, STATIC)
            return self._call_builtin(func.value, node, arg_kinds)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            imported = self._imported_object(func.value, env) if qualified is not None else None
            if imported is not None:  # `REGISTRY.get(...)` on an object imported from another module
                self._record(func.value, imported)
                self._record(func, UNKNOWN)
                return self._call_method(node, imported, method, arg_kinds, env)
            if self._is_super_call(func.value):
                return self._call_super(node, method, arg_kinds, env)
            receiver = self.ev(func.value, env)
            self._record(func, UNKNOWN)
            return self._call_method(node, receiver, method, arg_kinds, env)
        callee = self.ev(func, env)
        return self._call_value(node, callee, arg_kinds, env)

    # ---- masks: tensors of the bool dtype ------------------------------------------------------------

    def _dtype_argument(self, node: cst.Call) -> cst.BaseExpression | None:
        return next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "dtype"), None)

    def _function_makes_mask(self, qualified: str, node: cst.Call, arg_kinds: list[Kind], env: Env) -> bool:
        """`torch.isnan(x)`, `torch.tensor(m, dtype=torch.bool)`, `torch.flatten(mask)`."""
        dtype = self._dtype_argument(node)
        if dtype is not None:
            return self._is_import(dtype, env) == "torch.bool"
        if not qualified.startswith("torch."):
            return False
        name = qualified.rsplit(".", 1)[-1]
        if name in api.BOOLEAN_RESULT_CALLS:
            return True
        return name in api.DTYPE_PRESERVING_CALLS and bool(arg_kinds) and arg_kinds[0].boolean

    def _method_makes_mask(self, method: str, receiver: Kind, node: cst.Call, arg_kinds: list[Kind],
                           env: Env) -> bool:
        """`x.isnan()`, `m.bool()`, `x.to(torch.bool)`, `x.new_zeros(n, dtype=torch.bool)`; `mask.view(-1)` and
        `mask.to(device)` of a mask (not `x.to(torch.float32)`, nor `x.to(other)`, which takes its dtype)."""
        if method in api.BOOLEAN_RESULT_CALLS:
            return True
        dtype = self._dtype_argument(node)
        if dtype is not None:
            return self._is_import(dtype, env) == "torch.bool"
        if method in ("to", "type") and node.args and self._is_import(node.args[0].value, env) == "torch.bool":
            return True
        if not receiver.boolean:
            return False
        if method in api.DTYPE_PRESERVING_CALLS:
            return True
        if method not in api.DEVICE_MOVES:
            return False
        for arg, kind in zip(node.args, arg_kinds):
            if arg.keyword is not None:
                continue
            named = self._is_import(arg.value, env) or ""
            if kind.tag is Tag.TENSOR or named.startswith("torch.") and named != "torch.device":
                return False
        return True

    def _imported_object(self, node: cst.BaseExpression, env: Env) -> Kind | None:
        qualified = self._is_import(node, env)
        return self._object_in_module(qualified) if qualified is not None else None

    def _call_qualified(self, qualified: str, node: cst.Call, arg_kinds: list[Kind], env: Env) -> Kind:
        if self.guards is not None and self.guards.tracer == DYNAMO and qualified.startswith("numpy.random.") \
                and qualified.rsplit(".", 1)[-1] not in NUMPY_RANDOM_STATE:
            return TENSOR  # dynamo traces NumPy as tensors: a draw in the compiled step is a traced value
        target = self.project.lookup(qualified)
        if isinstance(target, FunctionInfo):
            return self._call_project_function(node, target, arg_kinds, receiver=None)
        if isinstance(target, ClassInfo):
            return self.oracle.instance_kind(target)
        if qualified in api.LAZY_HOST_CONSTANT_FUNCTIONS and self.guards is not None and self.guards.tracer == LAZY \
                and _host_constant(node, arg_kinds, of_lists=True):
            return STATIC
        known = known_external_kind(qualified, node, arg_kinds)
        if known is not None:
            return known
        libraries = self.project.libraries
        found = libraries.lookup(qualified) if libraries is not None else None
        if isinstance(found, FunctionInfo):  # `_get_value(step_t)` from an installed torch.optim.optimizer
            return self._call_project_function(node, found, arg_kinds, receiver=None)
        if isinstance(found, ClassInfo) and libraries is not None:
            return libraries.instance_kind(found)
        return _fallback(arg_kinds)

    def _local_definition(self, name: str) -> FunctionInfo | ClassInfo | None:
        """The function (else class) the module defines under `name`."""
        return self.module.functions.get(name) or self.module.classes.get(name)

    def _call_builtin(self, name: str, node: cst.Call, arg_kinds: list[Kind]) -> Kind:
        local = self._local_definition(name)
        if isinstance(local, FunctionInfo):
            return self._call_project_function(node, local, arg_kinds, receiver=None)
        if local is not None:
            return self.oracle.instance_kind(local)
        module_object = self._global(name)
        if module_object.tag is Tag.OBJECT:  # `model(x)` on a module-level `model = Net()`
            return self._call_value(node, module_object, arg_kinds)
        return builtin_call_kind(name, arg_kinds)

    def _is_super_call(self, node: cst.BaseExpression) -> bool:
        return (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super")

    def _call_super(self, node: cst.Call, method: str, arg_kinds: list[Kind], env: Env) -> Kind:
        cls = self.func.cls
        if cls is not None:
            target = self.project.find_method(cls, method, after=cls)
            if target is not None:
                receiver = env.get(self.self_name or "self", self.oracle.self_kind(cls))
                return self._call_project_function(node, target, arg_kinds, receiver=receiver)
            if method == "forward" and self.project.is_module_class(cls):
                return TENSOR
            looked_up = self._function_table_get(cls.qualname, method, arg_kinds)
            if looked_up is not None:  # `super().get(name, default)` in a registry's own lookup method
                return looked_up
        return _fallback(arg_kinds)

    def _function_table_get(self, cls_name: str, method: str, arg_kinds: list[Kind]) -> Kind | None:
        """`registry.get(name, default)` on a mapping class whose entries are a dict of functions."""
        if method not in ("get", "pop", "setdefault", "__getitem__"):
            return None
        table = self.oracle.function_table(cls_name)
        if table is None:
            return None
        return join(table, arg_kinds[1]) if len(arg_kinds) > 1 else table

    def _call_method(self, node: cst.Call, receiver: Kind, method: str, arg_kinds: list[Kind],
                     env: Env) -> Kind:
        if receiver.tag is Tag.TENSOR:
            kind = method_rank(method, receiver, node) or tensor_method_kind(method, receiver, arg_kinds)
            if kind.tag is Tag.TENSOR:  # `x.float()` of a mask (returned as is when its shape is dynamic) is not one
                boolean = self._method_makes_mask(method, receiver, node, arg_kinds, env)
                if boolean != kind.boolean:
                    return tensor(kind.dynamic_shape, kind.rank, boolean)
            return kind
        if receiver.tag is Tag.OBJECT:
            self._note_registration(node, receiver, method, arg_kinds)
            if receiver.cls:
                owner = self.project
                cls = owner.lookup_class(receiver.cls)
                if cls is None and receiver.role == "object" and self.project.libraries is not None:
                    owner = self.project.libraries.project  # an instance of an installed library's class
                    cls = owner.lookup_class(receiver.cls)
                if cls is not None:
                    target = owner.find_method(cls, method)
                    if target is not None and target.is_property:  # `self.loss_function(logits, labels)`
                        getter = self._call_project_function(node, target, [], receiver=receiver)
                        return self._call_value(node, getter, arg_kinds)
                    overrides = self._overrides_reached(node, owner, method, target)
                    if target is not None or overrides:
                        kinds = [self._call_project_function(node, target, arg_kinds, receiver=receiver)] \
                            if target is not None else []
                        for override in overrides:
                            kinds.append(self._call_project_function(
                                node, override, arg_kinds, receiver=self.oracle.self_kind(override.cls),
                                overriding=target.display_name if target is not None else self.func.cls.name))
                        kind = kinds[0]
                        for other in kinds[1:]:
                            kind = join(kind, other)
                        return kind
                attr = self.oracle.attributes(receiver.cls).get(method)
                if attr is not None:
                    return self._call_value(node, attr, arg_kinds)
                looked_up = self._function_table_get(receiver.cls, method, arg_kinds)
                if looked_up is not None:
                    return looked_up
            return object_method_kind(receiver, method, arg_kinds)
        if receiver.tag is Tag.SEQUENCE:
            if method in ("items",):
                return sequence_of(tuple_of(STATIC, element_of(receiver)))
            if method in ("values", "get", "pop", "copy", "setdefault"):
                return element_of(receiver) if method != "values" and method != "copy" else receiver
            if method == "keys":
                return sequence_of(STATIC)
            return STATIC
        if receiver.tag is Tag.HOST:
            return HOST
        return _fallback(arg_kinds, default=receiver if receiver.tag is Tag.STATIC else UNKNOWN)

    def _overrides_reached(self, node: cst.Call, owner: Project, method: str,
                           found: FunctionInfo | None) -> tuple[FunctionInfo, ...]:
        """`self.method()` in a method of a project class runs, on an instance of a subclass, that
        subclass's override: a template method's hooks (`self.compute_loss(...)` in a base loss's
        `forward`) are the subclasses' methods. Only through the function's own `self`, only classes of
        the project deriving from the function's class (not in an installed library's summary)."""
        cls = self.func.cls
        if cls is None or owner is not self.project or self.func.module.library is not None \
                or not isinstance(node.func, cst.Attribute) \
                or self.self_name is None or path_key(node.func.value) != self.self_name:
            return ()
        if found is not None and found.is_static_method:
            return ()
        return tuple(o for o in self.project.overrides(self.func, method)
                     if o is not found and not o.is_property and not o.is_static_method)

    def _note_registration(self, node: cst.Call, receiver: Kind, method: str, arg_kinds: list[Kind]) -> None:
        """`self.register_buffer("step", t)` declares a tensor attribute like `self.step = t` would."""
        if method not in ("register_buffer", "register_parameter", "add_module") or len(node.args) < 2:
            return
        name = string_value(node.args[0].value)
        if name is None or not isinstance(node.func, cst.Attribute):
            return
        if path_key(node.func.value) != self.self_name:
            return
        kind = MODULE if method == "add_module" else TENSOR
        attrs = self.result.attribute_assignments  # type: ignore[attr-defined]
        attrs[name] = kind

    def _call_value(self, node: cst.Call, callee: Kind, arg_kinds: list[Kind], env: Env | None = None) -> Kind:
        if callee.tag is Tag.OBJECT and callee.role == "nested" and env is not None:
            return self._call_nested(node, callee.cls, arg_kinds, env)
        if callee.tag is Tag.OBJECT and callee.role in ("function", "method") and callee.cls:
            # `func` may be one of several functions (`func = _multi_tensor_sgd if foreach else ...`); a method
            # taken from an object (`self.loss_map[kind](...)`) is called on an instance of its class
            results = [self._call_project_function(node, target, arg_kinds, receiver=self._bound_to(target, callee))
                       for target in map(self.project.lookup_function, callee.cls.split("|")) if target is not None]
            if results:
                kind = results[0]
                for other in results[1:]:
                    kind = join(kind, other)
                return kind
        if callee.tag is Tag.OBJECT and callee.role == "module":
            if callee.cls:
                cls = self.project.lookup_class(callee.cls)
                forward = self.project.find_method(cls, "forward") if cls is not None else None
                if forward is not None:
                    kind = self._call_project_function(node, forward, arg_kinds, receiver=callee)
                    return kind if kind.tag is not Tag.UNKNOWN else TENSOR
            return TENSOR
        return _fallback(arg_kinds)

    def _bound_to(self, target: FunctionInfo, callee: Kind) -> Kind | None:
        if callee.role != "method" or target.cls is None or target.is_static_method:
            return None
        return self.oracle.self_kind(target.cls)

    def _autograd_function(self, node: cst.BaseExpression, env: Env) -> tuple[Project, ClassInfo] | None:
        """The custom autograd function `node` names (`MyFn` in `MyFn.apply(x)`), with the project defining it."""
        qualified = self._is_import(node, env)
        if qualified is None:
            if not isinstance(node, cst.Name) or node.value in env:
                return None
            qualified = f"{self.module.name}.{node.value}"
        owners = [self.project]
        if self.project.libraries is not None:
            owners.append(self.project.libraries.project)
        for owner in owners:
            cls = owner.lookup_class(qualified)
            if cls is not None:
                return (owner, cls) if owner.is_autograd_function_class(cls) else None
        return None

    def _apply_autograd_function(self, node: cst.Call, owner: Project, cls: ClassInfo, arg_kinds: list[Kind]) -> Kind:
        """`MyFn.apply(x)`: autograd calls the static `forward(ctx, x)` in the step and `backward(ctx, grad)`
        in the step's backward, both traced (`backward` given a tensor for each gradient)."""
        forward = owner.find_method(cls, "forward")
        result = self._call_project_function(node, forward, arg_kinds, receiver=AUTOGRAD_CONTEXT) \
            if forward is not None else TENSOR
        backward = owner.find_method(cls, "backward")
        if backward is not None and backward.module.library is None:
            names, star = backward.signature
            bound = {name: AUTOGRAD_CONTEXT if i == 0 else TENSOR for i, name in enumerate(names)}
            if star is not None:
                bound[star] = sequence_of(TENSOR)
            self._record_call(node, backward, bound)
        return TENSOR if result.tag is Tag.UNKNOWN else result

    def _call_project_function(self, node: cst.Call, target: FunctionInfo, arg_kinds: list[Kind],
                               receiver: Kind | None, overriding: str | None = None) -> Kind:
        """`overriding`: the method (or, when it has none, the class) whose `self.name()` call reaches
        `target` as a subclass's override."""
        libraries = self.project.libraries
        if target.module.library is not None and libraries is not None:
            # a library function: summarised for these arguments, not traced (see analysis/libraries.py), with
            # the Nones that decide its tests (none_arguments.py)
            bound = bind_arguments(target, node, literal_nones(node, arg_kinds), receiver)
            bound = with_none_arguments(target, node, bound)
            summary = libraries.summary(target, bound, self.guards.tracer if self.guards is not None else None)
            self.result.library_calls[id(node)] = (target.qualname, summary)
            return summary.returns
        bound = bind_arguments(target, node, arg_kinds, receiver)
        if self.keywords and any(a.star == "**" and isinstance(a.value, cst.Name) and a.value.value == self.star_kwarg
                                 for a in node.args):
            explicit = {a.keyword.value for a in node.args if a.keyword is not None}
            for name, kind in self.keywords.items():  # by name beats a `*args` spread over every position
                if name not in explicit:
                    bound[name] = kind
        self._record_call(node, target, bound, overriding)
        return self._project_result(target, bound)

    def _record_call(self, node: cst.Call, target: FunctionInfo, bound: dict[str, Kind],
                     overriding: str | None = None) -> None:
        site = self.result.calls.get((id(node), target.qualname))
        if site is not None:
            for name, kind in bound.items():
                site.args[name] = join(site.args[name], kind) if name in site.args else kind
        else:
            self.result.calls[(id(node), target.qualname)] = CallSite(node=node, callee=target, args=bound,
                                                                      overriding=overriding)

    def _project_result(self, target: FunctionInfo, bound: dict[str, Kind]) -> Kind:
        specific = self.oracle.call_return(target.qualname, bound)
        if specific is not None:
            return specific
        known = self.oracle.return_kind(target)
        # Not analysed yet: assume nothing; the caller is analysed again once the callee's result is known.
        return known if known is not None else UNKNOWN

_STRING_NODES = frozenset({cst.SimpleString, cst.ConcatenatedString, cst.FormattedString})
_BITWISE = frozenset({cst.BitAnd, cst.BitOr, cst.BitXor})

_SMALL_STATEMENTS = frozenset({
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr, cst.Return, cst.Assert, cst.Raise, cst.Del, cst.Pass,
    cst.Break, cst.Continue, cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom,
})

_EXPRESSION_HANDLERS: dict[type, Callable[[FunctionInference, Any, Env], Kind]] = {
    cst.Name: FunctionInference._name,
    cst.Attribute: FunctionInference._attribute,
    cst.Subscript: FunctionInference._subscript,
    cst.Call: FunctionInference._call,
    cst.BinaryOperation: FunctionInference._binary,
    cst.UnaryOperation: FunctionInference._unary,
    cst.BooleanOperation: FunctionInference._boolean,
    cst.Comparison: FunctionInference._comparison,
    cst.IfExp: FunctionInference._ifexp,
    cst.Tuple: FunctionInference._sequence,
    cst.List: FunctionInference._sequence,
    cst.Set: FunctionInference._sequence,
    cst.Dict: FunctionInference._dict,
    cst.ListComp: FunctionInference._element_comprehension,
    cst.SetComp: FunctionInference._element_comprehension,
    cst.GeneratorExp: FunctionInference._element_comprehension,
    cst.DictComp: FunctionInference._dict_comprehension,
    cst.NamedExpr: FunctionInference._named,
    cst.FormattedString: FunctionInference._fstring,
    cst.StarredElement: FunctionInference._starred,
    cst.Lambda: lambda self, node, env: obj("function"),
    cst.Await: lambda self, node, env: UNKNOWN,
    cst.Yield: lambda self, node, env: UNKNOWN,
}


def _leaves(block: cst.BaseSuite) -> bool:
    """Does the block always leave (its last statement returns, raises, breaks or continues)?"""
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = body[-1] if body else None
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and last.body:
        return type(last.body[-1]) in (cst.Return, cst.Raise, cst.Break, cst.Continue)
    return False


def _all_params(node: cst.FunctionDef | cst.Lambda) -> list[cst.Param]:
    p = node.params
    params = [*p.posonly_params, *p.params, *p.kwonly_params]
    if isinstance(p.star_arg, cst.Param):
        params.append(p.star_arg)
    if p.star_kwarg is not None:
        params.append(p.star_kwarg)
    return params


def bind_arguments(target: FunctionInfo, node: cst.Call, arg_kinds: list[Kind],
                   receiver: Kind | None) -> dict[str, Kind]:
    """Map the call's argument kinds onto the callee's parameter names."""
    names, star = target.signature
    positional = list(names)
    bound: dict[str, Kind] = {}
    if receiver is not None and positional and (not target.is_static_method or receiver == AUTOGRAD_CONTEXT):
        bound[positional[0]] = receiver
        positional = positional[1:]
    index = 0
    for arg, kind in zip(node.args, arg_kinds):
        if arg.keyword is not None:
            bound[arg.keyword.value] = kind
        elif arg.star == "*":
            if kind.items is not None:  # `f(*(a, b))`, a tuple whose positions are known
                for name, item in zip(positional[index:], kind.items):
                    bound[name] = item
            else:  # `self.decoder(*args, **kwargs)`: the inputs fill the required positions; options (with a
                # default) come by name, so `use_cache=None` keeps what its signature says
                optional = _positional_with_default(target)
                for name in positional[index:]:
                    if name not in optional:
                        bound[name] = element_of(kind)
            index = len(positional)
        elif arg.star == "**":
            continue
        elif index < len(positional):
            bound[positional[index]] = kind
            index += 1
        elif star is not None:
            bound[star] = join(bound[star], sequence_of(kind)) if star in bound else sequence_of(kind)
    return bound


def _positional_with_default(target: FunctionInfo) -> set[str]:
    p = target.node.params
    return {param.name.value for param in (*p.posonly_params, *p.params) if param.default is not None}


def _fallback(arg_kinds: list[Kind], default: Kind = UNKNOWN) -> Kind:
    """An unknown callable: given a tensor it most likely returns one (activations, einops, ...)."""
    if any(k.tag is Tag.TENSOR for k in arg_kinds):
        return TENSOR
    if any(k.tag is Tag.HOST for k in arg_kinds):
        return HOST
    return default


def external_call_kind(qualified: str, node: cst.Call, arg_kinds: list[Kind]) -> Kind:
    known = known_external_kind(qualified, node, arg_kinds)
    return known if known is not None else _fallback(arg_kinds)


def known_external_kind(qualified: str, node: cst.Call, arg_kinds: list[Kind]) -> Kind | None:
    """What a call outside the project returns when torch_api (or the standard library) says; None for a
    function only its source can tell about."""
    if qualified in api.STATIC_TORCH_FUNCTIONS or qualified.startswith(api.STATIC_PREFIXES):
        return STATIC
    if qualified in api.HOST_TORCH_FUNCTIONS:
        return HOST
    namespace, _, last = qualified.rpartition(".")
    ranked = function_rank(last, node) if namespace == "torch" else None
    if ranked is not None:  # torch.nonzero(x, as_tuple=True), torch.argmax(x)
        return ranked
    if qualified in api.DYNAMIC_SHAPE_FUNCTIONS:
        return DYN_TENSOR
    if qualified in ("torch.where",) and len(node.args) == 1:
        return DYN_TENSOR
    if qualified in api.HOST_CONSTANT_CONSTRUCTORS and _host_constant(node, arg_kinds):
        return STATIC
    if qualified in api.TENSOR_CONSTRUCTORS:
        return TENSOR
    if qualified.startswith("torch.optim.") and qualified.rsplit(".", 1)[-1][:1].isupper():
        return obj("optimizer")
    if qualified.startswith(("torch.nn.", "cerebras.pytorch.nn.")):
        last = qualified.rsplit(".", 1)[-1]
        if last[:1].isupper():
            return MODULE
    if namespace == "torch" and last.startswith("_") and not last.startswith(api.PRIVATE_TORCH_OPS):
        return _fallback(arg_kinds)  # torch._use_cudnn_rnn_flatten_weight() and other private helpers
    if namespace in api.TENSOR_OP_NAMESPACES or namespace.startswith("torch.ops."):
        if last[:1].isupper():  # torch.Generator, torch.Size, dtype objects
            return STATIC
        if last.startswith(api.PREDICATE_PREFIXES):  # torch.is_autocast_cpu_enabled(), torch.is_conj(t)
            return STATIC
        return TENSOR
    if qualified.startswith(("math.", "numpy.", "statistics.")):
        return HOST if any(k.is_data_dependent for k in arg_kinds) else STATIC
    if qualified.startswith(("einops.", "torch_xla.")):
        return TENSOR
    if qualified in ("copy.deepcopy", "copy.copy") and arg_kinds:
        return arg_kinds[0]
    if qualified in ("functools.partial",):
        return obj("function")
    return None


def _host_constant(node: cst.Call, arg_kinds: list[Kind], of_lists: bool = False) -> bool:
    """`torch.tensor(0.9)`: a CPU tensor made of Python values, whose value is known while tracing (no
    device, or the CPU, named); `of_lists`: lists of such values count (`torch.stack([a, b])`)."""
    device = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "device"), None)
    if device is not None and string_value(device) not in ("cpu",):
        return False
    values = [k for a, k in zip(node.args, arg_kinds) if a.keyword is None]
    return bool(values) and all(_python_made(k) if of_lists else k.tag is Tag.STATIC for k in values)


def _python_made(kind: Kind) -> bool:
    """A Python value, or a list of them (`torch.stack([a, b])` of host constants)."""
    if kind.tag is Tag.SEQUENCE:
        return kind.elem is not None and _python_made(kind.elem) and all(_python_made(k) for k in kind.items or ())
    return kind.tag is Tag.STATIC


def builtin_call_kind(name: str, arg_kinds: list[Kind]) -> Kind:
    first = arg_kinds[0] if arg_kinds else STATIC
    if name == "len":
        return HOST if first.length_is_data else STATIC
    if name in api.HOST_CONVERSION_BUILTINS:
        return HOST if any(k.is_data_dependent for k in arg_kinds) else STATIC
    if name in api.STATIC_BUILTINS:
        return STATIC
    if name == "range":
        return sequence_of(combine(*arg_kinds) if arg_kinds else STATIC)
    if name == "enumerate":
        return sequence_of(tuple_of(STATIC, element_of(first)), first.dynamic_shape)
    if name == "zip":
        return sequence_of(tuple_of(*(element_of(k) for k in arg_kinds)))
    if name in api.SEQUENCE_BUILTINS:
        return sequence_of(element_of(first), first.dynamic_shape)
    if name in ("any", "all"):
        return HOST if element_of(first).is_data_dependent or first.is_data_dependent else STATIC
    if name in api.TENSOR_PRESERVING_BUILTINS:
        kinds = arg_kinds if len(arg_kinds) > 1 else [element_of(first) if first.tag is Tag.SEQUENCE else first]
        return combine(*kinds)
    if name == "super":
        return obj("super")
    if name in ("getattr", "vars", "dict", "map", "filter"):
        return UNKNOWN
    return _fallback(arg_kinds)


def tensor_method_kind(method: str, receiver: Kind, arg_kinds: list[Kind]) -> Kind:
    if method in api.STATIC_TENSOR_METHODS:
        return HOST if receiver.dynamic_shape and method in api.SHAPE_METHODS else STATIC
    if method == "tolist" and receiver.tag is Tag.TENSOR and not receiver.dynamic_shape and receiver.rank != 0:
        return HOST_LIST
    if method in api.HOST_VALUE_METHODS:
        return HOST
    if method in api.DYNAMIC_SHAPE_METHODS:
        return DYN_TENSOR
    if method == "repeat_interleave" and arg_kinds and arg_kinds[0].is_tensor:
        return DYN_TENSOR
    if method in api.REDUCTIONS and not arg_kinds:
        return TENSOR
    return receiver if receiver.dynamic_shape else TENSOR


def object_method_kind(receiver: Kind, method: str, arg_kinds: list[Kind]) -> Kind:
    if receiver.role == "module":
        if method in ("parameters", "buffers"):
            return sequence_of(TENSOR)
        if method in ("named_parameters", "named_buffers"):
            return sequence_of(tuple_of(STATIC, TENSOR))
        if method in ("modules", "children"):
            return sequence_of(MODULE)
        if method in ("named_modules", "named_children"):
            return sequence_of(tuple_of(STATIC, MODULE))
        if method in ("forward", "__call__"):
            return TENSOR
        if method in ("train", "eval", "to", "cuda", "cpu", "requires_grad_", "apply", "half", "float"):
            return receiver
        if method in ("register_buffer", "register_parameter", "add_module", "zero_grad"):
            return STATIC
        if method in ("state_dict",):
            return sequence_of(TENSOR)
        return _fallback(arg_kinds)
    if receiver.role == "optimizer":
        return STATIC
    if receiver.role in ("opt_state", "state_map"):
        if method in ("get", "pop", "setdefault"):
            return TENSOR
        if method in ("keys",):
            return sequence_of(STATIC)
        if method in ("values",):
            return sequence_of(TENSOR)
        if method in ("items",):
            return sequence_of(tuple_of(STATIC, TENSOR))
        return STATIC
    if receiver.role == "group":
        if method == "get" and arg_kinds:
            return UNKNOWN
        return STATIC
    return _fallback(arg_kinds)


SignatureKind = Callable[[cst.Param], Kind]
