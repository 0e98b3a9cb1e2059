"""Same code, same answer (#24 item 15): a function's findings are the union over the traced contexts that
reach it, whatever other files are in scope and in whatever order they are named."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cslint.cli.main import main

BASE = """\
import torch
from torch import nn


class Block(nn.Module):
    def gate(self, x, scale):
        if scale > 1:
            x = x * scale
        if x.sum() > 0:
            x = x - 1
        return x
"""

# One subclass passes a number, the other a tensor: the helper's `if scale > 1` is a finding in the
# second context only, and must stay one whichever subclass the analysis meets first.
NUMBER_CALLER = """\
from base import Block


class NumberBlock(Block):
    def forward(self, x):
        return self.gate(x, 2.0)
"""

TENSOR_CALLER = """\
from base import Block


class TensorBlock(Block):
    def forward(self, x):
        return self.gate(x, x.max())
"""

# Unrelated to the helper: another subclass that overrides nothing it uses, and a plain module.
UNRELATED = """\
import torch
from torch import nn

from base import Block


class Wide(Block):
    def forward(self, x):
        return torch.cat([x, x], dim=-1)


def summarize(values):
    return sum(values) / len(values)
"""

FILES = {"base.py": BASE, "number_caller.py": NUMBER_CALLER, "tensor_caller.py": TENSOR_CALLER,
         "unrelated.py": UNRELATED}
GATE_TENSOR_LINE, SUM_LINE = 7, 9


def _project(root: Path, names: list[str]) -> Path:
    """A project holding only `names`, written in that order."""
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for name in names:
        (root / name).write_text(FILES[name])
    return root


def _base_findings(capsys, root: Path, names: list[str], jobs: int = 1) -> list[tuple[int, str]]:
    """base.py's findings when the project is `names` and they are named on the command line in that order."""
    code = main(["check", *(str(root / n) for n in names), "--no-cache", "-j", str(jobs),
                 "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return sorted((f["line"], f["code"]) for f in json.loads(out) if Path(f["filename"]).name == "base.py")


def _scope(tmp_path: Path, capsys, names: list[str], jobs: int = 1) -> list[tuple[int, str]]:
    root = _project(tmp_path / f"scope{len(list(tmp_path.iterdir()))}", names)
    return _base_findings(capsys, root, names, jobs)


def test_the_helper_of_two_subclasses_is_reported_for_the_union_of_their_contexts(tmp_path, capsys):
    assert _scope(tmp_path, capsys, list(FILES)) == [(GATE_TENSOR_LINE, "WSC101"), (SUM_LINE, "WSC101")]
    # in the number caller's context alone, `scale` is a Python number
    assert _scope(tmp_path, capsys, ["base.py", "number_caller.py"]) == [(SUM_LINE, "WSC101")]


@pytest.mark.parametrize("seed", range(4))
def test_shuffling_the_files_gives_the_same_findings(tmp_path, capsys, seed):
    names = list(FILES)
    random.Random(seed).shuffle(names)
    assert _scope(tmp_path, capsys, names, jobs=1 + seed % 2) == _scope(tmp_path, capsys, sorted(FILES))


@pytest.mark.parametrize("seed", range(3))
def test_widening_the_scope_keeps_what_a_narrower_scope_found(tmp_path, capsys, seed):
    rng = random.Random(seed)
    for caller in ("number_caller.py", "tensor_caller.py"):
        narrow = _scope(tmp_path, capsys, ["base.py", caller])
        others = [n for n in FILES if n not in ("base.py", caller)]
        extra = rng.sample(others, rng.randint(1, len(others)))
        wider = ["base.py", caller, *extra]
        rng.shuffle(wider)
        widened = _scope(tmp_path, capsys, wider)
        assert set(narrow) <= set(widened), (caller, extra)
        if extra == ["unrelated.py"]:  # nothing new reaches the helper: nothing changes
            assert widened == narrow
        assert _scope(tmp_path, capsys, ["unrelated.py", "base.py", caller]) == narrow
