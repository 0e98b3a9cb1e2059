"""GitLab Code Quality report, as ruff's `gitlab`: a JSON array of issues with `check_name`,
`description`, `severity` ("major"), a `fingerprint` and `location` (`path`, `lines.begin`/`end`).

Spec: https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format. Paths are relative to
`CI_PROJECT_DIR` when it is set (GitLab's checkout), else as reported. The fingerprint is a digest of the
rule and the path, not the line, so an issue keeps its identity when lines above it move (GitLab compares
fingerprints between branches); a second issue of the same rule in the same file is salted with the first
one's fingerprint until unique, as ruff does. A notebook's finding is placed at line 1.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING, Any

from cslint.core.report import Diagnostic

from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions


def project_path(d: Diagnostic, project_dir: str | None) -> str:
    path = str(d.path)
    if project_dir:
        absolute = os.path.abspath(path)
        try:
            if os.path.commonpath([absolute, os.path.abspath(project_dir)]) == os.path.abspath(project_dir):
                return os.path.relpath(absolute, project_dir)
        except ValueError:  # another drive (Windows)
            pass
    return path


def fingerprint(code: str, path: str, salt: str) -> str:
    return hashlib.blake2b(f"{salt}\0{code}\0{path}".encode("utf-8", "surrogateescape"),
                           digest_size=8).hexdigest()


def issues(result: RunResult, project_dir: str | None) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for d in result.diagnostics:
        path = project_path(d, project_dir)
        print_ = fingerprint(d.code, path, "")
        while print_ in seen:
            print_ = fingerprint(d.code, path, print_)
        seen.add(print_)
        lines = {"begin": 1, "end": 1} if d.cell is not None else {"begin": d.line, "end": max(d.end_line, d.line)}
        out.append({"check_name": d.code, "description": d.message, "severity": "major", "fingerprint": print_,
                    "location": {"path": path, "lines": lines}})
    return out


def render(result: RunResult, options: FormatOptions) -> str:
    return json.dumps(issues(result, os.environ.get("CI_PROJECT_DIR")), indent=2) + "\n"
