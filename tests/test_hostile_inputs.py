"""Every input bounded: a hostile repository cannot make cslint hang, eat memory or fail as a whole.

Each test runs cslint in a subprocess on real files, with a timeout and an address-space limit, so a
regression shows as a failure here, not as a stuck or swapping test run.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
import sys
from pathlib import Path

import pytest

from tests.samples import TENSOR_BRANCH as BAD

MEMORY_LIMIT = 3 * 1024**3
# Root ignores permission bits; without these two capabilities it obeys them like any owner.
WITHOUT_ROOT_OVERRIDES = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                          "--bounding-set=-dac_override,-dac_read_search"]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def cslint(*args: str, cwd: Path | None = None, timeout: float = 60, obey_permissions: bool = False,
           tool: str = "cslint") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cslint", "check", "--no-cache", *args] if tool == "cslint" else \
        [sys.executable, "-m", tool, *args]
    if obey_permissions and os.geteuid() == 0:
        command = [*WITHOUT_ROOT_OVERRIDES, *command]
    env = {**os.environ, "CSLINT_NO_SERVER": "1"}
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
                          preexec_fn=_limit_memory)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("cslint: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.cslint]\n")
    (tmp_path / "model.py").write_text(BAD)
    return tmp_path


def test_fifo_named_like_a_module_is_skipped_with_a_warning(project):
    os.mkfifo(project / "pipe.py")
    proc = cslint("--output-format", "concise", str(project))
    assert proc.returncode == 1
    assert "model.py:7:12: WSC101" in proc.stdout
    assert f"cslint: warning: {project / 'pipe.py'}: a FIFO, not a Python file: not read (skipped)" in proc.stderr


def test_symlink_to_a_device_is_skipped_with_a_warning(project):
    (project / "zero.py").symlink_to("/dev/zero")
    proc = cslint("--output-format", "concise", str(project))
    assert proc.returncode == 1 and "model.py:7:12: WSC101" in proc.stdout
    assert f"{project / 'zero.py'}: a character device, not a Python file: not read (skipped)" in proc.stderr


def test_fifo_named_on_the_command_line_is_an_error_for_that_path(project):
    os.mkfifo(project / "pipe.py")
    proc = cslint("--output-format", "concise", str(project / "pipe.py"), str(project / "model.py"))
    assert proc.returncode == 2
    assert "model.py:7:12: WSC101" in proc.stdout
    assert _one_error_line(proc.stderr).endswith("pipe.py: a FIFO, not a Python file: not read")


def test_config_file_that_is_a_fifo(project):
    os.mkfifo(project / "settings.toml")
    proc = cslint("--config", str(project / "settings.toml"), str(project))
    assert proc.returncode == 2
    assert "settings.toml: a FIFO, not a regular file" in _one_error_line(proc.stderr)


def test_flake8_indexing_the_project_skips_a_fifo(project):
    os.mkfifo(project / "pipe.py")
    proc = cslint("--select", "WSC", "model.py", cwd=project, tool="flake8")
    assert "model.py:7:12: WSC101" in proc.stdout


def test_file_over_the_size_limit_is_one_finding(project):
    (project / "pyproject.toml").write_text("[tool.cslint]\nmax-file-size = \"2kB\"\n")
    (project / "big.py").write_text(BAD + "".join(f"# padding line {i}\n" for i in range(200)))
    proc = cslint("--output-format", "concise", str(project))
    assert proc.returncode == 1
    size = (project / "big.py").stat().st_size
    assert (f"big.py:1:1: WSC004 file not analysed: {size:,} bytes is over the size limit of 2,000 bytes "
            "(`max-file-size`)") in proc.stdout
    assert "model.py:7:12: WSC101" in proc.stdout
    flag = cslint("--output-format", "concise", "--max-file-size", "1MB", str(project))
    assert "WSC004" not in flag.stdout and flag.stdout.count("WSC101") == 2


def test_fix_on_a_file_over_the_size_limit_leaves_it(project):
    big = project / "big.py"
    big.write_text(BAD * 40)
    before = big.read_bytes()
    proc = cslint("--fix", "--max-file-size", "1000", "--output-format", "concise", str(big))
    assert proc.returncode == 1 and "WSC004" in proc.stdout
    assert big.read_bytes() == before


def test_long_operator_chain_is_over_the_analysis_budget(project):
    # libcst's parse time grows with the cube of the depth: 20,000 terms would take hours
    chain = " + ".join(["x"] * 20_000)
    (project / "chain.py").write_text(BAD.replace("y = x * 2", f"y = {chain}"))
    proc = cslint("--output-format", "concise", str(project), timeout=60)
    assert proc.returncode == 1
    [line] = [line for line in proc.stdout.splitlines() if "chain.py" in line]
    assert "chain.py:8:13: WSC004 file not analysed: an expression 20,000 levels deep" in line
    assert "model.py:7:12: WSC101" in proc.stdout


def test_analysis_budget_is_configurable(project):
    (project / "pyproject.toml").write_text("[tool.cslint]\nanalysis-budget = 50\n")
    chain = ".f()" * 60
    (project / "chain.py").write_text(BAD.replace("y = x * 2", f"y = x{chain}"))
    proc = cslint("--output-format", "concise", str(project))
    assert "chain.py:8:13: WSC004" in proc.stdout
    allowed = cslint("--output-format", "concise", "--analysis-budget", "100000", str(project))
    assert "WSC004" not in allowed.stdout and "chain.py:7:12: WSC101" in allowed.stdout


def test_nesting_python_refuses_is_its_syntax_error(project):
    # 24 KB of nested calls: Python refuses it; libcst's parser took over 13 GB on it
    calls = "f(" * 2000 + "x" + ")" * 2000
    (project / "nested.py").write_text(BAD.replace("y = x * 2", f"y = {calls}") * 2)
    proc = cslint("--output-format", "concise", str(project))
    assert proc.returncode == 1
    assert "nested.py:8:" in proc.stdout and "WSC001 syntax error: too many nested parentheses" in proc.stdout
    assert "model.py:7:12: WSC101" in proc.stdout


def test_deep_nesting_python_accepts_is_analysed(project):
    parens = "(" * 150 + "x" + ")" * 150
    (project / "parens.py").write_text(BAD.replace("if x.max() > 0:", f"if {parens}.max() > 0:"))
    proc = cslint("--output-format", "concise", str(project / "parens.py"))
    assert proc.returncode == 1 and "parens.py:7:12: WSC101" in proc.stdout


def test_thousand_directories_deep():
    # outside pytest's temporary directories: its cleanup (shutil.rmtree) recurses, and would fail
    # on this tree in any later run if this one were killed before removing it
    project = Path(tempfile.mkdtemp(prefix="cslint-deep-"))
    (project / "model.py").write_text(BAD)
    _deep_tree(project, 1100)
    try:
        proc = cslint("--output-format", "concise", str(project))
    finally:
        _remove_deep_tree(project, 1100)
        shutil.rmtree(project)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("WSC101") == 2


def _deep_tree(root: Path, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):  # one level at a time: pathlib's mkdir(parents=True) recurses
        os.mkdir("d", dir_fd=fd)
        fd, parent = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(parent)
    leaf = os.open("leaf.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(leaf, BAD.encode())
    os.close(leaf)
    os.close(fd)


def _remove_deep_tree(root: Path, depth: int) -> None:
    fds = [os.open(root, os.O_RDONLY)]
    for _ in range(depth):
        fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
    os.unlink("leaf.py", dir_fd=fds[-1])
    os.close(fds.pop())
    while fds:
        os.rmdir("d", dir_fd=fds[-1])
        os.close(fds.pop())


def test_tool_that_is_not_a_table(project):
    (project / "pyproject.toml").write_text("tool = 5\n")
    proc = cslint(str(project))
    assert proc.returncode == 2
    assert _one_error_line(proc.stderr) == \
        f"cslint: error: `tool` in {project / 'pyproject.toml'} must be a table, not int 5"


@pytest.fixture
def locked_project(project):
    """As root, permission bits only bind a process without root's overriding capabilities."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permission bits cannot be made to bind")
    yield project
    for path in project.iterdir():
        if path.is_dir():
            path.chmod(0o755)


def test_path_inside_an_unsearchable_directory(locked_project):
    shared_project = locked_project
    locked = shared_project / "locked"
    locked.mkdir()
    (locked / "inner.py").write_text(BAD)
    locked.chmod(0o600)  # readable, not searchable
    proc = cslint("--output-format", "concise", str(locked / "inner.py"), str(shared_project / "model.py"),
                  obey_permissions=True)
    assert proc.returncode == 2
    assert "model.py:7:12: WSC101" in proc.stdout
    assert _one_error_line(proc.stderr) == (f"cslint: error: {locked / 'inner.py'}: permission denied "
                                            "(a directory on its path cannot be searched)")


def test_unreadable_directory_is_a_warning(locked_project):
    shared_project = locked_project
    hidden = shared_project / "hidden"
    hidden.mkdir()
    (hidden / "inner.py").write_text(BAD)
    hidden.chmod(0o300)  # searchable, not readable
    proc = cslint("--output-format", "concise", str(shared_project), obey_permissions=True)
    assert proc.returncode == 1
    assert "model.py:7:12: WSC101" in proc.stdout
    assert (f"cslint: warning: {hidden}: cannot read directory: Permission denied; its files are not linted "
            "(skipped)") in proc.stderr
