"""Walks rewritten for speed keep their answers: the analysis budget's depth walk (budget._depths), the
size test of helpers answered per call (call_returns._small_node), and the children the rules' walk reads
(walk.child_nodes, FlatTree)."""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from cslint.support import budget
from cslint.analysis.call_returns import MAX_STATEMENTS, _small_ast, _small_node, is_small_helper
from cslint.analysis.index import index_module_from_ast
from cslint.analysis.walk import _NOT_WALKED, FlatTree, child_nodes, iter_nodes
from tests.corpus import real_files


def _depths_by_iter_child_nodes(root: ast.AST) -> tuple[dict[int, int], dict[int, ast.AST]]:
    """The walk as the budget defines it, written with `ast.iter_child_nodes`."""
    depth_of: dict[int, int] = {}
    statements: dict[int, ast.AST] = {}
    stack: list[tuple[ast.AST, int, ast.AST]] = [(root, 0, root)]
    while stack:
        node, depth, owner = stack.pop()
        if isinstance(node, ast.stmt):
            owner, depth = node, 0
            statements[id(node)] = node
        elif isinstance(node, ast.expr) and node.lineno == node.end_lineno \
                and depth + node.end_col_offset - node.col_offset <= budget.FREE_DEPTH:
            continue
        elif depth > depth_of.get(id(owner), 0):
            depth_of[id(owner)] = depth
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.expr_context):
                stack.append((child, depth + 1, owner))
    return depth_of, statements


DEEP_CODE = textwrap.dedent('''
    import torch

    def forward(self, hidden_states, attention_mask=None, *args, key: int = 3, **kwargs):
        """Docstring."""
        scores = torch.matmul(hidden_states, self.query(hidden_states).transpose(-1, -2)) / self.scale
        chained = hidden_states.view(-1).float().softmax(-1).mean().sum().abs().neg().exp().log().sqrt()
        summed = (((((((((((((((((((1))))))))))))))))))) + x + x + x + x + x + x + x + x + x + x + x + x + x
        picked = [t for t in (a if b else c for a, b, c in zip(xs, ys, zs)) if t is not None and not t]
        text = f"{self.name!r:>{width}} {hidden_states.shape[0] + 1:d} " + "done"
        lam = lambda x, *rest, y=1, **kw: x[1:2, ::3] if y else {k: v for k, v in kw.items()}
        with torch.no_grad() as g, open(path) as handle:
            try:
                del scores[0], chained.a
            except (ValueError, TypeError) as error:
                raise RuntimeError(str(error)) from error
        match attention_mask:
            case [first, *others] if first > 0:
                return first
            case {"key": value, **rest}:
                return value
            case Point(x=0, y=yy) | None:
                return yy
        return (yield from gen()) if await ready() else -summed ** 2
''')


def test_the_budget_walk_gives_what_iter_child_nodes_gives():
    for text in (DEEP_CODE, "x = " + " + ".join(["a.b.c(d)[e]"] * 60) + "\n",
                 "y = f(" * 60 + "0" + ")" * 60 + "\n",
                 "z = (\n" + "  [\n" * 30 + "1" + "]\n" * 30 + ")\n"):
        tree = ast.parse(text)
        fast, reference = budget._depths(tree), _depths_by_iter_child_nodes(tree)
        assert list(fast[0].items()) == list(reference[0].items())  # same depths, same order (the message's tie)
        assert list(fast[1]) == list(reference[1])
        assert max(fast[0].values()) > budget.FREE_DEPTH or text is DEEP_CODE
    assert budget.over_budget(ast.parse("y = f(" * 60 + "0" + ")" * 60 + "\n"), 10) is not None


def _function(text: str) -> cst.FunctionDef:
    node = cst.parse_module(textwrap.dedent(text)).body[0]
    assert isinstance(node, cst.FunctionDef)
    return node


def test_small_helpers_are_told_from_others():
    assert _small_node(_function("""
        def default(value, fallback):
            if value is None:
                return fallback
            return value
    """))
    statements = "\n".join(f"    x{i} = x + {i}" for i in range(MAX_STATEMENTS - 1))
    assert _small_node(_function(f"def f(x):\n{statements}\n    return x\n"))
    assert not _small_node(_function(f"def f(x):\n{statements}\n    y = x\n    return y\n"))
    assert not _small_node(_function("def f(x):\n    return [(yield v) for v in x]\n"))
    assert not _small_node(_function("def f(x):\n    def g():\n        return x\n    return g\n"))
    assert not _small_node(_function("def f(x):\n    class C:\n        pass\n    return C\n"))
    assert not _small_node(_function("def f(x, **kwargs):\n    return x\n"))
    assert not _small_node(_function("@torch.no_grad()\ndef f(x):\n    return x\n"))
    assert _small_node(_function("@staticmethod\ndef f(x):\n    a = 1; b = 2; c = 3\n    return a\n"))
    assert not _small_node(_function("def f(x):\n    a = 1; b = 2; c = 3; d = 4; e = 5\n    if x:\n"
                                     "        g = 1; h = 2\n    return a\n"))  # small statements of one line count each


