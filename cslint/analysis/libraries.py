"""Functions of installed libraries that traced code calls, read from their source files.

`step = _get_value(step_t)` with `_get_value` imported from `torch.optim.optimizer`, a model calling its
framework's mask helper, a sampling step calling `scheduler.step(...)`: the function is not in the linted
tree, but its source is in the Python environment. It is found there without importing anything (the
files are read and parsed, never run), analysed on demand with the kinds the call passes, and summarised
as what its result is (a tensor, a Python value, a tensor of data-dependent shape) and what it does that
a static trace cannot (host reads, conversions, branches on tensors, data-dependent shapes), with the
functions it calls in turn. The summary is context: findings are reported on the caller's line
("via torch.optim.optimizer._get_value: `x.item()`"), never in the library, which is reported only when
it is linted (then its modules are the project's and are traced as such).

Summaries depend on the library's code, so a store keeps them per distribution name and version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.call_depth import CallChain, reach
from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis.held_distributions import held_distribution_tested
from cslint.analysis.inference import FunctionInference
from cslint.analysis.placement import COPIES
from cslint.analysis.constant_arguments import constant_tests
from cslint.analysis.constructed import constructed, module_level_instances
from cslint.analysis.kinds import STATIC, UNKNOWN, Kind, Tag, classes_of, is_none, is_some, obj, without_constant
from cslint.analysis.library_env import (
    BRANCH, MASK_STORE, MAX_DEPTH, SHAPE, Effect, Environment, LibraryPathError, Summary, SummaryStore,
    environment_for, readable_library_module,
)
from cslint.analysis.param_kinds import helper_param_kinds
from cslint.analysis.project import Project
from cslint.analysis.project_oracle import ProjectOracle
from cslint.analysis.tracing_guards import Guards
from cslint.analysis.walk import child_nodes
from cslint.core.rule_table import BUILTINS, FUNCTIONS, IN_LIBRARIES, QUIET_KEYWORDS, TENSOR_METHODS

__all__ = ["BRANCH", "MASK_STORE", "SHAPE", "Effect", "Environment", "Libraries", "LibraryPathError",
           "Summary", "SummaryStore", "environment_for"]

# ---- the libraries as a project ------------------------------------------------------------------

class _LazyModules(dict):  # type: ignore[type-arg]
    """Module name -> ModuleInfo, read from the environment the first time a name is asked for; the
    linted project's own modules first (a library's re-export can name one)."""

    def __init__(self, load: Callable[[str], ModuleInfo | None]) -> None:
        super().__init__()
        self._load = load

    def get(self, name: str, default: Any = None) -> Any:
        if not dict.__contains__(self, name):
            dict.__setitem__(self, name, self._load(name))
        found = dict.__getitem__(self, name)
        return found if found is not None else default

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __getitem__(self, name: str) -> ModuleInfo:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found  # type: ignore[no-any-return]

    def values(self) -> list[ModuleInfo]:  # type: ignore[override]
        return [m for m in dict.values(self) if m is not None]


class Libraries:
    """What traced code of `project` calls in installed libraries: found, read and summarised on demand.
    What does not depend on the project (the libraries' index, what their classes hold, the summaries)
    is shared by every analysis of the process that reads the same environment; `project` only decides
    which arguments are instances of its own classes (see `_as_context`)."""

    def __init__(self, environment: Environment, project: Project | None, store: SummaryStore | None = None) -> None:
        self.environment = environment
        self.user = project
        self.store = store
        shared = environment.shared
        if not shared:
            libraries = Project([])
            libraries.modules = _LazyModules(environment.module)
            libraries.star_exports = True  # `nf.NormalizingFlow`, from normflows' `from .core import *`
            shared.update(project=libraries, lookups={}, oracles={}, chain=CallChain(MAX_DEPTH), uses=[],
                          constructions={})
        self.project: Project = shared["project"]
        self._lookups: dict[str, FunctionInfo | ClassInfo | ModuleInfo | None] = shared["lookups"]
        self._oracles: dict[str, Any] = shared["oracles"]
        self._constructions: dict[str, Kind] = shared["constructions"]  # a construction's call -> its instance
        self._chain: CallChain = shared["chain"]  # the summaries being computed
        self._uses: list[set[str]] = shared["uses"]  # per summary being computed: the distributions it used
        self._summaries = environment.summaries
        if project is None:
            self.project.libraries = self  # a library's own calls into libraries
        elif self.project.libraries is None:
            Libraries(environment, None, store)
        else:
            self.project.libraries.store = store

    def lookup(self, qualified: str) -> FunctionInfo | ClassInfo | ModuleInfo | None:
        """What a qualified name the project does not define names in the installed libraries."""
        if qualified not in self._lookups:
            found = self.project.lookup(qualified) if readable_library_module(qualified) else None
            self._lookups[qualified] = found
        return self._lookups[qualified]

    def instance_kind(self, cls: ClassInfo, node: cst.Call | None = None, arg_kinds: list[Kind] | None = None) -> Kind:
        """`Cls(...)` for a library class: an object whose methods are looked up in the library, with what the call
        (`node`, its arguments of kinds `arg_kinds`) decides of its attributes (constructed.py)."""
        if self.project.is_optimizer_class(cls):
            return obj("optimizer", cls.qualname)
        instance = obj("module" if self.project.is_module_class(cls) else "object", cls.qualname)
        if node is None or arg_kinds is None or self.user is None:
            return instance
        given = [self._as_context(kind) for kind in arg_kinds]
        key = f"{cls.qualname}|{[_kind_key(kind) for kind in given]}|{cst.Module([]).code_for_node(node)}"
        known = self._constructions.get(key)
        if known is None:
            try:
                known = constructed(self.project, self._oracle(), cls, node, given, instance)
            except Exception:  # a constructor this analysis cannot follow: an instance of its class
                known = instance
            self._constructions[key] = known
        return known

    def module_objects(self, project: Project, module: ModuleInfo, known: dict[str, Kind]) -> dict[str, Kind]:
        """The module-level objects of one of the project's modules (`known`, from their bindings' summaries), the
        instances of library classes among them with what their constructor calls decide (constructed.py)."""
        if self.user is None or project is not self.user:
            return known
        names = {name for name, kind in known.items() if self._library_instance(kind)}
        if not names:
            return known
        try:
            found = module_level_instances(project, module, names, lambda name, kind: kind.cls == known[name].cls)
        except Exception:  # top-level code this analysis cannot follow: the instances of their classes
            return known
        return {**known, **found}

    def _library_instance(self, kind: Kind) -> bool:
        if kind.tag is not Tag.OBJECT or not kind.cls or "|" in kind.cls or kind.role == "optimizer":
            return False
        return self.user is not None and self.user.lookup_class(kind.cls) is None and \
            isinstance(self.lookup(kind.cls), ClassInfo)

    def _oracle(self) -> ProjectOracle:
        oracle = self._oracles.get("oracle")
        if oracle is None:
            oracle = self._oracles["oracle"] = ProjectOracle(self.project)
        return oracle

    # ---- summaries ---------------------------------------------------------------------------------

    def summary(self, func: FunctionInfo, given: dict[str, Kind], tracer: str | None) -> Summary:
        """What calling library function `func` with arguments of these kinds returns and does."""
        deciding = constant_tests(func).deciding
        given = {name: self._as_context(kind, name in deciding) for name, kind in given.items()}
        key = f"{func.qualname}|{tracer}|{sorted((n, _kind_key(k)) for n, k in given.items())}"
        question, chain = question_id(key), self._chain
        known = self._summaries.get(key)
        if known is not None and chain.reusable(known.reach):
            return self._reused(known)
        # a summary whose analysis had to stop (recursion, or the depth limit) depends on the calls that led
        # to it: it is kept for that chain only, so what a call gets never depends on which came first
        chained = f"{key}@{'/'.join(map(str, chain.keys))}"
        known = self._summaries.get(chained)
        if known is not None:
            chain.reuse_cut()
            self._note_use(known.uses)
            return known
        if chain.refused(question):
            return Summary(UNKNOWN)  # recursion, or too deep to follow: nothing known
        distribution = func.module.library
        versioned = distribution is not None and bool(distribution[1])
        stored = self.store.get(distribution, key) if self.store is not None and versioned else None  # type: ignore[arg-type]
        if stored is not None and chain.reusable(stored.reach) and all(self._installed(use) for use in stored.uses):
            self._summaries[key] = stored
            return self._reused(stored)
        self._uses.append(set())
        try:
            with chain.working_out(question) as frame:
                try:
                    found = self._summarise(func, given, tracer)
                except Exception:  # a library this analysis cannot follow is not the user's error: nothing known
                    found = Summary(UNKNOWN)
        finally:
            uses = self._uses.pop()
        uses.add(self._use(func.module))
        found = Summary(found.returns, found.effects, tuple(sorted(uses)), reach(frame), found.possible)
        self._note_use(found.uses)
        self._summaries[chained if frame.cut else key] = found
        if self.store is not None and versioned and not frame.cut:
            self.store.put(distribution, key, found)  # type: ignore[arg-type]
        return found

    def _reused(self, known: Summary) -> Summary:
        """A summary worked out before, used where working it out again gives the same (call_depth.py)."""
        assert known.reach is not None
        self._chain.reuse(known.reach)
        self._note_use(known.uses)
        return known

    def _as_context(self, kind: Kind, decides: bool = False) -> Kind:
        """An argument as the library function is analysed with: a Python value as an unknown one, and an
        instance of one of the project's classes as an object of its role (a model's config, the model
        itself): a library function does not look into the project's classes (their attributes are the
        project analysis's). Fewer distinct arguments, fewer summaries: one serves every model calling it.
        `decides`: the parameter decides a test of the function (constant_arguments.py): its constant is kept."""
        if kind.tag is Tag.STATIC:
            # a Python value or not known: neither is a tensor, nor read from one; None, or a value shown not to
            # be None, where it decides a test; a constant's value where it decides one (or is an instance's
            # attribute)
            if decides and kind.value is not None:
                return kind
            return without_constant(kind) if is_none(kind) or is_some(kind) else UNKNOWN
        if self.user is None:
            return kind
        if kind.tag is Tag.OBJECT and kind.cls and any(self.user.lookup_class(cls) for cls in classes_of(kind)):
            return obj(kind.role)
        return kind

    def _use(self, module: ModuleInfo) -> str:
        """`top=name-version` of the distribution a module comes from (`top=` for one outside any)."""
        top = module.name.partition(".")[0]
        name, version = module.library or ("", "")
        return f"{top}={name}-{version}" if version else f"{top}="

    def _installed(self, use: str) -> bool:
        top, _, installed = use.partition("=")
        found = self.environment.distribution(top)
        return bool(installed) and found is not None and installed == f"{found[0]}-{found[1]}"

    def _note_use(self, uses: tuple[str, ...]) -> None:
        """What a summary was computed from is a dependency of every summary being computed above it."""
        for frame in self._uses:
            frame.update(uses)

    def _summarise(self, func: FunctionInfo, given: dict[str, Kind], tracer: str | None) -> Summary:
        oracle = self._oracle()
        guards = self._oracles.get(f"guards:{tracer}")
        if guards is None and tracer is not None:
            guards = self._oracles[f"guards:{tracer}"] = Guards(self.project, tracer)
        params = helper_param_kinds(oracle, func, given)
        analysis = FunctionInference(self.project, oracle, func, params, unannotated_param=UNKNOWN,
                                     guards=guards).run()
        returns = analysis.return_kind if analysis.returns_value else STATIC
        if returns.tag is Tag.UNKNOWN:  # `cls = A if flag else B; return cls(d)`: the factory's classes
            returns = oracle.return_kind(func) or returns
        if is_none(returns):
            returns = STATIC  # a None given back is not followed further (none_arguments.py)
        effects, possible = _effects(func, analysis, guards, self.project)
        return Summary(returns, effects, possible=possible)


def _kind_key(kind: Kind) -> str:
    return repr(kind)


def question_id(key: str) -> str:
    """A summary's key, short and the same in every process (summaries name the questions they asked)."""
    return hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


