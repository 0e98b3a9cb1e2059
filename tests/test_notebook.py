"""Jupyter notebooks: linted cell by cell as one module, reported as `nb.ipynb:cell N:line:col`, fixed in place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cslint.core.notebook import Notebook

IMPORTS = "import torch\nfrom torch import nn"
HELPER = "def soft_cap(x):\n    if x.sum() > 0:\n        return x * 2\n    return x"
MODEL = ("%matplotlib inline\n"
         "class Net(nn.Module):\n"
         "    def forward(self, x):\n"
         "        !nvidia-smi\n"
         "        if x.max() > 0:\n"
         "            x = x * 2\n"
         "        return soft_cap(x)")


def _cell(kind: str, text: str, **extra: Any) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
    if kind == "code":
        cell.update(execution_count=extra.get("count"), outputs=extra.get("outputs", []))
    return cell


def _notebook(*cells: dict[str, Any]) -> str:
    data = {"cells": list(cells), "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                               "name": "python3"},
                                               "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"  # as Jupyter writes it


OUTPUT = {"name": "stdout", "output_type": "stream", "text": ["tensor(3.) — ok\n"]}
NB = _notebook(
    _cell("markdown", "# A model\nWith a *helper*."),
    _cell("code", IMPORTS, count=1),
    _cell("code", HELPER, count=2, outputs=[OUTPUT]),
    _cell("code", "%%bash\necho if x.max() > 0: pass", count=3),
    _cell("code", MODEL, count=4),
)


def _cslint(args: list[str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cslint", "check", "--no-cache", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120)


def _headers(output: str) -> list[str]:
    return [" ".join(line.split(" ")[:3]) for line in output.splitlines() if ".ipynb:" in line]


def test_notebook_does_not_pass_as_a_json_expression(tmp_path: Path) -> None:
    """A notebook passed: its JSON parses as a Python expression."""
    (tmp_path / "exp.ipynb").write_text(NB, encoding="utf-8")
    run = _cslint(["exp.ipynb", "--output-format", "concise"], tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "All checks passed" not in run.stdout


def test_findings_are_placed_by_cell_and_line(tmp_path: Path) -> None:
    """Magic lines are skipped without shifting lines; a forward in one cell traces a helper in another."""
    (tmp_path / "exp.ipynb").write_text(NB, encoding="utf-8")
    run = _cslint(["exp.ipynb", "--output-format", "concise"], tmp_path)
    assert _headers(run.stdout) == ["exp.ipynb:cell 3:2:8: WSC101", "exp.ipynb:cell 5:5:12: WSC101"], run.stdout
    full = _cslint(["exp.ipynb"], tmp_path)
    assert "5 |         if x.max() > 0:" in full.stdout  # the excerpt is the cell's line


def test_notebooks_are_discovered_in_directories(tmp_path: Path) -> None:
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "exp.ipynb").write_text(NB, encoding="utf-8")
    run = _cslint([".", "--output-format", "concise"], tmp_path)
    assert run.returncode == 1
    assert len(_headers(run.stdout)) == 2


def test_structured_outputs_carry_the_cell(tmp_path: Path) -> None:
    (tmp_path / "exp.ipynb").write_text(NB, encoding="utf-8")
    found = json.loads(_cslint(["exp.ipynb", "--output-format", "json"], tmp_path).stdout)
    assert [(d["cell"], d["line"], d["column"]) for d in found] == [(3, 2, 8), (5, 5, 12)]
    sarif = json.loads(_cslint(["exp.ipynb", "--output-format", "sarif"], tmp_path).stdout)
    results = sarif["runs"][0]["results"]
    assert [(r["properties"]["cell"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
            for r in results] == [(3, 2), (5, 5)]


def test_fix_writes_cells_back_keeping_outputs_metadata_and_layout(tmp_path: Path) -> None:
    path = tmp_path / "exp.ipynb"
    path.write_text(NB, encoding="utf-8")
    run = _cslint(["exp.ipynb", "--fix", "--unsafe-fixes"], tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text != NB, run.stdout + run.stderr
    before, after = json.loads(NB), json.loads(text)
    assert text == json.dumps(after, indent=1, sort_keys=True, ensure_ascii=False) + "\n"  # same layout
    assert "— ok" in text  # non-ASCII kept as written
    assert after["metadata"] == before["metadata"]
    assert [c.get("outputs") for c in after["cells"]] == [c.get("outputs") for c in before["cells"]]
    assert [c.get("execution_count") for c in after["cells"]] == [c.get("execution_count") for c in before["cells"]]
    changed = [i for i, (a, b) in enumerate(zip(before["cells"], after["cells"])) if a["source"] != b["source"]]
    assert changed and set(changed) <= {2, 4}
    model = "".join(after["cells"][4]["source"])
    assert model.startswith("%matplotlib inline\n") and "        !nvidia-smi\n" in model  # IPython lines kept
    assert "".join(after["cells"][3]["source"]) == "%%bash\necho if x.max() > 0: pass"
    assert not model.endswith("\n")  # a cell's last line has no newline, as Jupyter writes it
    again = _cslint(["exp.ipynb", "--fix", "--unsafe-fixes"], tmp_path)
    assert path.read_text(encoding="utf-8") == text, again.stdout  # a second run changes nothing


def test_notebook_on_stdin(tmp_path: Path) -> None:
    run = _cslint(["-", "--stdin-filename", "exp.ipynb", "--output-format", "concise"], tmp_path, stdin=NB)
    assert _headers(run.stdout) == ["exp.ipynb:cell 3:2:8: WSC101", "exp.ipynb:cell 5:5:12: WSC101"]
    fixed = _cslint(["-", "--stdin-filename", "exp.ipynb", "--fix", "--unsafe-fixes"], tmp_path, stdin=NB)
    assert json.loads(fixed.stdout)["cells"][2]["outputs"] == [OUTPUT]
    assert fixed.stdout != NB


def test_noqa_in_a_cell(tmp_path: Path) -> None:
    quiet = NB.replace('"    if x.sum() > 0:\\n"', '"    if x.sum() > 0:  # noqa: WSC101\\n"')
    assert quiet != NB
    (tmp_path / "exp.ipynb").write_text(quiet, encoding="utf-8")
    assert _headers(_cslint(["exp.ipynb", "--output-format", "concise"], tmp_path).stdout) == [
        "exp.ipynb:cell 5:5:12: WSC101"]


@pytest.mark.parametrize("text, message", [
    ("{not json", "not a Jupyter notebook"),
    ('{"cells": 3}', "not a Jupyter notebook"),
])
def test_a_broken_notebook_is_an_error_not_a_pass(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.ipynb").write_text(text, encoding="utf-8")
    run = _cslint(["bad.ipynb"], tmp_path)
    assert run.returncode == 2
    assert message in run.stderr
    assert "All checks passed" not in run.stdout


def test_python_text_keeps_line_numbers_per_cell() -> None:
    notebook = Notebook.parse(NB)
    lines = notebook.python.splitlines()
    for cell in notebook.cells:
        source = "".join(cell.source).splitlines()
        start = notebook.starts[notebook.cells.index(cell)]
        for number in range(1, len(source) + 1):
            assert notebook.place(start + number - 1) == (cell.number, number)
            if source[number - 1].lstrip().startswith(("%", "!")) or cell.number == 4:
                continue
            assert lines[start + number - 2] == source[number - 1]
    assert notebook.with_python(notebook.python) == NB  # nothing changed: the very same text
