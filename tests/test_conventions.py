"""ruff's conventions in `cslint check` and `cslint rule` (#40 item 5): --watch, --fix-only, --show-fixes,
--exit-non-zero-on-fix, fixable/unfixable/extend-fixable, colour, -v, the CI output formats, `rule` by name
and as JSON, the install hints, the `runtime` extra's bound, and the Neovim 0.7 snippet of docs/editors.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cslint.cli.main import main
from tests.signals import as_on_a_terminal

ROOT = Path(__file__).resolve().parent.parent

MODEL = """\
import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x, threshold):
        if x.mean() > threshold:
            x = x * 2
        else:
            x = x
        scale = 0.5 if x.max() > 1 else 1.0
        return x * scale
"""
FIXED_IF = "x = torch.where(x.mean() > threshold, x * 2, x)"
CLEAN = "import torch\n\n\ndef scale(x):\n    return torch.relu(x)\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "NO_COLOR", "CLICOLOR", "CI_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---- --fix-only, --show-fixes, --exit-non-zero-on-fix ------------------------------------------------

def test_fix_only_fixes_and_reports_nothing_that_remains(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--fix-only", "model.py")
    assert code == 0  # WSC103 remains (its fix is unsafe): not reported, exit 0, as ruff's --fix-only
    assert out == "Fixed 1 finding.\n"
    assert FIXED_IF in (project / "model.py").read_text()
    code, out, _ = check(capsys, "--fix-only", "model.py")  # nothing left to fix: nothing printed
    assert (code, out) == (0, "")


def test_exit_non_zero_on_fix(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(capsys, "--fix-only", "--exit-non-zero-on-fix", "model.py")[0] == 1
    assert check(capsys, "--fix-only", "--exit-non-zero-on-fix", "model.py")[0] == 0  # nothing fixed now
    (project / "clean.py").write_text(CLEAN)
    assert check(capsys, "--fix", "--exit-non-zero-on-fix", "clean.py")[0] == 0
    code, _, err = check(capsys, "--exit-non-zero-on-fix", "clean.py")
    assert code == 2 and "--exit-non-zero-on-fix needs --fix" in err


def test_fix_only_still_reports_a_file_it_could_not_check(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "broken.py").write_text("def f(:\n")
    code, out, _ = check(capsys, "--fix-only", "model.py", "broken.py")
    assert code == 1 and "broken.py:1:" in out and "WSC001" in out
    assert "WSC103" not in out and FIXED_IF in (project / "model.py").read_text()


def test_fix_only_machine_formats_print_nothing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--fix-only", "--output-format", "json", "model.py")
    assert (code, out) == (0, "")


@pytest.mark.parametrize("other", ["--diff", "--add-noqa", "--statistics", "--show-files"])
def test_fix_only_conflicts(project: Path, capsys: pytest.CaptureFixture[str], other: str) -> None:
    code, _, err = check(capsys, "--fix-only", other, "model.py")
    assert code == 2 and f"--fix-only cannot be combined with {other}" in err


def test_show_fixes_lists_fixes_per_file_and_rule(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "other.py").write_text(MODEL.replace("Gate", "Other"))
    code, out, _ = check(capsys, "--fix", "--show-fixes", "--output-format", "concise", "model.py", "other.py")
    assert code == 1  # the unsafe WSC103s remain
    assert "\nFixed 2 findings:\n- model.py:\n    1 × WSC101 (tensor-if)\n- other.py:\n    1 × WSC101 (tensor-if)\n\n" \
        in out
    assert out.index("WSC103") < out.index("Fixed 2 findings:")  # after the findings, as ruff


def test_show_fixes_from_the_configuration_and_with_fix_only(project: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.cslint]\nshow-fixes = true\n")
    code, out, _ = check(capsys, "--fix-only", "--unsafe-fixes", "model.py")
    assert code == 0
    assert out == "\nFixed 2 findings:\n- model.py:\n    1 × WSC101 (tensor-if)\n    1 × WSC103 (tensor-ternary)\n\n" \
                  "Fixed 2 findings.\n"


# ---- fixable / unfixable / extend-fixable ------------------------------------------------------------

def test_unfixable_rule_is_reported_without_a_fix_and_not_fixed(project: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--unfixable", "WSC101", "--output-format", "concise", "model.py")
    assert code == 1 and "WSC101 `if" in out and "[*]" not in out
    code, out, _ = check(capsys, "--unfixable", "WSC1", "--fix", "model.py")
    assert code == 1 and (project / "model.py").read_text() == MODEL
    data = json.loads(check(capsys, "--unfixable", "WSC101", "--output-format", "json", "model.py")[1])
    assert [d["fix"] for d in data if d["code"] == "WSC101"] == [None]


def test_fixable_from_the_configuration_with_extend_fixable(project: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    config = project / "pyproject.toml"
    config.write_text("[project]\nname = 'demo'\n\n[tool.cslint]\nfixable = [\"WSC2\"]\n")
    check(capsys, "--fix", "--unsafe-fixes", "model.py")
    assert (project / "model.py").read_text() == MODEL  # neither WSC101 nor WSC103 is fixable
    code, out, _ = check(capsys, "--fix", "--extend-fixable", "WSC101", "--show-fixes", "model.py")
    assert FIXED_IF in (project / "model.py").read_text() and "1 × WSC101" in out
    # the most specific selector wins: WSC10 unfixable, WSC101 fixable
    (project / "model.py").write_text(MODEL)
    config.write_text("[project]\nname = 'demo'\n\n[tool.cslint]\nunfixable = [\"WSC10\"]\n"
                      "extend-fixable = [\"WSC101\"]\n")
    out = check(capsys, "--output-format", "concise", "--unsafe-fixes", "model.py")[1]
    assert "WSC101 [*]" in out and "WSC103 [*]" not in out


def test_unfixable_changes_the_cached_report(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cached report must not show a fix the settings now forbid: the cache key includes fixability."""
    assert main(["check", "--output-format", "concise", "model.py"]) == 1
    assert "WSC101 [*]" in capsys.readouterr().out
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.cslint]\nunfixable = [\"WSC101\"]\n")
    assert main(["check", "--output-format", "concise", "model.py"]) == 1
    assert "[*]" not in capsys.readouterr().out


