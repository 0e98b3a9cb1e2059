"""A file that cannot be decoded is a finding (WSC001, like a syntax error; ruff and flake8 say E902),
never a pass and never an error that stops the other files from being linted."""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.cli.main import main

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


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "bad.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("data, line, reason", [
    (b"# -*- coding: no-such-codec -*-\nx = 1\n", 1, "no-such-codec"),
    (b"x = 1\ny = '\xff\xfe'\n", 2, "utf-8"),
    (b"# coding: ascii\nx = 1\ny = '\xc3\xa9'\n", 3, "ascii"),
])
@pytest.mark.parametrize("cache", [[], ["--no-cache"]])
def test_an_undecodable_file_is_a_wsc001_finding(project: Path, capsys: pytest.CaptureFixture[str], data: bytes,
                                                 line: int, reason: str, cache: list[str]) -> None:
    (project / "broken.py").write_bytes(data)
    for _ in range(2):  # the second run may come from the cache: the same verdict
        code = main(["check", *cache, "--output-format", "concise", "."])
        out, err = capsys.readouterr()
        assert code == 1, err
        assert f"broken.py:{line}:1: WSC001" in out and reason in out
        assert "bad.py:7:12: WSC101" in out  # the other files are still linted
        assert "error" not in err
