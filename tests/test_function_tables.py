"""A function taken from a table of functions written as a literal at module level (#36, the user view's M24:
a library's `forward` calling `ROUTINES[self.loss][backend](...)`): nested dicts, lists and tuples, `.get`,
and a local alias; a call reaches every function the table holds under a key that is not a literal, and
exactly the ones its literal keys select. In the project's code (findings where they are) and in an installed
library's (reported on the user's line, with the library's lines in `library_sites`)."""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    from cslint.analysis.function_tables import ANY, ast_table, cst_table, selected
except ImportError:
    pass
from tests.conftest import codes, run_linter
from tests.test_libraries import PYTHON, _install, _lint, site  # noqa: F401  (the fixture)

TABLES = '''
import torch
from functools import partial


def _reads(x):
    return x * x.sum().item()


def _branches(x):
    if x.max() > 0:
        return x
    return -x


def _masks(x):
    return x[x > 0].sum()


def _scaled(x, factor=1.0):
    return x * factor


FLAT = {"reads": _reads, "branches": _branches}
NESTED = {"a": {"reads": _reads, "branches": _branches}, "b": {"masks": _masks, "scaled": partial(_scaled, factor=2.0)}}
LISTED = [_reads, _branches]
TUPLED = (_masks, _scaled)
'''

READS, BRANCHES, MASKS = ("WSC201", 6), ("WSC101", 10), ("WSC502", 16)

CALLS = {
    "NESTED[name][inner](x)": [READS, BRANCHES, MASKS],
    'NESTED["b"]["masks"](x)': [MASKS],
    'NESTED["a"][inner](x)': [READS, BRANCHES],
    'NESTED["b"]["scaled"](x)': [],
    'FLAT.get("branches")(x)': [BRANCHES],
    'NESTED["b"].get(name, _reads)(x)': [READS, MASKS],
    "TUPLED[0](x)": [MASKS],
    "LISTED[i](x)": [READS, BRANCHES],
}


@pytest.mark.parametrize("call", CALLS)
def test_a_call_through_a_table_reaches_the_functions_its_keys_select(lint, call):
    step = TABLES + f'''

import cerebras.pytorch as cstorch


@cstorch.trace
def train_step(x, name: str, inner: str, i: int):
    return {call}
'''
    assert sorted(codes(lint(step, target="wsc"))) == sorted(CALLS[call])


def test_a_function_bound_from_a_table_then_called_reaches_each(lint):
    step = TABLES + '''

import cerebras.pytorch as cstorch


@cstorch.trace
def train_step(x, i: int):
    fn = LISTED[i]
    return fn(x)
'''
    assert sorted(codes(lint(step, target="wsc"))) == sorted([READS, BRANCHES])


def test_a_table_looked_up_outside_traced_code_is_quiet(lint):
    step = TABLES + '''

def collate(x, name: str, inner: str):
    return NESTED[name][inner](x)
'''
    assert codes(lint(step, target="wsc")) == []


def test_the_same_entries_from_libcst_and_ast():
    import ast

    import libcst as cst

    text = 'T = {"a": {"b": f, 1: mod.g}, KEY: [h, partial(k, n=1)]}'
    from_cst = cst_table(cst.parse_statement(text).body[0].value)
    from_ast = ast_table(ast.parse(text).body[0].value)
    assert from_cst == from_ast == ((("a", "b"), "f"), (("a", 1), "mod.g"), ((ANY, 0), "h"), ((ANY, 1), "k"))
    assert selected(from_cst, ("z", 0)) == (((), "h"),)
    assert selected(from_cst, ("a", 1)) == (((), "mod.g"), ((), "k"))  # a key written as a name may be "a"
    assert cst_table(cst.parse_expression('{"a": f, "b": 1}')) is None  # not every value names a function
    assert ast_table(ast.parse('{**other, "a": f}').body[0].value) is None


# ---- in an installed library ------------------------------------------------------------------------

LIBRARY_LOSS = TABLES + '''
from torch import nn


class TableLoss(nn.Module):
    def __init__(self, kind="a", backend="reads"):
        super().__init__()
        self.kind = kind
        self.backend = backend

    def forward(self, x):
        return ROUTINE(x) + NESTED[self.kind][self.backend](x)


class PickedLoss(nn.Module):
    def forward(self, x):
        return NESTED["a"]["branches"](x)
'''.replace("ROUTINE(x)", "TUPLED[1](x)")


def _library_step(site_dir: Path, root: Path, body: str, **settings: object):  # type: ignore[no-untyped-def]
    _install(site_dir, "faketables", "1.0", {"__init__.py": "", "losses.py": LIBRARY_LOSS})
    files = {"step.py": f'''
        import torch
        import cerebras.pytorch as cstorch
        from faketables.losses import PickedLoss, TableLoss

        table_loss = TableLoss("a", "reads")
        picked_loss = PickedLoss()


        {body}
    '''}
    if not settings:
        return _lint(root, files)
    result, _ = run_linter(root, files, **{"python": PYTHON["path"], **settings})
    assert not result.errors, result.errors
    return [(d.code, d.line, d.assumption) for d in result.diagnostics]


TRAIN_STEP = '''
        @cstorch.trace
        def train_step(x):
            first = table_loss(x)
            return first + picked_loss(x)
    '''


def test_a_library_function_calling_through_its_table_is_summarised(site, tmp_path):  # noqa: F811
    found = _library_step(site, tmp_path / "proj", TRAIN_STEP)
    on_line = sorted((code, line) for code, _, line, _ in found)
    # exactly `_branches` under literal keys; under `self.kind`/`self.backend` (not known in `forward`) the
    # table's functions do different things, and which one runs is not known: nothing in the default tier
    assert on_line == [("WSC101", 13)]
    picked = [m for code, _, line, m in found if code == "WSC101" and "PickedLoss" in m]
    assert len(picked) == 1 and "via faketables.losses.PickedLoss.forward -> faketables.losses._branches" in picked[0]


def test_what_only_some_of_a_tables_functions_do_is_the_opt_in_tiers(site, tmp_path):  # noqa: F811
    found = _library_step(site, tmp_path / "proj", TRAIN_STEP, include_uncertain=True)
    assert sorted((code, line) for code, line, _ in found) == [("WSC101", 12), ("WSC101", 13), ("WSC201", 12)]
    assumed = {(code, line): assumption for code, line, assumption in found}
    assert assumed[("WSC101", 13)] == ""  # the literal keys select it: no assumption
    assert "assuming `faketables.losses._branches` is the one that runs" in assumed[("WSC101", 12)]
    assert "assuming `faketables.losses._reads` is the one that runs" in assumed[("WSC201", 12)]


def test_a_library_table_outside_traced_code_is_quiet(site, tmp_path):  # noqa: F811
    found = _library_step(site, tmp_path / "proj", '''
        def evaluate(x):
            return table_loss(x) + picked_loss(x)
    ''')
    assert found == []


def test_a_table_imported_from_another_module_selects_by_its_literal_keys(lint):
    model = '''
import cerebras.pytorch as cstorch

from ops.tables import NESTED


@cstorch.trace
def train_step(x):
    return NESTED["b"]["masks"](x) + NESTED["a"].get("branches")(x)
'''
    found = lint({"ops/__init__.py": "", "ops/tables.py": TABLES, "step.py": model}, target="wsc")
    assert sorted((d.path.name, d.code, d.line) for d in found) == [
        ("tables.py", BRANCHES[0], BRANCHES[1]), ("tables.py", MASKS[0], MASKS[1])]
