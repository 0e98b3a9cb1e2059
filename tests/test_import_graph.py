"""The import graph a whole-tree run's groups share, and what each group sees of it (cslint/engine/import_graph.py):
a group sees its files and every file they import, directly or not, walked only as far as asked."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

from cslint.analysis.graph import reachable
from cslint.engine.import_graph import ImportGraph, load_graph


def _chain(length: int) -> ImportGraph:
    """`core` (position 0), then helpers each importing the core and the helper before it."""
    paths = [Path("/p/core.py")] + [Path(f"/p/h{i}.py") for i in range(1, length)]
    names = [("core", False)] + [(f"h{i}", False) for i in range(1, length)]
    imports = [[]] + [[0] + ([i - 1] if i > 1 else []) for i in range(1, length)]
    return ImportGraph(paths, names, imports, [True] * length, {})


def test_a_scope_sees_exactly_the_import_closure_of_its_files():
    rng = random.Random(7)
    size = 60
    imports = [sorted(rng.sample(range(size), rng.randint(0, 3))) for _ in range(size)]
    names = [(f"m{i % 50}", False) for i in range(size)]  # ten names held by two files each
    graph = ImportGraph([Path(f"/p/f{i}.py") for i in range(size)], names, imports, [i % 3 > 0 for i in range(size)],
                        {})
    for _ in range(40):
        own = rng.sample(range(size), rng.randint(1, 3))
        closure = reachable(set(own), lambda i: graph.imports[i])
        scope = graph.scope(own)
        assert {i for i in range(size) if scope.reaches(i)} == closure
        assert graph.scope(own).everything() == sorted(closure)
        assert graph.scope(own).module_names() == [names[i][0] for i in sorted(closure)]
        for name in {n for n, _ in names}:
            fresh = graph.scope(own)
            holders = [i for i in range(size) if names[i][0] == name]
            seen = [i for i in holders if i in closure]
            imported = [i for i in seen if i not in own]
            assert fresh.find(name) == (graph.paths[imported[-1]] if imported else None)  # never its own
            assert fresh.rank(name) == (seen[-1] if seen else None)  # its place, own files too
        for i in range(size):
            assert graph.scope(own).wanted(graph.paths[i]) == (i in closure and i % 3 > 0)


def test_a_lookup_walks_only_as_far_as_the_module_it_asks_for():
    """The last helper of a long chain imports all the others, directly or not; its analysis asks for
    the modules it imports directly, and the scope answers without walking the chain."""
    graph = _chain(2_000)
    scope = graph.scope([1_999])
    assert scope.find("core") == Path("/p/core.py") and scope.find("h1998") == Path("/p/h1998.py")
    assert len(scope._reached) <= 3
    assert scope.find("nothing.of.the.run") is None and len(scope._reached) <= 3
    assert scope.find("h5") == Path("/p/h5.py")  # far down the chain: walked to it
    assert scope.reaches(1) and len(scope.everything()) == 2_000


def test_the_graph_travels_to_workers_without_what_is_derived(tmp_path):
    graph = ImportGraph([Path("/p/a.py"), Path("/p/b.py")], [("pkg.a", False), ("pkg.b", False)], [[1], []],
                        [True, False], {"a": Path("/p/a.py"), "gone": Path("/elsewhere.py")})
    assert graph.module_aliases == {"a": "pkg.a"}  # an alias of a file outside the analysis names nothing
    target = str(tmp_path / "graph.pickle")
    graph.save(target, {Path("/p/a.py"): "part-0"})
    loaded, shared = load_graph(target)
    assert shared == {Path("/p/a.py"): "part-0"}
    assert loaded.position == graph.position and loaded.by_name == graph.by_name
    assert loaded.module_aliases == graph.module_aliases and loaded.imports == [(1,), ()]
    state = pickle.dumps(graph)
    assert b"by_name" not in state and b"names_by_path" not in state
