"""Prove `--fix --unsafe-fixes` on real third-party optimizers (issue 20).

For each optimizer of the corpus below (installed packages, pinned in the docstring of docs/fixes.md):
1. its package is copied twice (original, fixed) and cslint fixes the optimizer's file in the second copy;
2. the fixed file parses, and a second fix run changes nothing;
3. 20 steps on a small model with a Python-float lr give parameters allclose (rtol 1e-5, atol 1e-6) to
   the original's after every step (each run in its own process, importing its own copy);
4. the runtime checker (`cslint.runtime.check`), with `group["lr"]` a tensor on the traced device and
   `preinitialize()` called when the class has one, finds no lazy state (WSC3xx), host sync (WSC2xx,
   WSC4xx) or tensor control flow (WSC1xx) in the optimizer's own file.

    python bench/fixes.py                          # the whole corpus, a table on stdout
    python bench/fixes.py --keep /tmp/fixes --markdown table.md

The originals, the fixed copies and the runtime checks each run in one process (importing torch is slow).

Run it with a Python that has torch, cslint and the packages installed. Exit status 0 always: the table
is the result.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

STEPS = 20
LR = 1e-2

# (package, module, class, constructor keywords)
CORPUS: list[tuple[str, str, str, dict[str, object]]] = [
    ("lion_pytorch", "lion_pytorch.lion_pytorch", "Lion", {}),
    ("adabelief_pytorch", "adabelief_pytorch.AdaBelief", "AdaBelief", {"print_change_log": False}),
    ("dadaptation", "dadaptation.dadapt_adam", "DAdaptAdam", {}),
    ("dadaptation", "dadaptation.dadapt_sgd", "DAdaptSGD", {}),
    ("dadaptation", "dadaptation.dadapt_adagrad", "DAdaptAdaGrad", {}),
    ("dadaptation", "dadaptation.dadapt_lion", "DAdaptLion", {}),
    ("dadaptation", "dadaptation.dadapt_adan", "DAdaptAdan", {}),
    ("prodigyopt", "prodigyopt.prodigy", "Prodigy", {}),
    ("torch_optimizer", "torch_optimizer.accsgd", "AccSGD", {}),
    ("torch_optimizer", "torch_optimizer.adabelief", "AdaBelief", {}),
    ("torch_optimizer", "torch_optimizer.adabound", "AdaBound", {}),
    ("torch_optimizer", "torch_optimizer.adamod", "AdaMod", {}),
    ("torch_optimizer", "torch_optimizer.adamp", "AdamP", {}),
    ("torch_optimizer", "torch_optimizer.aggmo", "AggMo", {}),
    ("torch_optimizer", "torch_optimizer.apollo", "Apollo", {}),
    ("torch_optimizer", "torch_optimizer.diffgrad", "DiffGrad", {}),
    ("torch_optimizer", "torch_optimizer.lamb", "Lamb", {}),
    ("torch_optimizer", "torch_optimizer.lars", "LARS", {}),
    ("torch_optimizer", "torch_optimizer.madgrad", "MADGRAD", {}),
    ("torch_optimizer", "torch_optimizer.novograd", "NovoGrad", {}),
    ("torch_optimizer", "torch_optimizer.pid", "PID", {}),
    ("torch_optimizer", "torch_optimizer.qhadam", "QHAdam", {}),
    ("torch_optimizer", "torch_optimizer.qhm", "QHM", {}),
    ("torch_optimizer", "torch_optimizer.radam", "RAdam", {}),
    ("torch_optimizer", "torch_optimizer.sgdp", "SGDP", {}),
    ("torch_optimizer", "torch_optimizer.sgdw", "SGDW", {}),
    ("torch_optimizer", "torch_optimizer.swats", "SWATS", {}),
    ("torch_optimizer", "torch_optimizer.yogi", "Yogi", {}),
    ("torch_optimizer", "torch_optimizer.a2grad", "A2GradUni", {}),
]

# The runtime target: lr a tensor on the traced device (as a scheduler makes it), preinitialize() called.
RUNTIME_TARGET = """
import json
import torch
from cslint.runtime import OptimizerStep, Step
cls = getattr(__import__({module!r}, fromlist=[{name!r}]), {name!r})
KWARGS = json.loads({kwargs!r})


def _built(device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).to(device)
    opt = cls(model.parameters(), lr={lr!r}, **KWARGS)
    if hasattr(opt, "preinitialize"):
        for state in opt.state.values():
            state.clear()
        opt.preinitialize()
    for group in opt.param_groups:
        group["lr"] = torch.tensor(group["lr"], device=device)
    return model, opt


def make_step(device):
    model, opt = _built(device)

    def step(x):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        return [p.detach() for p in model.parameters()]

    return Step(step, [(torch.randn(8, 6, device=device),) for _ in range(2)])


