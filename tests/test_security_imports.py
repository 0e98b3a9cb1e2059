"""cslint never imports a module from the repository it lints.

The hostile repository ships a module under every standard-library name (and libcst's, tomli's), each of
which leaves a marker file outside the repository when imported, plus over 2 MB of Python so that `-j 2`
starts worker processes. It is linted the ways users run cslint: the `cslint` command, `python -m cslint`,
`--server` (the served run and the server's workers), flake8 and the pre-commit hook. No marker may
appear, and the report must still be the one a harmless repository gets.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cslint.engine.incremental import MIN_PARALLEL_BYTES

BIN = Path(sys.executable).parent
PACKAGES = {"collections", "concurrent", "ctypes", "email", "encodings", "importlib", "json", "logging",
            "multiprocessing", "re", "tomllib", "unittest", "urllib", "xml", "libcst"}

MODEL = """\
import torch
from torch import nn


class Block{i}(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return self.proj(x)
"""

UNTRACED = '''

def summary_{i}_{j}(rows, width=80):
    """Format a table of results for the log: plain Python, never traced."""
    lines = []
    for row in rows:
        cells = [str(cell).ljust(width // max(1, len(row))) for cell in row]
        lines.append(" | ".join(cells))
    return "\\n".join(lines)
'''


def write_project(root: Path, files: int = 60, size: int = MIN_PARALLEL_BYTES) -> int:
    """`files` modules of one traced block (one WSC101 each) padded to over `size` bytes in all (the
    size from which `-j` starts workers)."""
    pad = size // files // len(UNTRACED.format(i=0, j=0)) + 1
    package = root / "models"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for i in range(files):
        text = MODEL.format(i=i) + "".join(UNTRACED.format(i=i, j=j) for j in range(pad))
        (package / f"block_{i}.py").write_text(text)
    (root / "pyproject.toml").write_text("[project]\nname = 'hostile'\n")
    return files


def plant_modules(root: Path, markers: Path, names: set[str]) -> None:
    """A module (or package) under each name that leaves `markers/<name>` when it is imported."""
    markers.mkdir(exist_ok=True)
    for name in names:
        body = f"open({str(markers / name)!r}, 'w').close()\n"
        if name in PACKAGES:
            (root / name).mkdir()
            (root / name / "__init__.py").write_text(body)
        else:
            (root / f"{name}.py").write_text(body)


def stdlib_names() -> set[str]:
    return {n for n in sys.stdlib_module_names if n != "__future__" and not n.startswith("_")} | {
        "_blake2", "_posixsubprocess", "_pickle", "libcst", "tomli"}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, int]]:
    """(repository, marker directory, number of traced blocks)."""
    base = tmp_path_factory.mktemp("hostile")
    root = base / "repo"
    blocks = write_project(root)
    plant_modules(root, base / "markers", stdlib_names())
    yield root, base / "markers", blocks


@pytest.fixture(autouse=True)
def no_markers_yet(hostile: tuple[Path, Path, int]) -> None:
    for marker in hostile[1].iterdir():
        marker.unlink()


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "CSLINT_NO_SERVER", "CSLINT_CACHE_DIR", "PYTHONPATH", "PYTHONSAFEPATH")}
    env.update(CSLINT_SERVER_DIR=str(tmp_path / "run"), CSLINT_SERVER_IDLE="60", **extra)
    return env


def imported(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def assert_report(proc: subprocess.CompletedProcess[str], blocks: int) -> None:
    found = re.findall(r"^models/block_\d+\.py:11:\d+: WSC101", proc.stdout, re.MULTILINE)
    assert proc.returncode == 1 and len(found) == blocks, proc.stdout[-2000:] + proc.stderr[-2000:]


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# `-E` ignores PYTHONSAFEPATH, so the workers are forked, as on Python 3.10 (which has no such setting).
@pytest.mark.parametrize("command", [[str(BIN / "cslint")], [sys.executable, "-m", "cslint"],
                                     [sys.executable, "-E", "-m", "cslint"]],
                         ids=["cslint-command", "python-m-cslint", "forked-workers"])
def test_workers_import_nothing_from_the_repository(hostile: tuple[Path, Path, int], tmp_path: Path,
                                                    command: list[str]) -> None:
    root, markers, blocks = hostile
    proc = run([*command, "check", "-j", "2", "--no-cache", "--profile", "."], root, clean_env(tmp_path))
    assert imported(markers) == []
    assert_report(proc, blocks)
    assert "worker processes: 2" in proc.stderr, proc.stderr  # the workers did start


def test_server_and_its_workers_import_nothing_from_the_repository(hostile: tuple[Path, Path, int],
                                                                  tmp_path: Path) -> None:
    root, markers, blocks = hostile
    env = clean_env(tmp_path)
    cslint = [str(BIN / "cslint")]
    try:
        first = run([*cslint, "check", "--server", "-j", "2", "--no-cache", "."], root, env)
        assert_report(first, blocks)
        deadline = time.monotonic() + 60
        while run([*cslint, "server", "status"], root, env).returncode != 0:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        served = run([*cslint, "check", "--server", "-j", "2", "--no-cache", "--profile", "."], root, env)
        assert "worker processes: 2" in served.stderr, served.stderr
        status = run([*cslint, "server", "status"], root, env)
        assert "served 1" in status.stdout + status.stderr  # the run above was the server's
        assert imported(markers) == []
        assert_report(served, blocks)
    finally:
        run([*cslint, "server", "stop"], root, env)


def test_flake8_plugin_imports_nothing_from_the_repository(tmp_path: Path) -> None:
    # the `flake8` command: `python -m flake8` puts the directory first on the path for flake8 itself.
    # flake8 runs the plugin in its own processes: a small project is enough.
    root, markers = tmp_path / "repo", tmp_path / "markers"
    write_project(root, files=2, size=0)
    plant_modules(root, markers, stdlib_names())
    proc = run([str(BIN / "flake8"), "--select", "WSC", "models"], root, clean_env(tmp_path))
    assert imported(markers) == []
    found = re.findall(r"^models/block_\d+\.py:11:\d+: WSC101", proc.stdout, re.MULTILINE)
    assert proc.returncode == 1 and len(found) == 2, proc.stdout[-2000:] + proc.stderr[-2000:]


# ---- installed libraries are read, never imported (#34 item 12) -----------------------------------------

LIBRARY_USER = """\
import torch
import fakelib.layers.deep
from torch import nn
from torch.nn.utils import clip_grad_norm_


class UsesLibraries(nn.Module):
    def forward(self, x):
        clip_grad_norm_(self.parameters(), 1.0)
        return fakelib.layers.deep.gate(x)
"""
GATE = "def gate(x):\n    if x.sum() > 0:\n        return x * 2\n    return x\n"


def install_libraries(site: Path, markers: Path) -> None:
    """Installed packages, analysed as libraries (their source read for the functions traced code calls):
    `fakelib` with a subpackage, and a `torch` in front of the real one; every module leaves a marker when
    imported, named after the module."""
    modules = {"fakelib/__init__.py": "", "fakelib/layers/__init__.py": "", "fakelib/layers/deep.py": GATE,
               "torch/__init__.py": "", "torch/nn/__init__.py": "", "torch/nn/utils/__init__.py":
               "from torch.nn.utils.clip_grad import clip_grad_norm_\n",
               "torch/nn/utils/clip_grad.py": "def clip_grad_norm_(parameters, max_norm):\n    return max_norm\n"}
    markers.mkdir(exist_ok=True)
    for relative, text in modules.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        name = relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        path.write_text(f"open({str(markers / name)!r}, 'w').close()\n" + text)
    info = site / "fakelib-1.0.dist-info"
    info.mkdir()
    (info / "top_level.txt").write_text("fakelib\n")


@pytest.fixture(scope="module")
def with_libraries(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(repository, installed libraries' directory, marker directory)."""
    base = tmp_path_factory.mktemp("libraries")
    root = base / "repo"
    write_project(root)
    (root / "models" / "uses_libraries.py").write_text(LIBRARY_USER)
    install_libraries(base / "site", base / "markers")
    return root, base / "site", base / "markers"


def library_env(tmp_path: Path, site: Path) -> dict[str, str]:
    return clean_env(tmp_path, PYTHONPATH=str(site))


def assert_library_read(proc: subprocess.CompletedProcess[str]) -> None:
    """The library's function was read: its branch is reported at the call, naming the function that has it."""
    assert re.search(r"^models/uses_libraries\.py:10:\d+: WSC101 .* in `gate` \(\w+\.py:\d+\)", proc.stdout,
                     re.MULTILINE), proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_reads_installed_libraries_without_importing_them(with_libraries: tuple[Path, Path, Path],
                                                                tmp_path: Path, jobs: str) -> None:
    root, site, markers = with_libraries
    proc = run([str(BIN / "cslint"), "check", "-j", jobs, "--profile", "--cache-dir", str(tmp_path / "cache"), "."],
               root, library_env(tmp_path, site))
    assert_library_read(proc)
    assert imported(markers) == []
    if jobs == "2":
        assert "worker processes: 2" in proc.stderr, proc.stderr


def test_server_and_flake8_read_installed_libraries_without_importing_them(tmp_path: Path) -> None:
    root, site, markers = tmp_path / "repo", tmp_path / "site", tmp_path / "markers"
    write_project(root, files=2, size=0)
    (root / "models" / "uses_libraries.py").write_text(LIBRARY_USER)
    install_libraries(site, markers)
    env = library_env(tmp_path, site)
    cslint = [str(BIN / "cslint")]
    try:
        run([*cslint, "check", "--server", "--no-cache", "models/uses_libraries.py"], root, env)
        deadline = time.monotonic() + 60
        while run([*cslint, "server", "status"], root, env).returncode != 0:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        served = run([*cslint, "check", "--server", "--no-cache", "."], root, env)
        assert "served 1" in run([*cslint, "server", "status"], root, env).stdout
        assert_library_read(served)
    finally:
        run([*cslint, "server", "stop"], root, env)
    flake8 = run([str(BIN / "flake8"), "--select", "WSC", "models/uses_libraries.py"], root, env)
    assert_library_read(flake8)
    assert imported(markers) == []
