"""A lazy-tensor metrics report (torch_xla's `metrics_report()`, torch's `torch._lazy.metrics.metrics_report()`;
both print lazy tensor core's format) into events.

    Metric: CompileTime
      TotalSamples: 2
      Accumulator: 226ms137.620us
      Percentiles: 1%=...
    Counter: aten::_local_scalar_dense
      Value: 1

A report counts over the whole run: it names no file or line. Its events are the counters that mean a
problem a rule names: an `aten::` counter is an op the device did not lower, run on the host
(`aten::_local_scalar_dense` is a value read, `.item()` and what calls it; `aten::nonzero` & co. a
value-dependent shape), and compiles beyond the first (`UncachedCompile`, `CachedCompile` on torch_xla)
are recompiles.
"""

from __future__ import annotations

import re

from cslint.runtime_logs.events import RuntimeEvent

_BLOCK = re.compile(r"^(?P<kind>Metric|Counter): (?P<name>\S+)\s*$")
_FIELD = re.compile(r"^\s+(?P<field>\w+): (?P<value>.*)$")
# what an `aten::` counter on the host means, by op: the rule family the static pass reports it under
VALUE_READS = ("_local_scalar_dense", "item", "equal", "is_nonzero")
DYNAMIC_SHAPES = ("nonzero", "masked_select", "unique", "_unique2", "unique_consecutive", "masked_scatter")


def looks_like(text: str) -> bool:
    return any(_BLOCK.match(line) for line in text.splitlines()[:200])


def parse(text: str) -> dict[str, dict[str, str]]:
    """`Counter: NAME` / `Metric: NAME` -> its fields (`Value`, `TotalSamples`, `Accumulator`, ...)."""
    blocks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        block = _BLOCK.match(line)
        if block is not None:
            current = blocks.setdefault(f"{block['kind']}: {block['name']}", {})
            continue
        field = _FIELD.match(line)
        if field is not None and current is not None:
            current[field["field"]] = field["value"].strip()
        elif line.strip():
            current = None
    return blocks


def events(text: str) -> list[RuntimeEvent]:
    found: list[RuntimeEvent] = []
    for block, fields in parse(text).items():
        kind, _, name = block.partition(": ")
        if kind != "Counter" or not name.startswith("aten::"):
            continue
        op = name[len("aten::"):]
        family = "WSC2" if op in VALUE_READS else "WSC5" if op in DYNAMIC_SHAPES else ""
        what = "a tensor value read on the host" if family == "WSC2" else \
            "an op whose output shape depends on values" if family == "WSC5" else "an op the device did not lower"
        found.append(RuntimeEvent("counter", f"{name} ran {fields.get('Value', '?')} time(s) on the host: {what}",
                                  "metrics report", extra={"family": family}))
    compiles = parse(text).get("Counter: UncachedCompile", {}).get("Value", "")
    if compiles.isdigit() and int(compiles) > 1:
        found.append(RuntimeEvent("counter", f"UncachedCompile {compiles}: the graph was compiled {compiles} times "
                                  "(each distinct graph once; more than one graph per step is a cut or a change)",
                                  "metrics report", extra={"family": "WSC7"}))
    return found