def make_optimizer():
    model, opt = _built("cpu")
    model(torch.randn(8, 6)).pow(2).mean().backward()
    return OptimizerStep(opt)
"""


def trajectory(module: str, name: str, kwargs: dict[str, object]):  # type: ignore[no-untyped-def]
    """Parameters after each of STEPS steps with a Python-float lr."""
    import torch

    cls = getattr(__import__(module, fromlist=[name]), name)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    opt = cls(model.parameters(), lr=LR, **kwargs)
    steps = []
    for _ in range(STEPS):
        x = torch.randn(8, 6)
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        steps.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    return torch.stack(steps)


def worker(root: str, out: Path, runtime: bool) -> None:
    """In one process (imports are slow): every optimizer's trajectory, imported from `root` (the fixed
    copies) or from the installed packages; with `runtime`, the runtime checker on each, in-process."""
    import torch

    if root:
        sys.path.insert(0, root)
    results: dict[str, dict[str, object]] = {}
    for package, module, name, kwargs in CORPUS:
        key = f"{package}.{name}"
        entry: dict[str, object] = {}
        try:
            torch.save(trajectory(module, name, kwargs), out / f"{key}.pt")
        except Exception as exc:  # noqa: BLE001 - third-party code
            entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
        if runtime and "error" not in entry:
            entry["runtime"], entry["runtime_error"] = _runtime(out, module, name, kwargs)
        results[key] = entry
        print(f"{key}: {entry}", file=sys.stderr, flush=True)
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")


def _runtime(out: Path, module: str, name: str, kwargs: dict[str, object]) -> tuple[list[str], str]:
    from cslint.runtime import check

    target = out / f"target_{module.replace('.', '_')}_{name}.py"
    target.write_text(RUNTIME_TARGET.format(module=module, name=name, kwargs=json.dumps(kwargs), lr=LR),
                      encoding="utf-8")
    own_file = os.path.realpath(importlib.import_module(module).__file__ or "")
    found: set[tuple[str, int]] = set()
    for factory in ("make_optimizer", "make_step"):
        try:
            report = check(f"{target}:{factory}", isolate=False)
        except Exception as exc:  # noqa: BLE001
            return [], f"{type(exc).__name__}: {exc}"[:160]
        if report.error:
            return [], report.error.strip().splitlines()[-1][:160]
        found |= {(f.code, f.line) for f in report.findings
                  if f.code[:4] in ("WSC1", "WSC2", "WSC3", "WSC4") and os.path.realpath(f.path) == own_file}
    return [f"{code} line {line}" for code, line in sorted(found)], ""


@dataclass
class Outcome:
    name: str
    package: str
    changed: bool = False
    parses: bool = False
    idempotent: bool = False
    follows: bool | None = None
    runtime: list[str] = field(default_factory=list)
    runtime_error: str = ""
    remains: str = ""

    @property
    def passed(self) -> bool:
        return self.parses and self.idempotent and bool(self.follows) and not self.runtime \
            and not self.runtime_error


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, package
    return Path(spec.origin).parent


def _fix(paths: list[Path]) -> None:
    subprocess.run([sys.executable, "-m", "cslint", "check", "--no-cache", "--fix", "--unsafe-fixes", "--quiet",
                    *map(str, paths)], capture_output=True, check=False)


def _run_worker(root: Path | None, out: Path, runtime: bool) -> dict[str, dict[str, object]]:
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, __file__, "--worker", str(root or ""), str(out)] + (["--runtime"] if runtime
                                                                                         else []),
                   check=False, cwd=out)
    results = out / "results.json"
    return json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}


def run_all(work: Path) -> list[Outcome]:
    import torch

    fixed_root, again_root = work / "fixed", work / "again"
    for package in dict.fromkeys(c[0] for c in CORPUS):
        for root in (fixed_root, again_root):
            shutil.copytree(_package_dir(package), root / package, ignore=shutil.ignore_patterns("__pycache__"))
    corpus = list(range(len(CORPUS)))
    files = {c: Path(*CORPUS[c][1].split(".")).with_suffix(".py") for c in corpus}
    before = {c: (fixed_root / f).read_text(encoding="utf-8") for c, f in files.items()}
    _fix(sorted({fixed_root / f for f in files.values()}))
    after = {c: (fixed_root / f).read_text(encoding="utf-8") for c, f in files.items()}
    for c, f in files.items():
        (again_root / f).write_text(after[c], encoding="utf-8")
    _fix(sorted({again_root / f for f in files.values()}))
    original = _run_worker(None, work / "run-original", runtime=False)
    fixed = _run_worker(fixed_root, work / "run-fixed", runtime=True)
    outcomes = []
    for c in corpus:
        package, _, name, _ = CORPUS[c]
        key = f"{package}.{name}"
        o = Outcome(name, package, changed=after[c] != before[c])
        try:
            cst.parse_module(after[c])
            o.parses = True
        except cst.ParserSyntaxError:
            o.remains = "the fixed file does not parse"
        o.idempotent = (again_root / files[c]).read_text(encoding="utf-8") == after[c]
        if not o.idempotent:
            o.remains = "a second fix run changes the file"
        first, second = original.get(key, {"error": "no result"}), fixed.get(key, {"error": "no result"})
        if "error" in first:
            o.remains = f"the original does not run: {first['error']}"
        elif "error" in second:
            o.follows = False
            o.remains = f"the fixed optimizer raises: {second['error']}"
        else:
            expected = torch.load(work / "run-original" / f"{key}.pt")
            actual = torch.load(work / "run-fixed" / f"{key}.pt")
            close = [torch.allclose(a, e, rtol=1e-5, atol=1e-6) for a, e in zip(actual, expected)]
            o.follows = all(close)
            if not o.follows:
                at = close.index(False)
                o.remains = (f"parameters leave the original's trajectory at step {at + 1} "
                             f"(max diff {float((actual[at] - expected[at]).abs().max()):.1e})")
            o.runtime = list(second.get("runtime", []))  # type: ignore[call-overload]
            o.runtime_error = str(second.get("runtime_error", ""))
            if o.runtime_error and not o.remains:
                o.remains = f"runtime check failed: {o.runtime_error}"
        outcomes.append(o)
    return outcomes


def table(outcomes: list[Outcome]) -> str:
    def mark(value: bool | None) -> str:
        return "-" if value is None else "yes" if value else "**no**"

    lines = ["| package | optimizer | changed | parses | idempotent | follows (20 steps) | runtime clean | pass "
             "| what remains |", "|---|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        clean = None if o.follows is None and not o.parses else not (o.runtime or o.runtime_error)
        remains = o.remains
        if o.runtime and "runtime" not in remains:
            remains += ("; " if remains else "") + "runtime: " + ", ".join(o.runtime)
        lines.append(f"| {o.package} | {o.name} | {mark(o.changed)} | {mark(o.parses)} | {mark(o.idempotent)} | "
                     f"{mark(o.follows)} | {mark(clean)} | {mark(o.passed)} | {remains.replace('|', '/')} |")
    passed = sum(o.passed for o in outcomes)
    lines.append("")
    lines.append(f"{passed} of {len(outcomes)} pass all checks ({100 * passed / max(len(outcomes), 1):.0f}%); "
                 f"{sum(bool(o.follows) for o in outcomes)} follow the original's trajectory; "
                 f"{sum(o.parses and o.idempotent for o in outcomes)} parse and are idempotent.")
    return "\n".join(lines) + "\n"


def coverage(paths: list[str]) -> str:
    """Per rule family: how many findings have a safe fix, an unsafe fix, no fix (a markdown table)."""
    done = subprocess.run([sys.executable, "-m", "cslint", "check", "--no-cache", "--output-format", "json",
                           *paths], capture_output=True, text=True, check=False)
    counts: dict[str, dict[str, int]] = {}
    for finding in json.loads(done.stdout or "[]"):
        family = finding["code"][:4] + "xx"
        kind = finding["fix"]["applicability"] if finding.get("fix") else "none"
        counts.setdefault(family, {"safe": 0, "unsafe": 0, "none": 0})[kind] += 1
    lines = ["| family | findings | safe fix | unsafe fix | no fix | with a fix |", "|---|---|---|---|---|---|"]
    total = {"safe": 0, "unsafe": 0, "none": 0}
    for family in sorted(counts):
        c = counts[family]
        n = sum(c.values())
        for k in total:
            total[k] += c[k]
        lines.append(f"| {family} | {n} | {c['safe']} | {c['unsafe']} | {c['none']} | "
                     f"{100 * (c['safe'] + c['unsafe']) / n:.0f}% |")
    n = sum(total.values())
    lines.append(f"| all | {n} | {total['safe']} | {total['unsafe']} | {total['none']} | "
                 f"{100 * (total['safe'] + total['unsafe']) / max(n, 1):.0f}% |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it (default: a temporary one)")
    parser.add_argument("--coverage", nargs="+", metavar="PATH",
                        help="only count, per rule family, the findings in PATH with a safe/unsafe/no fix")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--runtime", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], Path(args.worker[1]), args.runtime)
        return 0
    if args.coverage:
        sys.stdout.write(coverage(args.coverage))
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="cslint-fixes-"))
    if args.keep and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    text = table(run_all(work))
    sys.stdout.write(text)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
