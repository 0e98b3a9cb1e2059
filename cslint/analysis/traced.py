"""Which functions run inside a traced step, why, and what their parameters are.

Roots come from the class hierarchy (`forward` of an nn.Module, `step` of an Optimizer), decorators
(`@cstorch.trace`, `@torch.compile`), wrapper calls (`torch.compile(fn)`), user patterns and, in a library
with no step of its own, the public functions a user's step may call (entry_points.py). Everything
they call in the linted tree is traced too. Helpers are analysed with the kinds of the arguments their
callers pass, iterated to a fixed point, so `helper(x, self.eps)` sees a tensor and a static number.
"""

from __future__ import annotations

import fnmatch
import heapq
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING


from cslint.analysis.call_returns import CallSiteOracle
from cslint.analysis.entry_points import entry_points, is_entry_point
from cslint.analysis.compile_options import DEEP, SHALLOW, CompileOptions, decorated_options, disabled, wrapper_options
from cslint.analysis.generated_code import generated_twin
from cslint.analysis.graph import reachable
from cslint.analysis.imports import dotted_name
from cslint.analysis.function_analysis import FunctionAnalysis
from cslint.analysis.index import FunctionInfo, ModuleInfo
from cslint.analysis.inference import FunctionInference
from cslint.analysis.kinds import STATIC, Kind, join, obj
from cslint.analysis.param_kinds import (
    annotation_overrides, assumed_parameters, callers_kinds, helper_param_kinds, root_param_kinds,
)
from cslint.analysis.platforms import platform_roots
from cslint.analysis.project import Project
from cslint.analysis.ranks import declared_scalar
from cslint.analysis.signatures import all_params
from cslint.analysis.step_functions import is_step_function
from cslint.analysis.tracing_guards import Guards
from cslint.core.targets import DYNAMO
from cslint.analysis.xla_loops import mark_step_loop_roots
from cslint.core.targets import trace_wrappers

if TYPE_CHECKING:
    import libcst as cst

    from cslint.analysis.reuse import KeptAnalyses

# Decorators that do not replace a function with a wrapper of their own (by last name).
NOT_WRAPPERS = frozenset({"property", "cached_property", "staticmethod", "classmethod", "setter", "getter", "deleter",
                          "wraps", "lru_cache", "cache", "no_grad", "inference_mode", "enable_grad", "overload",
                          "override", "abstractmethod", "dataclass", "contextmanager", "jit", "script", "unused",
                          "ignore", "export", "disable", "compile"})

# Re-analysing a function more often than this means its kinds oscillate; keep the last result.
MAX_ANALYSES_PER_FUNCTION = 8


@dataclass(eq=False)
class TracedFunction:
    func: FunctionInfo
    reason: str  # why it is traced: the root's reason, or "called from ..."
    parent: TracedFunction | None = None
    params: dict[str, Kind] = field(default_factory=dict)
    params_stale: bool = True  # what callers pass changed: work `params` out again before the next analysis
    analysis: FunctionAnalysis | None = None
    analyses: int = 0
    keywords: dict[str, Kind] = field(default_factory=dict)  # passed by name into its `**kwargs`
    # Parameters annotated as Python values that traced callers pass tensors (name -> annotation): the
    # callers win, and findings on them say so.
    annotation_overrides: dict[str, str] = field(default_factory=dict)
    # A decorator of a traced function (`@dynamic_rope_update` on a rotary embedding's forward): the
    # parameters of the function it wraps, which the wrapper it returns is called with.
    wrapped: dict[str, Kind] | None = None
    wrapped_positional: tuple[str, ...] = ()
    # reached from its parent's `self.name()` as a subclass's override of this method (or class)
    overriding: str | None = None
    # a root's torch.compile options (under the compile target; compile_options.py)
    compile: CompileOptions | None = None
    # `@torch.compiler.disable(recursive=False)`: dynamo runs its own frame eagerly (no findings in it) and
    # compiles what it calls
    eager: bool = False

    @property
    def chain(self) -> list[str]:
        names: list[str] = []
        current: TracedFunction | None = self
        while current is not None:
            names.append(current.func.qualname if current.overriding is None
                         else f"{current.func.qualname} (override of {current.overriding})")
            current = current.parent
        return names[::-1]

    @property
    def root(self) -> TracedFunction:
        current = self
        while current.parent is not None:
            current = current.parent
        return current


