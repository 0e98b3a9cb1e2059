"""Functions parsed alone and given back, kept for a function of the same text in a later analysis.

Model code is copied from file to file (transformers' `# Copied from` functions: many of the
functions a cold run on its `models/` parses have the text of one parsed before), and the files that
hold the copies are mostly analysed in different groups. A parsed function depends only on its text
(positions come from the function's own span: `index.Piece`), so the tree a group gave back serves the
next function with that text instead of a second parse.

A tree serves one function at a time: taken out of the pool when handed over, put back when that
function's module gives its trees back. A tree given back during an analysis waits for the next one:
the analysis may still hold what it computed from the tree (a function's nodes identify its findings
and kinds), and no two functions of one analysis share nodes. The pool holds at most `limit` bytes of
source worth of trees (a tree takes many times the memory of its source), the least recently given back dropped
first, those of texts asked for only once before the others.
"""

from __future__ import annotations

from collections import OrderedDict

import libcst as cst

# Small beside the tree budget (incremental.TREE_BUDGET_BYTES): most trees given back are still referenced
# for a while by the analysis that gave them back, so a larger pool would mostly duplicate them
POOL_BYTES = 500_000


class PiecePool:
    def __init__(self, limit: int | None = None) -> None:
        self.limit = POOL_BYTES if limit is None else limit
        self.size = 0
        self.analysis = 0  # the number of the analysis in progress
        # text -> tree, and the analysis that gave it back: texts asked for once so far, and those asked
        # for again (a copied function: likely to be asked for once more), given up last
        self._once: OrderedDict[str, tuple[cst.Module, int]] = OrderedDict()
        self._again: OrderedDict[str, tuple[cst.Module, int]] = OrderedDict()
        self._asked: set[int] = set()  # hashes of the texts asked for (a collision only misplaces a tree)
        self._asked_again: set[int] = set()

    def take(self, text: str) -> cst.Module | None:
        """A tree of `text` given back by an earlier analysis, now the caller's; None if there is none."""
        key = hash(text)
        (self._asked_again if key in self._asked else self._asked).add(key)
        for kept in (self._again, self._once):
            found = kept.get(text)
            if found is not None:
                if found[1] == self.analysis:
                    return None
                del kept[text]
                self.size -= len(text)
                return found[0]
        return None

    def give_back(self, text: str, tree: cst.Module) -> None:
        """`tree`, parsed from `text`, is no longer used by the function it was parsed for."""
        if len(text) > self.limit:
            return
        for kept in (self._again, self._once):
            if kept.pop(text, None) is not None:
                self.size -= len(text)
        (self._again if hash(text) in self._asked_again else self._once)[text] = (tree, self.analysis)
        self.size += len(text)
        while self.size > self.limit:
            dropped, _ = (self._once or self._again).popitem(last=False)
            self.size -= len(dropped)

    def end_analysis(self) -> None:
        """What was given back so far may serve the analyses from now on."""
        self.analysis += 1
