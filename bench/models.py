"""Runtime break and sync sites of real models before and after `--fix --unsafe-fixes` (issue 37).

    python bench/models.py --markdown table.md            # every model of bench/model_steps.py
    python bench/models.py --models bert,mixtral --jobs 2 --keep /tmp/models
    python bench/models.py --models llama --prepare /tmp/llama   # a project for `cslint check --fix --verify`

The steps are bench/model_steps.py's: 24 Hugging Face families (transformers 5.24.0) and five models of
other libraries (pinned, installed from PyPI: x-transformers 2.31.10, performer-pytorch 1.1.4,
perceiver-pytorch 0.11.0, efficientnet-pytorch 0.7.1, vector-quantize-pytorch 1.32.0; with einops 0.8.2,
einx 0.4.3, local-attention 1.11.2), torch 2.13.0 CPU.

1. The model packages (transformers, and each other library whole) are copied three times: `original`,
   `compile` and `wsc`, each with a copy of model_steps.py at its root, so a step imports that tree's
   copy of the library.
2. The runtime checker (`cslint.runtime.check`, one child process per model) runs each step on the
   `original` tree, lazy and dynamo backends: the "before" sites.
3. The files to fix, the same in both trees: each Hugging Face family's `models/<family>/` directory, each
   other library whole, and every file a "before" site is in, the tree a project (pyproject.toml) as a
   user's checkout is. `cslint check --fix --unsafe-fixes --target compile` fixes them in the `compile`
   tree, `--target wsc` in the `wsc` tree.
4. The checker runs each step again: dynamo on the `compile` tree, lazy on the `wsc` tree.
5. Per model and target: sites in the library's code (not the step's file) before and after (a site is a
   file, line and code; dynamo's are graph breaks, those on constructs no rule names included with the
   code `break`; the lazy backend's are host syncs and value-dependent shapes), whether the CPU reference
   run's outputs (the loss and every gradient, three steps) are allclose (rtol 1e-5, atol 1e-5) before and
   after (a parameter with no gradient counts as a zero gradient; a change from none to zero is listed
   under the model's problems), and whether the fixed step ran its three steps.

A model that fails (does not build, raises, a backend stops) is a row that says so, never left out.
Exit status 0 always: the table is the result.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import linecache
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

import model_steps  # noqa: E402

STEPS_FILE = "model_steps.py"
TREES = ("original", "compile", "wsc")
BACKEND = {"compile": "dynamo", "wsc": "lazy"}
TOLERANCE = 1e-5
UNCOVERED = "break"  # the code of a site dynamo breaks at on a construct no rule covers
DEFAULT_TIMEOUT = 600.0


def package_of(model: str) -> str:
    return model_steps.OTHERS.get(model, "transformers")


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, package
    return Path(spec.origin).parent


def own_files(model: str) -> list[str]:
    """The model's own code, relative to a tree: its family directory, or the whole library."""
    package = package_of(model)
    base = _package_dir(package)
    folder = base / "models" / model if package == "transformers" else base
    return sorted(str(Path(package) / path.relative_to(base)) for path in folder.rglob("*.py"))