Root = tuple[FunctionInfo, str, "cst.Call | None"]  # the function, why it is a root, the wrapper call naming it


def find_roots(project: Project, patterns: Iterable[str] = (),
               root_modules: Collection[str] | None = None, library: bool = False) -> list[tuple[FunctionInfo, str]]:
    """The roots named in `root_modules` (all modules if None): a class's forward or step, a decorated
    function, a function a wrapper call or a platform's entry point names (wherever it is defined), a
    training loop, a function matching a `trace-roots` pattern; with `library` (the project has no step of
    its own), the library's entry points (entry_points.py)."""
    return [(func, reason) for func, reason, _ in find_root_calls(project, patterns, root_modules, library)]


def find_root_calls(project: Project, patterns: Iterable[str] = (),
                    root_modules: Collection[str] | None = None, library: bool = False) -> list[Root]:
    """`find_roots`, with the module-level wrapper call (`torch.compile(step, ...)`) naming each root."""
    patterns = list(patterns)
    roots: dict[str, Root] = {}
    if root_modules is None:
        names = project.module_names()
    else:  # (lists and loads only these)
        ranks = {n: rank for n in root_modules if (rank := project.rank(n)) is not None}
        names = sorted(ranks, key=ranks.__getitem__)
    modules = [project.modules[name] for name in names if name in project.modules]

    def add(func: FunctionInfo, reason: str, call: cst.Call | None = None) -> None:
        roots.setdefault(func.qualname, (func, reason, call))

    for func, reason in platform_roots(project, modules):  # first, so the reason names the platform's entry point
        add(func, reason)
    for func, reason in mark_step_loop_roots(modules):  # a torch_xla training loop's body (see LoopStep)
        add(func, reason)
    wrappers = trace_wrappers()
    searched = []
    for module in modules:
        twin = generated_twin(module.name)
        if twin is not None and twin in project.modules:
            continue  # a template whose generated module is linted: its code is analysed there
        searched.append(module)
        for cls in module.classes.values():
            if project.is_module_class(cls) and "forward" in cls.methods and not in_data_pipeline(module.name):
                add(cls.methods["forward"], f"forward of nn.Module subclass {cls.name}")
            if project.is_optimizer_class(cls):
                for name in ("step", "_init_group"):
                    if name in cls.methods:
                        add(cls.methods[name], f"{name} of Optimizer subclass {cls.name}")
        for func in _module_functions(module):
            for decorator in func.decorators:
                if decorator in wrappers:
                    add(func, f"decorated with @{decorator}")
        for call in module.toplevel_calls:
            wrapper = module.imports.resolve(call.func) if dotted_name(call.func) else None
            if wrapper in wrappers and call.args:
                target_name = dotted_name(call.args[0].value)
                if target_name is not None:
                    target = project.lookup_function(module.imports.qualify(target_name))
                    if target is not None:
                        add(target, f"passed to {wrapper}()", call)
    if patterns:
        for func in (f for m in modules for f in _module_functions(m)):
            matched = next((p for p in patterns if fnmatch.fnmatchcase(func.qualname, p)), None)
            if matched is not None:
                add(func, f"matches trace-roots pattern '{matched}'")
    elif library:  # last: a function that is a root for another reason keeps that reason
        for func, reason in entry_points(project, searched):
            add(func, reason)
    return list(roots.values())


# Packages whose nn.Modules are transforms run by data-loader workers on CPU tensors and images, not steps.
DATA_PIPELINE_PACKAGES = frozenset({"data", "datasets", "transforms", "augmentation", "augmentations",
                                    "dataloaders", "preprocessing"})


