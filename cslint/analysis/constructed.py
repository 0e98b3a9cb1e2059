"""What a library class's constructor call decides about the instance it makes.

`NormalizingFlow(q0, flows)` keeps the user's list as `self.flows = nn.ModuleList(flows)`, and its `forward_kld`
calls `self.flows[i].inverse(z)`: which layers run is decided on the user's lines (`flows.append(ActNorm(2))`),
not in the library. `Entmax15Loss()` leaves `ignore_index` at -100, and `_GenericLoss.forward` reads a count only
`if self.ignore_index >= 0`. So a construction of an installed library's class is read with the call's arguments:
its `__init__` (and the `super().__init__(...)` of its library bases) is analysed with the kinds the call passes,
its literal arguments and the literal defaults it leaves as constants, and the attributes it sets are kept with the
instance (`Kind.attrs`), where they tell more than the class's attributes in general: modules and objects of known
classes (the classes of the layers given, joined over every class a list holds), and constants or Nones that a
test of the class's methods reads (constant_tests.py decides those tests). The instance's methods are then
summarised for it (libraries.py keys a summary by its receiver's kind).

The cost is bounded the join way: an instance carries only attributes that decide something (a constant that only
sizes a layer is dropped, so `ActNorm(2)` and `ActNorm(4)` are the same instance to a summary), layers of several
classes are one instance of their join (`kinds.MAX_MODULE_CLASSES` at most), and what a constructor calls besides
its bases' constructors is neither followed nor summarised.

Module-level constructions (`model = NormalizingFlow(...)` after a loop of `flows.append(...)`) are read the same
way: the module's top-level statements are walked once as one function body (`module_level_instances`), following
no call but constructions.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import libcst as cst

from cslint.analysis.call_inference import bind_arguments
from cslint.analysis.constant_tests import literal_kind
from cslint.analysis.function_analysis import Env
from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis.inference import FunctionInference
from cslint.analysis.kinds import STATIC, UNKNOWN, Kind, Tag, fixed_before_tracing, is_none, join
from cslint.analysis.project import Project
from cslint.analysis.project_oracle import CONSTRUCTORS, ProjectOracle
from cslint.analysis.signatures import all_params, first_param, signature_kind
from cslint.analysis.walk import iter_nodes

MAX_BASES = 4  # `super().__init__(...)` followed this many classes up


def constructor_params(init: FunctionInfo, node: cst.Call, arg_kinds: list[Kind], receiver: Kind) -> dict[str, Kind]:
    """The kinds `__init__` is called with: the call's arguments (literals as constants), the literal defaults of
    the parameters it leaves (unless a `*`/`**` argument may fill them), else what the signature says."""
    kinds = [literal_kind(arg.value) or kind if not arg.star else kind for arg, kind in zip(node.args, arg_kinds)]
    bound = bind_arguments(init, node, kinds, receiver)
    spread = any(arg.star for arg in node.args)
    params: dict[str, Kind] = {}
    for param in all_params(init.node):
        name = param.name.value
        if name in bound:
            params[name] = bound[name]
        elif not spread and param.star == "" and param.default is not None and literal_kind(param.default) is not None:
            params[name] = literal_kind(param.default)  # type: ignore[assignment]
        else:
            params[name] = signature_kind(param, STATIC)  # constructor arguments are configuration
    return params


class _ConstructorInference(FunctionInference):
    """`__init__` walked for the attributes it sets; a library base's `__init__` that it calls through `super()` is
    walked the same way, with what it is given, and what it sets is added. Nothing else it calls is followed."""

    depth = 0

    def _call_super(self, node: cst.Call, method: str, arg_kinds: list[Kind], env: Env) -> Kind:
        cls = self.func.cls
        if method != "__init__" or cls is None or self.depth >= MAX_BASES:
            return UNKNOWN
        base = self.project.find_method(cls, "__init__", after=cls)
        if base is None:
            return UNKNOWN
        receiver = env.get(self.self_name or "self", self.oracle.self_kind(cls))
        inner = _ConstructorInference(self.project, self.oracle, base, constructor_params(base, node, arg_kinds,
                                                                                          receiver))
        inner.depth = self.depth + 1
        attrs = self.result.attribute_assignments
        for name, kind in inner.run().attribute_assignments.items():
            attrs[name] = join(attrs[name], kind) if name in attrs else kind
        return STATIC

    def _call_project_function(self, node: cst.Call, target: FunctionInfo, arg_kinds: list[Kind],
                               receiver: Kind | None, overriding: str | None = None) -> Kind:
        return UNKNOWN


def constructed(project: Project, oracle: ProjectOracle, cls: ClassInfo, node: cst.Call, arg_kinds: list[Kind],
                instance: Kind) -> Kind:
    """`instance` (the kind of any instance of library class `cls`) with the attributes the call `node` decides."""
    init = project.find_method(cls, "__init__")
    if init is None or init.is_static_method:
        return instance
    params = constructor_params(init, node, arg_kinds, oracle.self_kind(cls))
    analysis = _ConstructorInference(project, oracle, init, params).run()
    tested, reset = _attribute_uses(project, cls)
    decided = []
    for name, kind in analysis.attribute_assignments.items():
        kind = fixed_before_tracing(kind)
        if name not in reset and _decides(kind, name in tested):
            decided.append((name, kind))
    if not decided:
        return instance
    return Kind(instance.tag, role=instance.role, cls=instance.cls, elem=instance.elem, attrs=tuple(sorted(decided)))


def _decides(kind: Kind, tested: bool) -> bool:
    """An attribute worth carrying with the instance: an object of a known class (a container of such modules), or
    a constant or None that a test of the class reads."""
    if kind.tag is Tag.OBJECT:
        return bool(kind.cls) or (kind.elem is not None and bool(kind.elem.cls))
    return tested and (kind.value is not None or is_none(kind))


# ---- what the class's other methods do with its attributes --------------------------------------------

_USES: weakref.WeakKeyDictionary[ClassInfo, tuple[frozenset[str], frozenset[str]]] = weakref.WeakKeyDictionary()
_TESTS = (cst.If, cst.IfExp, cst.While)


def _attribute_uses(project: Project, cls: ClassInfo) -> tuple[frozenset[str], frozenset[str]]:
    """The attributes the class's methods (its bases' too) read in a test, and those a method other than a
    constructor sets (an instance's constructor does not decide those)."""
    tested: set[str] = set()
    reset: set[str] = set()
    for klass in project.mro(cls):
        own = _USES.get(klass)
        if own is None:
            own = _USES[klass] = _own_uses(klass)
        tested |= own[0]
        reset |= own[1]
    return frozenset(tested), frozenset(reset)


def _own_uses(klass: ClassInfo) -> tuple[frozenset[str], frozenset[str]]:
    tested: set[str] = set()
    reset: set[str] = set()
    for method in klass.methods.values():
        me = first_param(method.node) if not method.is_static_method else None
        if me is None:
            continue
        tested_names: set[str] = set()
        assigned: list[tuple[set[str], cst.BaseExpression]] = []  # local names bound, from what value
        for part in iter_nodes(method.node.body):
            kind = type(part)
            if kind in _TESTS:
                tested.update(_own_attributes(part.test, me))  # type: ignore[attr-defined]
                tested_names.update(_names(part.test))  # type: ignore[attr-defined]
            elif kind is cst.Assign and not any(type(n) is cst.Call for n in iter_nodes(part.value)):  # type: ignore
                # (a value computed by no call: Python values handed on, not a tensor's or a layer's sizes)
                assigned.append((set().union(*(_names(t.target) for t in part.targets)), part.value))  # type: ignore
            if method.name not in CONSTRUCTORS and kind in (cst.Assign, cst.AugAssign, cst.AnnAssign):
                targets = [t.target for t in part.targets] if kind is cst.Assign else [part.target]  # type: ignore[attr-defined]
                for target in targets:
                    reset.update(_own_attributes(target, me))
        tested |= _read_into_tests(tested_names, assigned, me)
    return frozenset(tested), frozenset(reset)


def _read_into_tests(tested_names: set[str], assigned: list[tuple[set[str], cst.BaseExpression]], me: str) -> set[str]:
    """The attributes read into local names that a test reads, through any chain of assignments
    (`b, n, sparse = *x.shape, self.sparse`, `use = n > 0 or sparse`, `if use:`)."""
    found: set[str] = set()
    names = set(tested_names)
    grown = True
    while grown:
        grown = False
        for targets, value in assigned:
            if targets & names:
                found |= _own_attributes(value, me)
                more = _names(value) - names
                if more:
                    names |= more
                    grown = True
    return found


def _names(node: cst.CSTNode) -> set[str]:
    return {part.value for part in iter_nodes(node) if type(part) is cst.Name}


def _own_attributes(node: cst.CSTNode, me: str) -> set[str]:
    return {part.attr.value for part in iter_nodes(node)
            if type(part) is cst.Attribute and type(part.value) is cst.Name and part.value.value == me}


# ---- constructions at module level ---------------------------------------------------------------------

class _NoClassAttributes(ProjectOracle):
    """The project's classes as module-level code sees them: their instances, not what their methods set (that is
    the project analysis's to work out)."""

    def attributes(self, cls_name: str) -> dict[str, Kind]:
        return {}


class _ModuleLevelInference(FunctionInference):
    """A module's top-level statements walked as one function body; calls are not followed (constructions are
    answered by `_call_qualified` through the libraries)."""

    def _call_project_function(self, node: cst.Call, target: FunctionInfo, arg_kinds: list[Kind],
                               receiver: Kind | None, overriding: str | None = None) -> Kind:
        return UNKNOWN

    def walk(self) -> Env:
        env: Env = {}
        self._block(self.func.node.body, env)
        return env


def module_level_instances(project: Project, module: ModuleInfo, names: set[str],
                           same: Callable[[str, Kind], bool]) -> dict[str, Kind]:
    """What the module's top-level code binds `names` to at its end, where `same(name, kind)` accepts it (an
    instance of the class the binding's summary names)."""
    statements = [stmt for stmt in module.tree.body if type(stmt) not in (cst.FunctionDef, cst.ClassDef)]
    body = cst.FunctionDef(name=cst.Name("__module__"), params=cst.Parameters(),
                           body=cst.IndentedBlock(body=statements))
    func = FunctionInfo(qualname=f"{module.name}.__module__", name="__module__", module=module, _node=body)
    env = _ModuleLevelInference(project, _NoClassAttributes(project), func, {}).walk()
    return {name: env[name] for name in names if name in env and same(name, env[name])}
