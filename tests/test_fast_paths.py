"""The shortcuts taken for speed give what the slow, obvious way gives, on real files.

- positions from generating one top-level statement == libcst's PositionProvider over the module;
- the `ast` index == the libcst index (imports, classes, bases, methods, decorators);
- the text import scan finds every module the import table resolves;
- walks read from a function's flattened tree == walks of the tree itself.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from cslint.analysis.import_scan import scan_imports
from cslint.analysis.imports import ImportTable
from cslint.analysis.index import _collect_imports, index_module, index_module_from_ast
from cslint.analysis.module_names import assign_module_names, module_name_for
from cslint.analysis.walk import FlatTree, iter_nodes
from cslint.analysis.project import Project
from cslint.analysis.step_functions import _toplevel_assignments, module_objects
from cslint.engine.positions import locate, piece_positions, whole_module_positions
from cslint.core.sources import parse_unvalidated
from tests.corpus import real_files



CORPUS = real_files(torch_sample=25, seed=7)


def _parse(path: Path) -> tuple[str, cst.Module]:
    text = path.read_text(encoding="utf-8")
    try:
        return text, cst.parse_module(text)
    except cst.ParserSyntaxError:
        pytest.skip("does not parse")


@pytest.mark.parametrize("path", CORPUS[::4], ids=lambda p: p.name)
def test_statement_positions_equal_position_provider(path: Path):
    text, tree = _parse(path)
    expected = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    statements = [s for s in tree.body if isinstance(s, (cst.ClassDef, cst.FunctionDef))]
    wanted = [(node, stmt, None) for stmt in statements for node in list(iter_nodes(stmt))[::7]]
    # and by method: each method's code generated alone, indented as in its class
    wanted += [(node, stmt, method) for stmt in statements if isinstance(stmt, cst.ClassDef)
               for method in stmt.body.body if isinstance(method, cst.FunctionDef)
               for node in list(iter_nodes(method))[3::7]]
    if not wanted:
        pytest.skip("no classes or functions")
    found = locate(tree, text, wanted)
    for node, _, _ in wanted:
        assert found[node] == expected[node], cst.Module([]).code_for_node(node)[:60]


@pytest.mark.parametrize("path", CORPUS[1::6], ids=lambda p: p.name)
def test_whole_module_positions_equal_position_provider(path: Path):
    """Our codegen state (plain context managers, spans as tuples) places every node as libcst's does."""
    _, tree = _parse(path)
    expected = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    found = whole_module_positions(tree)
    assert len(found) == len(expected)
    for node, position in expected.items():
        assert found[node] == position, cst.Module([]).code_for_node(node)[:60]


def test_positions_fall_back_when_a_statement_occurs_twice():
    text = "x = 1\n\n\ndef f(x):\n    return x.item()\n\n\ndef f(x):\n    return x.item()\n"
    tree = cst.parse_module(text)
    second = tree.body[2]
    assert text.count(tree.code_for_node(second)) == 2  # the statement's text alone cannot place it
    node = next(n for n in iter_nodes(second) if isinstance(n, cst.Call))
    assert locate(tree, text, [(node, second, None)])[node].start.line == 9


def test_method_positions_fall_back_when_a_method_occurs_twice():
    text = ("class A:\n    def f(self, x):\n        return x.item()\n\n\n"
            "class B:\n    # B's own\n    @staticmethod\n    def f(self, x):\n        return x.item()\n\n"
            "    def f(self, x):\n        return x.item()\n")
    tree = cst.parse_module(text)
    cls = tree.body[1]
    expected = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    for method in cls.body.body:  # the decorated one is unique with its comment; the last is not
        node = next(n for n in iter_nodes(method) if isinstance(n, cst.Call))
        assert locate(tree, text, [(node, cls, method)])[node] == expected[node]


def test_positions_with_crlf_line_endings():
    text = "import torch\r\n\r\n\r\nclass A:\r\n    def f(self, x):\r\n        return x.item()\r\n"
    tree = cst.parse_module(text)
    cls = tree.body[1]
    node = next(n for n in iter_nodes(cls) if isinstance(n, cst.Call))
    position = locate(tree, text, [(node, cls, cls.body.body[0])])[node]
    assert (position.start.line, position.start.column) == (6, 15)