def in_data_pipeline(module_name: str) -> bool:
    """`timm.data.transforms`, `mylib.augmentations.mixup`, `vision/transforms.py`: a data pipeline module
    (its modules still are traced when a step calls them; they are not roots of their own)."""
    parts = module_name.split(".")
    return any(part in DATA_PIPELINE_PACKAGES or part.endswith(("_transforms", "_augment", "_augmentation"))
               for part in parts)


def _module_functions(module: ModuleInfo) -> Iterator[FunctionInfo]:
    yield from module.functions.values()
    for cls in module.classes.values():
        yield from cls.methods.values()


class _Worklist:
    """Functions waiting to be analysed, taken file by file in the project's order (then first come,
    first served): a file's functions are analysed together, so its tree is parsed once even when
    trees are given back to bound memory."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.heap: list[tuple[int, int, str]] = []
        self.queued: set[str] = set()
        self.count = 0

    def add(self, traced: TracedFunction) -> None:
        name = traced.func.qualname
        if name not in self.queued:
            self.queued.add(name)
            self.count += 1
            rank = self.project.rank(traced.func.module.name)
            heapq.heappush(self.heap, (-1 if rank is None else rank, self.count, name))

    def __bool__(self) -> bool:
        return bool(self.heap)

    def pop(self) -> str:
        name = heapq.heappop(self.heap)[2]
        self.queued.discard(name)
        return name


class TracedProgram:
    """Traced functions of a project, analysed to a fixed point. `after_analysis`, if given, sees each
    analysis while its module's tree is held (rules can run on it then, and the tree be given back)."""

    def __init__(self, project: Project, trace_roots: Iterable[str] = (),
                 after_analysis: Callable[[TracedFunction], None] | None = None,
                 root_modules: Collection[str] | None = None, tracer: str | None = None,
                 kept: KeptAnalyses | None = None, library: bool = False, roots: list[Root] | None = None) -> None:
        """`root_modules`: look for roots in these modules only (the others are there for what they
        define; their functions are traced only when called). `tracer` (tracing_guards.LAZY or DYNAMO):
        decide tracing predicates for it; None leaves both branches of such guards traced. `kept`: an
        editor's analyses of earlier runs, reused where nothing they read changed (reuse.py). `library`: the
        project has no step of its own, and its entry points are roots too (entry_points.py). `roots`: the
        roots to trace, when the caller found them (`find_root_calls`) and kept those of one target
        (root_targets.py); `trace_roots`, `root_modules` and `library` are then not read."""
        self.project = project
        self.guards = Guards(project, tracer) if tracer is not None else None
        # A tensor where a Python number is declared is taken as one number (0-dim) under lazy tracing, where
        # indexing by it always reads it. Dynamo gathers by a 0-dim tensor that enters its graph as an input
        # (a parameter, or any value after a graph break) and reads only one computed in the same graph.
        self._declared_scalars = tracer != DYNAMO
        self.after_analysis = after_analysis
        self.oracle = CallSiteOracle(project, self.guards)
        self.functions: dict[str, TracedFunction] = {}
        # callers in the order first seen (not a set: iterating a set of strings follows the hash seed, and
        # the order callers are queued in decides what a function oscillating between kinds ends up with)
        self._callers: dict[str, dict[str, None]] = {}
        self._given: dict[str, dict[str, Kind]] = {}
        self._site_args: dict[tuple[str, str], dict[str, Kind]] = {}
        self._roots = roots if roots is not None else find_root_calls(project, trace_roots, root_modules, library)
        self._dynamo = tracer == DYNAMO
        if self._dynamo:  # a function dynamo is told not to trace is no root of its graph
            self._roots = [root for root in self._roots if disabled(root[0]) != DEEP]
        # the roots whose inputs are assumed (a tensor for an unannotated one); an entry point's are unknown,
        # as a helper's with no caller
        self._root_names = {func.qualname for func, reason, _ in self._roots if not is_entry_point(reason)}
        self.errors: list[tuple[TracedFunction, Exception]] = []
        self.kept = kept
        if kept is not None:
            kept.start()
            self.oracle.kept = kept

    def run(self) -> TracedProgram:
        work = _Worklist(self.project)
        for func, reason, call in self._roots:
            traced = TracedFunction(func=func, reason=reason)
            if self._dynamo:
                traced.compile = wrapper_options(call, func, func.module.imports) if call is not None \
                    else decorated_options(func)
                traced.eager = disabled(func) == SHALLOW
            self.functions[func.qualname] = traced
            work.add(traced)
        while work:
            name = work.pop()
            traced = self.functions[name]
            if traced.analyses >= MAX_ANALYSES_PER_FUNCTION:
                continue
            traced.analyses += 1
            with traced.func.module.held():
                if not self.analyse(traced):
                    continue
                analysis = traced.analysis
                assert analysis is not None
                if self.after_analysis is not None:
                    self.after_analysis(traced)
            if traced.analyses == 1:
                self._trace_decorators(traced, work)
            new_return = analysis.return_kind if analysis.returns_value else STATIC
            if self._declared_scalars:
                new_return = declared_scalar(new_return, traced.func.node.returns)
            old_return = self.oracle.returns.get(name)
            if old_return != new_return:
                self.oracle.returns[name] = new_return
                for caller in self._callers.get(name, ()):
                    work.add(self.functions[caller])
            per_callee: dict[str, dict[str, Kind]] = {}
            callees: dict[str, FunctionInfo] = {}
            overriding: dict[str, str] = {}
            for site in analysis.calls.values():
                args = per_callee.setdefault(site.callee.qualname, {})
                callees[site.callee.qualname] = site.callee
                if site.overriding is not None:
                    overriding.setdefault(site.callee.qualname, site.overriding)
                for pname, kind in site.args.items():
                    args[pname] = join(args[pname], kind) if pname in args else kind
            for callee_name, args in per_callee.items():
                if traced.wrapped is not None and name in self._callers and callee_name in self._callers[name]:
                    # a decorator's wrapper calling the function it wraps (`ret = func(*args, **kwargs)`): that
                    # function is traced with what its own callers pass, not with the wrapper's unknown `*args`
                    continue
                self._callers.setdefault(callee_name, {})[name] = None
                changed = self._merge_given(name, callee_name, args)
                callee = self.functions.get(callee_name)
                untraced = disabled(callees[callee_name]) if self._dynamo and callee is None else None
                if untraced == DEEP:  # dynamo runs it eagerly: it breaks the graph, nothing in it is traced
                    continue
                if callee is None:
                    callee = TracedFunction(func=callees[callee_name],
                                            reason=f"called from {traced.func.display_name}", parent=traced,
                                            overriding=overriding.get(callee_name), eager=untraced == SHALLOW)
                    self.functions[callee_name] = callee
                    changed = True
                adopt_into_step(traced, callee)
                adopt_entry_point(traced, callee, overriding.get(callee_name))
                if changed:
                    callee.params_stale = True
                    work.add(callee)
        return self

    def _trace_decorators(self, traced: TracedFunction, work: _Worklist) -> None:
        """A project function decorating a traced one returns the wrapper that runs in its place, traced with
        the wrapped function's arguments: `if seq_len > self.max_seq_len_cached:` in a dynamic-RoPE
        decorator's wrapper runs in every traced forward of the rotary embedding."""
        for name in traced.func.decorators:
            if not name or name in trace_wrappers() or name.rsplit(".", 1)[-1] in NOT_WRAPPERS:
                continue
            decorator = self.project.lookup_function(name)
            if decorator is None or decorator.qualname in self.functions or decorator.cls is not None:
                continue
            positional = decorator.signature[0]
            if not positional:
                continue
            wrapper = TracedFunction(func=decorator, reason=f"decorator of {traced.func.display_name}", parent=traced,
                                     wrapped=dict(traced.params), wrapped_positional=traced.func.signature[0])
            self.functions[decorator.qualname] = wrapper
            self._callers.setdefault(decorator.qualname, {})[traced.func.qualname] = None
            self._merge_given(traced.func.qualname, decorator.qualname,
                              {positional[0]: obj("function", traced.func.qualname)})
            work.add(wrapper)

    def analyse(self, traced: TracedFunction) -> bool:
        """(Re-)analyse one function with its current parameters; False if the analysis failed. Parameters
        are worked out here, not when callers change them, so a file's tree is needed only when its
        functions' turn comes."""
        try:
            if traced.params_stale:
                self._update_params(traced)
                traced.params_stale = False
            if traced.wrapped is not None:  # a decorator: analysed with the function it wraps, never kept
                traced.analysis = FunctionInference(self.project, self.oracle, traced.func, dict(traced.params),
                                                    keywords=traced.keywords, guards=self.guards,
                                                    wrapped=(traced.wrapped_positional, traced.wrapped)).run()
            elif self.kept is not None:
                traced.analysis = self.kept.analyse(self.project, self.oracle, traced.func, traced.params,
                                                    traced.keywords, self.guards)
            else:
                traced.analysis = FunctionInference(self.project, self.oracle, traced.func, dict(traced.params),
                                                    keywords=traced.keywords, guards=self.guards).run()
        except Exception as exc:  # reported for this function; the rest of the program is analysed
            self.errors.append((traced, exc))
            traced.analysis = None
            traced.analyses = MAX_ANALYSES_PER_FUNCTION
            return False
        return True

    def _update_params(self, traced: TracedFunction) -> None:
        name = traced.func.qualname
        if traced.func.node.params.star_kwarg is not None:
            named = {p.name.value for p in all_params(traced.func.node)}
            traced.keywords = {k: v for k, v in self._given.get(name, {}).items() if k not in named}
        if name not in self._root_names:
            traced.params = helper_param_kinds(self.oracle, traced.func, self._given.get(name, {}))
        else:
            self._update_root_params(traced)
        traced.annotation_overrides = annotation_overrides(traced.func, traced.params)
        if self._declared_scalars:  # `timestep: int` given a tensor: a 0-dim one
            for param in all_params(traced.func.node):
                if param.name.value in traced.params:
                    traced.params[param.name.value] = declared_scalar(traced.params[param.name.value],
                                                                      param.annotation)

    def _update_root_params(self, traced: TracedFunction) -> None:
        name = traced.func.qualname
        traced.params = root_param_kinds(self.project, self.oracle, traced.func)
        # A root that is also called: what its callers pass replaces what was only assumed (a tensor for an
        # unannotated parameter); it widens what the signature says.
        assumed = assumed_parameters(traced.func)
        for pname, kind in callers_kinds(traced.func, self._given.get(name, {}), self.project).items():
            if pname in assumed:
                traced.params[pname] = kind
            elif pname in traced.params:
                traced.params[pname] = join(traced.params[pname], kind)

    def _merge_given(self, caller: str, callee: str, args: dict[str, Kind]) -> bool:
        """Record what `caller` now passes `callee`; its parameters are the join over callers' latest
        calls (not over all history, so a caller re-analysed with better callee results narrows them)."""
        before = self._site_args.get((caller, callee))
        if before == args:
            return False
        self._site_args[(caller, callee)] = args
        if before is None:  # a new caller, the last one: its arguments joined to the others' (same order)
            given = dict(self._given.get(callee, {}))
            for pname, kind in args.items():
                given[pname] = join(given[pname], kind) if pname in given else kind
        else:  # a caller passing something else (maybe narrower): the join over all callers again
            given = {}
            for name in self._callers.get(callee, ()):
                for pname, kind in self._site_args.get((name, callee), {}).items():
                    given[pname] = join(given[pname], kind) if pname in given else kind
        changed = self._given.get(callee) != given
        self._given[callee] = given
        return changed

    def influencing_modules(self) -> dict[str, frozenset[str]]:
        """For each module with traced code, the modules whose traced code can change what is inferred in
        it, itself included: its callers (up to the roots), and the callers of everything it calls (a
        helper's parameters, and so its result, are the join of what all its callers pass).

        Where traced code meets in a shared helper, every module's set is most of the program: made one by
        one (N walks of the whole call graph) and kept one per module, they took time and memory growing
        as N². A function's callers, directly or not, include those of each function calling it, so the
        set is that of the callers of the functions it reaches that call nothing further: the sinks of
        the call graph and the functions on its cycles (`_ends`); an end called only from the module's own
        functions adds nothing. Modules reaching the same ends share one set (the same object, also
        across processes: pickle keeps it one)."""
        module_of = {name: t.func.module.name for name, t in self.functions.items()}
        callees: dict[str, set[str]] = {}
        for callee, callers in self._callers.items():
            for caller in callers:
                callees.setdefault(caller, set()).add(callee)
        ends = _ends(set(module_of) | set(callees) | set(self._callers), callees, self._callers)
        by_module: dict[str, set[str]] = {}
        for name, module in module_of.items():
            by_module.setdefault(module, set()).add(name)
        callers_of: dict[str, set[str]] = {}  # an end's callers, directly or not, with itself
        shared: dict[frozenset[str], frozenset[str]] = {}
        out: dict[str, frozenset[str]] = {}
        for module, names in by_module.items():
            reached = []
            for end in reachable(names, lambda n: callees.get(n, ())) & ends:
                if end not in callers_of:
                    callers_of[end] = reachable({end}, lambda n: self._callers.get(n, ()))
                if not callers_of[end] <= names:  # else it adds no module but this one
                    reached.append(end)
            if not reached:
                out[module] = frozenset({module})
                continue
            key = frozenset(reached)
            if key not in shared:
                influencing = set().union(*(callers_of[end] for end in key))
                shared[key] = frozenset(module_of[n] for n in influencing if n in module_of)
            out[module] = shared[key]
        return out

    def in_module(self, module_name: str) -> list[TracedFunction]:
        return [t for t in self.functions.values() if t.func.module.name == module_name]


