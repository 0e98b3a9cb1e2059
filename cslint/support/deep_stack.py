"""Run the linter on a thread with a large stack, so deeply nested code cannot crash the process.

libcst's native parser recurses on the C stack and segfaults on deeply nested input (thousands of
parentheses) on the default 8 MB main-thread stack; its visitors and our inference recurse in Python.
A 512 MB thread stack (virtual memory, only touched pages are used) and a higher recursion limit let
both finish; anything deeper still ends in a RecursionError that is reported, not a crash.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 60_000


def run_with_deep_stack(function: Callable[[], T]) -> T:
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(function())
        except BaseException as exc:  # re-raised in the calling thread
            error.append(exc)

    old_size = threading.stack_size()
    old_limit = sys.getrecursionlimit()
    try:
        threading.stack_size(STACK_BYTES)
        sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
        worker = threading.Thread(target=target, name="cslint")
        worker.start()
    finally:
        threading.stack_size(old_size)
    try:
        worker.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return result[0]
