"""Bounded memory: libcst trees are parsed on demand and given back, and nothing else keeps them.

Every `lint` in the suite also compares the bounded run (with a budget so small that every tree not in
use is given back at once) with the run that keeps all trees (see conftest.run_linter); these tests
cover the budget itself, that given-back trees are really freed, and larger real inputs.
"""

from __future__ import annotations

import ast
import gc
import importlib.util
import random
from pathlib import Path

import libcst as cst
import pytest

from cslint.analysis.index import ModuleInfo, TreeBudget, index_module_from_ast
from cslint.core.config import Settings
from cslint.engine.discovery import collect_files
from cslint.engine.runner import Linter
from cslint.engine.selection import enabled_rules
from tests.conftest import reported

ROOT = Path(__file__).resolve().parent.parent

MODULE = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x.relu()


def helper(x):
    return x * 2
"""


def _module(name: str, budget: TreeBudget, loads: list[str]) -> ModuleInfo:
    def load() -> cst.Module:
        loads.append(name)
        return cst.parse_module(MODULE)

    info = index_module_from_ast(Path(f"{name}.py"), MODULE, ast.parse(MODULE), name, False, loader=load)
    info.budget = budget
    return info


def test_budget_gives_back_the_least_recently_used_tree_and_its_nodes():
    loads: list[str] = []
    budget = TreeBudget(limit=2 * len(MODULE))
    a, b, c = (_module(n, budget, loads) for n in "abc")
    first = a.functions["helper"].node
    b.tree  # noqa: B018 (loads it)
    a.classes["Net"].node  # noqa: B018 (a is now more recent than b)
    c.tree  # noqa: B018
    assert loads == ["a", "b", "c"]
    assert b._tree is None and b.functions["helper"]._node is None and b.classes["Net"]._node is None
    assert a._tree is not None and c._tree is not None
    again = b.functions["helper"].node  # parsed again, on demand
    assert loads == ["a", "b", "c", "b"]
    assert again is not first and again.deep_equals(first)


def test_a_held_tree_is_not_given_back():
    loads: list[str] = []
    budget = TreeBudget(limit=1)
    a, b = _module("a", budget, loads), _module("b", budget, loads)
    with a.held():
        node = a.functions["helper"].node
        b.tree  # noqa: B018
        assert a.functions["helper"].node is node  # still the same tree: no parse in the middle of its use
    b.tree  # noqa: B018
    c = _module("c", budget, loads)
    c.tree  # noqa: B018
    assert a._tree is None and b._tree is None and loads == ["a", "b", "c"]


def _live_nodes() -> set[int]:
    gc.collect()
    return {id(o) for o in gc.get_objects() if isinstance(o, cst.CSTNode)}


def test_given_back_trees_are_freed():
    """Whatever rules and the analysis keep must not hold on to the nodes of a tree given back (a cache
    of visitor classes once kept every tree a rule's local visitor class had seen)."""
    settings = Settings(project_root=ROOT / "examples")
    linter = Linter(settings, enabled_rules(settings), tree_budget=1)
    files = collect_files([ROOT / "examples"], settings)
    before = _live_nodes()
    result = linter.run(files)
    assert result.diagnostics
    held = {id(n) for m in linter.modules_by_path.values() for tree in _resident_trees(m) for n in _all_nodes(tree)}
    left = _live_nodes() - before - held
    assert len(left) < 100, f"{len(left)} nodes of given-back trees are still alive"


def _resident_trees(module: ModuleInfo) -> list[cst.Module]:
    """The module's tree and the functions parsed alone that it still holds (the budget's last few)."""
    functions = [*module.functions.values(), *(m for c in module.classes.values() for m in c.methods.values())]
    pieces = [f.piece.module for f in functions if f.piece is not None]
    return [module._tree, *pieces] if module._tree is not None else pieces


def _all_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(current.children)
    return out


def _bounded_equals_unbounded(files: list[Path], settings: Settings) -> int:
    full = Linter(settings, enabled_rules(settings)).run(files)
    bounded = Linter(settings, enabled_rules(settings), tree_budget=1).run(files)
    assert reported(bounded) == reported(full)
    return len(full.diagnostics)


def test_bounded_report_equals_the_full_one_on_the_examples():
    settings = Settings(project_root=ROOT / "examples")
    assert _bounded_equals_unbounded(collect_files([ROOT / "examples"], settings), settings) > 5


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs the torch sources")
def test_bounded_report_equals_the_full_one_on_torch_sources_with_every_function_traced():
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.submodule_search_locations
    package = Path(next(iter(spec.submodule_search_locations)))
    files = sorted((package / "optim").glob("*.py")) + random.Random(3).sample(sorted(package.rglob("*.py")), 30)
    settings = Settings(project_root=package.parent).with_overrides(trace_roots=("*",))
    assert _bounded_equals_unbounded(sorted({f for f in files if f.stat().st_size < 200_000}), settings) > 50


TRACED = """\
import torch


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            x = self.proj(x)
        return x

    def extra_repr(self):
        return "gate"
"""


def _bounded_run(tmp_path: Path) -> tuple[Linter, list]:  # type: ignore[type-arg]
    path = tmp_path / "gate.py"
    path.write_text(TRACED, encoding="utf-8")
    settings = Settings(project_root=tmp_path)
    linter = Linter(settings, enabled_rules(settings), tree_budget=10_000_000)
    return linter, linter.run([path]).diagnostics


def test_a_report_parses_only_the_traced_functions(tmp_path: Path):
    linter, found = _bounded_run(tmp_path)
    assert [(d.code, d.line, d.column) for d in found] == [("WSC101", 10, 12)]
    gate = next(iter(linter.modules_by_path.values())).classes["Gate"]
    assert gate.module._tree is None  # the file was never parsed whole...
    # ...only forward, and __init__ for what `self.proj` is, each on its own
    assert gate.methods["forward"].piece is not None and gate.methods["__init__"].piece is not None
    assert gate.methods["extra_repr"]._node is None


def test_a_finding_that_cannot_be_placed_in_its_function_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("cslint.engine.runner.piece_positions", lambda *args: None)
    _, found = _bounded_run(tmp_path)
    assert [(d.code, d.line, d.column) for d in found] == [("WSC101", 9, 5)]  # `def forward` (1-based column)


def test_a_module_level_torch_compile_is_found_without_parsing_the_whole_file(tmp_path):
    """Finding `torch.compile(fn)` at module level parsed a file whole with libcst when its `ast` showed a
    call that might be one: for torch's 1.4 MB common_methods_invocations.py, 785 MB. Only the statements
    whose calls name a trace wrapper are parsed now."""
    table = "\n".join(f"ENTRY_{i} = dict(name='op_{i}', sizes=[{i}, {i + 1}], compile_ok=True)" for i in range(300))
    text = f"""\
import torch
from torch import compile as build


def step(x):
    if x.sum() > 0:
        return x * 2
    return x


{table}
fast = torch.compile(step)
also = build(step)
trace_me = torch.jit.trace(step, torch.ones(2))
"""
    source_path = tmp_path / "table.py"
    source_path.write_text(text)
    tree = ast.parse(text)
    info = index_module_from_ast(source_path, text, tree, "table", False, loader=lambda: pytest.fail("parsed whole"))
    pieces: list[str] = []

    def parse_piece(piece: str) -> cst.Module:
        pieces.append(piece)
        return cst.parse_module(piece)

    info.piece_parser = parse_piece
    calls = [cst.Module([]).code_for_node(call) for call in info.toplevel_calls]
    assert pieces == ["fast = torch.compile(step)\nalso = build(step)\n"]
    assert calls == ["torch.compile(step)", "build(step)"]
    settings = Settings(project_root=tmp_path)
    result = Linter(settings, enabled_rules(settings), tree_budget=1).run([source_path])
    assert [(d.line, d.code) for d in result.diagnostics if d.code == "WSC101"] == [(6, "WSC101")]


def test_a_module_level_torch_compile_in_the_body_of_an_if_is_found(tmp_path):
    """A module-level statement is parsed alone as it is: an `if` is not taken for the `if 1:` an indented
    statement is wrapped in, whose first statement stands for it (that lost the `torch.compile(step)`
    after the `print`, and with it the root)."""
    text = """\
import torch


def step(x):
    if x.sum() > 0:
        return x * 2
    return x


if __name__ == "__main__":
    print("compiling")
    fast = torch.compile(step)
"""
    source_path = tmp_path / "train.py"
    source_path.write_text(text)
    info = index_module_from_ast(source_path, text, ast.parse(text), "train", False,
                                 loader=lambda: pytest.fail("parsed whole"))
    info.piece_parser = cst.parse_module
    calls = [cst.Module([]).code_for_node(call) for call in info.toplevel_calls]
    assert calls == ['print("compiling")', "torch.compile(step)"]
    settings = Settings(project_root=tmp_path)
    result = Linter(settings, enabled_rules(settings), tree_budget=1).run([source_path])
    assert [(d.line, d.code) for d in result.diagnostics if d.code == "WSC101"] == [(5, "WSC101")]