def _ends(nodes: set[str], callees: dict[str, set[str]], callers: dict[str, dict[str, None]]) -> set[str]:
    """Functions every function reaches one of by calls: those that call nothing, and those on a cycle
    (or between two: the functions left after stripping, again and again, those that call nothing left
    and those called by nothing left)."""

    def stripped(successors: Mapping[str, Collection[str]], predecessors: Mapping[str, Collection[str]]) -> set[str]:
        left = {n: len(successors.get(n, ())) for n in nodes}
        queue = [n for n, count in left.items() if count == 0]
        gone = set(queue)
        while queue:
            for before in predecessors.get(queue.pop(), ()):
                left[before] -= 1
                if left[before] == 0:
                    gone.add(before)
                    queue.append(before)
        return nodes - gone

    return {n for n in nodes if not callees.get(n)} | (stripped(callees, callers) & stripped(callers, callees))


def adopt_into_step(caller: TracedFunction, callee: TracedFunction) -> None:
    """A root found by its class (`Net.forward`, `AdamW.step`) that a step function reaches becomes that
    step's callee, so its findings say `training_step -> Net.forward`. Its parameters stay those of a root."""
    if callee.parent is not None or callee is caller or not is_step_function(caller.root.func):
        return
    if callee.func.qualname in caller.chain:
        return
    callee.parent = caller
    callee.reason = f"called from {caller.func.display_name}"


def adopt_entry_point(caller: TracedFunction, callee: TracedFunction, overriding: str | None = None) -> None:
    """A library entry point (entry_points.py) that traced code calls is that caller's callee: its findings
    say `Net.forward -> scatter`, as they would without entry points. Its parameters are a helper's either way."""
    if callee.parent is not None or callee is caller or not is_entry_point(callee.reason):
        return
    if callee.func.qualname in caller.chain:
        return
    callee.parent = caller
    callee.reason = f"called from {caller.func.display_name}"
    callee.overriding = overriding  # reached through `self.hook()` as a subclass's override
