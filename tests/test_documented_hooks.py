"""The pre-commit configuration docs/ci.md shows for a checkout (`repo: local`) works when followed: run
by pre-commit itself on a temporary git repository, with the cslint of this environment on the PATH."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.test_precommit import HELPER, MODEL, git, init_repo

ROOT = Path(__file__).resolve().parent.parent


def documented_local_config() -> str:
    text = (ROOT / "docs" / "ci.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    local = [b for b in blocks if "repo: local" in b]
    assert len(local) == 1, "docs/ci.md shows one `repo: local` configuration"
    return local[0]


def test_documented_local_hook_reports_staged_files_and_honours_extend_exclude(tmp_path: Path) -> None:
    project = tmp_path / "project"
    init_repo(project)
    (project / "pyproject.toml").write_text("[tool.cslint]\nextend-exclude = ['generated']\n")
    (project / "helpers.py").write_text(HELPER)
    (project / "model.py").write_text(MODEL)
    (project / "generated").mkdir()
    (project / "generated" / "gen_helpers.py").write_text(HELPER.replace("def cap", "def gen_cap"))
    generated_model = MODEL.replace("from helpers import cap", "from generated.gen_helpers import gen_cap as cap")
    (project / "generated" / "gen_model.py").write_text(generated_model)
    (project / ".pre-commit-config.yaml").write_text(documented_local_config())
    git(project, "add", "-A")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PRE_COMMIT_COLOR": "never", "CSLINT_NO_SERVER": "1"}
    done = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "helpers.py:5:8: WSC101" in done.stdout
    assert "generated" not in done.stdout  # pre-commit names it; extend-exclude keeps it out
