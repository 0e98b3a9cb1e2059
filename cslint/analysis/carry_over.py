"""An edited buffer's index keeps the entries of its unchanged classes and functions.

An editor indexes the edited document anew on every keystroke. Everything keyed by an index entry's
identity (the function analyses kept between edits, reuse.py; their rule findings, runner.py) would then
be made again for every function of the document, though a keystroke changes one. `carry_over` puts the
previous index's `ClassInfo` and top-level `FunctionInfo` objects into the new index where their text is
the same and so is everything module-level an analysis reads without asking the project (the import
table with the module's definitions, the function tables, the top-level imports, the module-level
object assignments and root calls): moved to the new module, with their new spans. A class whose text
is the same outside its methods' bodies (bases, function tables, the same methods in the same order) is
carried over with its unchanged methods, its changed ones new entries in it; a function whose node came
from the old file's whole tree gives the node up (its findings are placed in the new tree). What asks
about an entry that changed gets a new object, which is never the same answer (reuse.py); what reads a
class's methods without asking (the rules) is keyed by them (runner.py).
"""

from __future__ import annotations

from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo, Span


def carry_over(old: ModuleInfo, new: ModuleInfo) -> list[FunctionInfo]:
    """Move `old`'s unchanged entries into `new` (both `ast`-indexed texts of one file); the functions
    carried over, methods included."""
    if not _same_outline(old, new):
        return []
    moved: list[FunctionInfo] = []
    for name, cls in new.classes.items():
        was = old.classes.get(name)
        if was is None or not _same_frame(old, was, new, cls):
            continue
        assert cls.span is not None
        was.module, was.span, was._node = new, cls.span, None
        methods = {}
        for (method, before), now in zip(was.methods.items(), cls.methods.values()):
            if _same_text(old, before.span, new, now.span):
                _move(before, new, now)
                moved.append(before)
                methods[method] = before
            else:  # the new entry, in the class carried over
                now.cls = was
                methods[method] = now
        was.methods = methods
        new.classes[name] = was
    for name, func in new.functions.items():
        kept = old.functions.get(name)
        if kept is not None and _same_text(old, kept.span, new, func.span):
            _move(kept, new, func)
            new.functions[name] = kept
            moved.append(kept)
    old.classes, old.functions = {}, {}  # nothing of the old index reaches what the new one holds
    return moved


def _same_frame(old: ModuleInfo, was: ClassInfo, new: ModuleInfo, cls: ClassInfo) -> bool:
    """The same class but for its methods' bodies: bases, function tables, methods (by name, in order) and
    every line of its text outside them."""
    if was.span is None or cls.span is None or list(was.methods) != list(cls.methods) or was.bases != cls.bases \
            or was.function_tables != cls.function_tables:
        return False
    return _outside_methods(old, was) == _outside_methods(new, cls)


def _outside_methods(module: ModuleInfo, cls: ClassInfo) -> list[str] | None:
    assert cls.span is not None
    spans = sorted((m.span for m in cls.methods.values()), key=lambda s: s.start if s is not None else -1)
    if any(s is None for s in spans):
        return None
    parts, at = [], cls.span.start
    for span in spans:
        assert span is not None
        parts.append(module.source[at:span.start])
        at = span.end
    parts.append(module.source[at:cls.span.end])
    return parts


def _move(func: FunctionInfo, module: ModuleInfo, now: FunctionInfo) -> None:
    """`func` stands for `now`, the same text in the new index."""
    assert func.span is not None and now.span is not None
    shift = (now.span.start - func.span.start, now.span.line - func.span.line)
    func.module, func.span = module, now.span
    if func.piece is not None:
        func.piece.span = _shifted(func.piece.span, shift)
    else:  # a node of the old file's whole tree (or none): taken again from the new file when needed
        func._node = None


def _shifted(span: Span, shift: tuple[int, int]) -> Span:
    return Span(span.start + shift[0], span.end + shift[0], span.line + shift[1])


def _same_text(old: ModuleInfo, old_span: Span | None, new: ModuleInfo, new_span: Span | None) -> bool:
    return old_span is not None and new_span is not None and \
        old.source[old_span.start:old_span.end] == new.source[new_span.start:new_span.end]


def _texts(module: ModuleInfo, spans: list[Span] | None) -> list[str] | None:
    return None if spans is None else [module.source[s.start:s.end] for s in spans]


def _same_outline(old: ModuleInfo, new: ModuleInfo) -> bool:
    return (old.name, old.path, old.is_package, old.library) == (new.name, new.path, new.is_package, new.library) \
        and vars(old.imports) == vars(new.imports) and old.function_tables == new.function_tables \
        and old.top_level_imports == new.top_level_imports \
        and old.may_have_toplevel_roots == new.may_have_toplevel_roots \
        and old.object_bindings == new.object_bindings \
        and _texts(old, old.root_call_statements) == _texts(new, new.root_call_statements)
