"""Files that cannot hold traced code are reported without libcst: and then nothing is lost."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cslint.core.config import Settings
from cslint.engine.runner import Linter
from cslint.engine.selection import enabled_rules
from cslint.engine.untraced import may_hold_traced_code, nothing_to_report
from tests.corpus import real_files

CODES = frozenset({"WSC101", "WSC201"})


def test_a_file_judged_untraced_gets_no_report_from_the_full_analysis_either():
    """Every file on its own with every rule enabled: where the shortcut says nothing can be reported,
    the analysis finds nothing; and it does say so for some files (it is not a check that never fires)."""
    skipped = 0
    for path in real_files(torch_sample=120, seed=5):
        settings = Settings(project_root=path.parent).with_overrides(extend_select=("WSC003",))
        rules = enabled_rules(settings)
        if not nothing_to_report([path], settings, {r.code for r in rules}):
            continue
        skipped += 1
        result = Linter(settings, rules, tree_budget=2_500_000).run([path])
        assert result.diagnostics == [], path
    assert skipped >= 20


@pytest.mark.parametrize("code", [
    "class Net(nn.Module):\n    def forward(self, x):\n        return x\n",
    "class Opt(Optimizer):\n    def step(self):\n        pass\n",
    "@torch.compile\ndef f(x):\n    return x\n",
    "f = torch.compile(g)\n",
    "import torch_xla.core.xla_model as xm\n",
    "criterion = nn.CrossEntropyLoss()\n",
])
def test_each_kind_of_root_or_file_rule_is_noticed(code):
    assert may_hold_traced_code(code, CODES)


def test_noqa_matters_only_when_wsc003_is_enabled():
    assert not may_hold_traced_code("x = 1  # noqa: WSC101\n", CODES)
    assert may_hold_traced_code("x = 1  # noqa: WSC101\n", CODES | {"WSC003"})


def test_configured_roots_and_syntax_errors_take_the_full_path(tmp_path):
    plain = tmp_path / "util.py"
    plain.write_text("def size(x):\n    return len(x)\n")
    assert nothing_to_report([plain], Settings(), CODES)
    assert not nothing_to_report([plain], Settings().with_overrides(trace_roots=("util.*",)), CODES)
    broken = tmp_path / "broken.py"
    broken.write_text("def size(x:\n")
    assert not nothing_to_report([plain, broken], Settings(), CODES)


def test_the_hook_on_an_untraced_file_imports_neither_libcst_nor_the_rules(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text("import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
                                       "    def forward(self, x):\n        return x.item()\n")
    (tmp_path / "util.py").write_text("def size(items):\n    return len(items)\n")
    cache = str(tmp_path / ".cache")
    script = ("import sys\nfrom cslint.cli.main import main\n"
              "code = main(['check', *sys.argv[1:], '--cache-dir', " + repr(cache) + "])\n"
              "print(code, 'libcst' in sys.modules, 'cslint.rules' in sys.modules)\n")

    def run(*args: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path)
        return done.stdout.split()[-3:]

    assert run(str(tmp_path)) == ["1", "True", "True"]  # the whole project, once
    (tmp_path / "util.py").write_text("def size(items):\n    return len(list(items))\n")
    # util.py changed; nothing it depends on, or that reaches it, can hold traced code
    assert run(str(tmp_path / "util.py"), "--project-context") == ["0", "False", "False"]
    (tmp_path / "model.py").write_text((tmp_path / "model.py").read_text().replace("x.item()", "x.sum().item()"))
    assert run(str(tmp_path / "model.py"), "--project-context") == ["1", "True", "True"]
