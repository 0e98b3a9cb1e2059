"""torch_xla training loops: the body of a loop that ends each step with `xm.mark_step()` is traced.

See `LoopStep`. Built on the step-function machinery of `step_functions.py` (a loop's body is a step:
`model(x)` and `optimizer.step()` lead into the model's forward and the optimizer's step).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.index import FunctionInfo, ModuleInfo
from cslint.analysis.kinds import STATIC, TENSOR, UNKNOWN, Kind, Tag, join
from cslint.analysis.project import Project
from cslint.analysis.step_functions import conventional_kind, expression_kind
from cslint.analysis.walk import bound_names, iter_nodes
from cslint.core.targets import step_calls


@dataclass(eq=False)
class LoopStep(FunctionInfo):
    """The statements of torch_xla training loops that XLA traces as one graph per iteration.

    Lazy tensors record every operation until `xm.mark_step()` (or `torch_xla.sync()`) compiles and runs
    the graph, so in

        def train(loader, epochs):
            model = Net().to(xm.xla_device())
            optimizer = AdamW(model.parameters())
            for x, y in loader:
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                print(loss.item())      # forces a graph execution in the middle of the step
                xm.mark_step()
            save(model)

    the loop body up to the mark_step is the step. The function itself is not a root: what runs before and
    after the loop (building the model, reading the results) is not part of the step and would only bring
    false findings (`epochs` is not a tensor). Instead this stands in for the function, with the same
    qualified name, parameters and class, and as its body only the statements of each such loop up to
    (and including) the last statement that calls mark_step; statements after it run once the step's
    values exist, which is where XLA says to read them. It is a step function, so `model(x)` and
    `optimizer.step()` lead into `Net.forward` and `AdamW.step` (as for `@cstorch.trace`, when the class
    is known: built before the loop, a module-level object, an annotation), and helpers called in the
    loop are analysed with the arguments it passes them. Its names are seeded (`apply_step_params`):
    parameters and names bound before the loop hold tracked objects or conventional names (`model`,
    `optimizer`), else are unknown, not tensors; the loop's targets are the batch (tensors), except the
    index of `enumerate` and the numbers of `range`, which are static.

    Simpler alternatives were worse: making the whole function a root checks its setup and logging code
    with every unannotated parameter a tensor; making only the functions the loop calls roots (the first
    version) misses `loss.item()` written in the loop itself and cannot tell them which model they get.

    A training loop at the top level of a script is one too, named `<module>`. These roots are found for
    every target: `mark_step` and `sync` only appear in XLA code.
    """

    enclosing: FunctionInfo | None = None  # the function holding the loops; None at a script's top level
    loops: tuple[cst.For | cst.While, ...] = ()
    scope: tuple[cst.BaseStatement, ...] = ()  # the statements the loops are in: the function body, or the module's
    _seeds: dict[str, Kind] | None = None

    @property
    def display_name(self) -> str:
        return self.enclosing.display_name if self.enclosing is not None else self.qualname


LOOP_REASON = "the body of a loop in "  # the start of a training loop's root's reason (root_targets.py)


def mark_step_loop_roots(modules: Iterable[ModuleInfo]) -> Iterator[tuple[LoopStep, str]]:
    """A `LoopStep` for every function (and script top level) of `modules` with a loop that calls mark_step."""
    packages = {call.partition(".")[0] for call in step_calls()}  # a module calling one imports from its package
    for module in modules:
        if not any(p in module.source for p in packages) or not _imports_mark_step(module):  # before parsing
            continue
        module.holds += 1  # the LoopSteps keep nodes of this tree: it must stay the module's tree
        for owner, scope, found in _loops_of(module):
            statements = [s for _, step, _ in found for s in step]
            loops = tuple(loop for loop, _, _ in found)
            body = cst.IndentedBlock(body=statements)
            call = max(spelling for _, _, spelling in found)  # xm.mark_step() when both
            if owner is not None:
                node = owner.node.with_changes(body=body)
                step = LoopStep(qualname=owner.qualname, name=owner.name, module=module, cls=owner.cls,
                                decorators=list(owner.decorators), _node=node, step_function=True,
                                enclosing=owner, loops=loops, scope=tuple(scope))
                where = owner.display_name
            else:
                name = next((n for n in iter_nodes(loops[0]) if isinstance(n, cst.Name)), cst.Name("module"))
                node = cst.FunctionDef(name=name, params=cst.Parameters(), body=body)
                step = LoopStep(qualname=f"{module.name}.<module>", name="<module>", module=module, _node=node,
                                step_function=True, loops=loops, scope=tuple(scope))
                where = f"the top level of {module.name}"
            yield step, f"{LOOP_REASON}{where} that ends each step with {call}"


def _loops_of(module: ModuleInfo) -> list[tuple[FunctionInfo | None, Sequence[cst.BaseStatement],
                                                list[tuple[cst.For | cst.While, list[cst.BaseStatement], str]]]]:
    """Each owner (function, or None for the top level) of the module with loops calling mark_step, its
    statements and those loops; kept with the tree, as an editor asks again on every edit of another file."""
    kept = module.tree_data.get("mark_step loops")
    if kept is None:
        owners: list[tuple[FunctionInfo | None, Sequence[cst.BaseStatement]]] = [
            (func, _statements(func.node.body)) for func in _module_functions(module)]
        owners.append((None, module.tree.body))
        kept = [(owner, scope, found) for owner, scope in owners
                if (found := _step_loops(module, scope, prune_defs=owner is None))]
        module.tree_data["mark_step loops"] = kept
    return kept


def _imports_mark_step(module: ModuleInfo) -> bool:
    """Whether an import of the module leads to mark_step (`torch_xla`, `xla_model as xm`, `sync`)."""
    return any(call == name or call.startswith(f"{name}.")
               for name in module.imports.names.values() for call in step_calls())


def _module_functions(module: ModuleInfo) -> Iterator[FunctionInfo]:
    yield from module.functions.values()
    for cls in module.classes.values():
        yield from cls.methods.values()


def _statements(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    return [cst.SimpleStatementLine(body=suite.body)] if isinstance(suite, cst.SimpleStatementSuite) else []


_NOT_THE_STEP = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)


def _mark_step_spelling(module: ModuleInfo, node: cst.CSTNode) -> str | None:
    """How a message names the mark_step this node calls, if it calls one."""
    if type(node) is not cst.Call:
        return None
    resolved = module.imports.resolve(node.func)
    if resolved not in step_calls():
        return None
    return "xm.mark_step()" if resolved.endswith("mark_step") else f"torch_xla.{resolved.rsplit('.', 1)[1]}()"


def _step_loops(module: ModuleInfo, scope: Sequence[cst.BaseStatement], prune_defs: bool,
                ) -> list[tuple[cst.For | cst.While, list[cst.BaseStatement], str]]:
    """Loops in `scope` whose own body (not a nested loop's or function's) calls mark_step, each with its
    statements up to the last that does and how that call is spelled. Functions nested in a function are
    searched too (a training loop defined inside `_mp_fn`); at a script's top level, functions are
    indexed on their own."""
    prune = (cst.FunctionDef, cst.ClassDef) if prune_defs else (cst.ClassDef,)
    found: list[tuple[cst.For | cst.While, list[cst.BaseStatement], str]] = []
    for stmt in scope:
        for node in iter_nodes(stmt, prune=prune):
            if not isinstance(node, (cst.For, cst.While)):
                continue
            body = _statements(node.body)
            last, spelling = -1, ""
            for i, inner in enumerate(body):
                calls = [s for n in _unguarded_nodes(module, inner)
                         if (s := _mark_step_spelling(module, n)) is not None]
                if calls:
                    last, spelling = i, max(calls)
            if last >= 0:
                found.append((node, list(body[:last + 1]), spelling))
    return found


def _unguarded_nodes(module: ModuleInfo, stmt: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes of one statement of a loop body that belong to the step, leaving out what runs only when
    torch_xla happens to be installed (`if is_torch_xla_available(): xm.mark_step()`): a framework's
    evaluation loop that syncs when it runs on XLA is not an XLA step loop."""
    stack: list[cst.CSTNode] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        if type(node) in _NOT_THE_STEP:
            continue
        if type(node) is cst.If and _availability_check(module, node.test):
            if node.orelse is not None:
                stack.append(node.orelse)
            continue
        stack.extend(reversed(list(node.children)))


