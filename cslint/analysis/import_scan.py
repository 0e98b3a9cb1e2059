"""Which modules a file imports, read from its text without parsing it.

The cache and the process pool need the import graph of the whole tree before (or instead of) parsing
it. A file reaches another file only through its imports (cslint resolves names from import tables and
nothing else), so the modules named in its import statements bound what its results can depend on. The
scan over-approximates (an import inside a string counts too), which only widens what is re-checked
together; it must never miss a real import.
"""

from __future__ import annotations

import re

from cslint.analysis.generated_code import generated_twin

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
    text = text.split("#", 1)[0] if "(" not in text else re.sub(r"#[^\n]*", "", text)
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
    for start in _statement_starts(text):
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


def _statement_starts(text: str) -> set[int]:
    """Where a statement holding the word `import` may begin: its line's start (or that of the line it
    continues with a backslash), or just after a `;` or `:` on that line. Searching for the word with
    str.find is several times faster than a multi-line regex over the whole text."""
    starts: set[int] = set()
    position = text.find("import")
    while position >= 0:
        line_start = text.rfind("\n", 0, position) + 1
        while line_start >= 2 and text[line_start - 2] == "\\":
            line_start = text.rfind("\n", 0, line_start - 2) + 1
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