def _summary(info) -> dict:  # type: ignore[no-untyped-def]
    return {
        "imports": dict(info.imports.names),
        "functions": {n: f.decorators for n, f in info.functions.items()},
        "classes": {n: (c.bases, {m: f.decorators for m, f in c.methods.items()}) for n, c in info.classes.items()},
    }


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_ast_index_equals_libcst_index(path: Path):
    text, tree = _parse(path)
    name, is_package = module_name_for(path)
    slow = index_module(path, text, tree, name, is_package)
    fast = index_module_from_ast(path, text, ast.parse(text), name, is_package, loader=lambda: tree)
    assert _summary(fast) == _summary(slow)
    if slow.toplevel_calls and any((slow.imports.resolve(c.func) or "").endswith(("compile", "trace"))
                                   for c in slow.toplevel_calls):
        assert fast.may_have_toplevel_roots
    for qualname, func in fast.functions.items():  # nodes arrive on demand, and are libcst's
        assert func.node is slow.functions[qualname].node
    for cls_name, cls in fast.classes.items():
        assert cls.node is slow.classes[cls_name].node
        for method, func in cls.methods.items():
            assert func.node is slow.classes[cls_name].methods[method].node


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_functions_parsed_alone_equal_the_whole_files_functions(path: Path):
    """Each function parsed from its span alone: the same node as in the whole tree, the same signature,
    and its nodes placed where PositionProvider places them in the whole file."""
    text, tree = _parse(path)
    name, is_package = module_name_for(path)
    slow = index_module(path, text, tree, name, is_package)
    fast = index_module_from_ast(path, text, ast.parse(text), name, is_package,
                                 loader=lambda: pytest.fail("parsed the whole file"))
    fast.piece_parser = cst.parse_module
    expected = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    pairs = [(fast.functions[n], f) for n, f in slow.functions.items()]
    pairs += [(fast.classes[c].methods[m], f) for c, cls in slow.classes.items() for m, f in cls.methods.items()]
    for alone, whole in pairs:
        if text.count(f"def {whole.name}(") > 1:
            continue  # a name defined twice: the index keeps the last, and so does the whole tree's
        # the same code (blank lines and comments above the first decorator are the whole tree's only)
        node = alone.node
        assert alone.piece is not None and alone.signature == whole.signature
        assert alone.piece.module.code_for_node(node) == tree.code_for_node(
            whole.node.with_changes(leading_lines=())), whole.qualname
        inner = list(iter_nodes(alone.node))[::11]
        placed = piece_positions(alone.piece, alone.node, text, inner)
        assert placed is not None
        whole_nodes = list(iter_nodes(whole.node))[::11]
        assert [placed[n] for n in inner] == [expected[n] for n in whole_nodes], whole.qualname


SCRIPT = """\
import torch as T
import torch.nn
from model import GPT

HELP = \"\"\"a docstring constant
that spans lines\"\"\"
model = GPT(config); other = 1
if FAST: model = T.compile(model)
optimizer = T.optim.AdamW(model.parameters())
model = 3
net = GPT(
    config)
if __name__ == "__main__":
    if True:
        optimizer = make()
        x: int = 1
        registry: Registry = Registry()
    else:
        skipped = GPT()
"""


MODEL = """\
import torch
class GPT(torch.nn.Module):
    pass
class Registry:
    pass
"""


def test_module_objects_from_the_index_are_the_whole_files():
    """The module-level bindings an `ast`-indexed file keeps give the objects its libcst tree gives,
    and no libcst parse happens for them."""
    text = SCRIPT + """\
from model import Registry
opt = T.optim.SGD(net.parameters())
compiled = T.compile(model=net)
first = T.compile(*models, mode="x")
moved = GPT(config).to(device).eval()
a = b = GPT(config)
pair, single = GPT(config), 1
wrapped = T.compile(lambda x: x)
kept = T.compile(
    net, fullgraph=True)
"""

    def refuse(_: str) -> cst.Module:
        raise AssertionError("parsed with libcst")

    info = index_module_from_ast(Path("train.py"), text, ast.parse(text), "train", False,
                                 loader=lambda: pytest.fail("parsed the whole file"))
    info.piece_parser = refuse
    whole = index_module(Path("train.py"), text, cst.parse_module(text), "train", False)
    model = index_module(Path("model.py"), MODEL, cst.parse_module(MODEL), "model", False)
    bindings = _toplevel_assignments(info)
    # the whole tree's in the same order (annotated ones too), bar what binds nothing cslint follows to a
    # name that never holds such a thing (`HELP = "..."`, `other = 1`)
    every = _toplevel_assignments(whole)
    following = {name for names, value in every if value is not None for name in names}
    assert bindings == [b for b in every if b[1] is not None or following.intersection(b[0])]
    assert len(every) - len(bindings) == 4  # HELP, other, x, (pair, single)
    assert bindings[0] == (("model",), ("call", "GPT", None, None, (("name", "config"),), None))
    objects = module_objects(Project([info, model]), info)
    assert objects == module_objects(Project([whole, model]), whole)
    # an `else` branch's binding is an alternative (bindings.py): `skipped` may hold a GPT
    assert {name for name, kind in objects.items() if kind.role == "module"} == \
        {"net", "compiled", "moved", "a", "b", "kept", "skipped"}
    assert objects["registry"].role == "object" and objects["opt"].role == "optimizer" and len(objects) == 9