# ---- effects ---------------------------------------------------------------------------------------

_TESTS = frozenset({cst.If, cst.While, cst.IfExp, cst.Assert})


def _effects(func: FunctionInfo, analysis: Any, guards: Any,
             project: Project) -> tuple[tuple[Effect, ...], tuple[Effect, ...]]:
    """What the analysed library function does that a static trace cannot, in the order of its code, then
    what the library functions it calls do; and what those calls do only if a particular one of the functions
    they may run is the one (Summary.possible)."""
    found: list[tuple[cst.CSTNode, str, str]] = []
    called: list[Summary] = []
    dead = analysis.dead
    stack: list[cst.CSTNode] = [func.node.body]
    while stack:
        node = stack.pop()
        kind = type(node)
        if id(node) in dead or kind in _NOT_FOLLOWED:
            continue
        if kind in _TESTS:
            test = node.test  # type: ignore[attr-defined]
            if _truth_is_data_dependent(test, analysis, guards, func.module):
                found.append((test, BRANCH, f"{_KEYWORDS[kind]} {_code(test)}"))
            if kind is cst.Assert:  # its message is built only when the assert fails
                stack.append(test)
                continue
        elif kind is cst.Assign:
            for target in node.targets:  # type: ignore[attr-defined]
                if type(target.target) is cst.Subscript and _indexed_by_mask(target.target, analysis):
                    found.append((target.target, MASK_STORE, _code(node)))
        elif kind is cst.Call:
            what = _call_effect(node, analysis, func.module)  # type: ignore[arg-type]
            if what is None and held_distribution_tested(project, func, node) is not None:  # type: ignore[arg-type]
                what = HELD_DISTRIBUTION_CODE
            if what is not None:
                found.append((node, what, _code(node)))
            library = analysis.library_calls.get(id(node))
            if library is not None and (library[1].effects or library[1].possible):
                called.append(library[1])
        stack.extend(reversed(child_nodes(node)))
    path = str(func.module.path)
    own = tuple(Effect(what, text, (func.qualname,), path, _line(func, node)) for node, what, text in found)
    return own + _through(func, [s.effects for s in called]), _through(func, [s.possible for s in called])


