"""Make a param-group entry that a tensor test switches between Python literals a tensor code.

    defaults = dict(lr=lr, phase="ADAM")          defaults = dict(lr=lr, phase=0)
                                                  ...
                                                  def preinitialize(self):
                                                      for group in self.param_groups:
                                                          group["phase"] = torch.as_tensor(group["phase"],
                                                              device=group["params"][0].device)
    if group["phase"] == "SGD":           ->      if group["phase"] == 1:
        ...                                           ...
    if switch > 0:                                if switch > 0:
        group["phase"] = "SGD"                        group["phase"] = 1

SWATS switches from Adam to SGD this way. A Python string chosen by a tensor test has no value while
tracing; a tensor code does, and once the entry is a tensor the masked fixes take the rest: the switch
becomes `group["phase"] = torch.where(taken, 1, group["phase"])` and each `if` reading it a masked block
(an `if` that ends in `continue` masked with the rest of the loop body as its else). Strings get codes in
the order they appear (the initial value first); bools and ints are their own codes, so only the tensor
is new. The entry must take only literals, its initial value a literal in `__init__` (a `dict(...)` or
`{...}` of defaults, `group.setdefault`), and every read of it be an `==`/`!=` test against one of those
literals (or, for bools and ints, a truth test, which becomes `!= 0`: a boolean condition the masked
fixes take, as `if group["late"]:` on a tensor of unknown dtype is not). The class must have a
`preinitialize()` that loops over `self.param_groups`: it makes the entry a tensor on the parameters'
device (idempotent: `as_tensor` of a tensor), and a test of the entry in it that guards state creation
goes (the step may switch the entry later, so the state must exist from the start). Always unsafe.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.syntax import string_key
from cslint.analysis.walk import iter_nodes
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix, Replacement

Literal = str | int | bool


def _literal(expr: cst.BaseExpression) -> tuple[Literal] | None:
    """(value) of a string, integer or bool literal, else None."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return (value,) if isinstance(value, str) else None
    if isinstance(expr, cst.Integer):
        return (int(expr.value, 0),)
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return (expr.value == "True",)
    return None


def _key(node: cst.CSTNode) -> str | None:
    """"phase" of `group["phase"]` (a string key on a name), else None."""
    return string_key(node) if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) else None


