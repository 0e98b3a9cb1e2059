"""Settings from `[tool.cslint]` in pyproject.toml, overridden by the command line."""

from __future__ import annotations

import difflib
import os
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
    "show-chain", "max-file-size", "max-file-tokens", "analysis-budget", "python",
    "fixable", "unfixable", "extend-fixable", "show-fixes",
    "baseline", "include-uncertain",
}
OUTPUT_FORMATS = ("text", "concise", "grouped", "json", "json-lines", "sarif", "github", "gitlab", "junit", "pylint",
                  "azure", "rdjson")
DEFAULT_MAX_FILE_SIZE = 5_000_000  # bytes: larger than any hand-written module; generated files are not linted
DEFAULT_ANALYSIS_BUDGET = 200_000  # see cslint/support/budget.py
DEFAULT_MAX_FILE_TOKENS = 500_000  # see cslint/support/budget.py
MAX_CONFIG_BYTES = 10_000_000
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1000, "k": 1000, "mb": 1000**2, "m": 1000**2, "gb": 1000**3, "g": 1000**3}


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
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    max_file_tokens: int = DEFAULT_MAX_FILE_TOKENS
    analysis_budget: int = DEFAULT_ANALYSIS_BUDGET
    config_path: Path | None = None
    project_root: Path | None = None
    warnings: tuple[str, ...] = ()
    # set when the target was inferred from the project (cslint/engine/target_inference.py): why it was chosen,
    # and the top-level packages the project imports (a fix never adds an import of any other)
    target_reason: str = ""
    project_packages: tuple[str, ...] | None = None
    # the `torch._dynamo.config` settings the project's module-level code turns on (analysis/dynamo_config.py),
    # read with its imports
    dynamo_config: tuple[str, ...] = ()
    # set with the target's inference: the project has no step of its own (no accelerator package imported, no
    # model or step handed to torch.compile), so it is a library a user's step calls, and its public functions
    # are roots (analysis/entry_points.py)
    entry_points: bool = False
    # findings that rest on an assumption rather than on evidence are reported too (`--include-uncertain`):
    # today a library's entry points, assumed to be called by a user's step
    include_uncertain: bool = False
    # the Python whose installed libraries traced calls are read from (analysis/libraries.py): None for the
    # one cslint runs in, "none" for no libraries
    python: str | None = None
    # how findings are reported when the command line does not say (`--output-format`, `--show-chain`)
    output_format: str | None = None
    show_chain: bool = False
    # whose fixes are offered and applied (cslint/core/fixability.py): codes or prefixes, as ruff's
    fixable: tuple[str, ...] = ("ALL",)
    unfixable: tuple[str, ...] = ()
    extend_fixable: tuple[str, ...] = ()
    show_fixes: bool = False  # list the fixes applied (`--show-fixes`)
    # the baseline file (absolute): findings it lists are not reported (cslint/core/baseline.py)
    baseline: Path | None = None

    def with_overrides(self, **overrides: Any) -> Settings:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    directory = start if _is_dir(start) else start.parent
    for candidate in (directory, *directory.parents):
        path = candidate / "pyproject.toml"
        try:
            if path.is_file():
                return path
        except OSError:  # a directory that cannot be searched: look further up
            continue
    return None


