"""Flow-sensitive tensor-value inference over one function body.

Walks the statements in order with an environment `name -> Kind`, joins environments where control
flow merges, and records the kind of every expression it evaluates. Rules read those kinds; the call
graph reads the call sites (callee, kinds of its arguments) to analyse helpers with what they are given.
Attribute and item paths (`self.count`, `state["step"]`) are tracked like names, so a value assigned
earlier in the same function is known where it is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.call_kinds import unknown_call_kind
from cslint.analysis.constant_tests import constant_truth
from cslint.analysis.expression_inference import ExpressionInference
# `as` (here and for syntax below): rules/ and fixers/ import these from here too, until #35's re-layout moves
# their imports to function_analysis.py and syntax.py
from cslint.analysis.function_analysis import Env, FunctionAnalysis
from cslint.analysis.imports import dotted_name
from cslint.analysis.index import FunctionInfo, ModuleInfo
from cslint.analysis.kinds import (
    STATIC, TENSOR, UNKNOWN, Kind, Tag, as_boolean, element_of, is_none, is_some, join, known_items, not_none, obj,
    sequence_of, tuple_of,
)
from cslint.analysis.none_arguments import never_none, none_truth
from cslint.analysis.project import Project
from cslint.analysis.sequence_kinds import operation
from cslint.analysis.signatures import all_params, first_param, signature_kind
from cslint.analysis.syntax import none_test, path_key
from cslint.analysis.tracing_guards import Guards, guard_text

if TYPE_CHECKING:
    from cslint.analysis.oracle import Oracle

class FunctionInference(ExpressionInference):
    """The walk of one function body: its statements (here), its expressions and calls (the classes it extends)."""

    def __init__(self, project: Project, oracle: Oracle, func: FunctionInfo, params: dict[str, Kind],
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
        self.self_name = first_param(func.node) if func.cls is not None and not func.is_static_method else None
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
        # a parameter is None, or shown not to be, or a constant, for this analysis (a library's, per call), or an
        # instance whose constructor call decided some of its attributes: tests on them decide branches, settled
        # once the function is done (`_settle_none_tests`)
        self._constants = any(kind.attrs or kind.value is not None for kind in params.values())
        self._nones = self._constants or any(is_none(kind) or is_some(kind) for kind in params.values())
        self._none_tests: dict[int, tuple[cst.If | cst.IfExp, set[bool | None]]] = {}
        self._none_rest: dict[int, set[int]] = {}  # after a decided `if x is None: return`: the rest of the block
        self._library_targets = {}
        self._running_each = set()

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
        if known is None and self._constants:  # `if self.ignore_index >= 0:` of an instance left at -100
            known = constant_truth(node.test, self.result.kinds)
        self._none_tests.setdefault(id(node), (node, set()))[1].add(known)
        return known

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
                after = (id(rest) for rest in body[i + 1:])
                if left is True:
                    self.result.dead.update(after)
                else:  # decided by a None: settled at the end
                    self._none_rest.setdefault(left, set()).update(after)
                return
            if self._guard_note:  # after `if <guard that does not hold>: return`, the rest runs traced
                for rest in body[i + 1:]:
                    self.result.unguarded.setdefault(id(rest), self._guard_note)
                self._guard_note = ""

    def _statement(self, stmt: cst.CSTNode, env: Env) -> None:
        # exact types: isinstance() against libcst's ABCs is slow
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                self._small(small, env)
        elif type(stmt) in _SMALL_STATEMENTS:
            self._small(stmt, env)  # type: ignore[arg-type]
        elif type(stmt) is cst.If:
            self._if(stmt, env)
        elif type(stmt) is cst.For:
            self._for(stmt, env)
        elif type(stmt) is cst.While:
            self._while(stmt, env)
        elif type(stmt) is cst.With:
            for item in stmt.items:
                kind = self.ev(item.item, env)
                if item.asname is not None:
                    self._bind(item.asname.name, kind if kind.is_tensor else UNKNOWN, env)
            self._block(stmt.body, env)
        elif type(stmt) is cst.Try or type(stmt) is cst.TryStar:
            self._try(stmt, env)
        elif type(stmt) is cst.FunctionDef:
            self._nested_function(stmt, env)
        elif type(stmt) is cst.Match:
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
        if type(stmt) is cst.Assign:
            kind = self.ev(stmt.value, env)
            for target in stmt.targets:
                self._bind(target.target, self._spread(stmt.value, self._marked(stmt.value, kind, target.target, env),
                                                       target.target), env)
        elif type(stmt) is cst.AnnAssign:
            if stmt.value is not None:
                kind = self.ev(stmt.value, env)
                self._bind(stmt.target, self._marked(stmt.value, kind, stmt.target, env), env)
        elif type(stmt) is cst.AugAssign:
            old = self.ev(stmt.target, env)
            new = operation(stmt.operator, old, self.ev(stmt.value, env))
            if old.tag in (Tag.OBJECT, Tag.SEQUENCE, Tag.UNKNOWN) and new.tag is Tag.UNKNOWN:
                new = old
            elif old.boolean and new.tag is Tag.TENSOR:  # `mask &= valid` updates the mask in place: still one
                new = as_boolean(new)
            self._bind(stmt.target, new, env, record=False)
        elif type(stmt) is cst.Expr:
            self.ev(stmt.value, env)
        elif type(stmt) is cst.Return:
            if stmt.value is not None:
                kind = self.ev(stmt.value, env)
                res = self.result
                res.return_kind = join(res.return_kind, kind) if res.returns_value else kind
                res.returns_value = True
        elif type(stmt) is cst.Assert:
            self.ev(stmt.test, env)
            if stmt.msg is not None:
                self.ev(stmt.msg, env)
        elif type(stmt) is cst.Raise:
            if stmt.exc is not None:
                self.ev(stmt.exc, env)

    @staticmethod
    def _marked(value: cst.BaseExpression, kind: Kind, target: cst.BaseExpression, env: Env) -> Kind:
        """A local variable bound to a value shown not to be None (`n = x.size(0)`, `n = max(sizes)`) keeps that
        in its kind: a callee's `if n is None:` given it is decided (none_arguments.py). Attributes are not
        marked: their kind is joined over every method that sets them."""
        return not_none(kind) if type(target) is cst.Name and never_none(value, env) else kind

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
            question = none_test(open_[0])
            if question is not None and not question[1]:  # `mask is not None`, `mask != None`
                key = path_key(question[0])
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
            question = none_test(test)
            if question is not None:
                key = path_key(question[0])
                if key is not None and key in env:
                    # None where `x is None` (`x == None`) holds; where it fails, what it was, not None
                    env[key] = STATIC if holds is question[1] else not_none(env[key])
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
        elif holds and all(q in api.STATIC_TORCH_CLASSES for q in qualified):
            env[key] = STATIC  # `isinstance(x, torch.dtype) and x in (torch.float16, torch.bfloat16)`
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
            return unknown_call_kind(arg_kinds)
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
                  else signature_kind(param, UNKNOWN) for param in all_params(func)}
        return self._run_nested(func, params, env)

    def _uncalled_nested_functions(self) -> None:
        while self._nested_pending:
            node, env = self._nested_pending.pop(next(iter(self._nested_pending)))
            unannotated = self.unannotated_param if self.wrapped is None else UNKNOWN
            params = {param.name.value: signature_kind(param, unannotated) for param in all_params(node)}
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
            items = known_items(kind)
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
            for index in target.slice:
                if isinstance(index.slice, cst.Index):
                    self.ev(index.slice.value, env)
        elif isinstance(target, cst.Attribute):
            self.ev(target.value, env)
        key = path_key(target)
        if key is None:
            return
        env[key] = kind
        if record:
            self._record(target, kind)
        if self.self_name and key.startswith(self.self_name + ".") and key.count(".") == 1:
            attrs = self.result.attribute_assignments
            attr = key.split(".", 1)[1]
            attrs[attr] = join(attrs[attr], kind) if attr in attrs else kind


_SMALL_STATEMENTS = frozenset({
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr, cst.Return, cst.Assert, cst.Raise, cst.Del, cst.Pass,
    cst.Break, cst.Continue, cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom,
})


def _leaves(block: cst.BaseSuite) -> bool:
    """Does the block always leave (its last statement returns, raises, breaks or continues)?"""
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = body[-1] if body else None
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and last.body:
        return type(last.body[-1]) in (cst.Return, cst.Raise, cst.Break, cst.Continue)
    return False