SMALL_CASES = [
    "def default(value, fallback):\n    if value is None:\n        return fallback\n    return value\n",
    "def f(x):\n" + "".join(f"    x{i} = x + {i}\n" for i in range(MAX_STATEMENTS - 1)) + "    return x\n",
    "def f(x):\n" + "".join(f"    x{i} = x + {i}\n" for i in range(MAX_STATEMENTS)) + "    return x\n",
    "def f(x):\n    return [(yield v) for v in x]\n",
    "def f(x):\n    return (lambda: (yield from x))\n",
    "async def f(x):\n    async def g():\n        return x\n    return g\n",
    "def f(x):\n    class C:\n        pass\n    return C\n",
    "def f(x, **kwargs):\n    return x\n",
    "@torch.no_grad()\ndef f(x):\n    return x\n",
    "@staticmethod()\ndef f(x):\n    return x\n",
    "@a.staticmethod\ndef f(x):\n    return x\n",
    "@staticmethod\n@classmethod\ndef f(x):\n    a = 1; b = 2; c = 3\n    return a\n",
    "def f(x):\n    a = 1; b = 2; c = 3; d = 4; e = 5\n    if x:\n        g = 1; h = 2\n    return a\n",
    "def f(x):\n    if x: return 1\n    elif x > 1:\n        pass\n    else:\n        if y: pass\n    return 2\n",
    "def f(x):\n    try:\n        pass\n    except E:\n        pass\n    else:\n        pass\n"
    "    finally:\n        pass\n    with a: pass\n    for i in x: continue\n",
    "def f(x):\n    match x:\n        case 1: return 1\n        case _: return 2\n",
    "def f(x): return x\n",
]


def _pairs(text: str) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, cst.FunctionDef]]:
    """Every function and method of a file as both parsers see it."""
    def functions(body: list, kinds: tuple[type, ...], class_kind: type) -> list:
        found = [n for n in body if isinstance(n, kinds)]
        for cls in (n for n in body if isinstance(n, class_kind)):
            inner = cls.body if isinstance(cls, ast.ClassDef) else getattr(cls.body, "body", ())
            found += [n for n in inner if isinstance(n, kinds)]
        return found

    return list(zip(functions(ast.parse(text).body, (ast.FunctionDef, ast.AsyncFunctionDef), ast.ClassDef),
                    functions(cst.parse_module(text).body, (cst.FunctionDef,), cst.ClassDef), strict=True))


@pytest.mark.parametrize("path", real_files(torch_sample=40, seed=3), ids=lambda p: p.name)
def test_the_size_test_on_ast_gives_the_node_s(path):
    text = path.read_text(encoding="utf-8")
    try:
        pairs = _pairs(text)
    except cst.ParserSyntaxError:
        pytest.skip("does not parse")
    for tree, node in pairs:
        assert _small_ast(tree) == _small_node(node), (path, tree.name)


def test_the_size_test_on_ast_gives_the_node_s_on_odd_helpers():
    results = []
    for text in SMALL_CASES:
        ((tree, node),) = _pairs(text)
        assert _small_ast(tree) == _small_node(node), text
        results.append(_small_ast(tree))
    assert results.count(True) == 6


def test_helpers_too_large_are_not_parsed_with_libcst_to_tell():
    text = "class Block:\n    def gate(self, x, **kw):\n        return x\n\n    def keep(self, x):\n        return x\n"
    info = index_module_from_ast(Path("m.py"), text, ast.parse(text), "m", False, loader=lambda: pytest.fail("whole"))
    parsed = []
    info.piece_parser = lambda piece: parsed.append(piece) or cst.parse_module(piece)
    gate, keep = info.classes["Block"].methods["gate"], info.classes["Block"].methods["keep"]
    assert not is_small_helper(gate) and parsed == []
    assert is_small_helper(keep) and keep._node is None and parsed == []  # parsed when analysed, not to tell
    assert keep.node.name.value == "keep" and len(parsed) == 1


def test_the_host_fixers_walks_find_assignments_and_reads():
    from cslint.fixers import host

    func = _function("""
        def step(self, t, scale):
            value = t.sum().item()
            total = 2 * -(value + t.mean().item())
            pair = [t.max().item(), 1]
            if value > 0:
                scale = scale * value
            return value, scale
    """)
    calls = [n for n in _all(func) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
             and n.func.attr.value == "item"]
    first, second, third = calls
    assert host._assigned_name(func, first) == "value"
    assert host._assigned_name(func, second) is None  # inside arithmetic, not the assigned value itself
    statement = host._arithmetic_assignment(func, second)
    assert isinstance(statement, cst.Assign) and statement.targets[0].target.value == "total"
    assert host._arithmetic_assignment(func, third) is None  # in a list: not arithmetic
    reads = host._uses(func, "value")
    assert sorted(type(parent).__name__ for parent, _ in reads) == ["BinaryOperation", "BinaryOperation", "If",
                                                                    "Return"]
    enclosing = host._uses_with_context(func, "scale")
    assert len(enclosing) == 2 and all(isinstance(name, cst.Name) for _, name in enclosing)
    assert all(path[0] is func.body for path, _ in enclosing)
    assert isinstance(enclosing[0][0][-1], cst.BinaryOperation) or isinstance(enclosing[1][0][-1], cst.BinaryOperation)