def test_functions_parsed_alone_need_a_known_span():
    text = "def f(x):\r    return x\r"  # lone carriage returns: ast and libcst could count lines apart
    info = index_module_from_ast(Path("m.py"), text, ast.parse(text), "m", False, loader=lambda: cst.parse_module(text))
    info.piece_parser = cst.parse_module
    assert info.functions["f"].span is None and info.functions["f"].node is not None
    assert info._tree is not None and info.functions["f"].piece is None


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_import_scan_finds_every_import(path: Path):
    text, tree = _parse(path)
    name, is_package = module_name_for(path)
    table = ImportTable(name, name if is_package else name.rpartition(".")[0])
    _collect_imports(tree.body, table)
    found = set(scan_imports(text, name, is_package))
    for target in set(table.names.values()):
        # `import a.b` binds `a`: the scan's `a.b` covers it
        assert any(f == target or f.startswith(target + ".") for f in found), target


def test_import_scan_handles_the_awkward_forms():
    text = (
        "import a.b as c, d\n"
        "from .e import (f,  # a comment with a ) in it\n    g as h)\n"
        "from .. import i\n"
        "if x: import j\n"
        "from k \\\n    import l\n"
        "s = 1; import m\n"
        "from .star import *\n"
    )
    assert scan_imports(text, "pkg.sub.mod", False) == [
        "a.b", "d", "j", "k", "k.l", "m", "pkg", "pkg.i", "pkg.sub.e", "pkg.sub.e.f", "pkg.sub.e.g"]


def test_module_names_from_known_links_equal_those_from_the_file_system(tmp_path: Path):
    """The survey tells module naming which files are symbolic links (from the one stat it takes of each)
    and which directories to resolve; the names equal those from resolving every path."""
    real = tmp_path / "src" / "pkg" / "sub"
    vendored = tmp_path / "vendor" / "pkg2"
    for directory in (real, vendored):
        directory.mkdir(parents=True)
    for directory in (real.parent, real, vendored):
        (directory / "__init__.py").write_text("")
    (real / "layers.py").write_text("X = 1\n")
    (vendored / "helpers.py").write_text("Y = 2\n")
    (tmp_path / "alias").symlink_to(real.parent, target_is_directory=True)  # a linked package directory
    (real / "helpers_link.py").symlink_to(vendored / "helpers.py")  # a linked file
    (tmp_path / "script.py").write_text("Z = 3\n")
    paths = [p for p in sorted(tmp_path.rglob("*.py")) if "vendor" not in p.parts]
    paths.append(tmp_path / "alias" / "sub" / "layers.py")
    links = {os.path.abspath(p) for p in paths if os.path.islink(p)}
    assert links == {os.path.abspath(real / "helpers_link.py")}
    fast = assign_module_names(paths, links=links)
    assert fast == assign_module_names(paths)
    assert fast[real / "helpers_link.py"] == ("pkg2.helpers", False)  # named where it really lives
    assert fast[real / "layers.py"] == ("pkg.sub.layers", False)
    # the same module through the linked directory: a second name, from its own path
    assert fast[tmp_path / "alias" / "sub" / "layers.py"] == ("alias.sub.layers", False)


@pytest.mark.parametrize("path", CORPUS[:10], ids=lambda p: p.name)
def test_unvalidated_parse_builds_the_same_tree(path: Path):
    text = path.read_text(encoding="utf-8")
    fast = parse_unvalidated(text)
    assert fast.deep_equals(cst.parse_module(text)) and fast.code == text