def _availability_check(module: ModuleInfo, test: cst.BaseExpression) -> bool:
    """`is_torch_xla_available()`, `is_torch_tpu_available()`, `self.args.use_xla`: asks whether XLA is
    there, not something about the step."""
    names = [dotted_name(n.func if isinstance(n, cst.Call) else n) or ""
             for n in iter_nodes(test) if isinstance(n, (cst.Call, cst.Name, cst.Attribute))]
    return any(("xla" in name.lower() or "tpu" in name.lower()) and "mark_step" not in name for name in names)


def _builtin_call(module: ModuleInfo, expr: cst.BaseExpression, name: str) -> cst.Call | None:
    """`expr` if it calls the builtin `name` (not shadowed by an import)."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == name \
            and name not in module.imports.names:
        return expr
    return None


def _loop_target_kinds(module: ModuleInfo, target: cst.BaseExpression, iterable: cst.BaseExpression,
                       element: Kind) -> dict[str, Kind]:
    """Names a `for` binds: `element` for each, except `range` numbers and `enumerate` indices (static)."""
    if _builtin_call(module, iterable, "range") is not None:
        return {n.value: STATIC for n in bound_names(target)}
    enumerated = _builtin_call(module, iterable, "enumerate")
    if enumerated is not None and enumerated.args and isinstance(target, (cst.Tuple, cst.List)) \
            and len(target.elements) == 2:
        kinds = {n.value: STATIC for n in bound_names(target.elements[0].value)}
        kinds.update(_loop_target_kinds(module, target.elements[1].value, enumerated.args[0].value, element))
        return kinds
    return {n.value: element for n in bound_names(target)}


_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
             cst.FormattedString)


def _value_kind(project: Project, module: ModuleInfo, value: cst.BaseExpression, known: dict[str, Kind]) -> Kind | None:
    """A local's kind from its value: a tracked object, static for a literal, else None (ask its name)."""
    if isinstance(value, _LITERALS) or isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
        return STATIC
    return expression_kind(project, module, value, known)


