"""The language server holds open documents to the limits `cslint check` holds files to (#34): over
`max-file-size` a document is one WSC004, quickly and in bounded memory, edit after edit; a document
`exclude` names gets no findings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from lsp_hostile import RawClient, over_size  # noqa: E402

from tests.test_lsp import BAD, _check  # noqa: E402

TIME_LIMIT = 60.0  # the hostile-input bar (bench/hostile.py)
MEMORY_LIMIT_MB = 1024


@pytest.mark.parametrize("megabytes", [6, 50])
def test_an_open_document_over_max_file_size_is_one_wsc004(tmp_path: Path, megabytes: int) -> None:
    out = over_size(tmp_path, megabytes * 1_000_000, TIME_LIMIT)
    assert out["opened"], "no WSC004 for the opened document"
    assert out["edited"], "no WSC004 after an edit"
    assert out["opened_s"] < TIME_LIMIT and out["edited_s"] < TIME_LIMIT
    assert out["peak_mb"] < MEMORY_LIMIT_MB, f"server peak {out['peak_mb']:.0f} MB"
    assert out["exit"]


def _open(tmp_path: Path, config: str, name: str, text: str) -> list[dict[str, object]]:
    """The diagnostics the server publishes for `name`, opened with `text` in a project with `config`."""
    (tmp_path / "pyproject.toml").write_text(f"[tool.cslint]\n{config}", encoding="utf-8")
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path)
        client.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "python",
                                                                "version": 1, "text": text}})
        published = client.diagnostics(path.as_uri(), 60)
        assert published is not None
        return published["params"]["diagnostics"]  # type: ignore[no-any-return]
    finally:
        client.close()


def test_max_file_size_from_the_configuration_applies_to_an_open_document(tmp_path: Path) -> None:
    found = _open(tmp_path, 'max-file-size = "200B"\n', "net.py", BAD)
    assert [d["code"] for d in found] == ["WSC004"]
    assert "over the size limit of 200 bytes" in found[0]["message"]
    assert "WSC004" in _check(tmp_path, "net.py", "--output-format", "concise").stdout  # as check reports it


def test_an_excluded_document_gets_no_findings(tmp_path: Path) -> None:
    assert _open(tmp_path, 'extend-exclude = ["generated"]\n', "generated/net.py", BAD) == []
    named = _check(tmp_path, "generated/net.py", "--force-exclude", "--output-format", "concise")
    assert "WSC101" not in named.stdout


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_an_edit_applied_in_place_gives_the_text_pygls_gives(encoding: str) -> None:
    import copy
    import random

    from lsprotocol import types
    from pygls.workspace import TextDocument
    from pygls.workspace.position_codec import PositionCodec

    from cslint.lsp.documents import LeanTextDocument, leading_lines

    rnd = random.Random(34)
    alphabet = ["a", "é", "😋", "\n", "\n", " ", "\r\n", "\x0c"]
    codec = PositionCodec(encoding)  # type: ignore[arg-type]
    for _ in range(1500):
        text = "".join(rnd.choice(alphabet if rnd.random() < 0.2 else alphabet[:6]) for _ in range(rnd.randint(0, 40)))
        lines = text.count("\n") + 2
        start, end = sorted((types.Position(line=rnd.randint(0, lines), character=rnd.randint(0, 8)) for _ in "ab"),
                            key=lambda p: (p.line, p.character))
        typed = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 5)))
        theirs, ours = TextDocument("file:///x.py", text, position_codec=codec), \
            LeanTextDocument("file:///x.py", text, position_codec=codec)
        for document in (theirs, ours):
            document.apply_change(types.TextDocumentContentChangePartial(
                range=types.Range(start=copy.copy(start), end=copy.copy(end)), text=typed))
        assert ours.source == theirs.source, (text, start, end, typed)
        count = rnd.randint(0, lines)
        assert leading_lines(text, count) == text.splitlines(keepends=True)[:count]


def test_a_buffer_given_on_stdin_is_held_to_max_file_size_too(tmp_path: Path) -> None:
    """The mechanism the server uses is the one every unsaved buffer goes through (sources.read_source)."""
    import subprocess

    (tmp_path / "pyproject.toml").write_text('[tool.cslint]\nmax-file-size = "200B"\n', encoding="utf-8")
    run_ = subprocess.run([sys.executable, "-m", "cslint", "check", "--no-cache", "--output-format", "concise",
                           "--stdin-filename", "net.py", "-"], input=BAD, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert "net.py:1:1: WSC004" in run_.stdout and "WSC101" not in run_.stdout, run_.stdout


def test_the_analysis_budget_applies_to_an_open_document(tmp_path: Path) -> None:
    """(held before #34 too: the server runs check's runner) A 3,000-link method chain is one WSC004."""
    chain = BAD.replace("x = x * 2", "x = x" + ".f()" * 3000)
    found = _open(tmp_path, "", "methods.py", chain)
    assert [d["code"] for d in found] == ["WSC004"] and "analysis budget" in found[0]["message"]
