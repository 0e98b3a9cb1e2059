"""The `cslint` command: exit codes, output, fixes on disk, configuration and bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cslint.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

BAD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.max() > 0:
            y = x * 2
        else:
            y = x
        return y
"""

GOOD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return torch.where(x.max() > 0, x * 2, x)
"""


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    return tmp_path


def test_text_output_has_location_code_source_and_caret(project, capsys):
    code, out, _ = _run(capsys, "check", str(project / "bad.py"))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{project / 'bad.py'}:7:12: WSC101 [*] `if x.max() > 0` branches on a tensor")
    assert lines[2] == "7 |         if x.max() > 0:"
    assert lines[3] == "  |            ^^^^^^^^^^^"


def test_clean_file_exits_zero(project, capsys):
    code, out, _ = _run(capsys, "check", str(project / "good.py"))
    assert code == 0
    assert "All checks passed" in out


def test_exit_zero_and_quiet(project, capsys):
    code, out, _ = _run(capsys, "check", "--exit-zero", "--quiet", "--output-format", "concise", str(project))
    assert code == 0
    assert out.count("WSC101") == 1 and "Found" not in out


def test_json_output_fields(project, capsys):
    code, out, _ = _run(capsys, "check", "--output-format", "json", str(project))
    assert code == 1
    [item] = json.loads(out)
    assert item["filename"].endswith("bad.py")
    assert (item["line"], item["column"], item["end_line"], item["end_column"]) == (7, 12, 7, 23)
    assert item["code"] == "WSC101"
    assert item["fix"] == {"applicability": "safe", "message": item["fix"]["message"]}
    assert item["trace_chain"] == ["bad.Net.forward"]


def test_fix_rewrites_and_second_run_is_clean(project, capsys):
    code, out, _ = _run(capsys, "check", "--fix", str(project))
    assert code == 0, out
    assert "torch.where(x.max() > 0, x * 2, x)" in (project / "bad.py").read_text()
    assert _run(capsys, "check", str(project))[0] == 0


def test_diff_prints_and_writes_nothing(project, capsys):
    code, out, _ = _run(capsys, "check", "--diff", str(project))
    assert code == 1
    assert "-        if x.max() > 0:" in out and "+        y = torch.where(x.max() > 0, x * 2, x)" in out
    assert (project / "bad.py").read_text() == BAD


def test_unsafe_fixes_need_the_flag(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(BAD.replace("y = x * 2", "y = x / x.sum()"))
    assert _run(capsys, "check", "--fix", str(path))[0] == 1
    assert "if x.max() > 0" in path.read_text()
    assert _run(capsys, "check", "--fix", "--unsafe-fixes", str(path))[0] == 0
    assert "torch.where(x.max() > 0, x / x.sum(), x)" in path.read_text()


def test_select_ignore_and_statistics(project, capsys):
    assert _run(capsys, "check", "--select", "WSC102", str(project))[0] == 0
    assert _run(capsys, "check", "--ignore", "WSC1", str(project))[0] == 0
    code, out, _ = _run(capsys, "check", "--statistics", str(project))
    assert code == 1 and out.splitlines()[0].split() == ["1", "WSC101", "[*]", "tensor-if"]


def test_show_chain(project, capsys):
    _, out, _ = _run(capsys, "check", "--show-chain", str(project))
    assert "= traced: bad.Net.forward (forward of nn.Module subclass Net)" in out


def test_noqa_comments(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(BAD.replace("if x.max() > 0:", "if x.max() > 0:  # noqa: WSC101"))
    assert _run(capsys, "check", str(path))[0] == 0
    path.write_text(BAD.replace("if x.max() > 0:", "if x.max() > 0:  # noqa: WSC102"))
    assert _run(capsys, "check", str(path))[0] == 1
    path.write_text(BAD.replace("if x.max() > 0:", "if x.max() > 0:  # noqa"))
    assert _run(capsys, "check", "--fix", str(path))[0] == 0
    assert "# noqa" in path.read_text() and "torch.where" not in path.read_text()


def test_pyproject_settings(project, capsys):
    (project / "pyproject.toml").write_text('[tool.cslint]\nignore = ["WSC101"]\n')
    assert _run(capsys, "check", str(project))[0] == 0
    (project / "pyproject.toml").write_text('[tool.cslint]\nper-file-ignores = { "bad.py" = ["WSC1"] }\n')
    assert _run(capsys, "check", str(project))[0] == 0
    (project / "pyproject.toml").write_text('[tool.cslint]\nexclude = ["bad.py"]\n')
    assert _run(capsys, "check", str(project))[0] == 0
    (project / "pyproject.toml").write_text('[tool.cslint]\nextend-exclude = ["good.py"]\n')
    assert _run(capsys, "check", str(project))[0] == 1


def test_trace_roots_option(tmp_path, capsys):
    path = tmp_path / "loss.py"
    path.write_text("def loss(x):\n    return x if x.sum() > 0 else -x\n")
    assert _run(capsys, "check", str(path))[0] == 0
    assert _run(capsys, "check", "--trace-roots", "loss.*", str(path))[0] == 1
    (tmp_path / "pyproject.toml").write_text('[tool.cslint]\ntrace-roots = ["loss.loss"]\n')
    assert _run(capsys, "check", str(path))[0] == 1


def test_unknown_config_key_warns(project, capsys):
    (project / "pyproject.toml").write_text('[tool.cslint]\nslect = ["WSC1"]\n')
    code, _, err = _run(capsys, "check", str(project))
    assert code == 1
    assert "unknown [tool.cslint] key `slect` (ignored); did you mean `select`?" in err
    (project / "pyproject.toml").write_text('[tool.cslint]\nfrobnicate = 1\n')
    _, _, err = _run(capsys, "check", str(project))
    assert err.splitlines() == [f"cslint: warning: {project / 'pyproject.toml'}: unknown [tool.cslint] key "
                                "`frobnicate` (ignored)"]


def test_output_format_and_show_chain_from_the_configuration(project, capsys):
    """`output-format` and `show-chain` in [tool.cslint] are honoured (as ruff honours `output-format`);
    the command line overrides the format."""
    (project / "pyproject.toml").write_text('[tool.cslint]\noutput-format = "concise"\nshow-chain = true\n')
    code, out, err = _run(capsys, "check", str(project))
    assert code == 1 and not err
    assert out.startswith(f"{project / 'bad.py'}:7:12: WSC101 [*] ") and "^" not in out  # no source excerpt
    (project / "pyproject.toml").write_text('[tool.cslint]\noutput-format = "json"\n')
    code, out, _ = _run(capsys, "check", str(project))
    assert code == 1 and [d["code"] for d in json.loads(out)] == ["WSC101"]
    code, out, _ = _run(capsys, "check", "--output-format", "concise", str(project))
    assert code == 1 and out.startswith(f"{project / 'bad.py'}:7:12: WSC101")
    # statistics print text where the configured format has no statistics form
    (project / "pyproject.toml").write_text('[tool.cslint]\noutput-format = "sarif"\nshow-chain = true\n')
    code, out, _ = _run(capsys, "check", "--statistics", str(project))
    assert code == 1 and out.splitlines()[0].split() == ["1", "WSC101", "[*]", "tensor-if"]
    (project / "pyproject.toml").write_text('[tool.cslint]\nshow-chain = true\n')
    _, out, _ = _run(capsys, "check", str(project))
    assert "= traced: bad.Net.forward (forward of nn.Module subclass Net)" in out


@pytest.mark.parametrize(("table", "message"), [
    ('output-format = "xml"', "`output-format` must be one of text, concise, grouped, json, json-lines, sarif, "
                              "github, gitlab, junit, pylint, azure, rdjson (got 'xml')"),
    ('show-chain = "yes"', "`show-chain` must be true or false"),
])
def test_bad_output_settings_are_configuration_errors(project, capsys, table, message):
    (project / "pyproject.toml").write_text(f"[tool.cslint]\n{table}\n")
    code, out, err = _run(capsys, "check", str(project))
    assert code == 2 and not out
    assert err == f"cslint: error: {message} in {project / 'pyproject.toml'}\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["check", "--select", "WSC999"], "unknown rule code or prefix `WSC999` in --select"),
    (["check", "--select", "E501"], "unknown rule code or prefix `E501`"),
    (["check", "does-not-exist.py"], "does-not-exist.py: no such file or directory"),
    (["check", "--output-format", "xml"], "invalid choice: 'xml'"),
    (["rule", "WSC999"], "unknown rule `WSC999`"),
])
def test_usage_errors_are_one_line_exit_2(project, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit) if "--output-format" in argv else _nullcontext():
        code = main(argv)
        assert code == 2
    _, err = capsys.readouterr()
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("argv", "hint"), [
    (["check", "--bogus", "x.py"], "unrecognized arguments: --bogus (see `cslint check --help`)"),
    (["rule", "WSC101", "--bogus"], "unrecognized arguments: --bogus (see `cslint rule --help`)"),
    (["--bogus"], "(see `cslint --help`)"),
    (["check", "--jobs", "x"], "not a number: 'x' (see `cslint check --help`)"),
])
def test_a_usage_error_names_the_help_of_the_command_it_was_given_to(capsys, argv, hint):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert hint in err and "cslint cslint" not in err
    assert len(err.strip().splitlines()) == 1


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def test_malformed_pyproject_is_one_line_exit_2(project, capsys):
    (project / "pyproject.toml").write_text("[tool.cslint\nselect = 3\n")
    code, _, err = _run(capsys, "check", str(project))
    assert code == 2
    assert err.startswith("cslint: error: cannot parse") and len(err.strip().splitlines()) == 1
    (project / "pyproject.toml").write_text("[tool.cslint]\nselect = 3\n")
    code, _, err = _run(capsys, "check", str(project))
    assert code == 2 and "`select` must be a list of strings" in err


def test_syntax_error_is_reported_and_other_files_still_linted(project, capsys):
    (project / "broken.py").write_text("def f(:\n    pass\n")
    code, out, _ = _run(capsys, "check", "--output-format", "concise", str(project))
    assert code == 1
    assert f"{project / 'broken.py'}:1:7: WSC001 syntax error:" in out
    assert "bad.py:7:12: WSC101" in out


def test_rule_command(capsys):
    code, out, _ = _run(capsys, "rule", "WSC101")
    assert code == 0
    for heading in ("## What it does", "## Why it breaks a static graph", "## Example", "## Use instead",
                    "## Fix safety"):
        assert heading in out
    code, out, _ = _run(capsys, "rule", "--all")
    assert code == 0 and "WSC107" in out and "tensor-trip-count" in out


def test_examples_are_reported_and_fixed(tmp_path, capsys):
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    code, out, _ = _run(capsys, "check", "--output-format", "json", str(copy))
    assert code == 1
    before = json.loads(out)
    fixable = [d for d in before if d["fix"] and d["fix"]["applicability"] == "safe"]
    assert fixable, "the examples should include safely fixable problems"
    originals = {p.name: p.read_text() for p in copy.glob("*.py")}
    _run(capsys, "check", "--fix", str(copy))
    changed = [p.name for p in copy.glob("*.py") if p.read_text() != originals[p.name]]
    assert sorted(changed) == sorted({Path(d["filename"]).name for d in fixable})
    _, out, _ = _run(capsys, "check", "--output-format", "json", str(copy))
    after = json.loads(out)
    remaining = {(Path(d["filename"]).name, d["code"], d["message"]) for d in after}
    for d in fixable:
        assert (Path(d["filename"]).name, d["code"], d["message"]) not in remaining


def test_examples_diff_writes_nothing(tmp_path, capsys):
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    originals = {p.name: p.read_text() for p in copy.glob("*.py")}
    code, out, _ = _run(capsys, "check", "--diff", str(copy))
    assert code == 1 and out.startswith("---")
    assert {p.name: p.read_text() for p in copy.glob("*.py")} == originals


def test_cli_does_not_import_torch():
    probe = "import sys, cslint.cli.main; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", probe], check=True)
    check = ("import sys; from cslint.cli.main import main; code = main(['check', '--quiet', '--isolated', sys.argv[1]]);"
             " assert 'torch' not in sys.modules; sys.exit(0)")
    subprocess.run([sys.executable, "-c", check, str(EXAMPLES)], check=True, capture_output=True)


def test_console_script_runs(project):
    result = subprocess.run([sys.executable, "-m", "cslint", "check", str(project / "good.py")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_a_fix_that_cannot_be_written_is_reported_as_on_disk(project, capsys, monkeypatch):
    from cslint.core.sources import ReadError

    def refuse(source):
        raise ReadError("file changed on disk since it was read; not overwritten")
    monkeypatch.setattr("cslint.core.sources.write_atomically", refuse)
    code, out, err = _run(capsys, "check", "--fix", "--no-cache", str(project))
    assert (project / "bad.py").read_text() == BAD
    assert "cannot write fix" in err and code == 2
    assert f"{project / 'bad.py'}:7:12: WSC101" in out  # the finding on disk, not the fixed text's report
    assert "Fixed" not in out and "All checks passed" not in out
