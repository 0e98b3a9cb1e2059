"""The dependency rule (docs/architecture.md): a cslint module imports only from its own package or from the
packages below it, and no modules import each other in a circle.

Every import counts, at any depth of the file: at the top, inside functions, under `if TYPE_CHECKING:`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import cslint

PACKAGE = Path(cslint.__file__).parent

# bottom up; a package may import its own modules and those of the layers before it. The front ends share a
# layer: they use each other (the CLI starts the language server, the server runs the CLI), never in a circle.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("support",), ("core",), ("analysis",), ("rule_api",), ("fixers",), ("rules",), ("store",), ("engine",),
    ("output",), ("cli", "server", "lsp", "runtime", "runtime_logs", "integrations"), ("launch", "__main__"),
)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def imported_names(path: Path, name: str) -> set[str]:
    """Every dotted name `path` (the module `name`) imports anywhere in the file, relative imports resolved;
    `from a import b` gives both `a` and `a.b` (b may be a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the cslint modules it imports (a package's `__init__` counts as the package)."""
    return {name: {m for m in imported_names(path, name) if m in modules and m != name}
            for name, path in modules.items()}


@cache
def cslint_graph() -> dict[str, set[str]]:
    return import_graph(all_modules())


def layer_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return -1  # `cslint/__init__.py`: the version, importable from anywhere
    return next((i for i, layer in enumerate(LAYERS) if parts[1] in layer), len(LAYERS))


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{importer} imports {imported}" for importer, targets in graph.items() for imported in targets
                  if layer_of(imported) > layer_of(importer))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(iter(children), None)  # type: ignore[call-overload]
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_is_in_a_layer() -> None:
    modules = all_modules()
    assert len(modules) > 100
    stray = sorted(m for m in modules if layer_of(m) == len(LAYERS))
    assert not stray, f"modules outside every layer: {stray}"


def test_no_module_imports_a_package_above_its_own() -> None:
    upward = upward_imports(cslint_graph())
    assert not upward, "\n".join(upward)


def test_no_modules_import_each_other_in_a_circle() -> None:
    found = circles(cslint_graph())
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def _probe_package(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    package = tmp_path / "cslint"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return import_graph(all_modules(package))


def test_an_upward_import_inside_a_function_is_found(tmp_path: Path) -> None:
    graph = _probe_package(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/config.py": "def load():\n    from cslint.engine.runner import Linter\n    return Linter\n",
        "engine/__init__.py": "",
        "engine/runner.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..core import config\n",
    })
    assert upward_imports(graph) == ["cslint.core.config imports cslint.engine.runner"]


def test_a_circle_through_type_checking_and_relative_imports_is_found(tmp_path: Path) -> None:
    graph = _probe_package(tmp_path, {
        "__init__.py": "",
        "engine/__init__.py": "",
        "engine/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "engine/b.py": "def f():\n    from cslint.engine import a\n",
    })
    assert circles(graph) == [["cslint.engine.a", "cslint.engine.b"]]
