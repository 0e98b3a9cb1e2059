"""What a file hands to `torch.compile`: its model or training step, or only internal helper functions.

A project whose training entry compiles its model (`model = torch.compile(build(cfg))`) or its step
(`@torch.compile def train_step(...)`) is linted as a `torch.compile` project. One that compiles only an
internal function (an optimizer's `torch.compile(_update_fn)`, a kernel its `step()` calls) is not: its
other roots (plain `forward`s and optimizer `step`s) keep the project's target (target_inference.py).

A function is internal when its name is private (`_update_fn`), when it is a method of a class other than
`forward`/`step`/`__call__` (`torch.compile(self._update)`, a decorated helper method), or when its compiled
form is called only inside methods of the file's classes (a `step()` calling a compiled kernel). Anything
else handed to `torch.compile` (a model, `build(cfg)`, `self.model`, a function the file does not define)
compiles the project's model or step. The file is parsed, never executed; one that does not parse counts
as compiling its model, as before this distinction.

A file whose every such call compiles a parameter of the function making it (`def compile(model, **kw):
return torch.compile(model, **kw)`) offers a compile wrapper to its users: the model it compiles is theirs,
so it is no sign that the project holds a step of its own (`passes_through`; analysis/entry_points.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from cslint.analysis.import_scan import ast_dotted_name

_ENTRY_METHODS = frozenset({"forward", "step", "__call__"})


@dataclass(frozen=True)
class CompileUses:
    compiles_entry: bool  # a model, a module or a training step is compiled
    helpers: tuple[str, ...] = ()  # the internal functions compiled, in the file's order
    passes_through: bool = False  # each model or step compiled is a parameter of the function compiling it


def compile_uses(text: str) -> CompileUses:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return CompileUses(True)
    return _Scan(tree).result()


class _Scan:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.compile_names = {"torch.compile"}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.methods: set[str] = set()  # the names of the methods the file's classes define
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
            if isinstance(parent, ast.ImportFrom) and parent.module == "torch" and parent.level == 0:
                self.compile_names |= {a.asname or a.name for a in parent.names if a.name == "compile"}
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if isinstance(self.parents.get(parent), ast.ClassDef):
                    self.methods.add(parent.name)
                else:
                    self.functions.setdefault(parent.name, parent)

    def result(self) -> CompileUses:
        entry = False
        own = False  # a model or step compiled that is not a parameter handed in by the caller
        helpers: list[str] = []
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    self._is_compile(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list):
                internal = self._internal_def(node, {node.name})
            elif isinstance(node, ast.Call) and self._is_compile(node.func) and not self._is_decorator(node):
                compiled = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "model"),
                                                               None)
                internal = self._internal_argument(compiled, node)
            else:
                continue
            if internal is None:
                entry = True
                own = own or not (isinstance(node, ast.Call) and self._is_parameter(compiled, node))
            else:
                helpers.append(internal)
        return CompileUses(entry, tuple(dict.fromkeys(helpers)), entry and not own)

    def _is_parameter(self, compiled: ast.expr | None, call: ast.Call) -> bool:
        """`compiled` names a parameter of the function the call is in."""
        if not isinstance(compiled, ast.Name):
            return False
        node: ast.AST = call
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                args = node.args
                return compiled.id in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        return False

    def _is_compile(self, func: ast.expr) -> bool:
        return ast_dotted_name(func) in self.compile_names

    def _is_decorator(self, call: ast.Call) -> bool:
        parent = self.parents.get(call)
        return isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
            and call in parent.decorator_list

    def _internal_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef, called_as: set[str]) -> str | None:
        """`node`'s name when it is an internal function (its compiled form called as `called_as`), else None."""
        if isinstance(self.parents.get(node), ast.ClassDef):
            return None if node.name in _ENTRY_METHODS else node.name
        if node.name.startswith("_") or self._called_only_in_methods(called_as | {node.name}):
            return node.name
        return None

    def _internal_argument(self, compiled: ast.expr | None, call: ast.Call) -> str | None:
        if isinstance(compiled, ast.Attribute) and isinstance(compiled.value, ast.Name) \
                and compiled.value.id == "self" and compiled.attr in self.methods:
            return None if compiled.attr in _ENTRY_METHODS else compiled.attr
        if isinstance(compiled, ast.Name) and compiled.id in self.functions:
            bound = {compiled.id}
            parent = self.parents.get(call)
            if isinstance(parent, ast.Assign):  # `update = torch.compile(update_fn)`: calls go through `update`
                bound |= {t.id for t in parent.targets if isinstance(t, ast.Name)}
            return self._internal_def(self.functions[compiled.id], bound)
        return None

    def _called_only_in_methods(self, names: set[str]) -> bool:
        """Some call of one of `names` exists, and every one is inside a method of a class."""
        calls = [n for n in ast.walk(self.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id in names]
        return bool(calls) and all(self._in_method(call) for call in calls)

    def _in_method(self, node: ast.AST) -> bool:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    isinstance(self.parents.get(node), ast.ClassDef):
                return True
        return False

