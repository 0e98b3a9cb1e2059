"""Which modules a file imports, read from its text without parsing it.

The cache and the process pool need the import graph of the whole tree before (or instead of) parsing
it. A file reaches another file only through its imports (cslint resolves names from import tables and
nothing else), so the modules named in its import statements bound what its results can depend on. The
scan over-approximates (an import inside a string counts too), which only widens what is re-checked
together; it must never miss a real import.
"""

from __future__ import annotations

import ast
import re

from cslint.analysis.generated_code import generated_twin

# How much text the scan may read, per character of the file, before it hands the file to Python's parser
# instead: each statement start reads to the end of its logical line (to the closing bracket of a
# parenthesised from-import), and a file of many starts on one long line, or of many unclosed brackets,
# would make those reads overlap without end. Real files read each line about once.
WORK_PER_CHARACTER = 32
MIN_WORK = 1_000_000

# A comment inside the brackets is matched whole and never given back (a lookahead-and-backreference
# atomic group; requires-python predates `(?>...)`): backtracking into comments to find a `)` is
# exponential in the number of comment lines after an unclosed bracket.
_STATEMENT = re.compile(
    r"[ \t]*(?:from[ \t\\\n]+(?P<module>\.*[\w.]*)[ \t\\\n]+import\b(?P<names>[ \t]*\((?:[^)#]|(?=(?P<comment>#[^\n]*))(?P=comment))*\)|"
    r"(?:[^\n\\]|\\\n)*)|import\b(?P<plain>(?:[^\n\\]|\\\n)*))",
)
_NAME = re.compile(r"[A-Za-z_][\w.]*")


def resolve_relative(current_package: str, level: int, module: str) -> str:
    """`from ..x import y` inside package `a.b.c` resolves against `a.b` (level 2)."""
    parts = current_package.split(".") if current_package else []
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if module:
        return f"{base}.{module}" if base else module
    return base


def _dotted_names(text: str) -> list[str]:
    """`a.b as c, d` -> [a.b, d] (an `as` alias is not a module)."""
    # without a bracket the names end at the line's comment or at a `;` starting the next statement
    text = text.split("#", 1)[0].split(";", 1)[0] if "(" not in text else re.sub(r"#[^\n]*", "", text)
    names = []
    for part in text.replace("\\\n", " ").replace("(", " ").replace(")", " ").split(","):
        words = part.split()
        if words and _NAME.fullmatch(words[0]):
            names.append(words[0])
    return names


def scan_imports(text: str, module: str, is_package: bool) -> list[str]:
    """Qualified names the file imports: `from .x import y` in package `p` gives `p.x` and `p.x.y`; a
    code-generation template also depends on the module generated from it (generated_code)."""
    twin = generated_twin(module) if not is_package else None
    if "import" not in text:
        return [twin] if twin else []
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = {twin} if twin else set()
    budget = WORK_PER_CHARACTER * len(text) + MIN_WORK
    starts = _statement_starts(text, budget)
    if starts is None or _reads(text, starts) > budget:
        return sorted(found | _parsed_imports(text, package))
    for start in starts:
        match = _STATEMENT.match(text, start)
        if match is None:
            continue
        if match.group("plain") is not None:
            found.update(_dotted_names(match.group("plain")))
            continue
        if (match.group("names") or "").split("#", 1)[0].strip() == "*":
            continue  # the import table ignores star imports, so nothing is looked up through them
        spec = match.group("module") or ""
        level = len(spec) - len(spec.lstrip("."))
        base = resolve_relative(package, level, spec[level:]) if level else spec
        if base:
            found.add(base)
        for name in _dotted_names(match.group("names") or ""):
            found.add(f"{base}.{name}" if base else name)
    return sorted(found)


def _statement_starts(text: str, budget: int) -> set[int] | None:
    """Where a statement holding the word `import` may begin: its line's start (or that of the line it
    continues with a backslash), or just after a `;` or `:` on that line; None when finding them would
    read more than `budget` characters. Searching for the word with str.find is several times faster
    than a multi-line regex over the whole text."""
    starts: set[int] = set()
    position = text.find("import")
    while position >= 0:
        line_start = text.rfind("\n", 0, position) + 1
        while line_start >= 2 and text[line_start - 2] == "\\":
            line_start = text.rfind("\n", 0, line_start - 2) + 1
        budget -= position - line_start
        if budget < 0:
            return None
        head = text[line_start:position]
        lead = head.lstrip(" \t")
        if not lead or lead.startswith("from"):
            starts.add(line_start)
        else:
            cut = max(head.rfind(";"), head.rfind(":"))
            rest = head[cut + 1:].lstrip(" \t")
            if cut >= 0 and (not rest or rest.startswith("from")):
                starts.add(line_start + cut + 1)
        position = text.find("import", position + 6)
    return starts


def _reads(text: str, starts: set[int]) -> int:
    """About how much text matching a statement at each of `starts` reads: to the end of its logical line
    and, where that holds a bracket, to the next `)` (or the end of the file). Counted up to a little past
    the budget, never further: each search reads what it adds."""
    limit = WORK_PER_CHARACTER * len(text) + MIN_WORK
    total = 0
    for start in starts:
        end = text.find("\n", start)
        while end > 0 and text[end - 1] == "\\":
            end = text.find("\n", end + 1)
        end = len(text) if end < 0 else end
        total += end - start
        if text.find("(", start, end) >= 0:
            close = text.find(")", start)
            total += (len(text) if close < 0 else close) - start
        if total > limit:
            break
    return total


def _parsed_imports(text: str, package: str) -> set[str]:
    """The modules the file's import statements name, from Python's parser: what the scan finds minus the
    imports it over-approximates (in strings, comments). A file Python cannot parse is one syntax-error
    finding, which depends on no other file: it imports nothing that matters."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            spec = node.module or ""
            base = resolve_relative(package, node.level, spec) if node.level else spec
            if base:
                found.add(base)
            found.update(f"{base}.{alias.name}" if base else alias.name
                         for alias in node.names if alias.name != "*")
    return found


def ast_dotted_name(node: ast.expr) -> str | None:
    """`dotted_name` for a node of Python's `ast`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = ast_dotted_name(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    return None