class _BoundBefore:
    """Names bound before a loop runs, in order: assignments, enclosing loops' targets, `with ... as`,
    and the parameters of the nested functions the loop is in. Branches are all taken; functions that
    do not hold the loop are skipped."""

    def __init__(self, project: Project, module: ModuleInfo, loop: cst.CSTNode, known: dict[str, Kind]) -> None:
        self.project, self.module, self.loop = project, module, loop
        self.known = known  # name -> kind, updated as bindings are met

    def block(self, statements: Iterable[cst.CSTNode]) -> bool:
        """Record the bindings of `statements` until the loop; True once it is reached."""
        for stmt in statements:
            if stmt is self.loop:
                return True
            if self.statement(stmt):
                return True
        return False

    def bind(self, target: cst.BaseExpression, kind: Kind | None) -> None:
        imported = self.module.imports.names
        for name in bound_names(target):
            found = kind if kind is not None else conventional_kind(name.value) or UNKNOWN
            if found.tag in (Tag.STATIC, Tag.UNKNOWN) and name.value in imported:
                continue  # `except ImportError: xm = None`: the name still resolves through its import
            self.known[name.value] = found

    def statement(self, stmt: cst.CSTNode) -> bool:
        kind_of = type(stmt)
        if kind_of is cst.SimpleStatementLine:
            for small in stmt.body:  # type: ignore[attr-defined]
                if type(small) is cst.Assign:
                    kind = _value_kind(self.project, self.module, small.value, self.known)
                    for target in small.targets:
                        self.bind(target.target, kind)
                elif type(small) is cst.AnnAssign and small.value is not None:
                    self.bind(small.target, _value_kind(self.project, self.module, small.value, self.known))
                elif type(small) is cst.AugAssign and isinstance(small.target, cst.Name):
                    self.known.setdefault(small.target.value, UNKNOWN)
            return False
        if kind_of is cst.For:
            for name, kind in _loop_target_kinds(self.module, stmt.target, stmt.iter, UNKNOWN).items():  # type: ignore[attr-defined]
                self.known[name] = kind
        elif kind_of is cst.With:
            for item in stmt.items:  # type: ignore[attr-defined]
                if item.asname is not None:
                    self.bind(item.asname.name, UNKNOWN)
        elif kind_of is cst.FunctionDef:
            saved = dict(self.known)
            for param in (*stmt.params.posonly_params, *stmt.params.params, *stmt.params.kwonly_params):  # type: ignore[attr-defined]
                self.bind(param.name, None)
            if self.block(_statements(stmt.body)):  # type: ignore[attr-defined]
                return True
            self.known.clear()
            self.known.update(saved)
            return False
        elif kind_of is cst.ClassDef:
            return False
        return any(self.block(_statements(suite)) for suite in _suites(stmt))


def _suites(stmt: cst.CSTNode) -> Iterator[cst.BaseSuite]:
    """The blocks of a compound statement, in source order."""
    body = getattr(stmt, "body", None)
    if isinstance(body, cst.BaseSuite):
        yield body
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    if isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield case.body
    orelse = getattr(stmt, "orelse", None)
    while orelse is not None:
        if isinstance(orelse, cst.If):  # elif
            yield orelse.body
            orelse = orelse.orelse
        else:
            yield orelse.body
            orelse = None
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        yield final.body


def loop_step_seeds(project: Project, step: LoopStep, params: dict[str, Kind]) -> dict[str, Kind]:
    """What the loop body's free names hold when it starts (see `LoopStep`): joined over its loops."""
    if step._seeds is not None:
        return step._seeds
    seeds: dict[str, Kind] = {}
    for loop in step.loops:
        known = dict(params)
        _BoundBefore(project, step.module, loop, known).block(step.scope)
        if isinstance(loop, cst.For):
            known.update(_loop_target_kinds(step.module, loop.target, loop.iter, TENSOR))
        for name, kind in known.items():
            if name in params and params[name] is kind:
                continue
            seeds[name] = join(seeds[name], kind) if name in seeds else kind
    step._seeds = seeds
    return seeds