class _Uses(cst.CSTVisitor):
    """Every use of the entry `key` in one method: literal nodes to recode, and whether any use is of
    another kind (then no fix)."""

    def __init__(self, key: str, is_init: bool) -> None:
        self.key = key
        self.is_init = is_init
        self.values: list[Literal] = []  # initial and stored values, in the order they appear
        self.initial: list[Literal] = []
        self.compared: list[Literal] = []
        self.literals: list[cst.BaseExpression] = []  # the nodes that hold a value (to recode)
        self.truth_tests: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []  # (test, entry)
        self.allowed: set[int] = set()  # ids of subscripts whose use was recognised
        self.subscripts: list[cst.Subscript] = []
        self.other = False

    def _value(self, expr: cst.BaseExpression, initial: bool) -> None:
        found = _literal(expr)
        if found is None:
            self.other = True  # a value that is not a literal: the codes cannot be known
            return
        (self.initial if initial else self.values).append(found[0])
        self.literals.append(expr)

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(_key(t.target) == self.key for t in node.targets):
            if len(node.targets) != 1:
                self.other = True
                return
            self.allowed.add(id(node.targets[0].target))
            self._value(node.value, initial=self.is_init)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "dict" and self.is_init:
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == self.key:
                    self._value(arg.value, initial=True)
        if isinstance(func, cst.Attribute) and func.attr.value == "setdefault" and len(node.args) == 2 and \
                _literal(node.args[0].value) == (self.key,):
            self._value(node.args[1].value, initial=True)

    def visit_Dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement) and _literal(element.key) == (self.key,) and self.is_init:
                self._value(element.value, initial=True)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
            return
        left, right = node.left, node.comparisons[0].comparator
        for entry, other in ((left, right), (right, left)):
            if _key(entry) == self.key and _literal(other) is not None:
                self.allowed.add(id(entry))
                self.compared.append(_literal(other)[0])  # type: ignore[index]
                self.literals.append(other)

    def visit_If(self, node: cst.If) -> None:
        self._truth(node.test, node.test)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._truth(node.expression, node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._truth(node.left, node.left)
        self._truth(node.right, node.right)

    def _truth(self, expr: cst.BaseExpression, test: cst.BaseExpression) -> None:
        """`if group["k"]:` / `not group["k"]`: `test` is what becomes a comparison with 0 (`!=` / `==`)."""
        if _key(expr) == self.key and id(expr) not in self.allowed:
            self.allowed.add(id(expr))
            self.truth_tests.append((test, expr))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if _key(node) == self.key:
            self.subscripts.append(node)


def _stored_keys(node: cst.If) -> list[str]:
    """Keys of `group["k"] = <literal>` stores inside the `if`."""
    keys: list[str] = []
    for n in iter_nodes(node.body):
        if isinstance(n, cst.Assign) and len(n.targets) == 1 and _literal(n.value) is not None:
            key = _key(n.targets[0].target)
            if key is not None and key not in keys:
                keys.append(key)
    return keys


def _group_loop(preinit: cst.FunctionDef) -> cst.For | None:
    """`for group in self.param_groups:` among the statements of preinitialize()."""
    body = preinit.body.body if isinstance(preinit.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and \
                isinstance(stmt.iter, cst.Attribute) and stmt.iter.attr.value == "param_groups" and \
                isinstance(stmt.iter.value, cst.Name) and stmt.iter.value.value == "self" and \
                isinstance(stmt.body, cst.IndentedBlock):
            return stmt
    return None


def _made_tensor(loop: cst.For, key: str) -> bool:
    """Whether the loop already stores `group["key"] = torch.as_tensor(...)` (this fix was applied)."""
    for stmt in loop.body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and any(_key(t.target) == key for t in small.targets) and \
                        isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute) and \
                        small.value.func.attr.value == "as_tensor":
                    return True
    return False


class _Preinitialize(cst.CSTTransformer):
    """preinitialize() with the entry made a tensor at the top of the group loop, its literals recoded, and
    each `if` testing the entry (with no else) replaced by its body."""

    def __init__(self, loop: cst.For, line: cst.SimpleStatementLine, key: str,
                 recode: dict[int, cst.BaseExpression]) -> None:
        self.loop = loop
        self.line = line
        self.key = key
        self.recode = recode
        self.unguarded = 0
        self.refused = False

    def leave_If(self, original: cst.If, updated: cst.If
                 ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if not any(_key(n) == self.key for n in iter_nodes(original.test)):
            return updated
        if updated.orelse is not None or not isinstance(updated.body, cst.IndentedBlock):
            self.refused = True
            return updated
        self.unguarded += 1
        return cst.FlattenSentinel(updated.body.body)

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        if original is not self.loop:
            return updated
        assert isinstance(updated.body, cst.IndentedBlock)  # _group_loop checked it
        return updated.with_changes(body=updated.body.with_changes(body=[self.line, *updated.body.body]))

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode  # type: ignore[override]
                 ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        result = super().on_leave(original, updated)
        recoded = self.recode.get(id(original))
        return recoded if recoded is not None else result


def switched_entry(node: cst.If, ctx: RuleContext) -> Fix | None:
    """The fix for an `if` on a tensor that stores a Python literal into a param-group entry, or None."""
    cls = ctx.traced.func.cls
    keys = _stored_keys(node)
    if cls is None or not keys or "__init__" not in cls.methods or "preinitialize" not in cls.methods:
        return None
    preinit = cls.methods["preinitialize"].node
    loop = _group_loop(preinit)
    if loop is None or not isinstance(loop.target, cst.Name):
        return None
    key = next((k for k in keys if not _made_tensor(loop, k)), None)
    if key is None:
        return None  # made a tensor already: the masked fixes take the switch
    uses: dict[str, _Uses] = {}
    for name, method in cls.methods.items():
        found = _Uses(key, name == "__init__")
        method.node.visit(found)
        if found.other or any(id(s) not in found.allowed for s in found.subscripts):
            return None
        uses[name] = found
    initial = [v for u in uses.values() for v in u.initial]
    values = list(dict.fromkeys(initial + [v for u in uses.values() for v in u.values]))
    compared = {v for u in uses.values() for v in u.compared}
    if not initial or len(values) < 2 or not compared <= set(values):
        return None
    strings = all(isinstance(v, str) for v in values)
    if not strings and not all(isinstance(v, (int, bool)) for v in values):
        return None
    if strings and any(u.truth_tests for u in uses.values()):
        return None  # a non-empty string is always true: the test means something codes cannot keep
    torch, imports = ctx.torch_name()
    recode: dict[int, cst.BaseExpression] = {}
    codes = {v: i for i, v in enumerate(values)} if strings else {}
    if strings:
        for found in uses.values():
            for literal in found.literals:
                value = _literal(literal)
                assert value is not None  # only literals were collected
                recode[id(literal)] = cst.Integer(str(codes[value[0]]))
    for found in uses.values():  # a truth test of a code tensor as a comparison: a boolean condition
        for test, entry in found.truth_tests:
            negated = test is not entry
            recode[id(test)] = cst.Comparison(entry.with_changes(lpar=[], rpar=[]), [cst.ComparisonTarget(
                cst.Equal() if negated else cst.NotEqual(), cst.Integer("0"))],
                lpar=[cst.LeftParen()] if negated and isinstance(test, cst.UnaryOperation) and test.lpar else [],
                rpar=[cst.RightParen()] if negated and isinstance(test, cst.UnaryOperation) and test.rpar else [])
    group = loop.target.value
    spelled = f'{group}["{key}"]'
    line = cst.parse_statement(f'{spelled} = {torch}.as_tensor({spelled}, device={group}["params"][0].device)\n')
    assert isinstance(line, cst.SimpleStatementLine)
    transformer = _Preinitialize(loop, line, key, recode)
    new_preinit = preinit.visit(transformer)
    if transformer.refused:
        return None
    replacements: list[tuple[cst.CSTNode, Replacement]] = [(preinit, new_preinit)]
    for name, found in uses.items():
        if name != "preinitialize":
            nodes = [*found.literals, *(test for test, _ in found.truth_tests)]
            replacements.extend((n, recode[id(n)]) for n in nodes if id(n) in recode)
    what = f"an int64 tensor code ({', '.join(f'{v!r} {codes[v]}' for v in values)})" if strings else "a tensor"
    message = (f"Make `{spelled}` {what}, a tensor on the parameters' device from preinitialize(), so the "
               f"switch and the tests of it can be masked; unsafe: code outside the class that reads the entry, "
               f"and a checkpoint saved before the fix, see or hold the Python value")
    if transformer.unguarded:
        message += ("; state that preinitialize() created under a test of the entry is created whatever its "
                    "value (the step may switch it later)")
    return Fix("unsafe", message, replacements, imports)
