"""How quickly `cslint lsp` answers an editor: didChange -> publishDiagnostics for the edits people make, in
a traced function of files picked at random from large libraries; time to first diagnostics; the server's
memory; and whether every publish equals `cslint check` on the same text.

    pip install -e '.[lsp]'
    python bench/lsp.py                          # 20 files, seed 41: transformers' models/ and torch, installed
    python bench/lsp.py --files 4 --rounds 1     # a quick look
    python bench/lsp.py --endurance 2000         # memory after 2,000 edits of one file vs after the first 50
    python bench/lsp.py --project DIR --file transformers/models/m2m_100/modeling_m2m_100.py   # in place

Files are picked with a fixed seed (`--seed`, default 41) among the `modeling_*.py` of the installed
transformers' `models/` that define a `forward` and the torch modules that define a `forward` or an
optimizer's `step` (half from each library, `--libraries` to choose others). The directory of each picked
file is copied to one temporary project under its package path (as bench/speed.py copies a corpus:
`transformers/models/bert/...`, `torch/optim/...`), with a `pyproject.toml` at the top; `cslint check`
fills the project's cache first (a warm project, as after a CI or pre-commit run), then one server
opens each file in turn (time to first diagnostics), makes `--rounds` rounds of edits in its first
traced function (`forward`, else `step`) and closes it. Each round is one edit of each kind, each
waiting for the diagnostics of its document version:

    insert    a new line at the top of the function's body (pressing Enter and typing: every line below moves)
    token     a token of that line changed in place
    delete    the line deleted (every line below moves back)
    paste     a 30-line function pasted above the function (as a method when it is one)
    undo      the paste undone

The server's debounce is its default unless `--debounce` is given. After the server has stopped, every
text a publish was for is written to its file and `cslint check` (with the project's cache) is run on the
project: the publish must equal the check's report of that file (code, line, column, message), else
the bench says which and exits 1. Prints p50/p95 per kind and over all, first diagnostics, the
server's CPU time per edit, its memory, and the load average before and after (the figures depend on
it). `--under-load DIR` keeps a cold `cslint check --no-cache DIR` running (started again each time it
ends) while the server is measured: the issue's "loaded machine" case. `--profile OUT` runs the server
under cProfile during the timed edits only (the protocol's thread, the analysis worker and the
analysis's deep-stack thread, merged) and writes the stats to OUT (`python -m pstats OUT`).
`--endurance N --trace-memory OUT` traces the server's allocations (tracemalloc) from the 50th edit on and
prints what those left alive grew by between edit N/2 and edit N, by traceback (snapshots in OUT.<edits>;
traced, an edit takes many times as long).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import importlib.util
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from speed import package_path  # bench/, on the path when this script runs


# The server as `cslint lsp` runs it, profiled between two notifications of the bench (its threads' profiles
# merged into sys.argv[1] when it exits).
PROFILED_SERVER = r"""
import atexit, cProfile, pstats, sys
import cslint.support.deep_stack as deep
from cslint.lsp import server as lsp

profiles = []
state = {"on": False}
plain_stack, plain_analyse = deep.run_with_deep_stack, lsp.CslintServer._analyse_and_convert

def profiled(function):
    def run(*args):
        if not state["on"]:
            return function(*args)
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()
        try:
            return function(*args)
        finally:
            profile.disable()
    return run

deep.run_with_deep_stack = lambda function: plain_stack(profiled(function))
lsp.CslintServer._analyse_and_convert = profiled(plain_analyse)
protocol_thread = cProfile.Profile()
profiles.append(protocol_thread)

@lsp.server.feature("cslintBench/profile")
def toggle(ls, params):
    state["on"] = bool(params.on)
    (protocol_thread.enable if state["on"] else protocol_thread.disable)()

def dump():
    found = [p for p in profiles if p.getstats()]
    if found:
        stats = pstats.Stats(found[0])
        for p in found[1:]:
            stats.add(p)
        stats.dump_stats(sys.argv[1])

atexit.register(dump)
lsp.main()
"""


# The server as `cslint lsp` runs it, tracing its allocations (tracemalloc) from a request of the bench on, and
# writing snapshots of what they left alive (after a full collection) where each later request says: diffed by
# traceback, they show what grows with the edits.
TRACED_SERVER = r"""
import gc, tracemalloc
from cslint.lsp import server as lsp

@lsp.server.feature("cslintBench/memory")
def memory(ls, params):
    if params.action == "start":
        tracemalloc.start(int(params.frames))
        return None
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    tracemalloc.take_snapshot().dump(params.out)
    return None

