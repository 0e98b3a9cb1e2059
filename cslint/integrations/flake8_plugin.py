"""The flake8 plugin (`WSC` codes): the same diagnostics as `cslint check`, through flake8.

flake8 applies its own `--select`/`--extend-select`/`--ignore`/`# noqa` to what the plugin yields; the
plugin only makes sure opt-in rules that flake8 selects explicitly are run. Settings come from
`[tool.cslint]` (found from the file, or `--cslint-config`), then the `--cslint-*` options. Columns are
converted to flake8's 0-based convention (flake8 adds 1 when it prints).
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cslint import __version__
from cslint.core.config import ConfigError, Settings, load_settings
from cslint.engine.discovery import find_project_root
from cslint.integrations.project_cache import project_report
from cslint.rules import all_rules
from cslint.core.report import INTERNAL_ERROR
from cslint.engine.runner import SYNTAX_ERROR


class CslintChecker:
    name = "cslint"
    version = __version__

    trace_roots: tuple[str, ...] = ()
    config: Path | None = None
    project_root: Path | None = None
    flake8_selected: tuple[str, ...] = ()

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, manager: Any) -> None:
        manager.add_option("--cslint-trace-roots", default="", parse_from_config=True, comma_separated_list=True,
                           help="cslint: extra traced roots, globs over qualified names (comma-separated)")
        manager.add_option("--cslint-config", default=None, parse_from_config=True,
                           help="cslint: read [tool.cslint] settings from this file (default: nearest "
                                "pyproject.toml)")
        manager.add_option("--cslint-project-root", default=None, parse_from_config=True,
                           help="cslint: directory whose Python files form the project for cross-file call "
                                "chains (default: the nearest directory above the file with pyproject.toml, "
                                "setup.cfg or .git, as for `cslint check`; else the working directory)")

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        cls.trace_roots = tuple(r for r in (getattr(options, "cslint_trace_roots", None) or []) if r)
        config = getattr(options, "cslint_config", None)
        cls.config = Path(config) if config else None
        root = getattr(options, "cslint_project_root", None)
        cls.project_root = Path(root) if root else None
        chosen = list(getattr(options, "select", None) or []) + list(getattr(options, "extend_select", None) or [])
        known = [rule.code for rule in all_rules()]
        cls.flake8_selected = tuple(c.upper() for c in chosen
                                    if c.upper().startswith("WSC") and any(k.startswith(c.upper()) for k in known))

    def settings(self, path: Path) -> tuple[Settings, Path]:
        settings = load_settings(self.config, path if path.exists() else Path.cwd())
        root = self.project_root or find_project_root(path if path.exists() else Path.cwd()) or Path.cwd()
        return settings.with_overrides(
            project_root=root,
            trace_roots=settings.trace_roots + self.trace_roots,
            extend_select=settings.extend_select + self.flake8_selected,
        ), root

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        path = Path(self.filename)
        try:
            settings, root = self.settings(path)
            report = project_report(root, settings)
        except ConfigError as exc:  # the file was not checked: say why on it, in one line (never a pass)
            yield 1, 0, f"{INTERNAL_ERROR} cslint: configuration error: {exc}", type(self)
            return
        for d in report.for_file(path, "".join(self.lines)):
            if d.code == SYNTAX_ERROR:  # flake8 reports E999 itself and never gets here with a bad file
                continue
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
