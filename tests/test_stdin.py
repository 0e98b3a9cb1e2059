"""`cslint check -` (standard input, for editors): a verdict for every input, in its project, cache untouched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cslint.cli.main import main

BAD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.max() > 0:
            y = x * 2
        else:
            y = x
        print(x.item())
        return y
"""

GOOD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return torch.where(x.max() > 0, x * 2, x)
"""

HELPER_BAD = """\
import torch


def soft_cap(x):
    if x.sum() > 0:
        return x * 2
    return x
"""

HELPER_GOOD = """\
import torch


def soft_cap(x):
    return torch.where(x.sum() > 0, x * 2, x)
"""

MODEL = """\
from torch import nn

from pkg.layers import soft_cap


class Model(nn.Module):
    def forward(self, x):
        return soft_cap(x)
"""


def _cslint(args: list[str], stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cslint", "check", *args], input=stdin, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _codes(output: str, name: str) -> list[tuple[int, str]]:
    found = []
    for line in output.splitlines():
        if line.startswith(f"{name}:"):
            _, number, _, rest = line.split(":", 3)
            found.append((int(number), rest.split()[0]))
    return found


def test_dev_stdin_is_not_a_silent_pass(tmp_path: Path) -> None:
    """`cat f.py | cslint check /dev/stdin` passed (the same text as a file has findings)."""
    (tmp_path / "f.py").write_text(BAD, encoding="utf-8")
    as_file = _cslint(["f.py", "--no-cache", "--output-format", "concise"], "", tmp_path)
    piped = _cslint(["/dev/stdin", "--no-cache", "--output-format", "concise"], BAD, tmp_path)
    assert as_file.returncode == 1
    assert piped.returncode == 1, piped.stdout + piped.stderr
    assert [code for _, code in _codes(piped.stdout, "-")] == [code for _, code in _codes(as_file.stdout, "f.py")]
    assert len(_codes(piped.stdout, "-")) >= 2


def test_stdin_is_reported_under_its_filename(tmp_path: Path) -> None:
    _project(tmp_path, {})
    run = _cslint(["-", "--stdin-filename", "pkg/net.py", "--output-format", "concise"], BAD, tmp_path)
    assert run.returncode == 1, run.stderr
    assert _codes(run.stdout, "pkg/net.py"), run.stdout
    assert not (tmp_path / "pkg").exists()  # nothing written for a file that does not exist
    clean = _cslint(["-", "--stdin-filename", "pkg/net.py"], GOOD, tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "All checks passed" in clean.stdout


def test_stdin_filename_without_dash_reads_stdin(tmp_path: Path) -> None:
    run = _cslint(["--stdin-filename", "net.py", "--no-cache", "--output-format", "concise"], BAD, tmp_path)
    assert run.returncode == 1
    assert _codes(run.stdout, "net.py")


def test_stdin_helper_is_traced_from_a_saved_file_of_its_project(tmp_path: Path) -> None:
    """The buffer holds a helper; the `forward` that traces it is in another file, saved on disk."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/layers.py": HELPER_GOOD, "pkg/model.py": MODEL})
    run = _cslint(["-", "--stdin-filename", "pkg/layers.py", "--output-format", "concise"], HELPER_BAD, root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert _codes(run.stdout, "pkg/layers.py") == [(5, "WSC101")]
    assert "model.py" not in run.stdout  # only the buffer is reported
    clean = _cslint(["-", "--stdin-filename", "pkg/layers.py"], HELPER_GOOD, root)
    assert clean.returncode == 0, clean.stdout


def test_stdin_caller_in_the_buffer_reaches_a_saved_helper(tmp_path: Path) -> None:
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/layers.py": HELPER_BAD, "pkg/model.py": MODEL})
    run = _cslint(["-", "--stdin-filename", "pkg/model.py", "--output-format", "concise"], MODEL, root)
    assert run.returncode == 0, run.stdout  # the finding is in layers.py, which was not asked about
    disk = _cslint(["pkg/layers.py", "pkg/model.py", "--output-format", "concise"], "", root)
    assert _codes(disk.stdout, "pkg/layers.py") == [(5, "WSC101")]


def test_stdin_never_poisons_the_cache(tmp_path: Path) -> None:
    """Answers about text that is not on disk are never stored: disk runs before and after agree."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/layers.py": HELPER_GOOD, "pkg/model.py": MODEL})
    before = _cslint(["."], "", root)
    assert before.returncode == 0, before.stdout
    cache_files = sorted((root / ".cslint_cache").glob("*.json"))
    saved = [p.read_bytes() for p in cache_files]
    assert _cslint(["-", "--stdin-filename", "pkg/layers.py"], HELPER_BAD, root).returncode == 1
    assert [p.read_bytes() for p in cache_files] == saved
    assert _cslint(["."], "", root).returncode == 0
    # the other way round: findings on disk, a clean buffer
    (root / "pkg/layers.py").write_text(HELPER_BAD, encoding="utf-8")
    assert _cslint(["."], "", root).returncode == 1
    assert _cslint(["-", "--stdin-filename", "pkg/layers.py"], HELPER_GOOD, root).returncode == 0
    again = _cslint(["pkg/layers.py", "pkg/model.py", "--output-format", "concise"], "", root)
    assert _codes(again.stdout, "pkg/layers.py") == [(5, "WSC101")]


def test_stdin_fix_writes_the_fixed_text_to_stdout(tmp_path: Path) -> None:
    _project(tmp_path, {})
    (tmp_path / "net.py").write_text(BAD, encoding="utf-8")
    on_disk = _cslint(["net.py", "--fix", "--no-cache"], "", tmp_path)
    fixed_file = (tmp_path / "net.py").read_text(encoding="utf-8")
    assert fixed_file != BAD
    (tmp_path / "net.py").write_text(BAD, encoding="utf-8")
    piped = _cslint(["-", "--stdin-filename", "net.py", "--fix"], BAD, tmp_path)
    assert piped.stdout == fixed_file
    assert (tmp_path / "net.py").read_text(encoding="utf-8") == BAD  # the file on disk is not touched
    assert piped.returncode == on_disk.returncode
    assert "net.py:" in piped.stderr  # what remains is reported on standard error
    unchanged = _cslint(["-", "--stdin-filename", "net.py", "--fix"], GOOD, tmp_path)
    assert (unchanged.stdout, unchanged.returncode) == (GOOD, 0)


def test_stdin_json_report(tmp_path: Path) -> None:
    run = _cslint(["-", "--stdin-filename", "x/net.py", "--output-format", "json", "--no-cache"], BAD, tmp_path)
    found = json.loads(run.stdout)
    assert {d["filename"] for d in found} == {"x/net.py"}
    assert all(d["cell"] is None for d in found)


@pytest.mark.parametrize("args, message", [
    (["-", "a.py"], "cannot be combined"),
    (["a.py", "--stdin-filename", "b.py"], "--stdin-filename needs"),
    (["-", "--add-noqa"], "--add-noqa cannot be used on standard input"),
])
def test_stdin_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                            message: str) -> None:
    (tmp_path / "a.py").write_text(GOOD, encoding="utf-8")
    import os

    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["check", *args]) == 2
    finally:
        os.chdir(old)
    assert message in capsys.readouterr().err


def test_stdin_not_utf8_is_an_error(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "cslint", "check", "-"], input=b"x = '\xff'\n", cwd=tmp_path,
                         capture_output=True, timeout=60)
    assert run.returncode == 2
    assert b"not valid UTF-8" in run.stderr


def test_lint_texts_fixes_in_memory_and_only_the_chosen_fix(tmp_path: Path) -> None:
    """The overlay entry point: buffers linted and fixed in memory; a fix choice applies one fix only."""
    from cslint.core.config import Settings
    from cslint.engine.overlay import lint_texts
    from cslint.engine.selection import enabled_codes

    path = tmp_path / "net.py"
    # the project imports cerebras.pytorch elsewhere, so the print's step-closure fix may import it
    settings = Settings(project_root=tmp_path, project_packages=("cerebras", "torch"))
    codes = enabled_codes(settings)
    reported = lint_texts({path: BAD}, settings, codes)
    assert sorted(d.code for d in reported.diagnostics) == ["WSC101", "WSC201", "WSC701"]
    assert not path.exists()
    everything = lint_texts({path: BAD}, settings, codes, fix=True, unsafe_fixes=True)
    one = lint_texts({path: BAD}, settings, codes, fix=lambda d: d.code == "WSC101", unsafe_fixes=True)
    (all_fixed,), (one_fixed,) = everything.changed_files, one.changed_files
    assert "torch.where" in one_fixed.text and "print(x.item())" in one_fixed.text
    assert one_fixed.text != all_fixed.text
    assert not path.exists()  # nothing written
