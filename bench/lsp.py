"""How quickly `cslint lsp` answers an editor: didChange -> publishDiagnostics over 50 edits in a traced
function of a real model file, time to first diagnostics, and the server's memory.

    pip install -e '.[lsp]'
    python bench/lsp.py                                   # the installed transformers' models/
    python bench/lsp.py --corpus path/to/transformers/models --file bert/modeling_bert.py
    python bench/lsp.py --project DIR --file DIR/transformers/models/x/modeling_x.py   # in place

The corpus (by default the installed transformers' `models/`) is copied to a temporary directory as
bench/speed.py copies it (the same package path, `transformers/models/...`, so module names and relative
imports resolve as where it is installed; the packages above it get their `__init__.py` only), with a
pyproject.toml at the top; the editor's workspace folder is the corpus (`models/`). `--warm` first runs
`cslint check` on the copy so the server reads a filled cache, as after a CI or pre-commit run;
without it the server fills the cache in the background. `--project` uses a project directory as it
is (no copy, so a cache filled there before is used; the edits are only sent to the server, never
written). Either way the edits start once the server
says the cache is up to date (the workspace is warm). The file is by default the median-sized
`modeling_*.py` with a `forward`. Each edit inserts (then changes) one line at the top of that
`forward`'s body and waits for the diagnostics of that document version; the debounce is the
server's default unless `--debounce` is given. Prints one table, with the load average before and
after (the figures depend on it) and the server's CPU time per edit (which depends on it less);
nothing is asserted. `--profile OUT` runs the server under cProfile during the timed edits only (the
protocol's thread, the analysis worker and the analysis's deep-stack thread, merged) and writes the
stats to OUT (`python -m pstats OUT`).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import importlib.util
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from speed import copy_corpus  # bench/, on the path when this script runs


# The server as `cslint lsp` runs it, profiled between two notifications of the bench (its threads' profiles
# merged into sys.argv[1] when it exits).
PROFILED_SERVER = r"""
import atexit, cProfile, pstats, sys
import cslint.deep_stack as deep
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