lsp.main()
"""


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + system): on a shared machine, steadier than wall time."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_mb(pid: int) -> tuple[float, float]:
    fields = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


KINDS = ("insert", "token", "delete", "paste", "undo")
PASTED_LINES = 30
MAX_DIRECTORY_FILES = 60  # a torch directory copied whole for one picked file: small packages only


def installed(package: str, below: str = "") -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / below if below else Path(spec.origin).parent


def default_libraries() -> list[Path]:
    found = [installed("transformers", "models"), installed("torch")]
    return [p for p in found if p is not None]


def target_function(text: str) -> tuple[int, str, int, str] | None:
    """Where the edits go: the 0-based line of the first statement (after its docstring) of the file's
    first `forward` (else `step`) and its indent, and the 0-based first line of that function (its first
    decorator) and its indent."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for name in ("forward", "step"):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == name and node.body:
                body = node.body
                docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                    isinstance(body[0].value.value, str)
                first = body[1] if docstring and len(body) > 1 else body[0]
                if docstring and len(body) == 1 or first.lineno != (first.end_lineno or first.lineno) and \
                        first.col_offset == 0:
                    continue
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                return first.lineno - 1, " " * first.col_offset, start - 1, " " * node.col_offset
    return None


def candidates(library: Path) -> list[Path]:
    """The library's files the bench may edit: a model file of transformers' `models/`, else any module
    with a `forward` or `step` in a small package."""
    if library.name == "models":
        files = sorted(library.glob("*/modeling_*.py"))
    else:
        files = sorted(p for p in library.rglob("*.py") if "test" not in str(p.relative_to(library))
                       and len(list(p.parent.glob("*.py"))) <= MAX_DIRECTORY_FILES)
    out = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        if ("def forward(" in text or "def step(" in text) and 2_000 < len(text) < 120_000 and target_function(text):
            out.append(path)
    return out


def pick_files(libraries: list[Path], count: int, seed: int) -> list[tuple[Path, Path]]:
    """(library, file): `count` files, as evenly as may be from each library, with a fixed seed."""
    chooser = random.Random(seed)
    picked = []
    for number, library in enumerate(libraries):
        share = count // len(libraries) + (1 if number < count % len(libraries) else 0)
        found = candidates(library)
        picked += [(library, p) for p in chooser.sample(found, min(share, len(found)))]
    return picked


def build_project(root: Path, picked: list[tuple[Path, Path]]) -> list[Path]:
    """Each picked file's directory (its `.py` files) copied under its package path, the packages above
    with their `__init__.py`; the copies of the picked files, in order."""
    copies = []
    for library, path in picked:
        directory = path.parent
        target = root / package_path(directory)
        for source in sorted(directory.glob("*.py")):
            destination = target / source.name
            if not destination.exists():
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination)
        for package in target.relative_to(root).parents:
            if package != Path(".") and (directory.parents[len(package.parts) - 1] / "__init__.py").is_file():
                (root / package / "__init__.py").touch()
        copies.append(target / path.name)
    (root / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    return copies


class Editor:
    """One open document's text as the client holds it, and the edits of each kind as LSP changes."""

    def __init__(self, text: str, where: tuple[int, str, int, str]) -> None:
        self.lines = text.splitlines(keepends=True)
        self.line, self.indent, self.def_line, self.def_indent = where
        self.typed = 0

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def _change(self, start: tuple[int, int], end: tuple[int, int], new: str) -> types.TextDocumentContentChangePartial:
        before, after = self.lines[start[0]][:start[1]] if start[0] < len(self.lines) else "", \
            self.lines[end[0]][end[1]:] if end[0] < len(self.lines) else ""
        self.lines[start[0]:end[0] + 1] = (before + new + after).splitlines(keepends=True)
        return types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=start[0], character=start[1]),
                              end=types.Position(line=end[0], character=end[1])), text=new)

    def edit(self, kind: str) -> types.TextDocumentContentChangePartial:
        self.typed += 1
        at = self.line
        if kind == "insert":
            return self._change((at, 0), (at, 0), f"{self.indent}cslint_bench = {self.typed}\n")
        if kind == "token":  # the number typed on the inserted line
            column = len(f"{self.indent}cslint_bench = ")
            return self._change((at, column), (at, len(self.lines[at].rstrip("\n"))), str(self.typed))
        if kind == "delete":
            return self._change((at, 0), (at + 1, 0), "")
        if kind == "paste":
            return self._change((self.def_line, 0), (self.def_line, 0), pasted_function(self.def_indent, self.typed))
        if kind == "undo":
            return self._change((self.def_line, 0), (self.def_line + PASTED_LINES, 0), "")
        raise ValueError(kind)