def copy_tree(tree: Path, models: list[str]) -> Path:
    """The models' packages and the steps file, in `tree`: a project whose steps import its own copies."""
    for package in sorted({package_of(m) for m in models}):
        shutil.copytree(_package_dir(package), tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(BENCH / STEPS_FILE, tree / STEPS_FILE)
    return tree


def make_trees(work: Path, models: list[str]) -> dict[str, Path]:
    return {name: copy_tree(work / name, models) for name in TREES}


def prepare(project: Path, models: list[str]) -> str:
    """A project for `cslint check --fix --verify`: the copies, and `runtime-targets` naming the steps;
    returns the command that fixes the models' own files there, verified by those steps."""
    copy_tree(project, models)
    targets = ", ".join(f'"{STEPS_FILE}:{m}"' for m in models)
    (project / "pyproject.toml").write_text(f"[tool.cslint]\nruntime-targets = [{targets}]\n", encoding="utf-8")
    files = " ".join(f for m in models for f in own_files(m))
    return f"cd {project} && cslint check --target compile --fix --unsafe-fixes --verify {files}"


@dataclass(frozen=True)
class Site:
    path: str  # relative to the tree
    line: int
    code: str
    message: str = field(compare=False, hash=False)


@dataclass
class Run:
    status: dict[str, str] = field(default_factory=dict)
    error: str = ""
    steps: int = 0
    outputs: list[object] = field(default_factory=list)
    sites: dict[str, set[Site]] = field(default_factory=dict)  # backend -> sites in the library's code


def run_step(tree: Path, model: str, backends: tuple[str, ...], timeout: float) -> Run:
    from cslint.runtime import check

    report = check(f"{tree / STEPS_FILE}:{model}", backends, outputs=True, cwd=str(tree), timeout=timeout)
    run = Run(dict(report.status), report.error.strip(), report.steps, report.outputs)
    root = os.path.realpath(tree)
    for backend in backends:
        run.sites[backend] = set()
    def in_library(path: str) -> bool:
        return path.startswith(root + os.sep) and os.path.basename(path) != STEPS_FILE

    for finding in report.findings:
        path = os.path.realpath(finding.path)
        if not in_library(path):
            continue
        for backend in finding.backend.split("+"):
            if backend in run.sites:
                run.sites[backend].add(Site(os.path.relpath(path, root), finding.line, finding.code,
                                            finding.message.splitlines()[0] if finding.message else ""))
    # a break no rule names (a call of a `torch.compiler.disable`d function) is a break all the same
    for path, line, gb_type in report.uncovered_breaks:
        path = os.path.realpath(path)
        if "dynamo" in run.sites and in_library(path):
            run.sites["dynamo"].add(Site(os.path.relpath(path, root), line, UNCOVERED, f"graph break: {gb_type}"))
    return run


def fix(tree: Path, files: list[str], target: str) -> str:
    """Fix `files` in `tree` for `target`; cslint's last line of output (its summary). The tree is made a
    project (an empty pyproject.toml), as a user's checkout is: cslint then follows the named files'
    callers and callees through the package (a loss reached through transformers' `LOSS_MAPPING` table)
    instead of analysing the named files alone."""
    (tree / "pyproject.toml").touch()
    done = subprocess.run([sys.executable, "-m", "cslint", "check", "--no-cache", "--exit-zero", "--target", target,
                           "--fix", "--unsafe-fixes", "--output-format", "concise", *files],
                          capture_output=True, text=True, cwd=tree, check=False)
    lines = (done.stdout + done.stderr).strip().splitlines()
    return lines[-1] if lines else ""


def equal_outputs(expected: list[object], actual: list[object]) -> bool | None:
    """Loss and gradients allclose at every step; None when either run has no outputs. Each step's outputs
    are the loss, every parameter's gradient (zero where the step reached no parameter) and, last, which
    parameters had a gradient: that last one is `gradients_made_zero`'s, not compared here."""
    import torch

    if not expected or not actual:
        return None
    if len(expected) != len(actual):
        return False
    for before, after in zip(expected, actual):
        if len(before) != len(after):  # type: ignore[arg-type]
            return False
        for b, a in zip(before[:-1], after[:-1]):  # type: ignore[index]
            b, a = torch.tensor(b, dtype=torch.float64), torch.tensor(a, dtype=torch.float64)
            if b.shape != a.shape or not torch.allclose(a, b, rtol=TOLERANCE, atol=TOLERANCE):
                return False
    return True


def gradients_made_zero(expected: list[object], actual: list[object]) -> int:
    """Parameter-steps with no gradient before and a (zero, when the outputs are equal) gradient after: a
    dropped layer that a fix runs and discards. An optimizer with momentum or weight decay moves such a
    parameter where the original left it alone."""
    count = 0
    for before, after in zip(expected, actual):
        if before and after and len(before) == len(after):  # type: ignore[arg-type]
            count += sum(b == 0 and a == 1 for b, a in zip(before[-1], after[-1]))  # type: ignore[index]
    return count


@dataclass
class Row:
    model: str
    before: Run
    after: dict[str, Run]  # target -> run on the fixed tree

    def count(self, target: str, when: str) -> int:
        run = self.before if when == "before" else self.after[target]
        return len(run.sites.get(BACKEND[target], set()))

    def equal(self, target: str) -> bool | None:
        return equal_outputs(self.before.outputs, self.after[target].outputs)

    def made_zero(self, target: str) -> int:
        return gradients_made_zero(self.before.outputs, self.after[target].outputs)

    def stepped(self, target: str) -> bool:
        run = self.after[target]
        return not run.error and run.steps == model_steps.STEPS

    def problems(self) -> list[str]:
        said = []
        for name, run in (("before", self.before), *((f"after {t}", r) for t, r in self.after.items())):
            if run.error:
                said.append(f"{name}: {run.error.splitlines()[-1][:160]}")
            for backend, status in sorted(run.status.items()):
                if status != "complete":
                    said.append(f"{name}, {backend}: {status[:160]}")
        for target in self.after:
            if self.made_zero(target):
                said.append(f"after {target}: {self.made_zero(target)} parameter gradients none before, zero after "
                            "(a skipped layer now runs and is discarded)")
        return said


def measure(models: list[str], work: Path, jobs: int, timeout: float) -> tuple[list[Row], dict[str, str], Path]:
    trees = make_trees(work, models)
    with ThreadPoolExecutor(max(jobs, 1)) as pool:
        before = dict(zip(models, pool.map(lambda m: run_step(trees["original"], m, ("lazy", "dynamo"), timeout),
                                           models)))
        files = sorted({f for m in models for f in own_files(m)} |
                       {s.path for run in before.values() for sites in run.sites.values() for s in sites})
        summaries = {target: fix(trees[target], files, target) for target in BACKEND}
        after = {target: dict(zip(models, pool.map(
            lambda m, t=target: run_step(trees[t], m, (BACKEND[t],), timeout), models))) for target in BACKEND}
    rows = [Row(m, before[m], {t: after[t][m] for t in BACKEND}) for m in models]
    changed = {t: sum(not filecmp.cmp(trees["original"] / f, trees[t] / f, shallow=False) for f in files)
               for t in BACKEND}
    summaries = {t: f"{changed[t]} of {len(files)} files changed; cslint: {summaries[t]}" for t in BACKEND}
    return rows, summaries, work


def _mark(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "**no**"


def _percent(removed: int, total: int) -> str:
    return f"{100 * removed / total:.1f}%" if total else "-"


def table(rows: list[Row], summaries: dict[str, str], trees: Path) -> str:
    lines = ["| model | library | compile: breaks before | after | wsc: syncs before | after | "
             "loss/grads equal (compile, wsc) | stepped 3x after (compile, wsc) | problems |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.model} | {package_of(r.model)} | {r.count('compile', 'before')} | "
                     f"{r.count('compile', 'after')} | {r.count('wsc', 'before')} | {r.count('wsc', 'after')} | "
                     f"{_mark(r.equal('compile'))}, {_mark(r.equal('wsc'))} | "
                     f"{_mark(r.stepped('compile'))}, {_mark(r.stepped('wsc'))} | "
                     f"{'; '.join(r.problems()).replace('|', '/')} |")
    out = ["\n".join(lines), ""]
    for target, kind in (("compile", "dynamo graph-break sites"), ("wsc", "lazy-tensor sync/shape sites")):
        before = sum(r.count(target, "before") for r in rows)
        after = sum(r.count(target, "after") for r in rows)
        distinct_before = len({s for r in rows for s in r.before.sites.get(BACKEND[target], set())})
        distinct_after = len({s for r in rows for s in r.after[target].sites.get(BACKEND[target], set())})
        out.append(f"- `--target {target}` ({kind}, summed over models): {before} before, {after} after, "
                   f"{before - after} removed ({_percent(before - after, before)}); distinct sites "
                   f"{distinct_before} before, {distinct_after} after. Fix run: {summaries[target]}.")
    equal = {t: sum(r.equal(t) is True for r in rows) for t in BACKEND}
    stepped = {t: sum(r.stepped(t) for r in rows) for t in BACKEND}
    ran_before = sum(not r.before.error and r.before.steps == model_steps.STEPS for r in rows)
    made_zero = {t: [r.model for r in rows if r.made_zero(t)] for t in BACKEND}
    out.append(f"- Loss and gradients equal: {equal['compile']} of {len(rows)} (compile), {equal['wsc']} of "
               f"{len(rows)} (wsc); a gradient none before and zero after (compared as zero) in "
               f"{', '.join(made_zero['compile']) or 'no model'} (compile), {', '.join(made_zero['wsc']) or 'no model'} "
               f"(wsc). Stepped 3 times before: {ran_before} of {len(rows)}; after: "
               f"{stepped['compile']} (compile), {stepped['wsc']} (wsc).")
    out.append("")
    out.append(sites_left(rows, trees))
    return "\n".join(out) + "\n"


def sites_left(rows: list[Row], trees: Path) -> str:
    """The sites left after fixing, grouped by code (the construct), each with its source line and models."""
    left: dict[tuple[str, Site], list[str]] = defaultdict(list)
    for r in rows:
        for target in BACKEND:
            for site in r.after[target].sites.get(BACKEND[target], set()):
                left[(target, site)].append(r.model)
    by_code: dict[str, list[tuple[str, Site]]] = defaultdict(list)
    for target, site in left:
        by_code[site.code].append((target, site))
    lines = [f"Sites left ({len(left)} distinct), by construct:", ""]
    for code in sorted(by_code):
        entries = sorted(by_code[code], key=lambda e: (e[1].path, e[1].line, e[0]))
        # a break no rule names has no shared construct: each site says its own
        lines.append(f"- **{code}** ({len(entries)})" + ("" if code == UNCOVERED else
                                                          f": {entries[0][1].message[:120]}"))
        for target, site in entries:
            text = linecache.getline(str(trees / target / site.path), site.line).strip()
            lines.append(f"  - {target}: `{site.path}:{site.line}` `{text[:100]}` "
                         f"({', '.join(sorted(left[(target, site)]))})"
                         + (f": {site.message}" if code == UNCOVERED else ""))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help=f"comma-separated, of: {', '.join(model_steps.MODELS)} (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="steps checked at once (one child process each)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per model and run")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it (default: a temporary one)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--prepare", type=Path, metavar="DIR",
                        help="only make DIR a project for `--fix --verify` on the models' steps; print the command")
    args = parser.parse_args()
    models = args.models.split(",") if args.models else list(model_steps.MODELS)
    unknown = [m for m in models if m not in model_steps.MODELS]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}")
    if args.prepare:
        if args.prepare.exists():
            parser.error(f"{args.prepare} exists: give a new directory")
        print(prepare(args.prepare, models))
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="cslint-models-"))
    if args.keep and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    rows, summaries, trees = measure(models, work, args.jobs, args.timeout)
    text = table(rows, summaries, trees)
    sys.stdout.write(text)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
