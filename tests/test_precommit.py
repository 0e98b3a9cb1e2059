"""The pre-commit hooks, run by pre-commit itself (`try-repo`) on a temporary git repository.

pre-commit installs cslint from a git repository, so a copy of this working tree (the package files
only) is committed to a temporary repo first; pre-commit then builds its own environment from it, which
needs libcst from the package index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

HELPER = """\
import torch


def cap(logits, limit):
    if logits.abs().max() > limit:
        logits = logits * 0.5
    else:
        logits = logits
    return logits
"""

MODEL = """\
from torch import nn

from helpers import cap


class Head(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return cap(self.proj(x), 30.0)
"""


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def init_repo(path: Path) -> None:
    path.mkdir()
    git(path, "init", "-q")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "user.name", "test")
    git(path, "config", "commit.gpgsign", "false")


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("hooks") / "cslint"
    init_repo(repo)
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, repo / name)
    shutil.copytree(ROOT / "cslint", repo / "cslint", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "cslint")
    return repo


def try_repo(hook_repo: Path, project: Path, hook: str, *files: str, env: dict[str, str] | None = None,
             python: list[str] = ()) -> subprocess.CompletedProcess[str]:  # type: ignore[assignment]
    """`python: ["-P"]` keeps pre-commit itself from importing the project's modules."""
    env = {**(env or os.environ), "PRE_COMMIT_HOME": str(hook_repo.parent / "cache"), "PRE_COMMIT_COLOR": "never"}
    command = [sys.executable, *python, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--files", *files]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=540)


def test_hooks_fail_on_bad_code_then_pass_after_fix(hook_repo: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    init_repo(project)
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "helpers.py").write_text(HELPER)
    (project / "model.py").write_text(MODEL)
    (project / "good.py").write_text("import torch\n\n\ndef scale(x):\n    return torch.relu(x)\n")
    git(project, "add", "-A")

    # only helpers.py is passed: it is traced because model.py (not passed) calls it from forward()
    bad = try_repo(hook_repo, project, "cslint", "helpers.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "helpers.py:5:8: WSC101" in bad.stdout

    good = try_repo(hook_repo, project, "cslint", "good.py", "model.py")
    assert good.returncode == 0, good.stdout + good.stderr

    fixed = try_repo(hook_repo, project, "cslint-fix", "helpers.py")
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # pre-commit fails a hook that changed files
    assert "files were modified by this hook" in fixed.stdout
    assert "torch.where(" in (project / "helpers.py").read_text()

    git(project, "add", "-A")
    again = try_repo(hook_repo, project, "cslint", "helpers.py")
    assert again.returncode == 0, again.stdout + again.stderr


def test_hooks_import_nothing_from_the_repository(hook_repo: Path, tmp_path: Path) -> None:
    """A repository shipping standard-library names (each leaves a marker when imported): the hooks'
    runs, in their process and on the server they start, import none of them."""
    from cslint.server.client import ask
    from tests.test_security_imports import imported, plant_modules, stdlib_names

    project, markers = tmp_path / "project", tmp_path / "markers"
    init_repo(project)
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "helpers.py").write_text(HELPER)
    (project / "model.py").write_text(MODEL)
    plant_modules(project, markers, stdlib_names())
    git(project, "add", "-A")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "CSLINT_NO_SERVER")}
    env.update(CSLINT_SERVER_DIR=str(tmp_path / "run"), CSLINT_SERVER_IDLE="300")
    try:  # the first run starts a server; the later ones may be served by it
        runs = [try_repo(hook_repo, project, "cslint", "helpers.py", env=env, python=["-P"]) for _ in range(3)]
    finally:
        for address in (tmp_path / "run").glob("cslint-*/*.sock"):
            ask({"kind": "stop"}, path=str(address))
    assert imported(markers) == []
    for run in runs:
        assert run.returncode == 1 and "helpers.py:5:8: WSC101" in run.stdout, run.stdout + run.stderr


def test_hooks_check_a_staged_notebook(hook_repo: Path, tmp_path: Path) -> None:
    """The hooks run on notebooks, as ruff's (`types_or: [python, pyi, jupyter]`): with `types: [python]`
    pre-commit passed no `.ipynb`, and a notebook with findings was committed unchecked."""
    from tests.test_notebook import _cell, _notebook

    project = tmp_path / "project"
    init_repo(project)
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    model = ("class Gate(nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n"
             "            x = x * 2\n        return x\n")
    (project / "analysis.ipynb").write_text(_notebook(_cell("code", "import torch\nfrom torch import nn\n"),
                                                      _cell("code", model)))
    git(project, "add", "-A")
    run = try_repo(hook_repo, project, "cslint", "analysis.ipynb")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "analysis.ipynb:cell 2:3:12: WSC101" in run.stdout