def pasted_function(indent: str, number: int) -> str:
    body = [f"def cslint_pasted_{number}(self, x):", "    y = x * 2"]
    body += [f"    y = y + {k}" for k in range(PASTED_LINES - 4)]
    body += ["    return y", ""]
    return "".join(f"{indent}{line}\n" if line else "\n" for line in body)


async def measure(root: Path, files: list[Path], rounds: int, debounce: str | None, endurance: int = 0,
                  profile: Path | None = None, trace: Path | None = None) -> dict[str, object]:
    client = LanguageClient("cslint-bench", "1")
    arrived: dict[tuple[str, int], tuple[float, list[types.Diagnostic]]] = {}
    event = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: types.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            arrived.setdefault((params.uri, params.version), (time.perf_counter(), params.diagnostics))
            event.set()

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def logged(params: types.LogMessageParams) -> None:
        pass

    async def wait_for(uri: str, version: int) -> float:
        while (uri, version) not in arrived:
            event.clear()
            await asyncio.wait_for(event.wait(), 600)
        return arrived[uri, version][0]

    env = dict(os.environ)
    if debounce is not None:
        env["CSLINT_LSP_DEBOUNCE"] = debounce
    command = ["-c", PROFILED_SERVER, str(profile.resolve())] if profile else \
        ["-c", TRACED_SERVER] if trace else ["-m", "cslint", "lsp"]
    await client.start_io(sys.executable, *command, cwd=str(root), env=env)
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities(),
                                                         root_uri=root.as_uri(), workspace_folders=[
        types.WorkspaceFolder(uri=root.as_uri(), name=root.name)]))
    client.initialized(types.InitializedParams())
    server = client._server
    pid = server.pid if server is not None else None
    latencies: dict[str, list[float]] = {kind: [] for kind in KINDS}
    per_file: dict[Path, list[float]] = {}
    first: list[float] = []
    texts: dict[tuple[Path, int], str] = {}
    memory: dict[int, float] = {}
    cpu = 0.0
    edits = 0
    for file in files:
        uri = file.as_uri()
        text = file.read_text(encoding="utf-8")
        where = target_function(text)
        assert where is not None
        opened = time.perf_counter()
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=text)))
        first.append(await wait_for(uri, 1) - opened)
        texts[file, 1] = text
        editor = Editor(text, where)
        if profile:
            client.protocol.notify("cslintBench/profile", {"on": True})
        cpu_before = cpu_seconds(pid) if pid else 0.0
        sequence = [KINDS[i % len(KINDS)] for i in range(endurance)] if endurance else list(KINDS) * rounds
        for version, kind in enumerate(sequence, 2):
            change = editor.edit(kind)
            sent = time.perf_counter()
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[change]))
            latencies[kind].append(await wait_for(uri, version) - sent)
            per_file.setdefault(file, []).append(latencies[kind][-1])
            if not endurance:
                texts[file, version] = editor.text
            elif pid and version - 1 in (50, endurance):
                memory[version - 1] = peak_mb(pid)[0]
            if trace and endurance and version - 1 == 50:
                await client.protocol.send_request_async("cslintBench/memory", {"action": "start", "frames": 10})
            elif trace and endurance and version - 1 in (endurance // 2, endurance):
                await client.protocol.send_request_async("cslintBench/memory", {
                    "action": "snapshot", "out": str(trace.resolve()) + f".{version - 1}"})
        cpu += cpu_seconds(pid) - cpu_before if pid else 0.0
        edits += len(sequence)
        if profile:
            client.protocol.notify("cslintBench/profile", {"on": False})
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
    rss, hwm = peak_mb(pid) if pid else (0.0, 0.0)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    shown = {key: arrived[key[0].as_uri(), key[1]][1] for key in texts}
    return {"latencies": latencies, "per_file": per_file, "first": first, "cpu": cpu / max(1, edits), "rss": rss,
            "hwm": hwm, "texts": texts, "shown": shown, "memory": memory}


@contextlib.contextmanager
def cold_checks(tree: Path | None) -> Iterator[None]:
    """A cold `cslint check` of `tree` kept running meanwhile (nothing when `tree` is None)."""
    if tree is None:
        yield
        return
    stop = threading.Event()
    running: list[subprocess.Popen[bytes]] = []

    def loop() -> None:
        while not stop.is_set():
            running[:] = [subprocess.Popen([sys.executable, "-m", "cslint", "check", "--no-cache", "--exit-zero",
                                            "-q", str(tree)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
            running[0].wait()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        for process in running:
            process.terminate()
        thread.join()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * share) - 1)]


def as_shown(item: dict[str, object]) -> tuple[object, ...]:
    """A `cslint check --output-format json` finding as the server shows it (`convert.to_lsp`)."""
    fix = item.get("fix")
    message = str(item["message"]) + "".join(f"\n{note}" for note in item.get("notes") or [])
    if isinstance(fix, dict):
        message += f"\n(fix, {fix['applicability']}: {fix['message']})"
    return item["code"], item["line"], item["column"], message


def published(diagnostic: types.Diagnostic) -> tuple[object, ...]:
    data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
    return diagnostic.code, data.get("line"), data.get("column"), diagnostic.message


def verify(root: Path, texts: dict[tuple[Path, int], str],
           shown: dict[tuple[Path, int], list[types.Diagnostic]]) -> list[str]:
    """Each published text written to its file and the project checked (with its cache): the differences
    between the publish and the check's report of that file."""
    problems = []
    checked: dict[tuple[Path, str], list[tuple[object, ...]]] = {}
    originals = {path: path.read_text(encoding="utf-8") for path, _ in texts}
    try:
        for (path, version), text in texts.items():
            expected = checked.get((path, text))
            if expected is None:
                path.write_text(text, encoding="utf-8")
                done = subprocess.run([sys.executable, "-m", "cslint", "check", "--exit-zero", "--output-format",
                                       "json", "."], cwd=root, capture_output=True, text=True, check=False)
                try:
                    report = json.loads(done.stdout)
                except json.JSONDecodeError:
                    problems.append(f"{path} version {version}: `cslint check` failed: {done.stderr[-500:]}")
                    continue
                name = str(path.relative_to(root))
                expected = checked[path, text] = sorted(map(as_shown, (d for d in report if d["filename"] == name)),
                                                        key=repr)
                path.write_text(originals[path], encoding="utf-8")
            got = sorted(map(published, shown[path, version]), key=repr)
            if got != expected:
                problems.append(f"{path.relative_to(root)} version {version}: published {got}, "
                                f"`cslint check` {expected}")
    finally:
        for path, text in originals.items():
            path.write_text(text, encoding="utf-8")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--libraries", type=Path, nargs="+", help="directories to pick files from (default: the "
                        "installed transformers' models/ and torch)")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the five edit kinds per file")
    parser.add_argument("--endurance", type=int, default=0, help="this many edits of the first file only; reports "
                        "the server's memory after the first 50 and after them (no check of the publishes)")
    parser.add_argument("--debounce", help="seconds (default: the server's)")
    parser.add_argument("--no-verify", action="store_true", help="skip comparing the publishes with `cslint check`")
    parser.add_argument("--per-edit", action="store_true", help="print each file's edit latencies in the order made")
    parser.add_argument("--profile", type=Path, help="write the server's cProfile stats of the timed edits here")
    parser.add_argument("--trace-memory", type=Path, metavar="OUT", help="with --endurance: trace the server's "
                        "allocations from the 50th edit on, write snapshots of what is alive after half the edits "
                        "and after all of them to OUT.<edits>, and print what grew between the two")
    parser.add_argument("--project", type=Path, help="a project directory used in place (its cache as it is; the "
                        "edits are only sent to the server, never written, so the publishes are not compared)")
    parser.add_argument("--file", type=Path, nargs="+", help="with --project: the files edited, relative to it")
    parser.add_argument("--under-load", type=Path, metavar="DIR", help="keep a cold `cslint check --no-cache DIR` "
                        "running while the server is measured")
    args = parser.parse_args()
    if args.trace_memory is not None and args.endurance <= 100:
        raise SystemExit("--trace-memory needs --endurance over 100 (it traces from the 50th edit to the last)")
    if args.project is not None:
        if not args.file:
            raise SystemExit("--project needs --file")
        root = args.project.resolve()
        files = [root / f for f in args.file]
        args.no_verify = True
        before = os.getloadavg()[0]
        with cold_checks(args.under_load):
            found = asyncio.run(measure(root, files, args.rounds, args.debounce, args.endurance, args.profile,
                                        args.trace_memory))
        report(found, root, files, args, 0.0, before, os.getloadavg()[0], [])
        return
    libraries = [p.resolve() for p in args.libraries] if args.libraries else default_libraries()
    if len(libraries) < 1:
        raise SystemExit("neither transformers nor torch is installed here: pass --libraries")
    picked = pick_files(libraries, 1 if args.endurance else args.files, args.seed)
    with tempfile.TemporaryDirectory(prefix="cslint-lsp-bench-") as temporary:
        root = Path(temporary)
        files = build_project(root, picked)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cslint", "check", "--exit-zero", "-q", "."], cwd=root,
                       stdout=subprocess.DEVNULL, check=False)
        warmed = time.perf_counter() - started
        before = os.getloadavg()[0]
        with cold_checks(args.under_load):
            found = asyncio.run(measure(root, files, args.rounds, args.debounce, args.endurance, args.profile,
                                        args.trace_memory))
        after = os.getloadavg()[0]
        checked = not (args.no_verify or args.endurance)
        problems = verify(root, found["texts"], found["shown"]) if checked else []  # type: ignore[arg-type]
        report(found, root, files, args, warmed, before, after, problems)
    if problems:
        sys.exit(1)


