"""Reading and writing user files without losing a byte: encoding, BOM, newlines, permissions."""

from __future__ import annotations

import ast
import hashlib
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cslint.notebook import NotebookError, is_notebook

from cslint.overlay import unsaved_text

if TYPE_CHECKING:
    import libcst as cst

    from cslint.notebook import Notebook



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


@dataclass
class SourceFile:
    path: Path
    text: str
    encoding: str = "utf-8"
    bom: bool = False
    mtime_ns: int = 0
    original_text: str | None = None
    digest: str = ""  # content_hash of the bytes the text was decoded from
    tree: cst.Module | None = None
    syntax_error: tuple[int, int, str] | None = None  # line, column (1-based), message
    notebook: Notebook | None = None  # for a notebook, `text` is its code cells as Python (notebook.py)

    @property
    def changed(self) -> bool:
        return self.original_text is not None and self.original_text != self.text


def read_source(path: Path) -> SourceFile:
    """The file's text: an unsaved buffer standing in for it (overlay.py), else what is on disk; for
    a notebook, its code cells as Python."""
    unsaved = unsaved_text(path)
    source = _read_disk(path) if unsaved is None else SourceFile(path=path, text=unsaved, original_text=unsaved)
    return _notebook_source(source) if is_notebook(path) else source


def _notebook_source(source: SourceFile) -> SourceFile:
    from cslint.notebook import Notebook

    try:
        notebook = Notebook.parse(source.text)
    except NotebookError as exc:
        raise ReadError(str(exc)) from None
    source.text = source.original_text = notebook.python
    source.notebook = notebook
    return source


def _read_disk(path: Path) -> SourceFile:
    try:
        data = path.read_bytes()
        mtime = path.stat().st_mtime_ns
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
            raise ReadError("not valid utf-8, and no PEP 263 encoding declaration says what it is") from None
        raise ReadError(f"bad encoding declaration: {exc.msg}") from None
    digest = content_hash(data)
    bom = data.startswith(b"\xef\xbb\xbf")
    if bom:
        data = data[3:]
        encoding = "utf-8"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise ReadError(f"not valid {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}") from None
    return SourceFile(path=path, text=text, encoding=encoding, bom=bom, mtime_ns=mtime, original_text=text,
                      digest=digest)


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
    node_class.__post_init__ = _trusted  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        node_class.__post_init__ = validate  # type: ignore[method-assign]


def _trusted(node: object) -> None:
    return None


def parse(source: SourceFile) -> None:
    """Parse `source.text` into `source.tree`, or record the syntax error."""
    import libcst as cst  # here, not at the top: runs served from the cache never need the parser

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


def _python_syntax_error(text: str) -> tuple[int, int, str] | None:
    """Python's own account of a syntax error: its location and wording are what users know."""
    try:
        compile(text, "<file>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.offset or 1, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:
        return 1, 1, str(exc) or type(exc).__name__
    return None


def write_atomically(source: SourceFile) -> None:
    """Replace the file with `source.text`, keeping encoding, BOM and permissions; never half-written."""
    path = source.path
    try:
        current = path.stat()
    except FileNotFoundError:
        raise ReadError("file disappeared before the fix could be written") from None
    if source.mtime_ns and current.st_mtime_ns != source.mtime_ns:
        raise ReadError("file changed on disk since it was read; not overwritten")
    try:
        text = source.notebook.with_python(source.text) if source.notebook is not None else source.text
    except NotebookError as exc:
        raise ReadError(str(exc)) from None
    data = text.encode(source.encoding)
    if source.bom:
        data = b"\xef\xbb\xbf" + data
    directory = safe_resolve(path).parent
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".cslint-tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temp, current.st_mode & 0o7777)
        os.replace(temp, safe_resolve(path))
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