def _through(func: FunctionInfo, effects: list[tuple[Effect, ...]]) -> tuple[Effect, ...]:
    """Effects of the functions `func` calls, as `func`'s: the way there starts at `func`."""
    return tuple(Effect(e.what, e.text, (func.qualname, *e.via), e.path, e.line) for group in effects for e in group)


HELD_DISTRIBUTION_CODE = "WSC108"  # `self.distribution.log_prob(x)` of a distribution validating its values

_NOT_FOLLOWED = frozenset({cst.Raise, cst.ClassDef, cst.FunctionDef, cst.Lambda})  # run elsewhere, or to fail
_KEYWORDS = {cst.If: "if", cst.While: "while", cst.IfExp: "if", cst.Assert: "assert"}


def _truth_is_data_dependent(test: cst.BaseExpression, analysis: Any, guards: Any, module: ModuleInfo) -> bool:
    """Whether taking the truth of `test` reads a tensor, where tracing predicates leave it to be evaluated
    (`not is_tracing(mask) and mask.all()` never reaches `.all()` under torch.compile)."""
    if guards is not None and guards.value(module, test) is not None:
        return False  # decided by tracing predicates alone
    if type(test) is cst.BooleanOperation:
        left = guards.value(module, test.left) if guards is not None else None
        if left is not None:  # `False and x`, `True or x`: x never runs; else only x decides
            return left is (type(test.operator) is cst.And) and \
                _truth_is_data_dependent(test.right, analysis, guards, module)
        if type(test.left) is cst.Name and not analysis.kind(test.left).is_data_dependent:
            return False  # `error_if_nonfinite and t.isnan().any()`: a flag of the call decides whether it runs
        return _truth_is_data_dependent(test.left, analysis, guards, module) or \
            _truth_is_data_dependent(test.right, analysis, guards, module)
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _truth_is_data_dependent(test.expression, analysis, guards, module)
    return bool(analysis.kind(test).is_data_dependent)