def report(found: dict[str, object], root: Path, files: list[Path], args: argparse.Namespace, warmed: float,
           before: float, after: float, problems: list[str]) -> None:
    python_files = len(list(root.rglob("*.py")))
    if args.project is not None:
        print(f"{root}, a project of {python_files} files, used as it is:")
    else:
        print(f"seed {args.seed}: {len(files)} files, a project of {python_files} files ({warmed:.1f} s to fill its "
              "cache with `cslint check`):")
    per_file: dict[Path, list[float]] = found["per_file"]  # type: ignore[assignment]
    first: list[float] = found["first"]  # type: ignore[assignment]
    for file, opened in zip(files, first):
        times = per_file.get(file, [0.0])
        print(f"  {str(file.relative_to(root)):<72} {file.stat().st_size:>7} bytes  first {opened:5.2f} s  edits: "
              f"p50 {statistics.median(times):.3f} s, max {max(times):.3f} s")
        if args.per_edit:
            print("    " + " ".join(f"{kind}={seconds:.3f}" for kind, seconds in zip(KINDS * args.rounds, times)))
    latencies: dict[str, list[float]] = found["latencies"]  # type: ignore[assignment]
    every = [x for kind in KINDS for x in latencies[kind]]
    print(f"{'didChange -> diagnostics':<28} {'edits':>6} {'p50':>8} {'p95':>8} {'max':>8}")
    for kind, values in [*latencies.items(), ("all", every)]:
        if values:
            print(f"  {kind:<26} {len(values):>6} {statistics.median(values):8.3f} {percentile(values, 0.95):8.3f} "
                  f"{max(values):8.3f} s")
    print(f"{'didOpen -> first diagnostics':<36} p50 {statistics.median(first):.2f} s, max {max(first):.2f} s")
    print(f"{'server CPU time per edit (mean)':<36} {found['cpu']:8.3f} s")
    print(f"{'server memory (now / peak)':<36} {found['rss']:8.0f} / {found['hwm']:.0f} MB")
    memory: dict[int, float] = found["memory"]  # type: ignore[assignment]
    if len(memory) == 2:
        (early, at_early), (late, at_late) = sorted(memory.items())
        print(f"{'memory after edits':<36} {at_early:.0f} MB after {early}, {at_late:.0f} MB after {late} "
              f"({100 * (at_late / at_early - 1):+.0f}%)")
    print(f"{'load average (1 min) before / after':<36} {before:8.1f} / {after:.1f}  ({os.cpu_count()} cores)")
    if args.under_load is not None:
        print(f"{'under load':<36} a cold `cslint check --no-cache {args.under_load}` running throughout")
    if args.endurance or args.no_verify:
        print("publishes not compared with `cslint check`")
    elif problems:
        print(f"{len(problems)} publishes differ from `cslint check` on the same text:")
        for problem in problems:
            print(f"  {problem}")
    else:
        print(f"every publish ({len(found['texts'])}) equals `cslint check` on the same text")  # type: ignore[arg-type]
    if args.trace_memory is not None and args.endurance:
        print_growth(args.trace_memory, args.endurance)


def print_growth(trace: Path, endurance: int, shown: int = 15) -> None:
    """What the server's allocations left alive grew by between the two snapshots, by traceback."""
    import tracemalloc

    half, whole = (tracemalloc.Snapshot.load(f"{trace}.{edits}") for edits in (endurance // 2, endurance))
    changes = whole.compare_to(half, "traceback")
    grown = sum(change.size_diff for change in changes)
    print(f"allocations alive from edit 50 on: {grown / 2**20:+.1f} MB between edit {endurance // 2} and {endurance}")
    for change in changes[:shown]:
        print(f"  {change.size_diff / 2**20:+.2f} MB ({change.count_diff:+} blocks), "
              f"{change.size / 2**20:.2f} MB alive:")
        for frame in change.traceback.format(limit=12, most_recent_first=True):
            print(f"    {frame}")


if __name__ == "__main__":
    main()
