"""The results cache and the process pool: reused reports are the reports a fresh run would give."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cslint.engine import incremental
from cslint.cli.main import main

MODEL = """\
import torch
from torch import nn

from helpers import scale


class Net(nn.Module):
    def forward(self, x):
        return scale(x)
"""

HELPERS_BRANCHING = """\
import torch


def scale(x):
    if x.sum() > 0:
        return x * 2
    return x


def shift(x):
    if x.mean() > 0:
        return x + 1
    return x
"""

HELPERS_STATIC = HELPERS_BRANCHING.replace("    if x.sum() > 0:\n        return x * 2\n", "")


def _check(capsys, root: Path, *extra: str) -> tuple[list[dict], str]:
    code = main(["check", str(root), "--output-format", "json", "--cache-dir", str(root / ".cache"),
                 "--profile", *extra])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    findings = json.loads(out)
    return sorted(findings, key=lambda f: (f["filename"], f["line"], f["code"])), err


def _where(findings: list[dict]) -> list[tuple[str, int, str]]:
    return [(Path(f["filename"]).name, f["line"], f["code"]) for f in findings]


def _reused(err: str) -> int:
    return int(err.split("reports reused from the cache: ")[1].split()[0].rstrip(","))


def _touch(path: Path, text: str) -> None:
    path.write_text(text)
    stat = path.stat()  # an mtime well in the past, so the cache trusts mtime+size for this file
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10_000_000_000))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    _touch(tmp_path / "model.py", MODEL)
    _touch(tmp_path / "helpers.py", HELPERS_BRANCHING)
    _touch(tmp_path / "data.py", "import torch\n\n\ndef load(n):\n    return torch.randn(n)\n")
    return tmp_path


def test_second_run_reuses_every_report_and_gives_the_same_findings(tree, capsys):
    first, err = _check(capsys, tree)
    assert _where(first) == [("helpers.py", 5, "WSC101")]
    assert _reused(err) == 0
    second, err = _check(capsys, tree)
    assert second == first
    assert _reused(err) == 3


def test_editing_a_callee_in_another_file_updates_the_report(tree, capsys):
    _check(capsys, tree)
    _touch(tree / "helpers.py", HELPERS_STATIC)
    findings, err = _check(capsys, tree)
    assert findings == []
    assert _reused(err) == 1  # data.py; model.py imports helpers.py, so it was checked again
    _touch(tree / "helpers.py", HELPERS_BRANCHING)
    findings, _ = _check(capsys, tree)
    assert _where(findings) == [("helpers.py", 5, "WSC101")]


def test_a_caller_that_stops_calling_clears_the_callee_report(tree, capsys):
    _check(capsys, tree)
    _touch(tree / "model.py", MODEL.replace("return scale(x)", "return x * 2"))
    findings, _ = _check(capsys, tree)
    assert findings == []  # helpers.py did not change, but the root that reached it did


def test_a_new_caller_makes_an_unchanged_file_traced(tree, capsys):
    _check(capsys, tree)
    _touch(tree / "other.py", MODEL.replace("scale", "shift").replace("Net", "Other"))
    findings, _ = _check(capsys, tree)
    assert _where(findings) == [("helpers.py", 5, "WSC101"), ("helpers.py", 11, "WSC101")]
    assert [f["trace_chain"][0] for f in findings] == ["model.Net.forward", "other.Other.forward"]


def test_deleting_the_caller_clears_the_callee_report(tree, capsys):
    _check(capsys, tree)
    (tree / "model.py").unlink()
    findings, _ = _check(capsys, tree)
    assert findings == []


def test_changing_the_configuration_changes_the_results(tree, capsys):
    before, _ = _check(capsys, tree)
    ignored, err = _check(capsys, tree, "--ignore", "WSC101")
    assert before and ignored == []
    assert _reused(err) == 0  # another configuration, another cache
    (tree / "pyproject.toml").write_text("[project]\nname = 'demo'\n[tool.cslint]\ntrace-roots = ['data.*']\n")
    _touch(tree / "data.py", "import torch\n\n\ndef load(n):\n    t = torch.randn(n)\n    return t.item()\n")
    findings, _ = _check(capsys, tree)
    assert ("data.py", 6, "WSC201") in _where(findings)


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"format": 1, "files": {"x": 3}}', b"\x00\xff" * 50])
def test_a_damaged_cache_is_ignored_and_rebuilt(tree, capsys, damage):
    expected, _ = _check(capsys, tree)
    [cache_file] = (tree / ".cache").glob("*.json")
    cache_file.write_bytes(damage)
    findings, err = _check(capsys, tree)
    assert findings == expected
    assert _reused(err) == 0
    assert json.loads(cache_file.read_text())["files"]  # rewritten whole
    _, err = _check(capsys, tree)
    assert _reused(err) == 3


def test_an_edit_right_after_a_run_is_seen_even_with_the_same_size(tree, capsys):
    _check(capsys, tree)
    path = tree / "helpers.py"
    edited = HELPERS_BRANCHING.replace("x.sum() > 0", "x.dim() > 0")  # same size, now static
    assert len(edited) == len(HELPERS_BRANCHING)
    path.write_text(edited)  # a recent mtime is never trusted: the file is hashed again
    assert _check(capsys, tree)[0] == []


def test_no_cache_reads_and_writes_nothing(tree, capsys):
    code = main(["check", str(tree), "--no-cache", "--cache-dir", str(tree / ".cache"), "-q"])
    capsys.readouterr()
    assert code == 1
    assert not (tree / ".cache").exists()


def test_clean_removes_the_cache(tree, capsys):
    _check(capsys, tree)
    assert (tree / ".cache").is_dir()
    assert main(["clean", "--cache-dir", str(tree / ".cache")]) == 0
    assert "Removed 4 cache files" in capsys.readouterr().err  # the report, the import and tree memos, .gitignore
    assert not (tree / ".cache").exists()
    assert main(["clean", "--cache-dir", str(tree / ".cache")]) == 0


def test_fix_uses_the_parsed_file_even_when_its_report_is_cached(tree, capsys):
    _touch(tree / "helpers.py", HELPERS_BRANCHING.replace(
        "    if x.sum() > 0:\n        return x * 2\n    return x\n",
        "    if x.sum() > 0:\n        y = x * 2\n    else:\n        y = x\n    return y\n"))
    _check(capsys, tree)
    _check(capsys, tree, "--fix")
    assert "torch.where(x.sum() > 0, x * 2, x)" in (tree / "helpers.py").read_text()
    findings, _ = _check(capsys, tree)
    assert findings == []


def test_worker_processes_give_the_same_report(tree, capsys, monkeypatch):
    for i in range(4):
        _touch(tree / f"net{i}.py", MODEL.replace("helpers", f"helpers{i}").replace("Net", f"Net{i}"))
        _touch(tree / f"helpers{i}.py", HELPERS_BRANCHING)
    serial, _ = _check(capsys, tree, "--no-cache", "--jobs", "1")
    monkeypatch.setattr(incremental, "MIN_PARALLEL_BYTES", 0)
    parallel, err = _check(capsys, tree, "--no-cache", "--jobs", "2")
    assert "worker processes: 2" in err
    assert parallel == serial
    assert len(serial) == 5


def test_jobs_must_be_a_positive_number(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["check", ".", "--jobs", "0"])
    assert exit_info.value.code == 2
    assert "--jobs" in capsys.readouterr().err


def test_the_callers_finding_follows_what_the_callee_returns(tmp_path, capsys):
    """model.py branches on what `size()` returns: a tensor (finding in model.py) or a Python int."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    _touch(tmp_path / "model.py", "from torch import nn\n\nfrom measure import size\n\n\nclass Net(nn.Module):\n"
                                  "    def forward(self, x):\n        if size(x) > 4:\n            x = x * 2\n"
                                  "        return x\n")
    _touch(tmp_path / "measure.py", "def size(x):\n    return x.sum()\n")
    findings, _ = _check(capsys, tmp_path)
    assert _where(findings) == [("model.py", 8, "WSC101")]
    _touch(tmp_path / "measure.py", "def size(x):\n    return x.shape[0]\n")
    findings, err = _check(capsys, tmp_path)
    assert findings == []
    assert _reused(err) == 0  # measure.py changed; model.py imports it
    _touch(tmp_path / "measure.py", "def size(x):\n    return x.sum()\n")
    findings, _ = _check(capsys, tmp_path)
    assert _where(findings) == [("model.py", 8, "WSC101")]


