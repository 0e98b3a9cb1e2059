"""Steps fed by the user's own `DataLoader` (`Step(fn, loader=loader)`): the batches it yields, where it was
built, and the graph change a batch of another shape makes, reported at that line under the static rule's
code (WSC551 for a smaller batch, WSC552/WSC553 for another length or image size).

The checker reads the whole loader once per backend (it must see the last batch), and runs the step on the
first two batches and on the first batch of every other shape: the shapes are what changes the graph.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.frames import instruction_span, is_library_file
from cslint.runtime.stability import compare_steps, graphs_differ

_BUILT_AT: weakref.WeakKeyDictionary[Any, tuple[str, int]] = weakref.WeakKeyDictionary()

MAX_BATCHES = 10_000

Shapes = tuple[tuple[int, ...], ...]  # the shapes of a batch's tensors, in the order they are found


@contextmanager
def recording_loaders() -> Iterator[None]:
    """While the factory runs, remember the line of the user's code that builds each DataLoader."""
    from torch.utils.data import DataLoader

    original = DataLoader.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if self not in _BUILT_AT:  # a subclass's __init__ calling super().__init__ is one construction
            site = _constructor_call(self, sys._getframe(1))
            if site is not None:
                _BUILT_AT[self] = site

    DataLoader.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        DataLoader.__init__ = original  # type: ignore[method-assign]


def _constructor_call(loader: Any, frame: Any) -> tuple[str, int] | None:
    """The first frame outside torch, the standard library and the loader's own `__init__`s: the call."""
    import torch

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    while frame is not None:
        code = frame.f_code
        own_init = code.co_name == "__init__" and frame.f_locals.get("self") is loader
        if not own_init and not is_library_file(code.co_filename, torch_dir):
            span = instruction_span(code, frame.f_lasti)  # a call written over several lines: its first
            return os.path.abspath(code.co_filename), span[0] if span else frame.f_lineno
        frame = frame.f_back
    return None


def _on(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_on(v, device) for v in value) if type(value) in (list, tuple) else value
    if isinstance(value, dict):
        return {k: _on(v, device) for k, v in value.items()}
    return value


def shapes(value: Any) -> Shapes:
    import torch

    if isinstance(value, torch.Tensor):
        return (tuple(value.shape),)
    if isinstance(value, (list, tuple)):
        return tuple(s for v in value for s in shapes(v))
    if isinstance(value, dict):
        return tuple(s for _, v in sorted(value.items(), key=lambda kv: str(kv[0])) for s in shapes(v))
    return ()


def batches_from(loader: Any, device: str, fallback: tuple[str, int] | None) -> list[tuple[Any, ...]]:
    """The step's arguments for the first two batches and for the first batch of every other shape; a tuple
    or list batch is unpacked into arguments, anything else (a dict) is one argument. `fallback` is where to
    report a loader built before the checker could see it, or an iterable that is not a DataLoader (the
    factory's line)."""
    kept: list[tuple[Any, ...]] = []
    positions: list[int] = []
    seen: set[Shapes] = set()
    count = 0
    for count, batch in enumerate(loader, start=1):
        if count > MAX_BATCHES:
            from cslint.runtime.errors import TargetError

            raise TargetError(f"the loader yielded more than {MAX_BATCHES} batches (an endless stream?): the "
                              "checker reads the whole loader to see its last batch; give it one over a small "
                              "data set")
        signature = shapes(batch)
        if count <= 2 or signature not in seen:
            kept.append(_arguments(_on(batch, device)))
            positions.append(count)
        seen.add(signature)
    _READ[id(loader)] = _Read(positions, count, fallback)
    return kept


@dataclass(frozen=True)
class _Read:
    positions: list[int]  # the 1-based position in the loader of each batch the step runs
    total: int  # how many batches the loader yielded
    fallback: tuple[str, int] | None


# by id: any iterable may be given (a list of batches cannot be weakly referenced); each build reads its
# loader again, and the report is made from the Step that holds it, before the next build
_READ: dict[int, _Read] = {}


def _site(loader: Any, read: _Read) -> tuple[str, int] | None:
    try:
        return _BUILT_AT.get(loader) or read.fallback
    except TypeError:  # not weakly referenceable, so not a DataLoader
        return read.fallback


def _arguments(batch: Any) -> tuple[Any, ...]:
    return tuple(batch) if isinstance(batch, (list, tuple)) else (batch,)


def compare_loader_steps(loader: Any, batches: Sequence[tuple[Any, ...]], per_step: list[list[Any]],
                         report: RuntimeReport) -> None:
    """Graph stability when the batches come from a loader: steps whose batches have the first batch's shapes
    are compared as any steps are; a step whose batch has other shapes and whose graph differs is the
    loader's doing, reported at the line that built it (not as a Python value changing inside the step)."""
    signatures = [shapes(batch) for batch in batches]
    compare_steps([ops for ops, s in zip(per_step, signatures) if s == signatures[0]], report)
    changed = [index for index, ops in enumerate(per_step) if graphs_differ(per_step[0], ops)]
    report_new_shapes(loader, batches, changed, report, "stability")


def report_new_shapes(loader: Any, batches: Sequence[tuple[Any, ...]], changed: Sequence[int],
                      report: RuntimeReport, backend: str) -> None:
    """For the steps (0-based) whose graph changed or was recompiled, those whose batch has other shapes than
    the first batch: one finding per new shape at the line that built the loader."""
    read = _READ.get(id(loader))
    site = _site(loader, read) if read is not None else None
    if read is None or site is None or len(read.positions) != len(batches):
        return
    positions, total = read.positions, read.total
    signatures = [shapes(batch) for batch in batches]
    seen = {signatures[0]}
    for index in sorted(set(changed)):
        if not 0 < index < len(batches) or signatures[index] in seen:
            continue
        seen.add(signatures[index])
        code, what, fix = _what_changed(signatures[0], signatures[index], positions[index], total)
        report.add(RuntimeFinding(
            code, *site, f"the DataLoader built here hands the step batches of another shape: {what}; the traced "
            f"graph changes between step 1 and step {index + 1}, and a static-graph device compiles again for "
            f"each new shape ({fix})", backend))


def _what_changed(first: Shapes, other: Shapes, position: int, total: int) -> tuple[str, str, str]:
    """The static rule's code for how the shapes differ, what differs, and the fix."""
    pairs = list(zip(first, other))
    if len(first) == len(other) and all(a == b or (len(a) == len(b) and a[1:] == b[1:]) for a, b in pairs):
        before, after = next((a[0], b[0]) for a, b in pairs if a != b)
        which = f"the last of its {total} batches" if position == total else f"batch {position}"
        fix = "pass drop_last=True" if position == total and after < before else \
            "give it a sampler that yields full batches"
        return "WSC551", f"{which} has {after} samples where the first has {before}", fix
    changed = next(((a, b) for a, b in pairs if a != b), (first[0] if first else (), other[0] if other else ()))
    if len(changed[0]) == len(changed[1]) >= 4 and changed[0][-2:] != changed[1][-2:]:
        return ("WSC553", f"batch {position} has images of {_size(changed[1][-2:])} where the first has "
                f"{_size(changed[0][-2:])}", "resize or crop to one fixed size")
    return ("WSC552", f"batch {position} has a tensor of shape {_size(changed[1])} where the first has "
            f"{_size(changed[0])}", "pad to a fixed max_length, or a few lengths with pad_to_multiple_of")


def _size(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "()"
