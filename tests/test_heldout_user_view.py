"""bench/heldout.py's user-view scoring: a runtime site in a library is found when a finding of its family on
the user's line names it among its `library_sites` (its line or up to three above), or lies there itself."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _heldout():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("heldout_under_test", BENCH / "heldout.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


LIB = "/venv/lib/python3.11/site-packages/flowlib"
SITES = [
    {"path": f"{LIB}/norm.py", "line": 33, "code": "WSC101"},     # named by the user's finding, two lines lower
    {"path": f"{LIB}/splines.py", "line": 40, "code": "WSC502"},  # a finding in the library file itself
    {"path": f"{LIB}/splines.py", "line": 77, "code": "WSC502"},  # nothing of its family near it
    {"path": f"{LIB}/norm.py", "line": 50, "code": "WSC201"},     # named, but by a finding of another family
    {"path": f"{LIB}/norm.py", "line": 29, "code": "WSC101"},     # named only four lines below: too far
]
REPORT = [
    {"filename": "train.py", "line": 12, "code": "WSC101", "message": "`model(...)` branches on a tensor",
     "library_sites": [{"filename": f"{LIB}/norm.py", "line": 31, "code": "if not self.done > 0"},
                       {"filename": f"{LIB}/norm.py", "line": 50, "code": "self.scale.item()"}]},
    {"filename": f"{LIB}/splines.py", "line": 38, "code": "WSC502", "message": "a boolean-mask store",
     "library_sites": []},
    {"filename": "train.py", "line": 14, "code": "WSC502", "message": "a boolean-mask store", "library_sites": []},
]


def test_user_view_verdicts_by_library_sites_in_the_file_and_missed() -> None:
    verdicts = _heldout().user_view_verdicts(SITES, REPORT)
    assert [(v["path"].rsplit("/", 1)[1], v["line"], v["verdict"]) for v in verdicts] == [
        ("norm.py", 33, "library_sites"),
        ("splines.py", 40, "in file"),
        ("splines.py", 77, "missed"),
        ("norm.py", 50, "missed"),
        ("norm.py", 29, "missed"),
    ]
    assert [v["code"] for v in verdicts] == [s["code"] for s in SITES]


def test_every_user_step_of_set_3_is_traced_for_its_target() -> None:
    heldout = _heldout()
    assert set(heldout.USER_STEPS_3) == set(heldout.TARGETS_3)
    for name, text in heldout.USER_STEPS_3.items():
        wsc, compiled = heldout.user_file(text, "wsc"), heldout.user_file(text, "compile")
        assert "import cerebras.pytorch as cstorch\n" in wsc and "\n@cstorch.trace\ndef train_step(" in wsc, name
        assert "cstorch" not in compiled and "\n@torch.compile\ndef train_step(" in compiled, name
        assert "TARGET_IMPORT" not in wsc + compiled and "@TRACED" not in wsc + compiled, name
        compile(wsc, name, "exec")