def test_a_run_served_from_the_cache_does_not_import_the_parser(tree):
    """What keeps a pre-commit run on an unchanged file well under a second: no libcst, no rules."""
    import subprocess
    import sys

    script = ("import sys\nfrom cslint.cli.main import main\n"
              f"code = main(['check', {str(tree)!r}, '-q', '--cache-dir', {str(tree / '.cache')!r}])\n"
              "print(code, 'libcst' in sys.modules, 'cslint.rules' in sys.modules)\n")
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert first.stdout.split()[-3:] == ["1", "True", "True"]
    second = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert second.stdout.split()[-3:] == ["1", "False", "False"]
    assert "helpers.py:5:" in second.stdout


def test_every_caller_of_a_helper_is_a_dependency_not_only_the_first(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    caller = ("from torch import nn\n\nfrom helpers import scale\n\n\nclass {name}(nn.Module):\n"
              "    def forward(self, x):\n        return scale(x, {arg})\n")
    _touch(tmp_path / "model_a.py", caller.format(name="A", arg="2"))
    _touch(tmp_path / "model_b.py", caller.format(name="B", arg="2"))
    _touch(tmp_path / "helpers.py", "def scale(x, factor):\n    if factor > 1:\n        return x * factor\n"
                                    "    return x\n")
    _touch(tmp_path / "model_c.py", "from model_a import A\n\n\ndef build():\n    return A()\n")
    assert _check(capsys, tmp_path)[0] == []
    # model_c.py changes too, so model_a.py (which it imports) is analysed again alongside model_b.py,
    # and A.forward reaches the helper first: B's call must still count
    _touch(tmp_path / "model_c.py", "from model_a import A\n\n\ndef build():\n    return A().eval()\n")
    _touch(tmp_path / "model_b.py", caller.format(name="B", arg="x.max()"))  # now a tensor
    findings, _ = _check(capsys, tmp_path)
    assert ("helpers.py", 2, "WSC101") in _where(findings)
    assert findings == _check(capsys, tmp_path, "--no-cache")[0]


def test_a_helper_called_by_two_files_ties_their_reports(tmp_path, capsys):
    """`ident`'s parameter is the join of what both models pass, so model_a.py's report depends on
    model_b.py although neither imports the other."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    # `**options`: not a small helper answered per call (call_returns.py), so its callers' kinds are joined
    _touch(tmp_path / "utils.py", "def ident(v, **options):\n    return v\n")
    _touch(tmp_path / "model_a.py", "from torch import nn\n\nfrom utils import ident\n\n\nclass A(nn.Module):\n"
                                    "    def forward(self, x):\n        if ident(3) > 0:\n            x = x * 2\n"
                                    "        return x\n")
    b = "from torch import nn\n\nfrom utils import ident\n\n\nclass B(nn.Module):\n    def forward(self, x):\n" \
        "        return x * ident({})\n"
    _touch(tmp_path / "model_b.py", b.format("x"))
    first, _ = _check(capsys, tmp_path)
    assert _where(first) == [("model_a.py", 8, "WSC101")]
    _touch(tmp_path / "model_b.py", b.format("5"))
    assert _check(capsys, tmp_path)[0] == [] == _check(capsys, tmp_path, "--no-cache")[0]


def test_a_run_with_nothing_new_does_not_rewrite_the_cache_but_records_new_file_times(tree, capsys):
    _check(capsys, tree)
    [cache_file] = (tree / ".cache").glob("*.json")
    written = cache_file.stat().st_mtime_ns
    _check(capsys, tree)
    assert cache_file.stat().st_mtime_ns == written  # nothing to record
    path = tree / "data.py"
    _touch(path, path.read_text())  # same content, new (old-enough) mtime: like a fresh checkout
    _, err = _check(capsys, tree)
    assert _reused(err) == 3
    entry = json.loads(cache_file.read_text())["files"][str(path)]
    assert entry["mtime_ns"] == path.stat().st_mtime_ns  # the next run trusts it without reading it


def _hook(capsys, root: Path, target: str) -> tuple[list[dict], str]:
    """What the pre-commit hook runs: one file reported, the rest of the project as context."""
    return _check_paths(capsys, root, [str(root / target), "--project-context"])


def _check_paths(capsys, root: Path, args: list[str]) -> tuple[list[dict], str]:
    code = main(["check", *args, "--output-format", "json", "--cache-dir", str(root / ".cache"), "--profile"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return json.loads(out), err


def _analysed(err: str) -> int:
    return int(err.split("files analysed: ")[1].split()[0].rstrip(","))


def test_hook_on_an_edited_callee_uses_its_unchanged_callers(tree, capsys):
    _check(capsys, tree)
    _touch(tree / "helpers.py", HELPERS_STATIC)
    findings, _ = _hook(capsys, tree, "helpers.py")
    assert findings == []
    _touch(tree / "helpers.py", HELPERS_BRANCHING)
    findings, _ = _hook(capsys, tree, "helpers.py")
    assert _where(findings) == [("helpers.py", 5, "WSC101")]
    assert findings[0]["trace_chain"] == ["model.Net.forward", "helpers.scale"]


def test_hook_sees_a_changed_context_file_that_now_calls_the_target(tree, capsys):
    _check(capsys, tree)
    _touch(tree / "model.py", MODEL.replace("import scale", "import scale, shift").replace(
        "return scale(x)", "return shift(scale(x))"))
    findings, _ = _hook(capsys, tree, "helpers.py")
    assert _where(findings) == [("helpers.py", 5, "WSC101"), ("helpers.py", 11, "WSC101")]


def test_hook_re_checks_context_files_stale_through_their_imports(tree, capsys):
    _touch(tree / "util.py", "from helpers import shift\n\n\ndef describe():\n    return shift.__name__\n")
    _check(capsys, tree)
    _touch(tree / "helpers.py", HELPERS_STATIC)
    findings, err = _hook(capsys, tree, "helpers.py")
    assert findings == []
    # helpers.py, model.py (its forward calls into it) and util.py (it imports it): no stale entry is left
    assert _analysed(err) == 3
    findings, err = _check(capsys, tree)
    assert _reused(err) == 4
    assert findings == _check(capsys, tree, "--no-cache")[0] == []


def test_hook_sees_an_unchanged_context_file_call_a_helper_the_edit_added(tree, capsys):
    # trainer.py's forward calls helpers.clip, which does not exist yet: nothing is traced there
    _touch(tree / "trainer.py", MODEL.replace("import scale", "import clip").replace("return scale(x)",
                                                                                    "return clip(x)"))
    assert _where(_check(capsys, tree)[0]) == [("helpers.py", 5, "WSC101")]
    _touch(tree / "helpers.py", HELPERS_STATIC + "\n\ndef clip(x):\n    if x.max() > 1:\n        return x - 1\n"
                                                 "    return x\n")
    findings, _ = _hook(capsys, tree, "helpers.py")
    assert _where(findings) == [("helpers.py", 15, "WSC101")]


def test_a_report_cached_by_another_build_of_cslint_is_not_served(tree, capsys, monkeypatch):
    """Every checkout and git install of cslint calls itself the same version: an upgrade whose rules find
    what the old build missed must not be served the old build's clean reports."""
    from cslint.engine import selection
    from cslint.store import cache as cache_module

    with monkeypatch.context() as old_build:
        old_build.setattr(cache_module, "code_digest", lambda: "an-older-build", raising=False)
        old_build.setattr(selection, "enabled_rules", lambda settings: [])  # it found nothing
        clean, _ = _check(capsys, tree)
    assert clean == []
    findings, err = _check(capsys, tree)
    assert _where(findings) == [("helpers.py", 5, "WSC101")]
    assert _reused(err) == 0


def test_report_caches_of_other_builds_and_configurations_are_pruned(tree, capsys):
    """Each cslint build (its code digest) and each configuration writes its own report cache: without
    pruning, a directory used across upgrades kept every one of them forever."""
    from cslint.store.cache import REPORTS_KEPT

    _check(capsys, tree)
    cache = tree / ".cache"
    [current] = cache.glob("v*-*.json")
    old = []
    for age in range(REPORTS_KEPT + 4):  # older builds' reports, the oldest last
        stale = cache / f"v0.0.{age}-{age:024x}.json"
        stale.write_text("{}")
        os.utime(stale, ns=(0, 1_000_000_000 * (10_000 - age)))
        old.append(stale.name)
    library = cache / "v0.0.1-lib-torch-2.13.0.json"  # summaries of an installed library: not a report
    library.write_text("{}")
    os.utime(library, ns=(0, 0))
    hex_version = cache / "v0.0.1-lib-einops-1.json"  # a library version of hex digits alone
    hex_version.write_text("{}")
    os.utime(hex_version, ns=(0, 0))
    _touch(tree / "helpers.py", HELPERS_STATIC)  # a changed report: the cache is written again
    _check(capsys, tree)
    left = sorted(p.name for p in cache.glob("v*.json") if "-lib-" not in p.name)
    assert left == sorted([current.name, *old[:REPORTS_KEPT - 1]])
    assert library.exists() and hex_version.exists()
    _, err = _check(capsys, tree)
    assert _reused(err) == 3  # the current report cache was kept and is read
