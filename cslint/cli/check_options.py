"""What `cslint check`'s flags mean together: combinations that make no sense, `--show-files`,
`--show-settings`, and warnings about paths and `--trace-roots` that select nothing."""

from __future__ import annotations

import argparse
import ast
import fnmatch
import os
import re
from dataclasses import fields
from pathlib import Path

from cslint.core.config import ConfigError, Settings
from cslint.core.sources import ReadError, read_source, safe_resolve, within_token_limit

# Flags whose effect the first one would drop silently: usage errors (ruff's `conflicts_with`).
CONFLICTS = (
    ("--show-settings", ("--show-files", "--fix", "--diff", "--add-noqa", "--statistics", "--verify",
                         "--output-format", "--output-file", "--show-chain")),
    ("--show-files", ("--fix", "--diff", "--add-noqa", "--statistics", "--verify", "--output-format",
                      "--output-file", "--show-chain")),
    ("--add-noqa", ("--fix", "--diff", "--statistics", "--output-format", "--output-file", "--show-chain")),
    ("--diff", ("--statistics", "--show-chain")),
    ("--statistics", ("--show-chain",)),
)
STATISTICS_FORMATS = ("text", "concise", "json")


def check_flags(args: argparse.Namespace) -> None:
    """Flag combinations that make no sense are usage errors, never silently dropped."""
    given = {"--fix": args.fix, "--diff": args.diff, "--add-noqa": args.add_noqa, "--statistics": args.statistics,
             "--show-files": args.show_files, "--show-settings": args.show_settings,
             "--show-chain": args.show_chain, "--verify": args.verify,
             "--output-format": args.output_format is not None, "--output-file": args.output_file is not None}
    for flag, others in CONFLICTS:
        if given[flag]:
            for other in others:
                if given[other]:
                    raise ConfigError(f"{flag} cannot be combined with {other}")
    if args.diff and args.output_format not in (None, "text"):
        raise ConfigError(f"--diff prints a diff, not --output-format {args.output_format}")
    if args.statistics and (args.output_format or "text") not in STATISTICS_FORMATS:
        raise ConfigError(f"--statistics prints {', '.join(STATISTICS_FORMATS)}, not --output-format "
                          f"{args.output_format}")


def show_files(files: list[Path]) -> str:
    """Each file as it is checked and reported: a symbolic link under its own name (and its target under
    its own, when that is checked too), as ruff lists them."""
    return "".join(f"{path}\n" for path in sorted({os.path.abspath(f) for f in files}))


def show_settings(settings: Settings, codes: list[str], first: Path) -> str:
    def shown(value: object) -> object:
        if isinstance(value, tuple):
            return [shown(v) for v in value]
        if isinstance(value, dict):
            return {k: shown(v) for k, v in value.items()}
        return str(value) if isinstance(value, Path) else value

    lines = [f"Resolved settings for: {safe_resolve(first)}", f"Settings path: {settings.config_path or '(none)'}"]
    lines += [f"{f.name} = {shown(getattr(settings, f.name))!r}" for f in fields(settings) if f.name != "warnings"]
    lines.append(f"enabled rules = {codes!r}")
    return "\n".join(lines) + "\n"


def paths_without_python(paths: list[Path], files: list[Path]) -> list[Path]:
    """The directories named on the command line under which no file is checked."""
    directories = [p for p in paths if _is_directory(p)]
    empty = [d for d in directories if not any(f.is_relative_to(d) for f in files)]
    if not empty:
        return []
    real = [safe_resolve(f) for f in files]
    return [d for d in empty if not any(f.is_relative_to(safe_resolve(d)) for f in real)]


def _is_directory(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # inside an unsearchable directory: reported where it is read
        return False


def unmatched_trace_roots(patterns: list[str], files: list[Path], settings: Settings) -> list[str]:
    """The `--trace-roots` patterns that name no function or method in `files` (qualified names as
    `pkg.mod.func` and `pkg.mod.Class.method`). Only files whose text holds a pattern's literal parts
    are parsed, and only those within the size and token limits (the check does not analyse the others)."""
    from cslint.analysis.module_names import assign_module_names

    left = list(dict.fromkeys(patterns))
    names = assign_module_names(files)
    for path in files:
        if not left:
            break
        try:
            text = within_token_limit(read_source(path, settings.max_file_size), settings.max_file_tokens).text
        except ReadError:
            continue
        candidates = [p for p in left if all(part in text for part in _literal_parts(p))]
        if not candidates:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        module = names[path][0] if path in names else path.stem
        qualnames = list(_qualnames(tree, module))
        left = [p for p in left if p not in candidates or not any(fnmatch.fnmatchcase(q, p) for q in qualnames)]
    return left


def _literal_parts(pattern: str) -> list[str]:
    last = pattern.rsplit(".", 1)[-1]
    return [part for part in re.split(r"[*?\[\]]+", last) if part]


def _qualnames(tree: ast.Module, module: str) -> list[str]:
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(f"{module}.{node.name}")
        elif isinstance(node, ast.ClassDef):
            found += [f"{module}.{node.name}.{item.name}" for item in node.body
                      if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return found