def _indexed_by_mask(node: cst.Subscript, analysis: Any) -> bool:
    """`x[mask]`, `x[:, mask]`: a tensor indexed by a boolean tensor."""
    return analysis.kind(node.value).tag is Tag.TENSOR and any(
        type(e.slice) is cst.Index and analysis.kind(e.slice.value).boolean for e in node.slice)


def _call_effect(node: cst.Call, analysis: Any, module: ModuleInfo) -> str | None:
    func = node.func
    named = _function_code(module.imports.resolve(func))
    if named is not None:
        return named if _not_quieted(named, node) else None
    if type(func) is cst.Attribute:
        receiver = analysis.kind(func.value)
        if receiver.tag is Tag.TENSOR:
            method = func.attr.value
            code = TENSOR_METHODS.get(method)
            if receiver.on_cpu and method in COPIES:
                return None  # a copy of a tensor made on the CPU in the step reads nothing from the device
            if code in IN_LIBRARIES:
                return code
            if method in api.DYNAMIC_SHAPE_METHODS and not receiver.dynamic_shape:
                return SHAPE
        return None
    if type(func) is cst.Name:
        code = BUILTINS.get(func.value)
        if code in IN_LIBRARIES and node.args and analysis.kind(node.args[0].value).is_tensor:
            return code
        return None
    return None


def _not_quieted(code: str, node: cst.Call) -> bool:
    """The call does not turn off what its code stands for (`Normal(mu, std, validate_args=False)`)."""
    quiet = QUIET_KEYWORDS.get(code)
    if quiet is None:
        return True
    keyword, value = quiet
    given = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == keyword), None)
    return given is None or type(given) is cst.Name and given.value == value


def _function_code(qualified: str | None) -> str | None:
    """The code a call of this function stands for, where a summary records it (`torch.fft.rfft`: WSC602)."""
    if qualified is None:
        return None
    code = FUNCTIONS.get(qualified)
    if code is None:
        namespace = qualified
        while code is None and "." in namespace:
            namespace = namespace.rsplit(".", 1)[0]
            code = FUNCTIONS.get(namespace + ".")
    return code if code in IN_LIBRARIES else None


def _code(node: cst.CSTNode, limit: int = 48) -> str:
    text = " ".join(cst.Module([]).code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _line(func: FunctionInfo, node: cst.CSTNode) -> int:
    """The line of `node` in the library's file: where its code's first line first occurs in the function's
    text (0 when the function's place in the file is not known). For the message only: no position pass."""
    span = func.span
    if span is None:
        return 0
    first = cst.Module([]).code_for_node(node).strip().splitlines()[0]
    source = func.module.source
    at = source.find(first, span.start, span.end)
    return source.count("\n", 0, at) + 1 if at >= 0 else span.line