def test_nodes_built_after_an_unvalidated_parse_are_validated():
    parse_unvalidated("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_a_failed_unvalidated_parse_restores_validation():
    with pytest.raises(cst.ParserSyntaxError):
        parse_unvalidated("def (:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


PRUNINGS = [(), (cst.ClassDef,), (cst.FunctionDef, cst.ClassDef), (cst.Call, cst.Attribute)]


@pytest.mark.parametrize("path", CORPUS[::3], ids=lambda p: p.name)
def test_flat_tree_walks_equal_iter_nodes(path: Path):
    _, tree = _parse(path)
    flat = FlatTree(tree)
    assert [id(n) for n in flat.walk(tree)] == [id(n) for n in iter_nodes(tree)]
    for root in list(iter_nodes(tree))[::13]:  # every kind of part: statements, expressions, names
        for prune in PRUNINGS:
            assert [id(n) for n in flat.walk(root, prune)] == [id(n) for n in iter_nodes(root, prune)]


def test_flat_tree_walks_a_node_outside_it_the_slow_way():
    inside, outside = cst.parse_module("x = f(a)\n"), cst.parse_module("class C:\n    def g(self): h(1)\n")
    flat = FlatTree(inside)
    walked = list(flat.walk(outside, (cst.FunctionDef,)))
    assert walked == list(iter_nodes(outside, (cst.FunctionDef,)))
    assert any(isinstance(n, cst.FunctionDef) for n in walked) and not any(isinstance(n, cst.Call) for n in walked)


IMPORTS_EVERYWHERE = """\
import os
x = "no import here but the word"  # import in a comment


def plain(a):
    return a + 1


def lazy():
    if a:
        from pkg import first as f
    else:
        try:
            import pkg.sub
        except ImportError:
            from pkg \\
                import second
        finally:
            import late as first
    with ctx():
        for i in range(3):
            while i:
                from .rel import third
    match a:
        case 1:
            from pkg.deep import fourth


class Holder:
    def method(self):
        def inner():
            from inner_mod import fifth
        return inner

    def quiet(self):
        return 1


if TYPE_CHECKING:
    from typing_mod import sixth
async def coro():
    async with ctx():
        import seventh
"""


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_ast_index_finds_imports_in_any_block(newline: str):
    """The `ast` index walks into statements whose lines hold the word `import` only (lone carriage
    returns: into all of them); it finds the imports the libcst index's full walk finds, bound the same."""
    text = IMPORTS_EVERYWHERE.replace("\n", newline)
    slow = index_module(Path("m.py"), text, cst.parse_module(text), "pkg.m", False)
    fast = index_module_from_ast(Path("m.py"), text, ast.parse(text), "pkg.m", False, loader=lambda: None)
    assert fast.imports.names == slow.imports.names
    assert {"f", "pkg", "second", "first", "third", "fourth", "fifth", "sixth", "seventh"} <= set(fast.imports.names)
    assert fast.imports.names["first"] == "late" and fast.imports.names["third"] == "pkg.rel.third"


MODULE_LEVEL_CALLS = """\
import torch
from torch import compile as c
CONSTANT = {"a": 1, "b": [2, 3]}
table = {"f": torch.compile(model), "g": [helper(x) for x in range(2)]}
if flag:
    fast = c(model)
else:
    slow = lambda: run()
print(f"{value()!r}")


def f():
    return torch.compile(g)


class A:
    step = torch.compile(f)
"""


def test_module_level_calls_leave_out_definitions_only():
    """The walk for module-level calls skips what holds none (names, constants, imports) and the bodies
    of functions and classes: the same calls as walking every other node."""
    from cslint.analysis.ast_statements import module_level_calls

    tree = ast.parse(MODULE_LEVEL_CALLS)
    defined = {id(n) for d in tree.body if isinstance(d, (ast.FunctionDef, ast.ClassDef)) for n in ast.walk(d)}
    every = {id(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and id(n) not in defined}
    found = [ast.unparse(n) for n in module_level_calls(tree.body)]
    assert {id(n) for n in module_level_calls(tree.body)} == every and len(found) == 7
    assert "torch.compile(model)" in found and "c(model)" in found and "torch.compile(g)" not in found
