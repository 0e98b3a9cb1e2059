"""Recompute what a cache keyed by a tensor holds, instead of asking the cache whether it holds it.

    cached = group["cache"][int(step % 10)]
    if step == cached[0]:                                  rho = rho_inf - 2 * step * beta2_t / (1 - beta2_t)
        rho, scale = cached[1], cached[2]            ->    scale = torch.sqrt(...)
    else:
        cached[0] = step
        rho = rho_inf - 2 * step * beta2_t / (1 - beta2_t)
        cached[1] = rho
        scale = torch.sqrt(...)
        cached[2] = scale

RAdam's rectification terms and the optimizers forked from it (AdaBelief, Ranger) memoise a function of
the step counter: one entry per step modulo N, whose first slot records the step it holds. Once the counter
is a tensor on the device (the counter fix), the slot index (`int(...)`) and the hit test (`==`) read it on
the host every step. The values the hit branch reads are the ones the miss branch stores for the same key,
so the miss branch alone computes them: the fix keeps it without its stores into the cache, and drops the
line that picks the entry when nothing else reads it.

Offered only when the hit branch does nothing but read names from the entry, the miss branch stores the key
into the slot the test reads and stores each of those names (after their last assignment) into the slot the
hit branch reads it from, and nothing else in the function touches the entry. Unsafe: the values are
recomputed on every call (the same numbers only when the cache memoises a function of its key: check that
nothing else fills it), and the cache is no longer filled for code that reads it elsewhere.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

import libcst as cst

from cslint.analysis.walk import bound_names, iter_nodes, iter_with_parents
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix


def recompute_memo(node: cst.If, ctx: RuleContext) -> Fix | None:
    """The fix for `if <key> == <entry>[i]: <names> = <entry>[j]... else: <compute and store>`, or None."""
    if not isinstance(node.orelse, cst.Else) or not isinstance(node.body, cst.IndentedBlock) or \
            not isinstance(node.orelse.body, cst.IndentedBlock):
        return None
    test = _key_test(node.test)
    if test is None:
        return None
    entry, key_slot, key = test
    reads = _reads(node.body.body, entry)
    if not reads:
        return None
    kept = _kept_statements(node.orelse.body.body, entry, key_slot, key, reads)
    if kept is None:
        return None
    function = ctx.traced.func.node
    picks = _picking_line(function, node, entry)
    if picks is None or not _only_uses(function, entry, node, picks):
        return None
    first = kept[0]
    assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))  # statements of a block
    kept[0] = first.with_changes(leading_lines=[*picks.leading_lines, *node.leading_lines, *first.leading_lines])
    names = ", ".join(f"`{name}`" for name in reads)
    return Fix("unsafe",
               f"Compute {names} every time instead of reading them from the cache entry `{entry}`, whose hit "
               f"test reads `{ctx.code(key, 30)}` on the host; unsafe: the miss branch runs on every call (the "
               "same numbers only when the cache memoises a function of its key), and the cache is no longer "
               "filled",
               [(node, cst.FlattenSentinel(kept)), (picks, cst.RemoveFromParent())])


def _key_test(test: cst.BaseExpression) -> tuple[str, int, cst.BaseExpression] | None:
    """(entry, slot, key) of `key == entry[slot]` (either side)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 or \
            not isinstance(test.comparisons[0].operator, cst.Equal):
        return None
    left, right = test.left, test.comparisons[0].comparator
    for slot_side, key in ((right, left), (left, right)):
        slot = _slot(slot_side)
        if slot is not None:
            return slot[0], slot[1], key
    return None


def _slot(expr: cst.BaseExpression) -> tuple[str, int] | None:
    """(entry, index) of `entry[index]` with a literal index."""
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and len(expr.slice) == 1:
        index = expr.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
            return expr.value.value, int(index.value.value)
    return None


