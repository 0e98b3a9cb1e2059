"""Settings from `[tool.cslint]` in pyproject.toml, overridden by the command line."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """A problem with the configuration, reported as one line and exit code 2."""


DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache",
    ".ruff_cache", ".pytest_cache", ".cslint_cache", "build", "dist", "node_modules", "site-packages",
    ".eggs", "*.egg-info",
)

KNOWN_KEYS = {
    "select", "ignore", "extend-select", "extend-ignore", "per-file-ignores", "exclude", "extend-exclude",
    "trace-roots", "unsafe-fixes", "cerebras-version", "target", "runtime-targets", "output-format",
    "show-chain",
}


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("WSC",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    trace_roots: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    cerebras_version: str = "2.4"
    target: str = "wsc"
    runtime_targets: tuple[str, ...] = ()
    config_path: Path | None = None
    project_root: Path | None = None
    warnings: tuple[str, ...] = ()
    # set when the target was inferred from the project (cslint/target_inference.py): why it was chosen,
    # and the top-level packages the project imports (a fix never adds an import of any other)
    target_reason: str = ""
    project_packages: tuple[str, ...] | None = None

    def with_overrides(self, **overrides: Any) -> Settings:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            return path
    return None


def _codes(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"`{key}` must be a list of strings")
    return tuple(v.strip().upper() for v in value)


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"`{key}` must be a list of strings")
    return tuple(value)


def load_settings(config_file: Path | None, first_path: Path) -> Settings:
    """Settings from `config_file`, else from the nearest pyproject.toml above `first_path`."""
    path = config_file if config_file is not None else find_pyproject(first_path)
    if path is None:
        return Settings(project_root=first_path.resolve() if first_path.is_dir() else first_path.resolve().parent)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot parse {path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    table = data.get("tool", {}).get("cslint", {}) if path.name == "pyproject.toml" else data
    if "tool" in table and isinstance(table.get("tool"), dict):  # a cslint.toml written like pyproject
        table = table["tool"].get("cslint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.cslint] in {path} must be a table")
    return settings_from_table(table, path)


def settings_from_table(table: dict[str, Any], path: Path | None) -> Settings:
    warnings = tuple(f"{path}: unknown [tool.cslint] key `{key}` (ignored)"
                     for key in table if key not in KNOWN_KEYS)
    kwargs: dict[str, Any] = {"config_path": path, "project_root": path.parent if path else None,
                              "warnings": warnings}
    location = f" in {path}" if path else ""
    try:
        if "select" in table:
            kwargs["select"] = _codes(table["select"], "select")
        if "ignore" in table or "extend-ignore" in table:
            kwargs["ignore"] = _codes(table.get("ignore", []), "ignore") + \
                _codes(table.get("extend-ignore", []), "extend-ignore")
        if "extend-select" in table:
            kwargs["extend_select"] = _codes(table["extend-select"], "extend-select")
        if "per-file-ignores" in table:
            pfi = table["per-file-ignores"]
            if not isinstance(pfi, dict):
                raise ConfigError("`per-file-ignores` must be a table of pattern = [codes]")
            kwargs["per_file_ignores"] = {k: _codes(v, f"per-file-ignores.{k}") for k, v in pfi.items()}
        if "exclude" in table:
            kwargs["exclude"] = _strings(table["exclude"], "exclude")
        if "extend-exclude" in table:
            kwargs["extend_exclude"] = _strings(table["extend-exclude"], "extend-exclude")
        if "trace-roots" in table:
            kwargs["trace_roots"] = _strings(table["trace-roots"], "trace-roots")
        if "runtime-targets" in table:
            kwargs["runtime_targets"] = _strings(table["runtime-targets"], "runtime-targets")
        if "unsafe-fixes" in table:
            if not isinstance(table["unsafe-fixes"], bool):
                raise ConfigError("`unsafe-fixes` must be true or false")
            kwargs["unsafe_fixes"] = table["unsafe-fixes"]
        for key in ("cerebras-version", "target"):
            if key in table:
                if not isinstance(table[key], str):
                    raise ConfigError(f"`{key}` must be a string")
                kwargs[key.replace("-", "_")] = table[key]
        if "target" in table:
            kwargs["target_reason"] = f"set in {path.name if path else 'the configuration'}"
    except ConfigError as exc:
        raise ConfigError(f"{exc}{location}") from None
    return Settings(**kwargs)
