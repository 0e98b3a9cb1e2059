"""The user's frame: the innermost Python frame outside torch (and outside this checker)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from types import CodeType, FrameType

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_STDLIB_NAMES = ("contextlib.py", "functools.py", "threading.py", "runpy.py")


def _torch_dir() -> str:
    torch = sys.modules.get("torch")
    return os.path.dirname(os.path.abspath(torch.__file__)) if torch and torch.__file__ else "\0"


@dataclass(frozen=True)
class UserFrame:
    path: str
    line: int
    code: CodeType
    lasti: int
    function: str


def is_library_file(filename: str, torch_dir: str) -> bool:
    path = os.path.abspath(filename)
    return (path.startswith(torch_dir + os.sep) or path.startswith(_RUNTIME_DIR + os.sep)
            or filename.startswith("<") or os.path.basename(path) in _STDLIB_NAMES)


def user_frame(start: FrameType | None = None, also_skip: tuple[str, ...] = ()) -> UserFrame | None:
    frame = start if start is not None else sys._getframe(1)
    torch_dir = _torch_dir()
    while frame is not None:
        name = frame.f_code.co_filename
        if not is_library_file(name, torch_dir) and not any(os.path.abspath(name) == s for s in also_skip):
            return UserFrame(os.path.abspath(name), frame.f_lineno or 0, frame.f_code, frame.f_lasti,
                             frame.f_code.co_name)
        frame = frame.f_back
    return None


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