def test_unknown_fixable_code_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = check(capsys, "--unfixable", "WSC99", "model.py")
    assert code == 2 and "WSC99" in err
    (project / "pyproject.toml").write_text("[tool.cslint]\nfixable = [\"XYZ\"]\n")
    code, _, err = check(capsys, "model.py")
    assert code == 2 and "`fixable` names no rule: XYZ" in err


# ---- colour, -v ---------------------------------------------------------------------------------------

def test_colour_follows_ruffs_environment_variables() -> None:
    from cslint.output.style import colour_wanted

    class Terminal:
        def isatty(self) -> bool:
            return True

    pipe = object()
    assert colour_wanted(Terminal(), {}) and not colour_wanted(pipe, {})
    assert not colour_wanted(Terminal(), {"NO_COLOR": "1"}) and not colour_wanted(Terminal(), {"CLICOLOR": "0"})
    assert colour_wanted(pipe, {"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert not colour_wanted(pipe, {"FORCE_COLOR": ""})
    assert colour_wanted(pipe, {"CLICOLOR_FORCE": "1"}) and not colour_wanted(pipe, {"CLICOLOR_FORCE": "0"})


def test_colour_in_the_report(project: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    plain = check(capsys, "--output-format", "concise", "model.py")[1]
    assert "\x1b[" not in plain
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = check(capsys, "--output-format", "concise", "model.py")[1]
    assert "\x1b[1mmodel.py\x1b[0m" in coloured and "\x1b[31;1mWSC101\x1b[0m \x1b[36m[*]\x1b[0m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain
    assert "\x1b[" not in check(capsys, "--output-format", "json", "model.py")[1]
    check(capsys, "--output-format", "concise", "-o", "report.txt", "model.py")
    assert "\x1b[" not in (project / "report.txt").read_text()  # a file gets no colour


def test_colour_never_lets_the_file_emit_escapes(project: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    (project / "model.py").write_text(MODEL.replace("> threshold:", "> len('\x1b[2J'):"))
    out = check(capsys, "model.py")[1]  # the message and the source excerpt both quote the condition
    assert "WSC101" in out and "\x1b[2J" not in out and out.count("\\x1b[2J") == 2


def test_verbose_logs_settings_files_and_time(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = check(capsys, "-v", "model.py")
    assert code == 1
    lines = err.splitlines()
    pattern = re.compile(r"^\[\d\d:\d\d:\d\d\.\d{6}\]\[cslint\]\[DEBUG\] ")
    assert lines and all(pattern.match(line) for line in lines if "target:" not in line), err
    assert f"Using configuration file at: {project / 'pyproject.toml'}" in err
    assert "Checking: model.py" in err and "Cache: off (--no-cache)" in err
    assert re.search(r"Checked 1 files in \d+\.\d{3}s \(2 findings, 0 fixed\)", err)
    assert "[DEBUG]" not in check(capsys, "model.py")[2]


# ---- output formats -----------------------------------------------------------------------------------

def test_junit_parses_as_ruffs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "other.py").write_text(MODEL)
    out = check(capsys, "--output-format", "junit", "model.py", "other.py")[1]
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    suites = ET.fromstring(out)
    assert suites.tag == "testsuites" and suites.attrib == {"name": "cslint", "tests": "4", "failures": "4",
                                                            "errors": "0"}
    assert [s.get("name") for s in suites] == ["model.py", "other.py"]
    suite = suites[0]
    assert suite.get("package") == "org.cslint" and suite.get("tests") == suite.get("failures") == "2"
    case = suite[0]
    assert case.attrib == {"name": "org.cslint.WSC101", "classname": "model", "line": "7", "column": "12"}
    failure = case.find("failure")
    assert failure is not None and failure.get("message", "").startswith("`if x.mean() > threshold`")
    assert failure.text == f"line 7, col 12, {failure.get('message')}"


def test_junit_without_findings(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "clean.py").write_text(CLEAN)
    code, out, _ = check(capsys, "--output-format", "junit", "clean.py")
    suites = ET.fromstring(out)
    assert code == 0 and suites.get("failures") == "0"
    assert suites[0][0].attrib == {"name": "No errors found", "classname": "cslint"}


def test_gitlab_code_quality(project: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "model.py").write_text(MODEL + MODEL.replace("Gate", "Gate2"))
    monkeypatch.setenv("CI_PROJECT_DIR", str(project))
    issues = json.loads(check(capsys, "--output-format", "gitlab", str(project / "sub" / "model.py"))[1])
    assert len(issues) == 4
    for issue in issues:
        assert set(issue) == {"check_name", "description", "severity", "fingerprint", "location"}
        assert issue["severity"] == "major" and issue["location"]["path"] == "sub/model.py"
        assert set(issue["location"]["lines"]) == {"begin", "end"}
    assert [i["check_name"] for i in issues] == ["WSC101", "WSC103", "WSC101", "WSC103"]
    assert len({i["fingerprint"] for i in issues}) == 4  # the same rule twice in a file: still unique
    # the fingerprint does not depend on the line: lines inserted above keep it
    (project / "sub" / "model.py").write_text("\n\n\n" + MODEL + MODEL.replace("Gate", "Gate2"))
    moved = json.loads(check(capsys, "--output-format", "gitlab", str(project / "sub" / "model.py"))[1])
    assert [i["fingerprint"] for i in moved] == [i["fingerprint"] for i in issues]
    assert moved[0]["location"]["lines"]["begin"] == issues[0]["location"]["lines"]["begin"] + 3


def test_rdjson(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(check(capsys, "--output-format", "rdjson", "model.py")[1])
    assert report["source"] == {"name": "cslint", "url": "https://github.com/cslint/cslint"}
    assert report["severity"] == "warning"
    first = report["diagnostics"][0]
    assert first["code"] == {"value": "WSC101",
                             "url": "https://github.com/cslint/cslint/blob/main/docs/rules/WSC101.md"}
    assert first["location"] == {"path": "model.py", "range": {"start": {"line": 7, "column": 12},
                                                               "end": {"line": 7, "column": 32}}}
    assert first["message"].startswith("`if x.mean() > threshold`")


AZURE = re.compile(r"^##vso\[task\.logissue type=error;sourcepath=(?P<path>[^;\]\r\n]*);linenumber=(?P<line>\d+);"
                   r"columnnumber=(?P<col>\d+);code=(?P<code>WSC\d{3});\](?P<msg>[^\r\n]*)$")


def test_azure_and_pylint_lines(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    odd = project / "a;b]c.py"
    odd.write_text(MODEL)
    lines = check(capsys, "--output-format", "azure", "model.py", odd.name)[1].splitlines()
    matches = [AZURE.match(line) for line in lines]
    assert all(matches), lines
    assert [(m["path"], m["line"], m["col"], m["code"]) for m in matches][:2] == [
        ("a%3Bb%5Dc.py", "7", "12", "WSC101"), ("a%3Bb%5Dc.py", "11", "24", "WSC103")]
    lines = check(capsys, "--output-format", "pylint", "model.py")[1].splitlines()
    assert lines[0].startswith("model.py:7: [WSC101] `if x.mean() > threshold`")
    assert all(re.match(r"^model\.py:\d+: \[WSC\d{3}\] \S", line) for line in lines)


def test_new_formats_in_the_configuration(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text("[tool.cslint]\noutput-format = \"pylint\"\n")
    assert check(capsys, "model.py")[1].startswith("model.py:7: [WSC101]")


# ---- cslint rule ----------------------------------------------------------------------------------------

def test_rule_by_name_and_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "tensor-if"]) == 0
    by_name = capsys.readouterr().out
    assert main(["rule", "WSC101"]) == 0
    assert capsys.readouterr().out == by_name and by_name.startswith("# WSC101 tensor-if")
    assert main(["rule", "tensr-if"]) == 2
    assert "did you mean `tensor-if`" in capsys.readouterr().err
    assert main(["rule", "WSC101", "--output-format", "json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert {"name", "code", "linter", "summary", "fix", "fix_availability", "explanation", "preview"} <= set(one)
    assert (one["name"], one["code"], one["linter"]) == ("tensor-if", "WSC101", "cslint")
    assert one["fix_availability"] == "Sometimes"
    assert one["fix"] == "Fix is sometimes available." and one["explanation"].startswith("# WSC101 tensor-if")
    assert main(["rule", "--all", "--output-format", "json"]) == 0
    every = json.loads(capsys.readouterr().out)
    from cslint.rules import all_rules

    assert [r["code"] for r in every] == [r.code for r in all_rules()]
    assert any(r["fix_availability"] == "None" and r["fix"] == "Fix is not available." for r in every)


def test_rule_page_is_wrapped(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "WSC101"]) == 0
    page = capsys.readouterr().out
    assert max(len(line) for line in page.splitlines()) <= 88
    from cslint.output.docs import render_rule
    from cslint.rules import rule_by_code

    rule = rule_by_code("WSC101")
    assert rule is not None
    assert " ".join(page.split()) == " ".join(render_rule(rule).split())  # only the line breaks changed


# ---- install hints, the runtime extra, the pre-commit hook's file types ------------------------------------

def test_no_hint_names_a_package_index_install() -> None:
    """No message or page tells users to install cslint from a package index (none serves it), except
    where it says that this fails."""
    wrong = re.compile(r"pip install (cslint\b(?!\[?\S* @)|'cslint\[\w+\]')")
    shown = [f"{path.name}: {line}" for path in [*ROOT.glob("cslint/**/*.py"), *ROOT.glob("docs/*.md")]
             for line in path.read_text().splitlines() if wrong.search(line) and "fail" not in line]
    assert shown == []


def test_runtime_extra_is_bounded_and_the_installed_cpu_torch_satisfies_it() -> None:
    from packaging.requirements import Requirement
    from packaging.version import Version

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["runtime"]
    torch = next(Requirement(r) for r in extra if Requirement(r).name == "torch")
    assert any(spec.operator in ("<", "<=", "==") for spec in torch.specifier)  # not unbounded
    pytest.importorskip("torch")
    import torch as installed

    assert torch.specifier.contains(Version(installed.__version__), prereleases=True)  # e.g. 2.13.0+cpu


def test_hooks_take_notebooks_as_ruffs_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pre-commit's own file filter, with each hook's types: a staged notebook is passed to the hook
    (`types: [python]` passed none). tests/test_precommit.py runs the hook on one through pre-commit."""
    import yaml  # pre-commit's dependency
    from pre_commit.commands.run import Classifier

    monkeypatch.chdir(tmp_path)
    for name in ("analysis.ipynb", "model.py", "stubs.pyi", "notes.md"):
        (tmp_path / name).write_text("{}\n")
    classifier = Classifier.from_config(["analysis.ipynb", "model.py", "stubs.pyi", "notes.md"], "", "^$")
    for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()):
        passed = classifier.by_types(classifier.filenames, hook.get("types", []), hook.get("types_or", []),
                                     hook.get("exclude_types", []))
        assert sorted(passed) == ["analysis.ipynb", "model.py", "stubs.pyi"], hook["id"]
        assert set(hook["types_or"]) == {"python", "pyi", "jupyter"}  # as ruff's hooks


# ---- --watch --------------------------------------------------------------------------------------------

def wait_for(path: Path, text: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = path.read_text()
        if text in content:
            return content
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not in {path.read_text()!r}")


def test_watch_reruns_on_change_and_ctrl_c_exits_130(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text(CLEAN)
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    env = {**os.environ, "CSLINT_NO_CACHE": "1"}
    with out.open("w") as stdout, err.open("w") as stderr:
        run = subprocess.Popen([sys.executable, "-m", "cslint", "check", "--watch", "--output-format", "json", "."],
                               cwd=tmp_path, stdout=stdout, stderr=stderr, env=env, preexec_fn=as_on_a_terminal)
        try:
            wait_for(err, "Watching for file changes.")
            first = out.read_text()
            assert first.startswith("Starting linter in watch mode...\n") and "All checks passed (1 files)." in first
            assert "`--output-format json` is not used in watch mode" in err.read_text()
            (tmp_path / "model.py").write_text(MODEL)
            second = wait_for(out, "Found 2 findings")
            assert "File change detected...\n" in second and "model.py:7:12: WSC101" in second
            wait_for(err, "Watching for file changes.\n", 30)
            (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n[tool.cslint]\nignore = [\"WSC103\"]\n")
            third = wait_for(out, "Found 1 finding ")
            assert third.count("File change detected...") == 2  # the configuration is watched and read again
        finally:
            run.send_signal(signal.SIGINT)
            code = run.wait(30)
    assert code == 130
    assert "cslint: interrupted" in err.read_text() and "Traceback" not in err.read_text()


def test_watch_conflicts(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for other in ("--diff", "--add-noqa", "--show-files"):
        code, _, err = check(capsys, "--watch", other, "model.py")
        assert code == 2 and f"--watch cannot be combined with {other}" in err
    code, _, err = check(capsys, "--watch", "-")
    assert code == 2 and "--watch cannot read standard input" in err


# ---- the Neovim 0.7 snippet of docs/editors.md ----------------------------------------------------------

PROBE = """
local waited = 0
local timer = vim.loop.new_timer()
timer:start(200, 200, vim.schedule_wrap(function()
  waited = waited + 200
  local found = vim.diagnostic.get(0)
  if #found > 0 or waited > 60000 then
    timer:stop()
    local lines = {}
    for _, d in ipairs(found) do
      table.insert(lines, string.format("%s|%d|%s", d.source or "", d.lnum + 1, d.message))
    end
    vim.fn.writefile(lines, vim.env.PROBE_OUT)
    vim.cmd("qa!")
  end
end))
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="nvim is not installed")
def test_neovim_07_snippet_gets_diagnostics(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "editors.md").read_text()
    section = doc[doc.index("## Neovim 0.7 to 0.9"):]
    snippet = section[section.index("```lua\n") + len("```lua\n"):section.index("```\n", section.index("```lua"))]
    code = "\n".join(line for line in snippet.splitlines() if not line.lstrip().startswith("--"))
    assert "vim.lsp.start_client" in code and "vim.fs" not in code and "vim.lsp.start(" not in code
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "model.py").write_text(MODEL)
    init = tmp_path / "init.lua"
    init.write_text(snippet + PROBE)
    probe = tmp_path / "probe.txt"
    bin_dir = str(Path(sys.executable).parent)  # the `cslint` of this environment
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "PROBE_OUT": str(probe)}
    subprocess.run(["nvim", "--headless", "--clean", "-u", str(init), "model.py"], cwd=project, env=env,
                   timeout=90, capture_output=True)
    lines = probe.read_text().splitlines()
    assert any(line.startswith("cslint|7|`if x.mean() > threshold`") for line in lines), lines


def test_the_editor_offers_no_fix_of_an_unfixable_rule(project: Path) -> None:
    from cslint.lsp.workspace import Workspace

    def fixes() -> dict[str, bool]:
        state = Workspace()
        state.open(project / "model.py", MODEL)
        (_, found), = state.analyse(project / "model.py").values()
        return {d.code: d.fix is not None for d in found}

    assert fixes()["WSC101"]
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.cslint]\nunfixable = [\"WSC101\"]\n")
    assert fixes() == {"WSC101": False, "WSC103": True}


def test_watch_polls_a_large_tree_less_often(monkeypatch: pytest.MonkeyPatch) -> None:
    """A poll that takes long (a large tree) is followed by a pause ten times as long: the watch idles at a
    tenth of a core at most."""
    import argparse

    from cslint.cli import watch as module

    snapshots = iter([{"a": (1, 1, 1)}, {"a": (1, 1, 1)}, {"a": (2, 1, 1)}])

    def slow_poll(args: argparse.Namespace) -> dict[str, tuple[int, int, int]]:
        time.sleep(0.08)
        return next(snapshots)

    pauses: list[float] = []
    monkeypatch.setattr(module, "watched_files", slow_poll)
    changed = module.wait_for_change(argparse.Namespace(), {"a": (1, 1, 1)}, pauses.append)
    assert changed == {"a": (2, 1, 1)}
    assert pauses[0] == module.POLL_SECONDS and pauses[1] >= 0.8 and pauses[2] >= 0.8


def test_a_reader_that_goes_away_ends_the_run_quietly(tmp_path: Path) -> None:
    """`cslint rule WSC101 | head -3`: the pipe closes while cslint writes. That is no error of cslint's: no
    'internal error' line, and 141 (128 + SIGPIPE) as for a program the signal ends."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "cslint", "rule", "WSC101"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120, cwd=tmp_path)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""
