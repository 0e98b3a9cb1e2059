"""Bad input never crashes cslint, and --fix never loses or corrupts a byte of user code."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import libcst as cst
import pytest

from cslint.engine import runner as runner_module
from cslint.core import sources as sources_module
from cslint.cli.main import main
from cslint.core.config import Settings
from cslint.rule_api.context import RuleContext
from cslint.rules import Rule
from cslint.rules.control_flow import TensorIf
from cslint.engine.runner import Linter
from cslint.core.sources import ReadError, read_source, write_atomically
from tests.samples import FIXED_LINE, TENSOR_BRANCH as BAD


def _check(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("cslint: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_non_utf8_file(tmp_path, capsys):
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9t\xe9'\n")
    (tmp_path / "bad.py").write_text(BAD)
    code, out, err = _check(capsys, str(tmp_path))
    assert code == 1 and err == ""  # a finding about the file (WSC001, as ruff's E902), not an error
    assert "latin.py:1:1: WSC001 cannot decode the file: not valid utf-8" in out
    assert "bad.py:7:12: WSC101" in out  # the other file is still linted


def test_binary_file_with_py_name(tmp_path, capsys):
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02garbage\xff")
    code, _, err = _check(capsys, str(tmp_path / "blob.py"))
    assert code == 2 and "blob.py: binary data" in _one_error_line(err)


def test_empty_file(tmp_path, capsys):
    (tmp_path / "empty.py").write_text("")
    assert _check(capsys, str(tmp_path / "empty.py"))[0] == 0


def test_fifty_thousand_line_file(tmp_path, capsys):
    body = "".join(f"        x = x + {i}\n" for i in range(50_000))
    (tmp_path / "big.py").write_text(BAD.replace("        return y\n", body + "        return y\n"))
    code, out, _ = _check(capsys, "--output-format", "concise", str(tmp_path / "big.py"))
    assert code == 1 and out.count("WSC101") == 1


def test_deeply_nested_expressions(tmp_path, capsys):
    # Python refuses more than 200 nested brackets, and libcst's parse time grows with the cube of the
    # depth: such files are one finding each, not a crash, a hang or an internal error.
    parens = BAD.replace("y = x * 2", "y = " + "(" * 3000 + "x" + ")" * 3000)
    (tmp_path / "parens.py").write_text(parens)
    unary = BAD.replace("y = x * 2", "y = " + "-" * 5000 + "x")
    (tmp_path / "unary.py").write_text(unary)
    (tmp_path / "bad.py").write_text(BAD.replace("y = x * 2", "y = " + "-" * 60 + "x"))
    code, out, _ = _check(capsys, "--output-format", "concise", str(tmp_path))
    assert code == 1
    assert "parens.py:8:217: WSC001 syntax error: too many nested parentheses" in out
    assert "unary.py:8:13: WSC004 file not analysed: an expression 5,001 levels deep" in out
    assert "bad.py:7:12: WSC101" in out
    assert "WSC002" not in out


def test_file_that_vanishes_before_reading(tmp_path):
    path = tmp_path / "gone.py"
    linter = Linter(Settings(), [TensorIf])
    result = linter.run([path])
    assert result.errors == [f"{path}: file disappeared before it could be read"]


def test_permission_denied_on_read(tmp_path, capsys, monkeypatch):
    path = tmp_path / "secret.py"
    path.write_text(BAD)
    if os.geteuid() == 0:  # root reads anything: simulate what other users get
        real = sources_module.read_regular
        monkeypatch.setattr(sources_module, "read_regular",
                            lambda path, max_bytes=None: (_ for _ in ()).throw(PermissionError(13, "denied"))
                            if Path(path).name == "secret.py" else real(path, max_bytes))
    else:
        path.chmod(0)
    code, _, err = _check(capsys, str(path))
    assert code == 2 and "secret.py: permission denied" in _one_error_line(err)


def test_permission_denied_on_write_leaves_file(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(BAD)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("cslint.core.sources.tempfile.mkstemp", refuse)
    code, _, err = _check(capsys, "--fix", str(path))
    assert code == 2 and "m.py: cannot write fix: Permission denied" in _one_error_line(err)
    assert path.read_text() == BAD


def test_symlink_loop(tmp_path, capsys):
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "ok.py").write_text(BAD)
    code, out, err = _check(capsys, "--output-format", "concise", str(tmp_path))
    assert code == 2
    assert "Too many levels of symbolic links" in err
    assert "ok.py:7:12: WSC101" in out


def test_directory_named_like_a_python_file(tmp_path, capsys):
    directory = tmp_path / "x.py"
    directory.mkdir()
    (directory / "inner.py").write_text(BAD)
    code, out, _ = _check(capsys, "--output-format", "concise", str(directory))
    assert code == 1 and "inner.py:7:12: WSC101" in out
    assert _check(capsys, str(tmp_path))[0] == 1


def test_fix_keeps_crlf_bom_and_final_newline(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_bytes(b"\xef\xbb\xbf" + BAD.rstrip("\n").replace("\n", "\r\n").encode())
    assert _check(capsys, "--fix", str(path))[0] == 0
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert FIXED_LINE.encode() + b"\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert not data.endswith(b"\n")


def test_fix_keeps_pep263_encoding_and_permissions(tmp_path, capsys):
    path = tmp_path / "m.py"
    source = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + BAD
    path.write_bytes(source.encode("latin-1"))
    path.chmod(0o751)
    assert _check(capsys, "--fix", str(path))[0] == 0
    data = path.read_bytes()
    assert b"# caf\xe9\n" in data
    assert FIXED_LINE.encode() in data
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]  # no temporary file left behind


def test_file_changed_on_disk_is_not_overwritten(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    source = read_source(path)
    source.text = "replaced\n"
    path.write_text(BAD + "# edited by someone else\n")
    os.utime(path, ns=(source.mtime_ns + 10**9, source.mtime_ns + 10**9))
    with pytest.raises(ReadError, match="changed on disk"):
        write_atomically(source)
    assert path.read_text().endswith("# edited by someone else\n")


def test_fix_that_would_not_parse_is_not_written(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    broken = cst.Module(body=[cst.SimpleStatementLine([cst.Expr(cst.Name("def"))])])
    monkeypatch.setattr(runner_module, "_apply", lambda tree, fixes, bound: (broken, fixes))
    code, _, err = _check(capsys, "--fix", str(path))
    assert code == 2
    assert "a fix produced code that does not parse" in _one_error_line(err)
    assert path.read_text() == BAD


class CrashingRule(Rule):
    code = "WSC199"
    name = "crashes"

    def visit_Return(self, node: cst.Return, ctx: RuleContext) -> None:
        raise KeyError("boom")


def test_internal_error_in_a_rule_is_reported_and_the_run_continues(tmp_path, capsys, monkeypatch):
    (tmp_path / "m.py").write_text(BAD)
    monkeypatch.setattr("cslint.engine.selection.enabled_rules", lambda settings: [CrashingRule, TensorIf])
    code, out, _ = _check(capsys, "--output-format", "concise", str(tmp_path))
    assert code == 2
    assert "m.py:11:9: WSC002 internal error in rule WSC199 (KeyError: 'boom'); please report it" in out
    assert "m.py:7:12: WSC101" in out


def test_internal_error_outside_rules_is_one_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "m.py").write_text(BAD)

    def explode(*args, **kwargs):
        raise ValueError("unexpected")

    monkeypatch.setattr("cslint.engine.runner.Linter.run", explode)
    monkeypatch.setattr("cslint.engine.runner.Linter.run_group", explode)  # a tree's groups (incremental.py)
    code, _, err = _check(capsys, str(tmp_path))
    assert code == 2
    assert err.strip() == ("cslint: internal error: ValueError: unexpected; please report it, with the file, "
                           "at the cslint issue tracker")
