"""A virtual environment inside the project is never walked, even when `exclude` replaces the defaults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_virtualenv_in_the_project_is_not_walked_when_exclude_replaces_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.cslint]\nexclude = ["data"]\n', encoding="utf-8")
    (tmp_path / "model.py").write_text("import torch\n", encoding="utf-8")
    env = tmp_path / "env"
    (env / "lib" / "site-packages" / "pkg").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (env / "lib" / "site-packages" / "pkg" / "mod.py").write_text("import torch\n", encoding="utf-8")
    shown = subprocess.run([sys.executable, "-m", "cslint", "check", "--show-files", "."], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert "model.py" in shown
    assert "site-packages" not in shown


def test_the_repositorys_own_configuration_keeps_the_default_excludes() -> None:
    root = Path(__file__).resolve().parent.parent
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    assert "\nexclude =" not in text.split("[tool.cslint]", 1)[1]
