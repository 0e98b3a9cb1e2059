"""One file that exhausts recursion, memory or the parsers' time is a finding for that file, never the end
of the run: a notebook of 100,000 nested brackets, an 800,000-line file within the size limit, a
`pyproject.toml` or a planted memo nested as deep. Each run is a subprocess, timed, with its peak memory
from wait4, in the CLI (serial and with worker processes), `--fix` and the flake8 plugin.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from cslint.engine import runner
from cslint.cli.main import main
from tests.bounded import run_bounded
from tests.samples import TENSOR_BRANCH as BAD

MEMORY_LIMIT = 3 * 1024**3  # the address space a run may map: a runaway shows as a failure, not as swapping
DEEP = 100_000
FLAT_LINES = 800_000  # 4.8 MB of `x = 1`: within the default size limit of 5 MB


def run(command: list[str], cwd: Path, timeout: float = 60) -> tuple[int, str, str, float, float]:
    """(exit code, stdout, stderr, seconds, peak MB of the process and the children it waited for)."""
    bounded = run_bounded(command, cwd, {**os.environ, "CSLINT_NO_SERVER": "1"}, timeout=timeout,
                          address_space=MEMORY_LIMIT)
    stdout, stderr = bounded.result.stdout, bounded.result.stderr
    assert "Traceback" not in stderr and "internal error" not in stdout + stderr, stderr[-2000:]
    return bounded.result.returncode, stdout, stderr, bounded.seconds, bounded.peak_mb


def cslint(*args: str, cwd: Path, workers: bool = False) -> tuple[int, str, str, float, float]:
    """`cslint check --no-cache ARGS`; with `workers`, two worker processes however small the project."""
    argv = ["check", "--no-cache", "--output-format", "concise", *args]
    if workers:
        code = ("import sys\nfrom cslint.engine import incremental\nincremental.MIN_PARALLEL_BYTES = 0\n"
                f"from cslint.cli.main import main\nsys.exit(main({argv + ['-j', '2']!r}))")
        return run([sys.executable, "-c", code], cwd)
    return run([str(Path(sys.executable).parent / "cslint"), *argv], cwd)


def flake8(*args: str, cwd: Path) -> tuple[int, str, str, float, float]:
    return run([str(Path(sys.executable).parent / "flake8"), "--select", "WSC", *args], cwd)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.cslint]\n")
    (tmp_path / "model.py").write_text(BAD)  # one WSC101 at 7:12
    return tmp_path


def _deep_notebook(path: Path) -> None:
    path.write_text('{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": '
                    + "[" * DEEP + "]" * DEEP + '}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')


NOTEBOOK_FINDING = f"deep.ipynb:1:1: WSC004 file not analysed: JSON nested {DEEP + 3:,} levels deep"


@pytest.mark.parametrize("workers", [False, True], ids=["serial", "-j 2"])
def test_notebook_of_100000_nested_brackets_is_one_finding(project, workers):
    _deep_notebook(project / "deep.ipynb")
    code, out, _, _, _ = cslint(".", cwd=project, workers=workers)
    assert code == 1  # findings, as documented: not an error of the run
    assert "model.py:7:12: WSC101" in out
    assert NOTEBOOK_FINDING in out


def test_flake8_on_a_project_holding_a_100000_deep_notebook(project):
    _deep_notebook(project / "deep.ipynb")
    code, out, _, _, _ = flake8("model.py", cwd=project)
    assert code == 1 and "model.py:7:12: WSC101" in out


def test_notebook_line_too_deep_for_python_is_an_ipython_line(project):
    # ends in `?` (IPython's help), and Python's parser gives up on it (MemoryError): not Python either way
    line = "-" * DEEP + "x?"
    (project / "nb.ipynb").write_text('{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], '
                                      f'"source": ["{line}"]}}], "metadata": {{}}, "nbformat": 4, '
                                      '"nbformat_minor": 5}')
    code, out, _, _, _ = cslint(".", cwd=project)
    assert code == 1 and "model.py:7:12: WSC101" in out and "nb.ipynb" not in out


def _flat_file(path: Path, lines: int = FLAT_LINES) -> None:
    path.write_text("x = 1\n" * lines)


def test_800000_line_file_within_the_size_limit_is_bounded(project):
    _flat_file(project / "flat.py")
    assert (project / "flat.py").stat().st_size < 5_000_000
    code, out, _, seconds, peak = cslint(".", cwd=project)
    assert code == 1 and "model.py:7:12: WSC101" in out
    assert "flat.py:1:1: WSC004 file not analysed: more tokens than the limit of 500,000 (`max-file-tokens`)" in out
    assert seconds < 30 and peak < 500, (seconds, peak)


@pytest.mark.parametrize("tool", ["--fix", "flake8"])
def test_file_over_the_token_limit_with_fix_and_flake8(project, tool):
    # the same as the 800,000-line file (bench/hostile.py runs that one), at a lowered limit
    (project / "pyproject.toml").write_text("[tool.cslint]\nmax-file-tokens = 30000\n")
    _flat_file(project / "flat.py", 11_000)  # 33,000 tokens
    before = (project / "flat.py").read_bytes()
    if tool == "flake8":
        code, out, _, _, _ = flake8("model.py", "flat.py", cwd=project)
        assert code == 1 and "model.py:7:12: WSC101" in out
        assert "flat.py:1:1: WSC004 file not analysed: more tokens than the limit of 30,000" in out
    else:
        code, out, _, _, _ = cslint("--fix", ".", cwd=project)
        assert code == 1 and "flat.py:1:1: WSC004 file not analysed: more tokens than the limit of 30,000" in out
    assert (project / "flat.py").read_bytes() == before


def test_token_limit_is_configurable(project):
    _flat_file(project / "flat.py", 20_000)  # 60,000 tokens
    code, out, _, _, _ = cslint("--max-file-tokens", "50000", ".", cwd=project)
    assert code == 1 and "flat.py:1:1: WSC004" in out
    code, out, _, _, _ = cslint("--max-file-tokens", "70000", ".", cwd=project)
    assert "WSC004" not in out and "model.py:7:12: WSC101" in out


def test_a_cached_report_follows_the_token_limit(project, tmp_path_factory):
    _flat_file(project / "flat.py", 20_000)  # 60,000 tokens
    cache = ["--cache-dir", str(tmp_path_factory.mktemp("cache"))]
    command = [str(Path(sys.executable).parent / "cslint"), "check", "--output-format", "concise", *cache, "."]
    _, first, _, _, _ = run(command, project)
    _, lowered, _, _, _ = run([*command, "--max-file-tokens", "50000"], project)
    assert "WSC004" not in first and "flat.py:1:1: WSC004" in lowered


def test_pyproject_nested_too_deep_is_a_configuration_error(project):
    (project / "pyproject.toml").write_text("[tool.cslint]\nx = " + "[" * DEEP + "]" * DEEP + "\n")
    code, _, err, _, _ = cslint(".", cwd=project)
    assert code == 2
    assert err.strip().splitlines() == [f"cslint: error: cannot parse {project / 'pyproject.toml'}: arrays or "
                                        "tables nested too deeply"]


def test_planted_memo_nested_too_deep_is_ignored(project):
    cache = project / ".cslint_cache"
    command = [str(Path(sys.executable).parent / "cslint"), "check", "--cache-dir", str(cache), "--output-format",
               "concise", "."]
    run(command, project)
    memos = [p for p in cache.iterdir() if p.suffix in (".memo", ".json")]
    assert len(memos) >= 2  # the run's cache and its memos
    for memo in memos:
        memo.write_text("[" * DEEP + "]" * DEEP)
    code, out, _, _, _ = run(command, project)
    assert code == 1 and "model.py:7:12: WSC101" in out


@pytest.mark.parametrize("step", ["read_source", "index_module_from_ast"])
def test_recursion_exhausted_in_one_file_is_a_finding_for_it(project, step, capsys, monkeypatch):
    (project / "other.py").write_text("x = 1\n")
    real = getattr(runner, step)

    def exhausted(path, *args, **kwargs):
        if Path(path).name == "other.py":
            raise RecursionError("maximum recursion depth exceeded")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(runner, step, exhausted)
    code = main(["check", str(project), "--no-cache", "-j", "1", "--output-format", "concise"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "model.py:7:12: WSC101" in out
    stage = "reading" if step == "read_source" else "indexing"
    assert f"other.py:1:1: WSC004 file not analysed: too deeply nested for the recursion limit {stage} it" in out


def test_json_nesting_is_measured_without_strings_in_linear_time():
    from cslint.support import bounded_json

    assert bounded_json.nesting_depth('[["[[[", {"a": [1]}], "]]]]"]') == 4
    assert bounded_json.nesting_depth(r'["\" [[[", "\\", [2]]') == 2
    started = time.perf_counter()
    for hostile in ('"' + '\\"' * 1_000_000 + "\\", '"\\' * 1_000_000, "[" * 1_000_000):
        bounded_json.nesting_depth(hostile)
    assert time.perf_counter() - started < 5
    with pytest.raises(bounded_json.TooDeep):
        bounded_json.loads("[" * 501 + "]" * 501)
    assert bounded_json.loads("[" * 500 + "]" * 500) is not None
