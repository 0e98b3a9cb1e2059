"""Several projects in one run: a project's findings do not depend on the other projects named beside it,
nor on the order of the paths (engine/project_parts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.cli.main import main

MODEL = """\
from torch import nn

from pkg.ops import soft_cap


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, hidden):
        return soft_cap(self.proj(hidden), {cap})
"""

OPS_WITH_BRANCH = """\
import torch


def soft_cap(logits, cap):
    if logits.abs().max() > cap:
        logits = cap * torch.tanh(logits / cap)
    return logits
"""

OPS_WITHOUT_BRANCH = """\
import torch


def soft_cap(logits, cap):
    return cap * torch.tanh(logits / cap)
"""


def _project(root: Path, ops: str, cap: str) -> Path:
    """A project whose `pkg.model` calls `pkg.ops.soft_cap`: the module names every such project has."""
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(MODEL.format(cap=cap))
    (root / "pkg" / "ops.py").write_text(ops)
    return root


def _findings(capsys, *paths: Path) -> list[str]:
    main(["check", "--no-cache", "--exit-zero", "--target", "xla", "--output-format", "concise",
          *map(str, paths)])
    out = capsys.readouterr().out
    return sorted(line for line in out.splitlines() if line.startswith("/"))


@pytest.mark.parametrize("branching", ["aa", "zz"])
def test_same_module_names_in_two_projects_resolve_each_in_its_own(tmp_path, capsys, branching):
    """The project whose helper branches on a tensor sorts before the other one, or after it: either
    way its `from pkg.ops import soft_cap` is its own file, as when it is checked alone."""
    other = "zz" if branching == "aa" else "aa"
    mine = _project(tmp_path / branching, OPS_WITH_BRANCH, "30.0")
    theirs = _project(tmp_path / other, OPS_WITHOUT_BRANCH, "3.0")
    alone = _findings(capsys, mine)
    assert [line.split(": ")[1].split()[0] for line in alone] == ["WSC101"]
    assert alone[0].startswith(f"{mine / 'pkg' / 'ops.py'}:5:")
    assert _findings(capsys, mine, theirs) == alone
    assert _findings(capsys, theirs, mine) == alone
    assert _findings(capsys, theirs) == []
