"""A target is one record: a target added to `TARGETS` alone is a `--target` choice, is inferred from its
import, and its root call is seen by the text prefilters and by root finding. Rules ask the record what they
need, never the tracer's name."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cslint.analysis.index import index_module_from_ast
from cslint.cli.main import build_parser, main
from cslint.core.config import Settings
from cslint.engine.target_inference import infer_target
from cslint.core.targets import TARGETS, Target, add_target, remove_target
from cslint.engine.untraced import may_hold_roots, nothing_to_report

PACKAGE = Path(__file__).resolve().parent.parent / "cslint"

FAKE = Target(name="fakeplat", title="A platform added by a test", families=("WSC1", "WSC2"),
              imports=("fakeplat.runtime",), wrappers=("fakeplat.runtime.launch",))

# Only the fake platform's wrapper makes `train` traced: no forward, no step, no compile or trace.
TRAIN = """\
import fakeplat.runtime as fr


def train(x):
    if x.sum() > 0:
        x = x * 2
    return x


fr.launch(train)
"""


@pytest.fixture
def fake_target() -> Iterator[Target]:
    add_target(FAKE)
    try:
        yield FAKE
    finally:
        remove_target(FAKE.name)


def test_the_untraced_prefilter_sees_the_new_root_call(fake_target: Target, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(TRAIN, encoding="utf-8")
    assert may_hold_roots(TRAIN.encode())
    assert not nothing_to_report([path], Settings(project_root=tmp_path), frozenset({"WSC101"}))
    remove_target(FAKE.name)
    try:  # without the record, nothing in the file can be a root
        assert not may_hold_roots(TRAIN.encode())
        assert nothing_to_report([path], Settings(project_root=tmp_path), frozenset({"WSC101"}))
    finally:
        add_target(FAKE)


def test_the_index_sees_the_new_root_call_at_top_level(fake_target: Target, tmp_path: Path) -> None:
    def indexed():  # type: ignore[no-untyped-def]
        return index_module_from_ast(tmp_path / "train.py", TRAIN, ast.parse(TRAIN), "train", False,
                                     loader=lambda: None)  # type: ignore[arg-type, return-value]

    info = indexed()
    assert info.may_have_toplevel_roots and info.root_call_statements
    remove_target(FAKE.name)
    try:
        assert not indexed().may_have_toplevel_roots
    finally:
        add_target(FAKE)


def test_the_new_target_is_a_cli_choice_and_its_root_is_checked(
        fake_target: Target, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "train.py"
    path.write_text(TRAIN, encoding="utf-8")
    assert build_parser().parse_args(["check", str(path), "--target", "fakeplat"]).target == "fakeplat"
    assert main(["check", str(path), "--no-cache", "--target", "fakeplat", "--output-format", "concise"]) == 1
    out = capsys.readouterr().out
    assert "WSC101" in out, out


def test_target_inference_reads_the_new_import(fake_target: Target, tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(TRAIN, encoding="utf-8")
    choice = infer_target([path])
    assert (choice.target, choice.reason) == ("fakeplat", "inferred: the project imports fakeplat.runtime (train.py)")
    assert "fakeplat" in choice.packages


def test_rules_and_fixers_ask_the_record_not_the_tracers_name() -> None:
    """`get_target(...).tracer == "dynamo"` in a rule is what a new target with its own tracer would miss."""
    compared = re.compile(r"\.tracer\s*[!=]=|[!=]=\s*\S*\.tracer\b|\"(?:dynamo|lazy)\"")
    offenders = [f"{path.relative_to(PACKAGE)}:{number}"
                 for folder in ("rules", "fixers") for path in sorted((PACKAGE / folder).glob("*.py"))
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if compared.search(line)]
    assert not offenders, offenders
