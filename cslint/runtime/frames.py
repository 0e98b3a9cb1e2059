"""The user's frame: the innermost Python frame outside torch, the standard library and this checker; and the
chain of frames from the step down to the op, for `--show-chain`."""

from __future__ import annotations

import logging
import os
import site
import sys
import sysconfig
from dataclasses import dataclass, field
from types import CodeType, FrameType

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


_TORCH_DIR: list[str] = []  # known once torch is imported; asked for per traced op


def _torch_dir() -> str:
    if _TORCH_DIR:
        return _TORCH_DIR[0]
    torch = sys.modules.get("torch")
    if not (torch and torch.__file__):
        return "\0"
    _TORCH_DIR.append(os.path.dirname(os.path.abspath(torch.__file__)))
    return _TORCH_DIR[0]


def _stdlib_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The standard library's directories, and the package directories that may lie inside them."""
    paths = sysconfig.get_paths()
    stdlib = {os.path.abspath(paths[k]) for k in ("stdlib", "platstdlib") if paths.get(k)}
    packages = {os.path.abspath(p) for p in [*site.getsitepackages(), site.getusersitepackages(),
                                            paths.get("purelib", ""), paths.get("platlib", "")] if p}
    return tuple(stdlib), tuple(packages)


_STDLIB, _PACKAGES = _stdlib_dirs()


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r + os.sep) for r in roots)


@dataclass(frozen=True)
class UserFrame:
    path: str
    line: int
    code: CodeType
    lasti: int
    function: str
    chain: tuple[str, ...] = field(default=(), compare=False)  # "path:line in function", outermost first


def is_library_file(filename: str, torch_dir: str) -> bool:
    """Code the user does not edit: torch, the standard library, this checker, generated code."""
    if filename.startswith("<"):
        return True
    path = os.path.abspath(filename)
    return (path.startswith(torch_dir + os.sep) or path.startswith(_RUNTIME_DIR + os.sep)
            or (_under(path, _STDLIB) and not _under(path, _PACKAGES)))


# The wrapper that keeps dynamo out of a dispatch mode's `__torch_dispatch__`, between every op and the mode.
_DISABLE_DYNAMO = (os.path.join("torch", "_compile.py"), os.path.join("torch", "_dynamo", "eval_frame.py"))


def is_plumbing(filename: str) -> bool:
    """Frames of this checker and of torch's dispatch machinery: never a site, never in a chain."""
    path = os.path.abspath(filename)
    return path.startswith(_RUNTIME_DIR + os.sep) or os.path.basename(path) in ("_ops.py", "_python_dispatch.py") \
        or path.endswith(_DISABLE_DYNAMO) and path.startswith(_torch_dir() + os.sep)


_LIBRARY_CODE: dict[CodeType, bool] = {}  # a stack walk per traced op: decide once per code object
_PLUMBING_CODE: dict[CodeType, bool] = {}


def _is_library_code(code: CodeType, torch_dir: str) -> bool:
    known = _LIBRARY_CODE.get(code)
    if known is None:
        known = _LIBRARY_CODE[code] = is_library_file(code.co_filename, torch_dir)
    return known


def _is_plumbing_code(code: CodeType) -> bool:
    known = _PLUMBING_CODE.get(code)
    if known is None:
        known = _PLUMBING_CODE[code] = is_plumbing(code.co_filename)
    return known


def call_chain(frame: FrameType | None) -> tuple[str, ...]:
    """Every frame of the step from its function down to `frame`, without this checker's and dispatch frames."""
    frames: list[str] = []
    while frame is not None:
        code = frame.f_code
        if _is_plumbing_code(code) and code.co_name in _STEP_CALLERS:
            break
        if not code.co_filename.startswith("<") and not _is_plumbing_code(code):
            frames.append(f"{os.path.abspath(code.co_filename)}:{frame.f_lineno} in {code.co_name}")
        frame = frame.f_back
    return tuple(reversed(frames))


def user_frame(start: FrameType | None = None, also_skip: tuple[str, ...] = (),
               chain: bool = False) -> UserFrame | None:
    """The innermost frame outside the libraries; a logging handler called back by the standard library's
    logging is not it (the user's log call is); when the whole step is library code (a target returning a
    bound `optimizer.step`), the outermost library frame of the step."""
    frame = start if start is not None else sys._getframe(1)
    torch_dir = _torch_dir()
    found = outermost = None
    while frame is not None:
        code = frame.f_code
        if _is_plumbing_code(code) and code.co_name in _STEP_CALLERS:
            break
        if found is None:
            if not _is_library_code(code, torch_dir) and \
                    not (also_skip and os.path.abspath(code.co_filename) in also_skip):
                found = frame
            elif not _is_plumbing_code(code) and not code.co_filename.startswith("<"):
                outermost = frame
        elif code.co_filename.startswith(_LOGGING_DIR):
            found = None
        frame = frame.f_back
    chosen = found or outermost
    if chosen is None:
        return None
    return UserFrame(os.path.abspath(chosen.f_code.co_filename), chosen.f_lineno or 0, chosen.f_code,
                     chosen.f_lasti, chosen.f_code.co_name, call_chain(start) if chain else ())


_LOGGING_DIR = os.path.dirname(os.path.abspath(logging.__file__)) + os.sep
# The checker's functions that call the user's step: above them, nothing is part of the step.
_STEP_CALLERS = ("run_lazy", "trace_fake", "execute", "run_dynamo", "check_optimizer")


def instruction_span(code: CodeType, lasti: int) -> tuple[int, int, int, int] | None:
    """(line, end_line, col, end_col) of the bytecode instruction being executed, 0-based columns."""
    positions = list(code.co_positions())
    index = lasti // 2
    if not 0 <= index < len(positions):
        return None
    line, end_line, col, end_col = positions[index]
    if line is None or end_line is None or col is None or end_col is None:
        return None
    return line, end_line, col, end_col


def raise_site(exc: BaseException) -> tuple[str, int] | None:
    """Where an exception left code outside torch and this checker: the innermost such traceback frame."""
    torch_dir = _torch_dir()
    site = None
    tb = exc.__traceback__
    while tb is not None:
        if not is_library_file(tb.tb_frame.f_code.co_filename, torch_dir):
            site = (os.path.abspath(tb.tb_frame.f_code.co_filename), tb.tb_lineno)
        tb = tb.tb_next
    return site
