"""The cache never changes an answer: random histories of runs and edits, each step compared with `--no-cache`.

Two copies of one generated project get the same steps: whole-project runs, runs on one file (in its
project, with `--project-context`, and `--isolated`), `--fix`, edits, new files and deletions. Modules
hold helpers that branch on a tensor (WSC101), helpers that call helpers in other modules, and models
whose `forward` calls them with tensors or with plain numbers, so what a file reports depends on which
other files trace into it. One copy is checked with the cache, the other with `--no-cache`; after every
step their reports, exit codes and files must be equal; a file checked alone (in its project) must get
the whole project's report for it. Files and directories get distinct old times, so that what is kept by
size and time (the cache, the import and tree memos) is trusted, and must notice every change. 300 steps
in the suite; CSLINT_LONG_TESTS=1 runs 5,000.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition, rule,
                                 run_state_machine_as_test)

from cslint.cli.main import main

LONG = bool(os.environ.get("CSLINT_LONG_TESTS"))
STEPS = 5000 if LONG else 300
STEPS_PER_HISTORY = 20
MODULES = ("alpha", "beta", "gamma", "delta")
HELPERS = ("cap", "scale", "mix")

# a helper: what its body does
BODIES = {
    "branch": "    if x.sum() > 0:\n        return x * 2\n    return x\n",
    "clean": "    return x + 1\n",
    "item": "    total = x.sum().item()\n    return x * total\n",
}
helper_spec = st.tuples(st.sampled_from(sorted(BODIES)),
                        st.sampled_from([None, None, 0]).flatmap(  # 0: it calls a helper, maybe in another module
                            lambda c: st.just(None) if c is None else st.tuples(st.sampled_from(MODULES),
                                                                                st.sampled_from(HELPERS))))
# a module: its helpers, and the helpers its model's forward calls (with a tensor or a number)
module_spec = st.fixed_dictionaries({
    "helpers": st.dictionaries(st.sampled_from(HELPERS), helper_spec, min_size=1, max_size=3),
    "forward": st.lists(st.tuples(st.sampled_from(MODULES), st.sampled_from(HELPERS),
                                  st.sampled_from([True, True, False])), max_size=3),
    "fixable": st.booleans(),
})


def render(name: str, spec: dict) -> str:
    calls = {(m, h) for m, h, _ in spec["forward"]}
    calls |= {callee for _, callee in spec["helpers"].values() if callee is not None}
    lines = ["import torch", "from torch import nn", ""]
    lines += [f"from pkg.{m} import {h} as {m}_{h}" for m, h in sorted(calls) if m != name]
    lines += ["", ""]
    for helper, (body, callee) in sorted(spec["helpers"].items()):
        lines.append(f"def {helper}(x):")
        if callee is not None:
            target = callee[1] if callee[0] == name else f"{callee[0]}_{callee[1]}"
            lines.append(f"    x = {target}(x)")
        lines += [BODIES[body].rstrip("\n"), ""]
    if spec["forward"] or spec["fixable"]:
        lines += ["class Model(nn.Module):", "    def forward(self, x):", "        y = x"]
        for module, helper, tensor in spec["forward"]:
            target = helper if module == name else f"{module}_{helper}"
            lines.append(f"        y = y + {target}({'y' if tensor else 'y.shape[0]'})")
        if spec["fixable"]:
            lines += ["        if y.max() > 1:", "            y = y - 1"]
        lines += ["        return y", ""]
    return "\n".join(lines) + "\n"


class CacheAgreesWithNoCache(RuleBasedStateMachine):
    steps = 0  # taken over every history of a test run
    def __init__(self) -> None:
        super().__init__()
        self.base = Path(tempfile.mkdtemp(prefix="cslint-history-"))
        self.cached, self.fresh = self.base / "cached", self.base / "fresh"
        self.clock = 1_600_000_000  # file times: distinct, and old enough for the cache to trust them

    @initialize(specs=st.dictionaries(st.sampled_from(MODULES), module_spec, min_size=2))
    def start(self, specs: dict) -> None:
        for root in (self.cached, self.fresh):
            (root / "pkg").mkdir(parents=True)
            (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
            (root / "pkg" / "__init__.py").write_text("")
        for name, spec in specs.items():
            self._write(name, render(name, spec))
        self._settle_directories()

    def teardown(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def _write(self, name: str, text: str) -> None:
        self.clock += 1
        new = not (self.fresh / "pkg" / f"{name}.py").exists()
        for root in (self.cached, self.fresh):
            path = root / "pkg" / f"{name}.py"
            path.write_text(text)
            os.utime(path, (self.clock, self.clock))
        if new:
            self._settle_directories()

    def _settle_directories(self) -> None:
        """Directories whose listing changed get a time of their own, old enough to be trusted: the walk
        and module names remembered between runs (cslint/store/tree_memo.py) are then used, and must notice."""
        self.clock += 1
        for root in (self.cached, self.fresh):
            for directory in (root, root / "pkg"):
                os.utime(directory, (self.clock, self.clock))

    def _present(self) -> list[str]:
        return sorted(p.stem for p in (self.fresh / "pkg").glob("*.py") if p.stem != "__init__")

    def _run(self, *args: str, on: str | None = None) -> list[tuple[str, int, int, str, str]]:
        """The findings, after checking that the cached and the no-cache run agree."""
        outputs = []
        for root, cache in ((self.cached, ["--cache-dir", str(self.base / "cache")]), (self.fresh, ["--no-cache"])):
            target = str(root / "pkg" / f"{on}.py") if on else str(root)
            out = Path(tempfile.mktemp(dir=self.base, suffix=".json"))
            code = main(["check", target, *args, "--output-format", "json", "-o", str(out), *cache])
            findings = sorted((Path(f["filename"]).relative_to(root).as_posix(), f["line"], f["column"], f["code"],
                               f["message"]) for f in json.loads(out.read_text()))
            out.unlink()
            outputs.append((code, findings))
        assert not [f for f in outputs[1][1] if f[3] == "WSC001"], outputs[1]  # the generator writes Python
        assert outputs[0] == outputs[1], f"cslint check {' '.join(args)} on {on or 'the project'}: " \
                                         f"cached {outputs[0]} != no-cache {outputs[1]}"
        return outputs[1][1]

    @rule()
    def whole_project(self) -> None:
        CacheAgreesWithNoCache.steps += 1
        self._run()

    @precondition(lambda self: self._present())
    @rule(data=st.data(), mode=st.sampled_from([(), ("--project-context",), ("--isolated",)]))
    def one_file(self, data: st.DataObject, mode: tuple[str, ...]) -> None:
        CacheAgreesWithNoCache.steps += 1
        name = data.draw(st.sampled_from(self._present()))
        alone = self._run(*mode, on=name)
        if mode != ("--isolated",):  # a file checked in its project: the whole project's report for it
            whole = [f for f in self._run() if f[0] == f"pkg/{name}.py"]
            assert alone == whole, f"{name}.py alone {alone} != in the whole project {whole}"

    @rule(data=st.data())
    def fix(self, data: st.DataObject) -> None:
        CacheAgreesWithNoCache.steps += 1
        on = data.draw(st.none() | st.sampled_from(self._present())) if self._present() else None
        self._run("--fix", on=on)
        self.clock += 1
        for root in (self.cached, self.fresh):
            for path in (root / "pkg").glob("*.py"):
                os.utime(path, (self.clock, self.clock))
        self._settle_directories()  # a fix replaces files by renaming

    @rule(name=st.sampled_from(MODULES), spec=module_spec)
    def edit_or_add(self, name: str, spec: dict) -> None:
        CacheAgreesWithNoCache.steps += 1
        self._write(name, render(name, spec))

    @precondition(lambda self: self._present())
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        CacheAgreesWithNoCache.steps += 1
        name = data.draw(st.sampled_from(self._present()))
        for root in (self.cached, self.fresh):
            (root / "pkg" / f"{name}.py").unlink()
        self._settle_directories()

    @invariant()
    def same_files(self) -> None:
        for path in (self.fresh / "pkg").glob("*.py"):
            assert (self.cached / "pkg" / path.name).read_text() == path.read_text(), path.name


def test_cache_agrees_with_no_cache() -> None:
    CacheAgreesWithNoCache.steps = 0
    histories = 0
    while CacheAgreesWithNoCache.steps < STEPS:  # a history may end early: run until enough steps were taken
        histories += 1
        run_state_machine_as_test(CacheAgreesWithNoCache, settings=settings(
            max_examples=max(1, (STEPS - CacheAgreesWithNoCache.steps) // STEPS_PER_HISTORY + 2),
            stateful_step_count=STEPS_PER_HISTORY, deadline=None, suppress_health_check=list(HealthCheck),
            derandomize=not LONG, database=None))
    print(f"{CacheAgreesWithNoCache.steps} steps in {histories} rounds of histories")
    assert CacheAgreesWithNoCache.steps >= STEPS
