"""Reading and writing user files without losing a byte: encoding, BOM, newlines, permissions.

Reads are bounded: only regular files are read (a FIFO or a device named `*.py` would block or never
end), and no more than the size limit. Writes replace a file only if its bytes are still those that were
read and analysed, through a temporary file in the same directory and `os.replace`.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import stat
import tempfile
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cslint.core.notebook import NotebookError, is_notebook

from cslint.core.unsaved import unsaved_text
from cslint.core.report import NOT_ANALYSED, SYNTAX_ERROR
from cslint.support.scratch import process_running

if TYPE_CHECKING:
    import libcst as cst

    from cslint.core.notebook import Notebook



def safe_resolve(path: Path) -> Path:
    """`path.resolve()`, or the absolute path when a symbolic link loops."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return path.absolute()


def content_hash(data: bytes) -> str:
    """What the cache knows a file's content by: a digest of its bytes as read."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class ReadError(Exception):
    """The file cannot be read as Python source; the message is one line for the user."""


class NotAnalysed(ReadError):
    """The file is beyond what cslint analyses (its size, its nesting, its length): one finding (WSC004)
    for that file, with this message, and no analysis. `digest` is what the cache knows the file by."""

    def __init__(self, message: str, digest: str = "") -> None:
        super().__init__(message)
        self._digest = digest

    @property
    def digest(self) -> str:
        return self._digest


class TooLarge(NotAnalysed):
    """The file is over the size limit: reported as a finding for that file, not read."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"file not analysed: {size:,} bytes is over the size limit of {limit:,} bytes "
                         "(`max-file-size`)")
        self.size, self.limit = size, limit

    @property
    def digest(self) -> str:
        """What the cache knows such a file by: its report depends on its size only, and it is never read."""
        return content_hash(f"over the size limit: {self.size} bytes".encode())


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path: Path | str, max_bytes: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file, without blocking on a FIFO or reading a device: opened non-blocking,
    checked with fstat before a byte is read, and read up to `max_bytes`. OSError, or ReadError for a
    file that is not regular or too large."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise ReadError(f"{file_kind(info.st_mode)}, not a regular file: not read")
        if max_bytes is not None and info.st_size > max_bytes:
            raise TooLarge(info.st_size, max_bytes)
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(max_bytes + 1 if max_bytes is not None else -1)
        if max_bytes is not None and len(data) > max_bytes:  # it grew since fstat
            raise TooLarge(len(data), max_bytes)
        return data, info
    finally:
        os.close(fd)


def text_size(text: str, limit: int) -> int:
    """The size of `text` as UTF-8 bytes, as its file would have on disk: exact for a text of up to
    `limit` characters; a longer one is over the limit whatever its encoding, and is measured in
    characters (an editor's buffer of tens of MB is not copied to be measured)."""
    if len(text) > limit or text.isascii():
        return len(text)
    return len(text.encode("utf-8", errors="surrogatepass"))