def _reads(statements: Sequence[cst.BaseStatement], entry: str) -> dict[str, int]:
    """name -> slot for a hit branch that only assigns names from slots of `entry` (`a, b = e[1], e[2]`);
    empty when it does anything else."""
    reads: dict[str, int] = {}
    for stmt in statements:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return {}
        for small in stmt.body:
            if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                return {}
            target, value = small.targets[0].target, small.value
            pairs = list(zip(target.elements, value.elements)) \
                if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) and \
                len(target.elements) == len(value.elements) else [(target, value)]
            for name, read in pairs:
                name_node = name.value if isinstance(name, cst.Element) else name
                read_node = read.value if isinstance(read, cst.Element) else read
                slot = _slot(read_node) if isinstance(read_node, cst.BaseExpression) else None
                if not isinstance(name_node, cst.Name) or slot is None or slot[0] != entry:
                    return {}
                reads[name_node.value] = slot[1]
    return reads


def _store(stmt: cst.BaseStatement, entry: str) -> tuple[int, cst.BaseExpression] | None:
    """(slot, value) of `entry[slot] = value` alone on its line."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    assign = stmt.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    slot = _slot(assign.targets[0].target)
    if slot is None or slot[0] != entry:
        return None
    return slot[1], assign.value


def _kept_statements(statements: Sequence[cst.BaseStatement], entry: str, key_slot: int, key: cst.BaseExpression,
                     reads: dict[str, int]) -> list[cst.BaseStatement] | None:
    """The miss branch without its stores into `entry`, when it stores the key into `key_slot` and each name
    the hit branch reads into that name's slot after the name's last assignment; else None."""
    kept: list[cst.BaseStatement] = []
    stored: set[str] = set()
    key_stored = False
    for index, stmt in enumerate(statements):
        store = _store(stmt, entry)
        if store is None:
            if any(isinstance(n, cst.Name) and n.value == entry for n in iter_nodes(stmt)):
                return None
            kept.append(stmt)
            continue
        slot, value = store
        if slot == key_slot and _same_expression(value, key):
            key_stored = True
        elif isinstance(value, cst.Name) and reads.get(value.value) == slot and \
                not _assigns(statements[index + 1:], value.value):
            stored.add(value.value)
        else:
            return None
    if not key_stored or stored != set(reads) or not kept:
        return None
    return kept


def _same_expression(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """The same expression, however it is spelled (quotes, spaces, parentheses)."""
    code = cst.Module([]).code_for_node
    return ast.dump(ast.parse(code(a).strip(), mode="eval")) == ast.dump(ast.parse(code(b).strip(), mode="eval"))


def _assigns(statements: Sequence[cst.BaseStatement], name: str) -> bool:
    """Does any of `statements` bind `name` (an assignment, augmented or annotated, or a loop target)?"""
    for stmt in statements:
        for node in iter_nodes(stmt):
            if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For)) and \
                    any(bound.value == name for bound in bound_names(node.target)):
                return True
    return False


def _picking_line(function: cst.FunctionDef, node: cst.If, entry: str) -> cst.SimpleStatementLine | None:
    """The line `entry = <pure subscript>` just before `node` in the same block."""
    for block, _ in iter_with_parents(function):
        if not isinstance(block, cst.IndentedBlock):
            continue
        statements = list(block.body)
        position = next((i for i, stmt in enumerate(statements) if stmt is node), None)
        if position is None:
            continue
        if position == 0:
            return None
        line = statements[position - 1]
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and \
                isinstance(line.body[0], cst.Assign) and len(line.body[0].targets) == 1:
            target, value = line.body[0].targets[0].target, line.body[0].value
            if isinstance(target, cst.Name) and target.value == entry and isinstance(value, cst.Subscript):
                return line
        return None
    return None


def _only_uses(function: cst.FunctionDef, entry: str, node: cst.If, picks: cst.SimpleStatementLine) -> bool:
    """Is `entry` named nowhere in the function but on its picking line and in the `if`?"""
    inside = {id(n) for n in iter_nodes(node)} | {id(n) for n in iter_nodes(picks)}
    return all(id(n) in inside for n in iter_nodes(function) if isinstance(n, cst.Name) and n.value == entry)

