"""What a run reports for a file depends on the files, the settings and the project, never on which runs
came before: a narrower run must not leave behind a cached answer that a wider one then trusts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cslint.cli.main import main
from tests.samples import CROSS_FILE_LAYERS as LAYERS, CROSS_FILE_MODEL as MODEL


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers.py").write_text(LAYERS)
    (tmp_path / "pkg" / "model.py").write_text(MODEL)
    return tmp_path


def _findings(capsys, root: Path, *args: str, cache: bool = True) -> list[tuple[str, int, str]]:
    options = ["--cache-dir", str(root / ".cache")] if cache else ["--no-cache"]
    code = main(["check", *args, "--output-format", "json", *options])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return sorted((Path(f["filename"]).relative_to(root).as_posix(), f["line"], f["code"]) for f in json.loads(out))


def test_a_file_checked_alone_does_not_hide_its_finding_from_later_whole_runs(project, capsys):
    whole = _findings(capsys, project, str(project))
    assert ("pkg/layers.py", 5, "WSC101") in whole
    _findings(capsys, project, str(project / "pkg" / "layers.py"), "--isolated")
    assert _findings(capsys, project, str(project)) == whole
    assert _findings(capsys, project, str(project / "pkg" / "layers.py"), "--project-context") == \
        [("pkg/layers.py", 5, "WSC101")]
    assert _findings(capsys, project, str(project), cache=False) == whole
