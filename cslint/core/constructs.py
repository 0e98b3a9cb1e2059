"""Which rule code a call on a tensor belongs to: one table that the static rules, the summaries of installed
libraries' functions (analysis/libraries.py) and the runtime classifier (runtime/classify.py) all read, so
that `t.numpy()` is WSC201 whether a rule sees it in the step, a summary finds it in a library the step
calls, or the lazy backend catches it running.

What a rule reports beyond the name of the call (`.to` only when it names the CPU, `max(...)` only when it
compares tensors) stays with the rule.
"""

from __future__ import annotations

# `t.<method>()`: a tensor's value, or a copy of it, handed to the host
TENSOR_METHODS: dict[str, str] = {
    "item": "WSC201", "tolist": "WSC201", "numpy": "WSC201",  # read into Python
    "cpu": "WSC202", "to": "WSC202",  # copied to the CPU
}
# `<builtin>(t)`: Python's builtin applied to a tensor
BUILTINS: dict[str, str] = {
    "float": "WSC203", "int": "WSC203", "bool": "WSC203", "complex": "WSC203",  # a Python number
    "min": "WSC205", "max": "WSC205", "abs": "WSC205", "round": "WSC205", "sum": "WSC205",  # Python's, not torch's
    "str": "WSC206", "repr": "WSC206", "format": "WSC206",  # formatted into text
    "range": "WSC107", "len": "WSC107",  # a loop's trip count
}


def _calls_of(table: dict[str, str], code: str) -> frozenset[str]:
    return frozenset(name for name, of in table.items() if of == code)


READ_METHODS = _calls_of(TENSOR_METHODS, "WSC201")
CONVERSIONS = _calls_of(BUILTINS, "WSC203")
PYTHON_REDUCTIONS = _calls_of(BUILTINS, "WSC205")
FORMATTERS = _calls_of(BUILTINS, "WSC206")