class UndecodableError(ReadError):
    """The file was read but its bytes are not text in its encoding: a finding about the file (as Python's
    own SyntaxError for it), not a failure to read it."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class SourceFile:
    path: Path
    text: str
    encoding: str = "utf-8"
    bom: bool = False
    mtime_ns: int = 0
    original_text: str | None = None
    digest: str = ""  # content_hash of the bytes the text was decoded from; a fix is written only over these
    tree: cst.Module | None = None
    syntax_error: tuple[int, int, str] | None = None  # line, column (1-based), message
    notebook: Notebook | None = None  # for a notebook, `text` is its code cells as Python (notebook.py)
    problem_code: str = SYNTAX_ERROR  # the code `syntax_error` is reported under (or NOT_ANALYSED)

    @property
    def changed(self) -> bool:
        return self.original_text is not None and self.original_text != self.text


def read_source(path: Path, max_bytes: int | None = None) -> SourceFile:
    """The file's text: an unsaved buffer standing in for it (core/unsaved.py), else what is on disk; for
    a notebook, its code cells as Python."""
    unsaved = unsaved_text(path)
    if unsaved is not None and max_bytes is not None:
        size = text_size(unsaved, max_bytes)
        if size > max_bytes:  # an editor's buffer is held to the limit its file would be
            raise TooLarge(size, max_bytes)
    source = _read_disk(path, max_bytes) if unsaved is None else \
        SourceFile(path=path, text=unsaved, original_text=unsaved)
    return _notebook_source(source) if is_notebook(path) else source


def within_token_limit(source: SourceFile, limit: int) -> SourceFile:
    """The source, unless its text has more than `limit` tokens (budget.py): then NotAnalysed, before
    any parser (Python's or libcst's) spends time and memory in proportion to it."""
    from cslint.support.budget import too_many_tokens

    problem = too_many_tokens(source.text, limit)
    if problem is not None:
        raise NotAnalysed(problem, source.digest)
    return source


def _notebook_source(source: SourceFile) -> SourceFile:
    from cslint.core.notebook import Notebook, NotebookTooDeep

    try:
        notebook = Notebook.parse(source.text)
    except NotebookTooDeep as exc:
        raise NotAnalysed(str(exc), source.digest) from None
    except NotebookError as exc:
        raise ReadError(str(exc)) from None
    source.text = source.original_text = notebook.python
    source.notebook = notebook
    return source


def _read_disk(path: Path, max_bytes: int | None) -> SourceFile:
    try:
        data, info = read_regular(path, max_bytes)
        mtime = info.st_mtime_ns
    except IsADirectoryError:
        raise ReadError("is a directory, not a Python file") from None
    except FileNotFoundError:
        raise ReadError("file disappeared before it could be read") from None
    except PermissionError:
        raise ReadError("permission denied") from None
    except OSError as exc:
        raise ReadError(exc.strerror or str(exc)) from None
    if b"\0" in data:
        raise ReadError("binary data (NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "invalid or missing" in str(exc.msg):
            raise UndecodableError("not valid utf-8, and no PEP 263 encoding declaration says what it is",
                                   _undecodable_line(data, "utf-8")) from None
        raise UndecodableError(f"bad encoding declaration: {exc.msg}", _cookie_line(data)) from None
    digest = content_hash(data)
    bom = data.startswith(b"\xef\xbb\xbf")
    if bom:
        data = data[3:]
        encoding = "utf-8"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        line = data.count(b"\n", 0, exc.start) + 1 if isinstance(exc, UnicodeDecodeError) else _cookie_line(data)
        raise UndecodableError(f"not valid {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}",
                               line) from None
    return SourceFile(path=path, text=text, encoding=encoding, bom=bom, mtime_ns=mtime, original_text=text,
                      digest=digest)


def keep_final_newline(original: str | None, new: str) -> str:
    """`new` ending as `original` did. libcst drops the final newline of a file whose newlines are lone
    CRs (it keeps `\n` and `\r\n`)."""
    if original and original.endswith("\r") and new and not new.endswith(("\r", "\n")):
        return new + "\r"
    return new


def _undecodable_line(data: bytes, encoding: str) -> int:
    try:
        data.decode(encoding)
    except UnicodeDecodeError as exc:
        return data.count(b"\n", 0, exc.start) + 1
    return 1


def _cookie_line(data: bytes) -> int:
    """The line of the PEP 263 encoding declaration (the first or the second)."""
    lines = data.split(b"\n", 2)
    return 2 if len(lines) > 1 and b"coding" in lines[1] and b"coding" not in lines[0] else 1


def for_parser(text: str) -> str:
    """The text to hand a parser written in C or Rust (ast, libcst). Such a parser reads a str as UTF-8,
    and Python then keeps that UTF-8 copy inside the str for as long as the str lives: for the texts the
    index keeps, a second copy of every file with a non-ASCII character (transformers' docstrings hold
    emoji). A non-ASCII text is handed over as a short-lived copy instead."""
    return text if text.isascii() else text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")


def parse_unvalidated(text: str) -> cst.Module:
    """`libcst.parse_module`, without libcst checking every node as it is built. The parser only builds
    valid trees (libcst's own PERF note in `CSTNode.__post_init__` says so), and the checks are 7-10 % of
    a parse; nodes built anywhere else are still checked."""
    import libcst as cst

    node_class = cst.CSTNode
    validate = node_class.__dict__["__post_init__"]
    node_class.__post_init__ = _trusted  # type: ignore[method-assign, assignment]
    try:
        return cst.parse_module(text)
    finally:
        node_class.__post_init__ = validate  # type: ignore[method-assign]


def _trusted(node: object) -> None:
    return None


def parse(source: SourceFile, budget: int | None = None) -> None:
    """Parse `source.text` into `source.tree`, or record the syntax error, or (`budget`, see budget.py)
    that the file is too costly to parse."""
    import libcst as cst  # here, not at the top: runs served from the cache never need the parser

    if python_refuses(source, budget):
        return
    try:
        source.tree = parse_unvalidated(for_parser(source.text))
        source.syntax_error = None
    except cst.ParserSyntaxError as exc:
        source.tree = None
        source.syntax_error = _python_syntax_error(source.text) or (
            exc.raw_line, exc.raw_column + 1,
            f"{' '.join(str(exc.message).split())} (Python accepts it; cslint's parser does not)")
    except RecursionError:
        source.tree = None
        source.syntax_error = (1, 1, "too deeply nested for the parser")


def python_refuses(source: SourceFile, budget: int | None, tree: ast.Module | None = None,
                   kept_costs: dict[tuple[str, int, int], float] | None = None) -> bool:
    """Whether the file is not to be handed to libcst: Python's parser rejects its nesting (libcst would
    take gigabytes), or its expressions are over the analysis `budget` (libcst would take hours). Records
    why in `source.syntax_error`. `tree` is Python's tree of the text, when the caller has it."""
    from cslint.support.budget import may_nest_too_deep, over_budget, source_lines

    if tree is None and (budget is not None or may_nest_too_deep(source.text)):
        try:
            tree = ast.parse(for_parser(source.text))
        except SyntaxError as exc:
            if "too many nested" not in str(exc.msg) and "too deeply nested" not in str(exc.msg):
                return False  # a newer syntax, perhaps: libcst's verdict, as before
            source.tree, source.syntax_error = None, (exc.lineno or 1, exc.offset or 1, exc.msg)
            return True
        except (RecursionError, MemoryError) as exc:  # Python's parser gives up too
            source.tree, source.syntax_error = None, (1, 1, f"too deeply nested for Python's parser ({exc})")
            return True
        except ValueError:
            return False
    if tree is None or budget is None:
        return False
    lines = source_lines(source.text) if kept_costs is not None else None
    problem = over_budget(tree, budget, kept_costs, lines)
    if problem is not None:
        source.tree, source.syntax_error, source.problem_code = None, problem, NOT_ANALYSED
        return True
    return False


