"""SARIF 2.1.0 report, as GitHub code scanning reads it: rule metadata with help text and URIs, results
with 1-based regions relative to the working directory (`%SRCROOT%`), and the trace chain as a property.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cslint import __version__
from cslint.output.docs import DOCS_URL, render_rule, rule_url
from cslint.rules import Rule, all_rules
from cslint.core.report import INTERNAL_ERROR, NOT_ANALYSED, SYNTAX_ERROR, Diagnostic
from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
ENGINE_RULES = {SYNTAX_ERROR: ("syntax-error", "The file does not parse as Python."),
                INTERNAL_ERROR: ("internal-error", "cslint failed while analysing this file."),
                NOT_ANALYSED: ("not-analysed", "The file is over the size limit or the analysis budget.")}


def _uri(path: Path) -> str:
    """A relative URI from the working directory when the file is under it, else an absolute file URI."""
    try:
        return Path(os.path.relpath(path.resolve(), Path.cwd().resolve())).as_posix() \
            if path.resolve().is_relative_to(Path.cwd().resolve()) else path.resolve().as_uri()
    except ValueError:
        return path.resolve().as_uri()


def rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": " ".join(rule.why.split())},
        "help": {"text": f"{rule.summary} See {rule_url(rule.code)}", "markdown": render_rule(rule)},
        "helpUri": rule_url(rule.code),
        "defaultConfiguration": {"level": "error", "enabled": rule.default_enabled},
        "properties": {"tags": ["static-graph", "pytorch"], "fixSafety": rule.fix_safety},
    }


def _engine_descriptor(code: str) -> dict[str, Any]:
    name, text = ENGINE_RULES[code]
    return {"id": code, "name": name, "shortDescription": {"text": text}, "helpUri": f"{DOCS_URL}/index.md",
            "defaultConfiguration": {"level": "error"}}


def _result(d: Diagnostic, index: int) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": d.line, "startColumn": d.column}
    if d.end_line >= d.line:
        region.update(endLine=d.end_line, endColumn=max(d.end_column, 1))
    result: dict[str, Any] = {
        "ruleId": d.code,
        "ruleIndex": index,
        "level": "error",
        "message": {"text": d.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": _uri(d.path), "uriBaseId": "%SRCROOT%"},
            "region": region,
        }}],
    }
    if d.library_sites:  # the installed library's lines that do it (outside %SRCROOT%: absolute file URIs)
        result["relatedLocations"] = [
            {"id": i, "message": {"text": f"in the library: `{code}`"}, "physicalLocation": {
                "artifactLocation": {"uri": Path(path).absolute().as_uri()}, "region": {"startLine": line}}}
            for i, (path, line, code) in enumerate(d.library_sites)]
    properties: dict[str, Any] = {"targets": list(d.targets)}
    if d.notes:
        properties["notes"] = d.notes
    if d.chain:
        properties["traceChain"] = d.chain
        properties["tracedBecause"] = d.reason
    if d.assumption:
        properties["certainty"] = d.certainty
        properties["assumption"] = d.assumption
    if d.cell is not None:  # SARIF has no notebook cells: the region's lines are within this cell
        properties["cell"] = d.cell
    if d.fix is not None:
        properties["fix"] = {"applicability": d.fix.applicability, "message": d.fix.message}
    if d.graph_break is not None:  # the runtime's id for this break and its page
        properties["graphBreak"] = {"id": d.graph_break.id, "type": d.graph_break.type,
                                    "hint": d.graph_break.hint, "helpUri": d.graph_break.url}
    if properties:
        result["properties"] = properties
    return result


def render(result: RunResult, options: FormatOptions) -> str:
    by_code = {rule.code: rule for rule in all_rules()}
    used = sorted({d.code for d in result.diagnostics})
    descriptors = [rule_descriptor(by_code[c]) if c in by_code else _engine_descriptor(c)
                   for c in used if c in by_code or c in ENGINE_RULES]
    index = {descriptor["id"]: i for i, descriptor in enumerate(descriptors)}
    log = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cslint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": f"{DOCS_URL}/index.md",
                "rules": descriptors,
            }},
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
            "results": [_result(d, index.get(d.code, -1)) for d in result.diagnostics],
            "invocations": [{
                "executionSuccessful": not result.errors,
                "toolExecutionNotifications": [{"level": "error", "message": {"text": e}} for e in result.errors],
            }],
        }],
    }
    return json.dumps(log, indent=2) + "\n"