def _all(node: cst.CSTNode) -> list[cst.CSTNode]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(reversed(current.children))  # source order
    return found


def _children_by_every_field(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children the walk defines, read from every dataclass field: the nodes in the fields that are
    not whitespace or punctuation, whatever the field's declared type."""
    found: list[cst.CSTNode] = []
    for f in dataclasses.fields(node):
        if f.name in _NOT_WALKED or f.name.startswith("whitespace"):
            continue
        value = getattr(node, f.name)
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, cst.CSTNode):
                found.append(item)
    return found


@pytest.mark.parametrize("path", real_files(torch_sample=12, seed=22)[::5], ids=lambda p: p.name)
def test_the_walk_reads_the_children_every_field_holds(path):
    try:
        tree = cst.parse_module(path.read_text(encoding="utf-8"))
    except cst.ParserSyntaxError:
        pytest.skip("does not parse")
    for node in iter_nodes(tree):
        assert [id(c) for c in child_nodes(node)] == [id(c) for c in _children_by_every_field(node)]


def test_the_walk_reads_the_children_of_every_kind_of_node():
    tree = cst.parse_module(DEEP_CODE + "from .m import *\nfrom .. import a as b\nclass C[T](B, metaclass=M):\n"
                            "    x: int = 1\n    async def g(self):\n        async for a in b: await c\n"
                            "        global q\n        assert x, 'm'\n        del y[1:2]\n")
    kinds = set()
    for node in iter_nodes(tree):
        kinds.add(type(node))
        assert [id(c) for c in child_nodes(node)] == [id(c) for c in _children_by_every_field(node)]
    assert {cst.ImportStar, cst.Match, cst.FormattedStringExpression, cst.Lambda, cst.TypeParameters} <= kinds


def test_a_flat_tree_pruning_types_it_does_not_hold_walks_it_all():
    tree = cst.parse_module(DEEP_CODE)
    flat = FlatTree(tree)
    everything = [id(n) for n in iter_nodes(tree)]
    assert [id(n) for n in flat.walk(prune=(cst.ClassDef,))] == everything  # no class in it: nothing pruned
    assert [id(n) for n in flat.walk()] == everything
    call = next(n for n in iter_nodes(tree) if isinstance(n, cst.Call))
    assert [id(n) for n in flat.walk(call, (cst.ClassDef,))] == [id(n) for n in iter_nodes(call)]
    pruned = list(flat.walk(prune=(cst.Lambda,)))
    assert len(pruned) < len(everything) and any(isinstance(n, cst.Lambda) for n in pruned)
    assert [id(n) for n in pruned] == [id(n) for n in iter_nodes(tree, (cst.Lambda,))]


def _holds_by_children(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    return tree is node or any(_holds_by_children(child, node) for child in tree.children)


@pytest.mark.parametrize("path", real_files(torch_sample=12, seed=22)[2::9], ids=lambda p: p.name)
def test_the_blocks_down_to_a_statement_are_found_from_the_flat_walk(path):
    from types import SimpleNamespace

    from cslint.rules.side_effects import _blocks_to, _holder

    try:
        tree = cst.parse_module(path.read_text(encoding="utf-8"))
    except cst.ParserSyntaxError:
        pytest.skip("does not parse")
    functions = [n for n in iter_nodes(tree) if isinstance(n, cst.FunctionDef)][:40]
    for function in functions:
        ctx = SimpleNamespace(body=FlatTree(function.body))
        for node in [n for n in iter_nodes(function) if isinstance(n, (cst.Assign, cst.Name))][::5]:
            slow = _blocks_to(function, node, lambda tree, node=node: _holds_by_children(tree, node))
            fast = _blocks_to(function, node, _holder(ctx, node))  # type: ignore[arg-type]
            assert [(id(block), index) for block, index in fast] == [(id(block), index) for block, index in slow]


def test_the_blocks_down_to_a_statement_in_an_else_branch():
    from types import SimpleNamespace

    from cslint.rules.side_effects import _blocks_to, _holder

    function = _function("""
        def forward(self, x, bias=None):
            for layer in self.layers:
                if bias is None:
                    pass
                else:
                    with torch.no_grad():
                        bias = torch.zeros(3)
                        bias.requires_grad = True
            return x
    """)
    at = next(n for n in iter_nodes(function) if isinstance(n, cst.Assign) and isinstance(n.targets[0].target,
                                                                                         cst.Attribute))
    blocks = _blocks_to(function, at, _holder(SimpleNamespace(body=FlatTree(function.body)), at))
    assert [index for _, index in blocks] == [0, 0, 0, 1]
    assert blocks[-1][0][blocks[-1][1] - 1].body[0].targets[0].target.value == "bias"
