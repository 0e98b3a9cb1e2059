"""Shared test helpers: lint or fix code given as strings, in a temporary project."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cslint.core.config import Settings
from cslint.engine.runner import Diagnostic, Linter, RunResult
from cslint.engine.selection import enabled_rules


def run_linter(root: Path, files: dict[str, str], *, fix: bool = False, unsafe: bool = False,
               **settings: object) -> tuple[RunResult, dict[str, str]]:
    """Write `files` (relative path -> source) under `root`, lint them all; return result and new texts."""
    paths = []
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
        paths.append(path)
    config = Settings(project_root=root).with_overrides(**settings)
    linter = Linter(config, enabled_rules(config))
    result = linter.run(paths, fix=fix, unsafe_fixes=unsafe)
    if not fix:  # every lint in the suite also checks that bounded memory changes nothing reported
        bounded = Linter(config, enabled_rules(config), tree_budget=1).run(paths)
        assert reported(bounded) == reported(result)
    texts = {}
    for name in files:
        source = next((s for s in result.changed_files if s.path == root / name), None)
        texts[name] = source.text if source else (root / name).read_text(encoding="utf-8")
    return result, texts


def reported(result: RunResult) -> list[tuple[object, ...]]:
    """What a report shows of each diagnostic (a fix by its applicability and message)."""
    return [(d.path, d.line, d.column, d.end_line, d.end_column, d.code, d.message, d.notes, d.chain, d.reason,
             (d.fix.applicability, d.fix.message) if d.fix else None, d.targets, d.library_sites)
            for d in result.diagnostics] + \
        result.errors


def profiled_check(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[list[dict], str]:
    """`cslint check --profile` of `root` in this process, one job, no cache: the JSON report and stderr."""
    from cslint.cli.main import main

    code = main(["check", str(root), "--no-cache", "-j", "1", "--show-chain", "--output-format", "json",
                 "--profile"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return json.loads(out), err


def profile_count(err: str, label: str) -> int:
    """A count from `--profile`'s output (0 when the run did not count it)."""
    return int(err.split(f"{label}: ")[1].split()[0].rstrip(",")) if f"{label}: " in err else 0


LintFn = Callable[..., list[Diagnostic]]


@pytest.fixture(autouse=True, scope="session")
def _private_server_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Servers started by `--server` runs (the pre-commit hooks use it) live in a directory of the test
    session, idle out quickly, and are stopped when the session ends, whichever Python runs them."""
    from cslint.server.client import ask

    directory = tmp_path_factory.mktemp("cslint-servers")
    saved = {name: os.environ.get(name) for name in ("CSLINT_SERVER_DIR", "CSLINT_SERVER_IDLE")}
    os.environ.update(CSLINT_SERVER_DIR=str(directory), CSLINT_SERVER_IDLE="60")
    yield
    for address in directory.glob("*/*.sock"):
        ask({"kind": "stop"}, path=str(address), timeout=10)
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True, scope="session")
def _private_cache_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The key that seals cache files (cslint/store/user_key.py) is the test session's, not the user's."""
    saved = os.environ.get("CSLINT_KEY_FILE")
    os.environ["CSLINT_KEY_FILE"] = str(tmp_path_factory.mktemp("cslint-key") / "cache-key")
    yield
    if saved is None:
        os.environ.pop("CSLINT_KEY_FILE", None)
    else:
        os.environ["CSLINT_KEY_FILE"] = saved


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's `cslint check` runs get their own cache, outside the trees they lint."""
    monkeypatch.setenv("CSLINT_CACHE_DIR", str(tmp_path_factory.mktemp("cslint-cache")))


@pytest.fixture
def lint(tmp_path: Path) -> LintFn:
    """lint(code) or lint({"a.py": ..., "b.py": ...}) -> diagnostics (relative paths in .path.name)."""
    def _lint(code: str | dict[str, str], **settings: object) -> list[Diagnostic]:
        files = code if isinstance(code, dict) else {"model.py": code}
        result, _ = run_linter(tmp_path, files, **settings)
        assert not result.errors, result.errors
        return result.diagnostics
    return _lint


@pytest.fixture
def fix(tmp_path: Path) -> Callable[..., str]:
    """fix(code, unsafe=False) -> the fixed source of a single file."""
    def _fix(code: str, unsafe: bool = False, **settings: object) -> str:
        result, texts = run_linter(tmp_path, {"model.py": code}, fix=True, unsafe=unsafe, **settings)
        assert not result.errors, result.errors
        return texts["model.py"]
    return _fix


def codes(diagnostics: list[Diagnostic]) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in diagnostics]
