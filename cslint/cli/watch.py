"""`cslint check --watch`: run the check, then again whenever a file it reads changes, as ruff's `--watch`.

Each run clears the screen (on a terminal) and starts with `Starting linter in watch mode...` (the first)
or `File change detected...`, then the report, then `[HH:MM:SS] Watching for file changes.`. The files
watched are those a run reads: the Python files (and notebooks) under the paths named and under the rest
of their project, and the configuration file. Changes are found by polling each file's modification
time, size and inode every half second, or ten times as long as a poll takes when that is longer (no
file-notification library: no new dependency, the same on every platform; the walk reuses discovery's
exclusions, so a large excluded tree costs nothing).
Configuration is read again on every run, as ruff re-reads it when the configuration file changes. A run
that fails with a usage or configuration error prints it and the watch goes on (an editor mid-save can
leave pyproject.toml unparsable for a moment). Ctrl-C ends the watch: `cslint: interrupted`, exit 130.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cslint.core.config import ConfigError, find_pyproject, load_settings

POLL_SECONDS = 0.5
CLEAR_SCREEN = "\x1b[2J\x1b[3J\x1b[H"  # erase the screen and the scrollback, cursor home (as ruff's clearscreen)
# flags that make no sense run again and again (or, with --server, in another process)
WATCH_CONFLICTS = ("--add-noqa", "--show-files", "--show-settings", "--verify", "--server", "--diff")

Snapshot = dict[str, tuple[int, int, int]]


def check_watch_flags(args: argparse.Namespace) -> None:
    given = {"--add-noqa": args.add_noqa, "--show-files": args.show_files, "--show-settings": args.show_settings,
             "--verify": args.verify, "--server": args.server, "--diff": args.diff}
    for flag in WATCH_CONFLICTS:
        if given[flag]:
            raise ConfigError(f"--watch cannot be combined with {flag}")
    if any(str(p) == "-" for p in args.paths) or args.stdin_filename is not None:
        raise ConfigError("--watch cannot read standard input")
    if args.output_format not in (None, "text", "concise", "grouped"):
        print(f"cslint: warning: `--output-format {args.output_format}` is not used in watch mode: "
              "`text` is", file=sys.stderr)
        args.output_format = "text"


def watched_files(args: argparse.Namespace) -> Snapshot:
    """(mtime, size, inode) of every file a run reads; a file that vanished is simply absent."""
    from cslint.engine.discovery import collect_files, project_roots

    paths = args.paths or [Path(".")]
    try:
        settings = load_settings(args.config, paths[0])
        named = [p for p in paths if os.path.exists(p)]
        roots = [] if args.isolated else [root for root in project_roots(named) if root not in named]
        files = collect_files(named + roots, settings, [])
    except (ConfigError, OSError):
        files = []
    config = args.config or find_pyproject(paths[0])
    snapshot: Snapshot = {}
    for path in [*files, *([config] if config else [])]:
        try:
            info = os.stat(path)
        except OSError:
            continue
        snapshot[str(path)] = (info.st_mtime_ns, info.st_size, info.st_ino)
    return snapshot


def wait_for_change(args: argparse.Namespace, before: Snapshot,
                    sleep: Callable[[float], None] = time.sleep) -> Snapshot:
    """Polls until the snapshot differs; the pause is at least ten times what a poll took, so watching a
    large tree idles at a tenth of a core at most."""
    pause = POLL_SECONDS
    while True:
        sleep(pause)
        started = time.perf_counter()
        now = watched_files(args)
        if now != before:
            return now
        pause = max(POLL_SECONDS, 10 * (time.perf_counter() - started))


def watch(args: argparse.Namespace, run_once: Callable[[argparse.Namespace], int]) -> int:
    """Runs `run_once(args)` now and after every change, until interrupted (KeyboardInterrupt goes up to
    cli.main, which exits 130)."""
    check_watch_flags(args)
    args.watch = False  # each run is a plain check
    terminal = _is_terminal(sys.stdout)
    banner = "Starting linter in watch mode..."
    while True:
        snapshot = watched_files(args)  # taken before the run: a change during the run starts another
        if terminal:
            sys.stdout.write(CLEAR_SCREEN)
        print(banner, flush=True)
        try:
            run_once(args)
        except ConfigError as exc:
            from cslint.output.escape import escape_text

            print(f"cslint: error: {escape_text(str(exc))}", file=sys.stderr)
        sys.stdout.flush()
        print(f"[{time.strftime('%H:%M:%S')}] Watching for file changes.", file=sys.stderr, flush=True)
        wait_for_change(args, snapshot)
        banner = "File change detected..."


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False