def median_model_file(package: Path) -> Path:
    candidates = sorted((p for p in package.rglob("modeling_*.py") if "def forward" in p.read_text("utf-8")),
                        key=lambda p: p.stat().st_size)
    if not candidates:
        raise SystemExit(f"no modeling_*.py with a forward under {package}")
    return candidates[len(candidates) // 2]


def forward_body_line(text: str) -> tuple[int, str]:
    """The 0-based line of the first statement of the first `forward`, and its indentation."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == "forward" and node.body:
            first = node.body[0]
            return first.lineno - 1, " " * first.col_offset
    raise SystemExit("no forward with a body")


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


async def measure(root: Path, folder: Path, file: Path, edits: int, debounce: str | None,
                  profile: Path | None = None) -> dict[str, object]:
    client = LanguageClient("cslint-bench", "1")
    arrived: dict[int, float] = {}
    event = asyncio.Event()
    uri = file.as_uri()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: types.PublishDiagnosticsParams) -> None:
        if params.uri == uri and params.version is not None:
            arrived.setdefault(params.version, time.perf_counter())
            arrived[-1] = len(params.diagnostics)
            event.set()

    warm = asyncio.Event()

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def logged(params: types.LogMessageParams) -> None:
        if "is up to date" in params.message:
            warm.set()

    async def wait_for(version: int) -> float:
        while version not in arrived:
            event.clear()
            await asyncio.wait_for(event.wait(), 600)
        return arrived[version]

    env = dict(os.environ)
    if debounce is not None:
        env["CSLINT_LSP_DEBOUNCE"] = debounce
    started = time.perf_counter()
    command = ["-c", PROFILED_SERVER, str(profile.resolve())] if profile else ["-m", "cslint", "lsp"]
    await client.start_io(sys.executable, *command, cwd=str(root), env=env)
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities(),
                                                         root_uri=folder.as_uri(), workspace_folders=[
        types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)]))
    client.initialized(types.InitializedParams())
    text = file.read_text(encoding="utf-8")
    opened = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=text)))
    first = await wait_for(1) - opened
    findings = arrived[-1]
    await asyncio.wait_for(warm.wait(), 3600)
    warmed = time.perf_counter() - opened
    line, indent = forward_body_line(text)
    latencies = []
    server = client._server
    if profile:
        client.protocol.notify("cslintBench/profile", {"on": True})
    cpu_before = cpu_seconds(server.pid) if server is not None else 0.0
    for i in range(edits):
        version = i + 2
        start = types.Position(line=line, character=0)
        if i == 0:  # insert a line, then change it in place: keystrokes in a traced function
            change = types.TextDocumentContentChangePartial(range=types.Range(start=start, end=start),
                                                            text=f"{indent}cslint_bench = {i}\n")
        else:
            end = types.Position(line=line + 1, character=0)
            change = types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end),
                                                            text=f"{indent}cslint_bench = {i}\n")
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]))
        latencies.append(await wait_for(version) - sent)
    cpu = (cpu_seconds(server.pid) - cpu_before) / edits if server is not None else 0.0
    rss, hwm = peak_mb(server.pid) if server is not None else (0.0, 0.0)
    if profile:
        client.protocol.notify("cslintBench/profile", {"on": False})
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    latencies.sort()
    p95 = latencies[max(0, math.ceil(len(latencies) * 0.95) - 1)]
    return {"start": opened - started, "first": first, "warm": warmed, "findings": findings,
            "p50": statistics.median(latencies), "p95": p95, "max": latencies[-1], "cpu": cpu, "rss": rss,
            "hwm": hwm}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="a directory in a package (default: the installed transformers' "
                        "models/)")
    parser.add_argument("--project", type=Path, help="a project directory, used in place (no copy)")
    parser.add_argument("--file", type=Path, help="the file edited, relative to the corpus (or --project)")
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--debounce", help="seconds (default: the server's)")
    parser.add_argument("--warm", action="store_true", help="fill the cache with `cslint check` first")
    parser.add_argument("--profile", type=Path, help="write the server's cProfile stats of the timed edits here")
    args = parser.parse_args()
    if args.project is not None:
        root = args.project.resolve()
        file = root / args.file if args.file else median_model_file(root)
        before = os.getloadavg()[0]
        found = asyncio.run(measure(root, root, file, args.edits, args.debounce, args.profile))
        report(found, file, file.relative_to(root), root.name, "as found", args.edits, before, os.getloadavg()[0])
        return
    source = args.corpus
    if source is None:
        spec = importlib.util.find_spec("transformers")
        if spec is None or spec.origin is None:
            raise SystemExit("transformers is not installed here: pass --corpus")
        source = Path(spec.origin).parent / "models"
    source = source.resolve()
    with tempfile.TemporaryDirectory(prefix="cslint-lsp-bench-") as temporary:
        root = Path(temporary)
        corpus, _ = copy_corpus(source, None, root)
        (root / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
        file = corpus / args.file if args.file else median_model_file(corpus)
        if args.warm:
            subprocess.run([sys.executable, "-m", "cslint", "check", "--exit-zero", "-q", "."], cwd=root,
                           stdout=subprocess.DEVNULL, check=False)
        before = os.getloadavg()[0]
        found = asyncio.run(measure(root, corpus, file, args.edits, args.debounce, args.profile))
        report(found, file, file.relative_to(root), str(source), "filled" if args.warm else "empty", args.edits,
               before, os.getloadavg()[0])


def report(found: dict[str, object], file: Path, name: Path, project: str, cache: str, edits: int, before: float,
           after: float) -> None:
    print(f"file: {name} ({file.stat().st_size} bytes); project: {project} ({cache} cache); {edits} edits in its "
          "forward")
    print(f"{'server start + initialize':<36} {found['start']:8.2f} s")
    print(f"{'didOpen -> first diagnostics':<36} {found['first']:8.2f} s  ({found['findings']} findings)")
    print(f"{'didOpen -> cache up to date (warm)':<36} {found['warm']:8.2f} s")
    print(f"{'didChange -> diagnostics p50':<36} {found['p50']:8.3f} s")
    print(f"{'didChange -> diagnostics p95':<36} {found['p95']:8.3f} s")
    print(f"{'didChange -> diagnostics max':<36} {found['max']:8.3f} s")
    print(f"{'server CPU time per edit (mean)':<36} {found['cpu']:8.3f} s")
    print(f"{'server memory (now / peak)':<36} {found['rss']:8.0f} / {found['hwm']:.0f} MB")
    print(f"{'load average (1 min) before / after':<36} {before:8.1f} / {after:.1f}  ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