def _python_syntax_error(text: str) -> tuple[int, int, str] | None:
    """Python's own account of a syntax error: its location and wording are what users know."""
    try:
        compile(text, "<file>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.offset or 1, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:
        return 1, 1, str(exc) or type(exc).__name__
    return None


TEMP_SUFFIX = ".cslint-tmp"
# .<file name>.<writer's pid>.<random>.cslint-tmp: a later run can tell whether the writer is gone
_TEMP_NAME = re.compile(r"^\..+\.(\d+)\.[A-Za-z0-9_]+" + re.escape(TEMP_SUFFIX) + "$")
STALE_TEMP_SECONDS = 600  # no write takes this long: a temporary file this old is stale whoever wrote it


def write_atomically(source: SourceFile) -> None:
    """Replace the file with `source.text`, keeping encoding, BOM and permissions; never half-written.

    The file is left alone (ReadError) when it is read-only, or when its bytes are no longer those that
    were read: an edit made meanwhile is never lost, even one that kept the modification time
    (`cp -p`, `rsync -t`). The check is made after the new content is on disk in a temporary file, right
    before the `os.replace`."""
    path = source.path
    target = safe_resolve(path)
    try:
        current = os.stat(target)
    except FileNotFoundError:
        raise ReadError("file disappeared before the fix could be written") from None
    if not stat.S_ISREG(current.st_mode):
        raise ReadError(f"{file_kind(current.st_mode)} now, not the file that was read; not overwritten")
    if _read_only(target, current):
        raise ReadError("read-only file; fix not written")
    if source.mtime_ns and current.st_mtime_ns != source.mtime_ns:
        raise ReadError("file changed on disk since it was read; not overwritten")
    try:
        text = source.notebook.with_python(source.text) if source.notebook is not None else source.text
    except NotebookError as exc:
        raise ReadError(str(exc)) from None
    data = text.encode(source.encoding)
    if source.bom:
        data = b"\xef\xbb\xbf" + data
    directory = target.parent
    remove_stale_temp_files(directory)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, current.st_mode & 0o7777)
        if source.digest and _digest_now(target) != source.digest:
            raise ReadError("file changed on disk since it was read; not overwritten")
        os.replace(temp, target)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise


def _read_only(path: Path, info: os.stat_result) -> bool:
    """No write permission for anyone, or none for its owner when that is us, or none for us at all:
    root may write anything, but a file its owner made read-only is not ours to rewrite."""
    owner_cannot = info.st_uid == os.getuid() and not info.st_mode & stat.S_IWUSR
    return not info.st_mode & 0o222 or owner_cannot or not os.access(path, os.W_OK)


def _digest_now(path: Path) -> str | None:
    try:
        data, _ = read_regular(path)
    except (OSError, ReadError):
        return None
    return content_hash(data)


def is_temp_name(name: str) -> bool:
    return name.endswith(TEMP_SUFFIX) and _TEMP_NAME.match(name) is not None


def remove_stale_temp_files(directory: Path | str, names: list[str] | None = None) -> None:
    """Delete cslint's own temporary files in `directory` whose writer is gone (killed mid-write): files
    of its naming, owned by this user, whose process no longer runs or that are older than any write."""
    try:
        names = [n for n in (names if names is not None else os.listdir(directory)) if is_temp_name(n)]
    except OSError:
        return
    now = time.time()
    for name in names:
        match = _TEMP_NAME.match(name)
        assert match is not None
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                continue
            if process_running(int(match.group(1))) and now - info.st_mtime < STALE_TEMP_SECONDS:
                continue
            os.unlink(path)
        except OSError:
            continue
