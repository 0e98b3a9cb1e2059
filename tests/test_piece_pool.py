"""A function parsed for one analysis serves a function of the same text in a later one (copied model
code), and the report is the same as when every function is parsed for itself."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from cslint.analysis import piece_pool
from cslint.analysis.piece_pool import PiecePool
from tests.conftest import profile_count, profiled_check

NORM = '''\
class RMSNorm(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        if x.abs().max() > self.eps:
            x = x / x.norm()
        return x.tolist()
'''

MODEL = '''\
import torch
from torch import nn
{padding}

{norm}

class Model{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = RMSNorm(1e-5)

    def forward(self, x):
        return self.norm(x) + {i}
'''


def _project(root: Path, models: int) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'copies'\n")
    for i in range(models):  # the same RMSNorm, further down each file
        padding = "\n".join(f"CONSTANT_{j} = {j}" for j in range(1 + 3 * i))
        (root / "models").mkdir(exist_ok=True)
        (root / "models" / f"m{i}.py").write_text(MODEL.format(i=i, padding=padding, norm=NORM))
    return root


def test_copied_functions_are_parsed_once_and_reported_as_when_parsed_each(tmp_path, capsys, monkeypatch):
    root = _project(tmp_path, 4)
    report, err = profiled_check(capsys, root)
    reused = profile_count(err, "pieces parsed before, for a function of the same text")
    parsed = profile_count(err, "pieces parsed (functions, assignments)")
    monkeypatch.setattr(piece_pool, "POOL_BYTES", 0)
    alone, err_alone = profiled_check(capsys, root)
    assert profile_count(err_alone, "pieces parsed before, for a function of the same text") == 0
    assert report == alone  # same findings, same lines, same order
    # RMSNorm.__init__ and .forward of three of the four files come from the first one's trees
    assert reused >= 6 and parsed + reused == profile_count(err_alone, "pieces parsed (functions, assignments)")
    branches = sorted((f["filename"].rsplit("/", 1)[1], f["line"]) for f in report if f["code"] == "WSC101")
    assert branches == [(f"m{i}.py", 11 + 3 * i) for i in range(4)]  # each file's own line


def test_a_tree_serves_one_function_at_a_time_and_only_in_later_analyses():
    pool = PiecePool(limit=100)
    text = "def f(x):\n    return x\n"
    tree = cst.parse_module(text)
    pool.give_back(text, tree)
    assert pool.take(text) is None  # given back during this analysis: it may still hold the nodes
    pool.end_analysis()
    assert pool.take(text) is tree
    assert pool.take(text) is None  # now the taker's alone
    pool.give_back("x = 1\n" * 50, cst.parse_module("x = 1\n" * 50))  # larger than the pool: not kept
    assert pool.size == 0


def test_the_pool_gives_up_texts_asked_for_once_first():
    pool = PiecePool(limit=90)
    copied, single, other = "def f(x):\n    return x\n", "def g(y):\n    return y\n", "def h(z):\n    return z\n"
    for text in (copied, copied, single):  # `copied` asked for twice: a copy
        assert pool.take(text) is None
    for text in (copied, single):
        pool.give_back(text, cst.parse_module(text))
    pool.end_analysis()
    for text in (other, other, other):
        pool.take(text)
        pool.give_back(text, cst.parse_module(text))
    pool.end_analysis()  # 3 x 23 bytes: the fourth text puts the pool over 90
    fourth = "def k(w):\n    return w + 1\n"
    pool.give_back(fourth, cst.parse_module(fourth))
    pool.end_analysis()
    assert pool.take(single) is None  # the oldest of those asked for once
    assert all(pool.take(text) is not None for text in (copied, other, fourth))
    assert pool.size == 0
