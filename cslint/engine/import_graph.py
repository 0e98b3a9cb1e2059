"""The files of one analysis of a whole-tree run and their imports, shared by all its groups' analyses.

A group's analysis (incremental.py) sees the files its files import, directly or not, to resolve names.
Where files import chains of others (a model imports a helper, which imports the helper before it, ...)
that closure is a fair part of the tree for every group: listing it for each group, sending the list to
a worker and turning it into paths, names and orders again there made a run's time and memory grow as
N². The run's
files, module names and import edges are now made once per analysis (and sent once to each worker:
`save`, `load_graph`), and a group's closure is walked only as far as its analysis asks (`GroupScope`).
"""

from __future__ import annotations

import os
import pickle
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path


class ImportGraph:
    """`paths` in the run's order (the survey's), each file's module name and whether it is a package,
    the positions of the files each imports, whether each is to be reported on, and the other names
    files are imported by (namespace packages: module_names.import_aliases)."""

    def __init__(self, paths: Sequence[Path], names: Sequence[tuple[str, bool]], imports: Sequence[Sequence[int]],
                 wanted: Sequence[bool], aliases: dict[str, Path]) -> None:
        self.paths = list(paths)
        self.names = list(names)
        self.imports = [tuple(found) for found in imports]
        self.wanted = list(wanted)
        self.aliases = aliases
        self.position = {path: i for i, path in enumerate(self.paths)}
        self.names_by_path = dict(zip(self.paths, self.names))
        self.by_name: dict[str, list[int]] = {}  # a module name -> its files (one, unless names clash)
        for i, (name, _) in enumerate(self.names):
            self.by_name.setdefault(name, []).append(i)
        # each alias to the module name of its file, for the files of this analysis
        self.module_aliases = {alias: self.names[self.position[path]][0] for alias, path in aliases.items()
                               if path in self.position}

    def __reduce__(self) -> tuple[type[ImportGraph], tuple[object, ...]]:  # what is derived is made again
        return ImportGraph, (self.paths, self.names, self.imports, self.wanted, self.aliases)

    def scope(self, own: Iterable[int]) -> GroupScope:
        return GroupScope(self, own)

    def save(self, target: str, extra: dict[Path, str]) -> None:
        """Write the graph for worker processes, with `extra` (where the workers saved what they indexed)."""
        partial = f"{target}.{os.getpid()}.part"
        with open(partial, "wb") as handle:
            pickle.dump((self, extra), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, target)


def load_graph(saved: str) -> tuple[ImportGraph, dict[Path, str]]:
    """The graph `ImportGraph.save` wrote, and its `extra`."""
    with open(saved, "rb") as handle:
        return pickle.load(handle)  # type: ignore[no-any-return]


class GroupScope:
    """What one group's analysis sees: its own files (`own`, positions in the graph) and every file they
    import, directly or not. The import closure is walked breadth first, and only as far as a question
    needs: a lookup asks for the modules its files import, near the start of the walk."""

    def __init__(self, graph: ImportGraph, own: Iterable[int]) -> None:
        self.graph = graph
        self.own = sorted(set(own))
        self._own = set(self.own)
        self._reached = set(self.own)
        self._queue = deque(self.own)

    def reaches(self, position: int) -> bool:
        """Whether the file at `position` is the group's or imported by its files, directly or not."""
        reached, queue, imports = self._reached, self._queue, self.graph.imports
        while position not in reached and queue:
            for found in imports[queue.popleft()]:
                if found not in reached:
                    reached.add(found)
                    queue.append(found)
        return position in reached

    def everything(self) -> list[int]:
        """The positions of all the files the group sees, in the run's order (the whole closure walked)."""
        self.reaches(-1)
        return sorted(self._reached)

    def find(self, name: str) -> Path | None:
        """The file defining module `name` among those the group's files import (not its own files); the
        last in the run's order if two files have that name."""
        for position in reversed(self.graph.by_name.get(name, ())):
            if position not in self._own and self.reaches(position):
                return self.graph.paths[position]
        return None

    def rank(self, name: str) -> int | None:
        """Module `name`'s place in the run's order, if the group sees it (the last of clashing names)."""
        for position in reversed(self.graph.by_name.get(name, ())):
            if self.reaches(position):
                return position
        return None

    def module_names(self) -> list[str]:
        return [self.graph.names[i][0] for i in self.everything()]

    def position(self, path: Path) -> int:
        return self.graph.position[path]

    def wanted(self, path: Path) -> bool:
        """Whether the file is reported on (when traced code reaches it, if it is not the group's)."""
        position = self.graph.position.get(path)
        return position is not None and self.graph.wanted[position] and self.reaches(position)
