"""A hostile repository: every pathological input of issue #19 and the shipped caches of #34, each linted
in a subprocess.

Checks, per input: the run ends within 60 s, its peak memory (the process and the children it waited
for, from wait4) stays under 1 GB, its output carries no raw control character, and it never fails as a
whole with an internal error. Across all runs: no file outside the repository changed, and no module of
the repository was imported (each stdlib-named module writes a marker when imported).

    python bench/robustness.py --hostile-only
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TIME_LIMIT = 60.0
MEMORY_LIMIT_MB = 1024
STDLIB_NAMES = ("selectors", "multiprocessing", "subprocess", "weakref", "logging", "json", "concurrent",
                "typing", "tomllib")
PACKAGES = ("logging", "json", "concurrent")
WITHOUT_ROOT_OVERRIDES = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                          "--bounding-set=-dac_override,-dac_read_search"]
EXPECTED = {  # what each case's output must say
    "stdlib-named modules, -j2": "model.py:7:12: WSC101",
    "FIFO named *.py": "a FIFO, not a Python file",
    "*.py symlink to /dev/zero": "a character device, not a Python file",
    "--config FIFO": "a FIFO, not a regular file",
    "2,000 nested calls (24 KB)": "too many nested parentheses",
    "20,000-term x + x line": "WSC004 file not analysed: an expression 20,000 levels deep",
    "3,000-link method chain": "WSC004 file not analysed",
    "unclosed from-import ( then 12 comment lines": "WSC001 syntax error: '(' was never closed",
    "1 MB line of 87,000 `x; import a`": "one.py:1:13: WSC001",
    "1 MB of 62,000 unclosed `from a import (`": "WSC001 syntax error: too many nested parentheses",
    "1 MB line of 25,000 `x = 1; import a.b; ...`": "All checks passed",
    "30 MB file, --fix": "WSC004 file not analysed",
    "1,100-deep directories": "leaf.py:7:12: WSC101",
    "unreadable directory": "cannot read directory",
    "path in an unsearchable directory": "a directory on its path cannot be searched",
    "escape sequences and a newline in names": "evil\\nfake.py",
    "symlink to a file outside, --fix": "a symbolic link to a file outside the paths checked",
    "tool = 5 in pyproject.toml": "`tool` in",
    "flake8 on one file (indexes the project)": "model.py:7:12: WSC101",
    # a cache the repository ships (#34): see build_shipped_caches
    "shipped cache: every entry says no findings": "model.py:7:12: WSC101",
    "shipped cache: its files linked to /dev/zero": "model.py:7:12: WSC101",
    "shipped cache: its files FIFOs": "model.py:7:12: WSC101",
    "shipped cache: a 60 MB results file": "model.py:7:12: WSC101",
    **{f"cslint lsp: {mb} MB open document, one edit": "after an edit WSC004" for mb in (6, 50)},
    # issue #34 items 5 and 6: one file that exhausts recursion or the parsers is a finding for that file
    "notebook of 100,000 nested [": "deep.ipynb:1:1: WSC004 file not analysed: JSON nested 100,003 levels deep",
    "flake8, project with a 100,000-deep notebook": "model.py:7:12: WSC101",
    "800,000 lines of x = 1 (4.8 MB)": "flat.py:1:1: WSC004 file not analysed: more tokens than the limit",
    "800,000 lines of x = 1, --fix": "flat.py:1:1: WSC004 file not analysed: more tokens than the limit",
    "flake8, project with 800,000 lines of x = 1": "model.py:7:12: WSC101",
    # the baseline (#40 item 1): a baseline that cannot be read is a one-line error, never a pass
    "--baseline FIFO": "a FIFO, not a regular file",
    "--baseline of 19,000,000 [": "JSON nested 19,000,000 levels deep",
    "--baseline of 30 MB": "30,000,000 bytes, over the 20,000,000 cslint reads",
    "configured baseline outside the project, --prune-baseline": "is outside its project",
}
MODEL = (
    "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
    "        if x.max() > 0:\n            y = x * 2\n        else:\n            y = x\n        return y\n"
)


@dataclass
class Outcome:
    case: str
    code: int | None
    seconds: float
    peak_mb: float
    problems: list[str]


def _marker_module(marker_dir: Path, name: str) -> str:
    return (f"open({str(marker_dir / name)!r}, 'w').write('imported')\n"
            "raise SystemExit('a module of the linted repository was imported')\n")


def build(root: Path) -> dict[str, list[str]]:
    """The repository (root/repo) and its cases: case name -> cslint arguments, run in the repository."""
    repo, outside, markers = root / "repo", root / "outside", root / "markers"
    for directory in (repo, outside, markers):
        directory.mkdir()
    (repo / "pyproject.toml").write_text("[tool.cslint]\n")
    (repo / "model.py").write_text(MODEL)
    (outside / "victim.py").write_text(MODEL)  # a fixable file a link in the repository points at
    (outside / "notes.txt").write_text("not cslint's\n")
    for name in STDLIB_NAMES:
        if name in PACKAGES:
            (repo / name).mkdir()
            (repo / name / "__init__.py").write_text(_marker_module(markers, name))
        else:
            (repo / f"{name}.py").write_text(_marker_module(markers, name))
    bulk = repo / "bulk"  # over 2 MB of Python, so `check` starts worker processes
    bulk.mkdir()
    for i in range(120):
        (bulk / f"layer_{i}.py").write_text(MODEL.replace("Net", f"Net{i}") + "".join(
            f"\n\ndef helper_{i}_{j}(x):\n    return x * {j}\n" for j in range(400)))
    cases: dict[str, list[str]] = {"stdlib-named modules, -j2": ["-j", "2", "."],
                                   "stdlib-named modules, --fix": ["--fix", "model.py"]}

    def case(name: str, directory: str, *args: str) -> Path:
        path = repo / "cases" / directory
        path.mkdir(parents=True)
        cases[name] = [*args, f"cases/{directory}"]
        return path

    os.mkfifo(case("FIFO named *.py", "fifo") / "pipe.py")
    (case("*.py symlink to /dev/zero", "devzero") / "zero.py").symlink_to("/dev/zero")
    fifo_config = repo / "cases" / "config.toml"
    os.mkfifo(fifo_config)
    cases["--config FIFO"] = ["--config", "cases/config.toml", "model.py"]
    calls = "f(" * 2000 + "x" + ")" * 2000
    (case("2,000 nested calls (24 KB)", "nested") / "nested.py").write_text(
        MODEL.replace("y = x * 2", f"y = {calls}") * 3)
    chain = " + ".join(["x"] * 20_000)
    (case("20,000-term x + x line", "chain") / "chain.py").write_text(MODEL.replace("y = x * 2", f"y = {chain}"))
    links = ".f()" * 3000
    (case("3,000-link method chain", "methods") / "methods.py").write_text(
        MODEL.replace("y = x * 2", f"y = x{links}"))
    (case("unclosed from-import ( then 12 comment lines", "unclosed") / "unclosed.py").write_text(
        "from a import (b\n" + "# xxxxxxxx\n" * 12)  # the import scan's regex once backtracked exponentially
    # the import scan's reads once overlapped: each statement start read to the end of its line or file
    (case("1 MB line of 87,000 `x; import a`", "oneline") / "one.py").write_text("x; import a " * 87_000)
    (case("1 MB of 62,000 unclosed `from a import (`", "brackets") / "brackets.py").write_text(
        "from a import (\n" * 62_000)
    (case("1 MB line of 25,000 `x = 1; import a.b; ...`", "statements") / "statements.py").write_text(
        "x = 1; import a.b; from .c import (d, e); " * 25_000 + "\n")
    big = case("30 MB file, --fix", "big", "--fix") / "big.py"
    with big.open("w") as handle:
        while handle.tell() < 30_000_000:
            handle.write(MODEL.replace("Net", f"Net{handle.tell()}"))
    deep = case("1,100-deep directories", "deep")
    fd = os.open(deep, os.O_RDONLY)
    for _ in range(1100):
        os.mkdir("d", dir_fd=fd)
        fd, parent = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(parent)
    leaf = os.open("leaf.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(leaf, MODEL.encode())
    os.close(leaf)
    os.close(fd)
    hidden = case("unreadable directory", "unreadable") / "hidden"
    hidden.mkdir()
    (hidden / "inner.py").write_text(MODEL)
    hidden.chmod(0o300)
    locked = case("path in an unsearchable directory", "unsearchable") / "locked"
    locked.mkdir()
    (locked / "inner.py").write_text(MODEL)
    locked.chmod(0o600)
    cases["path in an unsearchable directory"] = ["cases/unsearchable/locked/inner.py", "model.py"]
    (case("escape sequences and a newline in names", "escapes") / "evil\nfake.py:1:1: ok").mkdir()
    (repo / "cases" / "escapes" / "evil\nfake.py:1:1: ok" / "m\x1b[2J.py").write_text(
        MODEL.replace("if x.max() > 0:", "if x.max() > 0:  # \x1b]0;owned\x07\x1b[31m"))
    (case("symlink to a file outside, --fix", "link", "--fix") / "link.py").symlink_to(outside / "victim.py")
    plugin = repo / "cases" / "flake8"  # its own project: the plugin lints all of it for one file
    plugin.mkdir()
    (plugin / "pyproject.toml").write_text("[tool.cslint]\n")
    (plugin / "model.py").write_text(MODEL)
    os.mkfifo(plugin / "pipe.py")
    _exhausting_cases(repo, case)
    _baseline_cases(repo, cases)
    # #40 item 4: choosing the target parses, with Python's parser, a file that assigns a dynamo setting
    (case("1 MB of `if x: pass` after a dynamo setting", "dynamo_setting") / "settings.py").write_text(
        "import torch\ntorch._dynamo.config.capture_scalar_outputs = True\n" + "if x:\n    pass\n" * 62_000)
    tool = case("tool = 5 in pyproject.toml", "tool")
    (tool / "pyproject.toml").write_text("tool = 5\n")
    (tool / "m.py").write_text(MODEL)
    cases["tool = 5 in pyproject.toml"] = ["cases/tool/m.py"]
    return cases


def _baseline_cases(repo: Path, cases: dict[str, list[str]]) -> None:
    """Baselines a repository can ship (#40 item 1): each must end in a one-line error, exit 2."""
    directory = repo / "cases" / "baselines"
    directory.mkdir(parents=True)
    os.mkfifo(directory / "fifo.json")
    cases["--baseline FIFO"] = ["--baseline", "cases/baselines/fifo.json", "model.py"]
    (directory / "deep.json").write_text("[" * 19_000_000)
    cases["--baseline of 19,000,000 ["] = ["--baseline", "cases/baselines/deep.json", "model.py"]
    (directory / "big.json").write_text(" " * 30_000_000)
    cases["--baseline of 30 MB"] = ["--baseline", "cases/baselines/big.json", "model.py"]
    (directory / "pyproject.toml").write_text('[tool.cslint]\nbaseline = "../../../outside/notes.txt"\n')
    (directory / "m.py").write_text(MODEL)
    cases["configured baseline outside the project, --prune-baseline"] = [
        "--prune-baseline", "--config", "cases/baselines/pyproject.toml", "cases/baselines/m.py"]


def build_shipped_caches(root: Path) -> dict[str, tuple[list[str], Path]]:
    """Projects in the repository that ship a `.cslint_cache` (#34), each made by a run of cslint with
    another user's key and then planted: every entry saying "no findings", the results cache and both
    memos links to /dev/zero, or FIFOs, the results cache grown to 60 MB (sparse). Case name -> (the
    victim's command, the project it runs in)."""
    cslint = str(Path(sys.executable).parent / "cslint")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CSLINT_CACHE_DIR")}
    cases: dict[str, tuple[list[str], Path]] = {}
    for name, directory in (("shipped cache: every entry says no findings", "cache-zeroed"),
                            ("shipped cache: its files linked to /dev/zero", "cache-devzero"),
                            ("shipped cache: its files FIFOs", "cache-fifos"),
                            ("shipped cache: a 60 MB results file", "cache-large")):
        project = root / "repo" / "cases" / directory
        project.mkdir(parents=True)
        (project / "pyproject.toml").write_text("[tool.cslint]\n")
        (project / "model.py").write_text(MODEL)
        subprocess.run([cslint, "check", "--exit-zero", "-q", "."], cwd=project, check=True, capture_output=True,
                       env={**env, "CSLINT_NO_SERVER": "1", "CSLINT_KEY_FILE": str(root / "attacker-key")})
        cache = project / ".cslint_cache"
        for path in sorted(cache.glob("v*")):
            if directory == "cache-zeroed" and path.suffix == ".json":
                data = json.loads(path.read_text())
                for entry in data["files"].values():
                    entry["diagnostics"] = []
                path.write_text(json.dumps(data))
            elif directory == "cache-devzero":
                path.unlink()
                path.symlink_to("/dev/zero")
            elif directory == "cache-fifos":
                path.unlink()
                os.mkfifo(path)
            elif directory == "cache-large" and path.suffix == ".json":  # just under what is read
                os.truncate(path, 60 * 1024 * 1024)
        command = ["env", f"CSLINT_KEY_FILE={root / 'user-key'}", cslint, "check", "--output-format", "concise", "."]
        cases[name] = (command, project)
    return cases


def _exhausting_cases(repo: Path, case: Any) -> None:
    """A notebook nested 100,000 deep and a 4.8 MB file of 800,000 statements (within the size limit),
    beside a file with a finding, through `check` (worker processes: over 2 MB of source), `--fix` and
    flake8 (whose plugin lints the whole project)."""
    deep = "[" * 100_000 + "]" * 100_000
    notebook = ('{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": ' + deep +
                '}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    flat = "x = 1\n" * 800_000
    for name, directory, text, args in (("notebook of 100,000 nested [", "notebook", notebook, ()),
                                        ("800,000 lines of x = 1 (4.8 MB)", "flat", flat, ()),
                                        ("800,000 lines of x = 1, --fix", "flatfix", flat, ("--fix",))):
        path = case(name, directory, *args)
        (path / ("deep.ipynb" if directory == "notebook" else "flat.py")).write_text(text)
        (path / "model.py").write_text(MODEL)
    for directory, name, text in (("flake8-notebook", "deep.ipynb", notebook), ("flake8-flat", "flat.py", flat)):
        project = repo / "cases" / directory  # its own project: the plugin lints all of it for one file
        project.mkdir()
        (project / "pyproject.toml").write_text("[tool.cslint]\n")
        (project / "model.py").write_text(MODEL)
        (project / name).write_text(text)


def _snapshot(directory: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


def _run(command: list[str], cwd: Path) -> tuple[int | None, float, float, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CSLINT_NO_SERVER")}
    env["CSLINT_NO_SERVER"] = "1"
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = started + TIME_LIMIT
        status = None
        while status is None:
            pid, raw, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(raw)
                break
            if time.perf_counter() > deadline:
                proc.kill()
                _, raw, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = status if status is not None else -9
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return status, time.perf_counter() - started, usage.ru_maxrss / 1024, text


def hostile_run() -> int:
    root = Path(tempfile.mkdtemp(prefix="cslint-hostile-"))
    try:
        cases = build(root)
        shipped_caches = build_shipped_caches(root)
        repo, outside, markers = root / "repo", root / "outside", root / "markers"
        before = _snapshot(outside)
        outcomes = []
        scripts = Path(sys.executable).parent  # the console scripts, as users run them
        cslint = [str(scripts / "cslint"), "check", "--no-cache", "--output-format", "concise"]
        runs = {name: [*cslint, *args] for name, args in cases.items()}
        runs["flake8 on one file (indexes the project)"] = [str(scripts / "flake8"), "--select", "WSC",
                                                             "cases/flake8/model.py"]
        for mb in (6, 50):  # the language server, driven by bench/lsp_hostile.py (peak: it and the server)
            runs[f"cslint lsp: {mb} MB open document, one edit"] = [
                sys.executable, str(Path(__file__).resolve().parent / "lsp_hostile.py"), "--mb", str(mb)]
        for name, directory in (("flake8, project with a 100,000-deep notebook", "flake8-notebook"),
                                ("flake8, project with 800,000 lines of x = 1", "flake8-flat")):
            runs[name] = [str(scripts / "flake8"), "--select", "WSC", f"cases/{directory}/model.py"]
        for name in ("unreadable directory", "path in an unsearchable directory"):
            if os.geteuid() == 0 and shutil.which("setpriv"):  # root ignores permission bits otherwise
                runs[name] = [*WITHOUT_ROOT_OVERRIDES, *runs[name]]
        runs.update({name: command for name, (command, _) in shipped_caches.items()})
        for name, command in runs.items():
            code, seconds, peak, text = _run(command, shipped_caches[name][1] if name in shipped_caches else repo)
            problems = []
            if EXPECTED.get(name, "") not in text:
                problems.append(f"expected {EXPECTED[name]!r} in the output: {text[-300:]!r}")
            if code is None:
                problems.append(f"over {TIME_LIMIT:.0f} s")
            if peak > MEMORY_LIMIT_MB:
                problems.append(f"peak {peak:.0f} MB")
            if "Traceback" in text or "internal error" in text:
                problems.append("internal error: " + next(line for line in text.splitlines()
                                                          if "Traceback" in line or "internal error" in line))
            if "\x1b" in text or "\x07" in text:
                problems.append("raw control characters in the output")
            outcomes.append(Outcome(name, code, seconds, peak, problems))
        if importlib.util.find_spec("torch") is not None:  # --verify runs the target under torch
            outcomes.append(killed_verify(root / "killed-verify", scripts))
        after = _snapshot(outside)
        imported = sorted(p.name for p in markers.iterdir())
    finally:
        _remove(root)
    failures = 0
    print("hostile repository: case, exit code, seconds, peak MB")
    for o in outcomes:
        failures += bool(o.problems)
        print(f"  {o.case:<45} exit {o.code!s:>4} {o.seconds:6.1f} s {o.peak_mb:7.0f} MB  "
              f"{'FAILED: ' + '; '.join(o.problems) if o.problems else 'ok'}")
    changed = sorted(set(before.items()) ^ set(after.items()))
    print(f"  files outside the repository changed: {len({path for path, _ in changed})}; "
          f"modules of the repository imported: {len(imported)} {imported if imported else ''}")
    failures += len(changed) + len(imported)
    return failures


KILLED_VERIFY = "kill -9 during --fix --verify, then check"


def killed_verify(root: Path, scripts: Path) -> Outcome:
    """`--fix --verify` killed (kill -9, its whole process group) while the target runs from the project's
    copy: the copy and the runtime checker's directory stay in the temporary directory. The next
    `cslint check` (measured) must remove them, and the target's process must not outlive the kill."""
    project, scratch, waiting = root / "project", root / "tmp", root / "waiting"
    project.mkdir(parents=True)
    scratch.mkdir()
    (project / "pyproject.toml").write_text('[tool.cslint]\nruntime-targets = ["model.py:target"]\n')
    (project / "model.py").write_text(MODEL + (
        "\n\ndef target(device):\n    import torch\n"
        "    return Net().to(device), [torch.randn(3, 4, device=device)]\n\n\n"
        f"import os, time\nopen({str(waiting)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n"))
    env = {**os.environ, "CSLINT_NO_SERVER": "1", "CSLINT_NO_CACHE": "1", "TMPDIR": str(scratch)}
    problems = []
    verify = subprocess.Popen([str(scripts / "cslint"), "check", "--fix", "--verify", "model.py"], cwd=project,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + TIME_LIMIT
    while not (waiting.exists() and waiting.read_text()) and verify.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(verify.pid, signal.SIGKILL)
    verify.wait()
    left = sorted(p.name.rsplit("-", 1)[0] for p in scratch.iterdir())
    if left != ["cslint-runtime", "cslint-verify"]:
        problems.append(f"the killed run left {left}, not its copy and the checker's directory: nothing measured")
    target = int(waiting.read_text()) if waiting.exists() and waiting.read_text() else None
    if target is not None and not _ends(target):
        problems.append(f"the target's process {target} outlived the killed cslint")
        os.kill(target, signal.SIGKILL)
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(scratch)
    try:
        code, seconds, peak, text = _run([str(scripts / "cslint"), "check", "--isolated", "model.py"], project)
    finally:
        if old is None:
            os.environ.pop("TMPDIR")
        else:
            os.environ["TMPDIR"] = old
    remaining = sorted(p.name for p in scratch.iterdir())
    if remaining:
        problems.append(f"the next run left {remaining} in the temporary directory")
    if code not in (0, 1) or "Traceback" in text:
        problems.append(f"the next run failed: {text[-300:]!r}")
    if seconds > TIME_LIMIT or peak > MEMORY_LIMIT_MB:
        problems.append(f"{seconds:.0f} s, {peak:.0f} MB")
    return Outcome(KILLED_VERIFY, code, seconds, peak, problems)


def _ends(pid: int, seconds: float = 10.0) -> bool:
    """Whether the process ends (or is only a zombie waiting for its reaper) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def _remove(root: Path) -> None:
    """Remove the repository: the deep tree one level at a time first (shutil.rmtree recurses)."""
    for locked in ("cases/unreadable/hidden", "cases/unsearchable/locked"):
        (root / "repo" / locked).chmod(0o755)
    deep = root / "repo" / "cases" / "deep"
    fds = [os.open(deep, os.O_RDONLY)]
    while True:
        try:
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        except FileNotFoundError:
            break
    for name in os.listdir(fds[-1]):
        os.unlink(name, dir_fd=fds[-1])
    os.close(fds.pop())
    while fds:
        os.rmdir("d", dir_fd=fds[-1])
        os.close(fds.pop())
    shutil.rmtree(root)


if __name__ == "__main__":
    sys.exit(1 if hostile_run() else 0)