def _is_dir(path: Path) -> bool:
    """`path.is_dir()`, False too for a path inside a directory that cannot be searched (reported by
    discovery for that path, not as an error of the whole run)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _codes(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"`{key}` must be a list of strings")
    return tuple(v.strip().upper() for v in value)


def _rule_codes(value: Any, key: str) -> tuple[str, ...]:
    """Codes or prefixes that must each name at least one rule (a typo would silently select nothing)."""
    from cslint.core.rule_table import RULE_CODES

    codes = _codes(value, key)
    known = [code for code, _ in RULE_CODES] + ["WSC001", "WSC002"]
    unknown = [c for c in codes if c != "ALL" and not any(k.startswith(c) for k in known)]
    if unknown:
        raise ConfigError(f"`{key}` names no rule: {', '.join(unknown)} (see `cslint rule --all`)")
    return codes


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"`{key}` must be a list of strings")
    return tuple(value)


def parse_size(value: Any, key: str = "max-file-size") -> int:
    """A size in bytes: an integer, or a string such as "5MB", "500 kB"."""
    if isinstance(value, bool):
        raise ConfigError(f"`{key}` must be a size in bytes, such as 5000000 or \"5MB\"")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip().lower().replace("_", "")
        digits = text.rstrip("abcdefghijklmnopqrstuvwxyz ").strip()
        unit = text[len(digits):].strip()
        if not digits.isdigit() or unit not in _SIZE_UNITS:
            raise ConfigError(f"`{key}` must be a size in bytes, such as 5000000 or \"5MB\" (got {value!r})")
        number = int(digits) * _SIZE_UNITS[unit]
    else:
        raise ConfigError(f"`{key}` must be a size in bytes, such as 5000000 or \"5MB\"")
    if number < 1:
        raise ConfigError(f"`{key}` must be at least 1 byte")
    return number


def _positive(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"`{key}` must be a positive integer")
    return value


def load_settings(config_file: Path | None, first_path: Path) -> Settings:
    """Settings from `config_file`, else from the nearest pyproject.toml above `first_path`."""
    path = config_file if config_file is not None else find_pyproject(first_path)
    if path is None:
        return Settings(project_root=first_path.resolve() if _is_dir(first_path) else first_path.resolve().parent)
    from cslint.core.sources import ReadError, read_regular

    try:
        data = tomllib.loads(read_regular(path, MAX_CONFIG_BYTES)[0].decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot parse {path}: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"cannot parse {path}: arrays or tables nested too deeply") from None
    except ReadError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    table: Any = data
    if path.name == "pyproject.toml" or isinstance(data.get("tool"), dict):  # also a cslint.toml written so
        table = _table(data, "tool", path)
        table = _table(table, "cslint", path, "tool.")
    return settings_from_table(table, path)


def _table(data: dict[str, Any], key: str, path: Path, prefix: str = "") -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"`{prefix}{key}` in {path} must be a table, not {type(value).__name__} {value!r:.40}")
    return value


def unknown_key(key: str, path: Path | None) -> str:
    """The warning for a key cslint does not read, naming the known key it is likely a typo of."""
    close = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    return f"{path}: unknown [tool.cslint] key `{key}` (ignored){hint}"


def settings_from_table(table: dict[str, Any], path: Path | None) -> Settings:
    warnings = tuple(unknown_key(key, path) for key in table if key not in KNOWN_KEYS)
    kwargs: dict[str, Any] = {"config_path": path, "project_root": path.parent if path else None,
                              "warnings": warnings}
    location = f" in {path}" if path else ""
    try:
        if "select" in table:
            kwargs["select"] = _rule_codes(table["select"], "select")
        if "ignore" in table or "extend-ignore" in table:
            kwargs["ignore"] = _rule_codes(table.get("ignore", []), "ignore") + \
                _rule_codes(table.get("extend-ignore", []), "extend-ignore")
        if "extend-select" in table:
            kwargs["extend_select"] = _rule_codes(table["extend-select"], "extend-select")
        for key in ("fixable", "unfixable", "extend-fixable"):
            if key in table:
                kwargs[key.replace("-", "_")] = _rule_codes(table[key], key)
        if "per-file-ignores" in table:
            pfi = table["per-file-ignores"]
            if not isinstance(pfi, dict):
                raise ConfigError("`per-file-ignores` must be a table of pattern = [codes]")
            kwargs["per_file_ignores"] = {k: _rule_codes(v, f"per-file-ignores.{k}") for k, v in pfi.items()}
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
        if "output-format" in table:
            if table["output-format"] not in OUTPUT_FORMATS:
                raise ConfigError(f"`output-format` must be one of {', '.join(OUTPUT_FORMATS)} "
                                  f"(got {table['output-format']!r:.40})")
            kwargs["output_format"] = table["output-format"]
        if "show-fixes" in table:
            if not isinstance(table["show-fixes"], bool):
                raise ConfigError("`show-fixes` must be true or false")
            kwargs["show_fixes"] = table["show-fixes"]
        if "include-uncertain" in table:
            if not isinstance(table["include-uncertain"], bool):
                raise ConfigError("`include-uncertain` must be true or false")
            kwargs["include_uncertain"] = table["include-uncertain"]
        if "show-chain" in table:
            if not isinstance(table["show-chain"], bool):
                raise ConfigError("`show-chain` must be true or false")
            kwargs["show_chain"] = table["show-chain"]
        if "max-file-size" in table:
            kwargs["max_file_size"] = parse_size(table["max-file-size"])
        if "max-file-tokens" in table:
            kwargs["max_file_tokens"] = _positive(table["max-file-tokens"], "max-file-tokens")
        if "analysis-budget" in table:
            kwargs["analysis_budget"] = _positive(table["analysis-budget"], "analysis-budget")
        for key in ("cerebras-version", "target", "python"):
            if key in table:
                if not isinstance(table[key], str):
                    raise ConfigError(f"`{key}` must be a string")
                kwargs[key.replace("-", "_")] = table[key]
        if "baseline" in table:
            if not isinstance(table["baseline"], str) or not table["baseline"].strip():
                raise ConfigError("`baseline` must be the path of the baseline file, as a string")
            base = path.parent if path else Path.cwd()
            kwargs["baseline"] = Path(os.path.abspath(base / table["baseline"]))
        if "target" in table:
            kwargs["target_reason"] = f"set in {path.name if path else 'the configuration'}"
    except ConfigError as exc:
        raise ConfigError(f"{exc}{location}") from None
    return Settings(**kwargs)
