"""Which rule code a runtime event belongs to, read from the user's source at the event's position.

The backends know *what* happened (a value was forced, a copy to the CPU, a value-dependent shape); the
source around the executing bytecode instruction says *how* the user wrote it, which is what the static
rule codes distinguish (`if t:` is WSC101, `t.item()` is WSC201, `float(t)` is WSC203, ...).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import lru_cache

from cslint.core.rule_table import BUILTINS, TENSOR_METHODS

_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}
_SCALAR_KEYWORDS = {"alpha", "value", "beta", "min", "max", "p", "exponent", "other"}

KIND_DEFAULTS = {
    "scalar": (BUILTINS["float"], "a tensor's value is read on the host while tracing"),
    "cpu_copy": (TENSOR_METHODS["cpu"], "a tensor is copied to the CPU while tracing"),
    "numpy": (TENSOR_METHODS["numpy"], "`.numpy()` reads a tensor's value on the host while tracing"),
    "dynamic_shape": ("WSC501", "output shape depends on tensor values"),
    "boolean_index": ("WSC502", "a tensor indexed with a boolean mask: the output shape depends on tensor values"),
    "boolean_store": ("WSC502", "a tensor written through a boolean mask (`x[mask] = v`): which positions are "
                      "written depends on tensor values"),
    "dtype": ("WSC601", "a float64/complex tensor is created; the device supports float32 and one 16-bit type"),
    # an op whose result only the host has (`torch.equal`, an assertion): the backend has no lowering for it
    "host_op": (BUILTINS["bool"], "the lazy backend has no lowering for this op and runs it on the host while "
                "tracing"),
}


@dataclass(frozen=True)
class Classified:
    code: str
    what: str  # how the user wrote it, for the message


# Checks inside torch that read the values of the tensors a user's call gave it, by the file (its path's end)
# and function they run in: a distribution's argument and sample validation (`validate_args`).
_TORCH_VALUE_CHECKS = {
    ("torch/distributions/distribution.py", "__init__"): Classified("WSC108", "a distribution's argument validation"),
    ("torch/distributions/distribution.py", "_validate_sample"):
        Classified("WSC108", "a distribution's validation of a `log_prob` value"),
}


# Ops that raise on the host on a tensor's value, by their name without the overload: a rule names them
# whatever line calls them.
_HOST_OPS = {
    "aten._assert_async": Classified("WSC104", "a device-side assertion on a tensor (`torch._assert_async()`)"),
    "aten._functional_assert_async": Classified("WSC104", "a device-side assertion on a tensor"),
}


def host_op(op: str) -> Classified | None:
    """The rule of an op that checks a tensor's value on the host (`aten._assert_async.msg`), when it is one."""
    parts = op.split(".")
    return _HOST_OPS.get(".".join(parts[:2]))


def torch_value_check(path: str, function: str) -> Classified | None:
    """The rule of a check torch runs on the user's tensors in `function` of `path`, when it is one."""
    normalized = path.replace(os.sep, "/")
    return next((found for (end, name), found in _TORCH_VALUE_CHECKS.items()
                 if name == function and normalized.endswith(end)), None)


@dataclass(frozen=True)
class _Index:
    """One region of a file, indexed for the lookups that run per traced event."""
    parents: dict[int, ast.AST]
    at_span: dict[tuple[int, int, int, int], ast.AST]  # the innermost expression or statement with that span
    on_line: dict[int, list[ast.AST]]  # the nodes starting on a line, in ast.walk order (outermost first)


_NOTHING = _Index({}, {}, {})


class _Source:
    """A parsed file, indexed one function (or other top-level statement) at a time: a model file or
    torch's optimizer.py has hundreds of them and a step's events fall in a few, and indexing every node of
    every file an event touched was a large part of the lazy backend's time on a small step."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.regions: dict[int, _Index] = {}

    def at(self, line: int) -> _Index:
        region = _region(self.tree, line)
        if region is None:
            return _NOTHING
        index = self.regions.get(id(region))
        if index is None:
            index = self.regions[id(region)] = _index(region)
        return index


def _region(tree: ast.Module, line: int) -> ast.stmt | None:
    """The top-level statement holding `line`, or the method when it is in a class."""
    body: list[ast.stmt] = tree.body
    found: ast.stmt | None = None
    while True:
        for stmt in body:
            decorators = getattr(stmt, "decorator_list", ())
            first = min([stmt.lineno, *(d.lineno for d in decorators)])
            if first <= line <= (stmt.end_lineno or stmt.lineno):
                found = stmt
                break
        else:
            return found
        if not isinstance(found, ast.ClassDef):
            return found
        body = found.body


def _index(region: ast.stmt) -> _Index:
    index = _Index({}, {}, {})
    for node in ast.walk(region):  # breadth-first: a later node with the same span is an inner one
        for child in ast.iter_child_nodes(node):
            index.parents[id(child)] = node
        if isinstance(node, (ast.expr, ast.stmt)):
            index.at_span[(node.lineno, node.end_lineno or node.lineno, node.col_offset,
                           node.end_col_offset or 0)] = node
        if hasattr(node, "lineno"):
            index.on_line.setdefault(node.lineno, []).append(node)
    return index


def _parsed(path: str) -> _Source | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _parsed_version(path, stat.st_mtime_ns, stat.st_size)  # a fixed file is re-read


@lru_cache(maxsize=64)
def _parsed_version(path: str, mtime_ns: int, size: int) -> _Source | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return _Source(ast.parse(handle.read()))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _call_code(call: ast.Call) -> Classified | None:
    func = call.func
    if (isinstance(func, ast.Attribute) and func.attr in _LOG_METHODS) or (isinstance(func, ast.Name)
                                                                       and func.id == "print"):
        return Classified("WSC701", "a print/log call formats a tensor")
    if any(k.arg == "error_if_nonfinite" for k in call.keywords):
        return Classified("WSC803", "`error_if_nonfinite=True` reads the gradient norm in Python to raise")
    if isinstance(func, ast.Attribute):
        if func.attr in TENSOR_METHODS:  # what forced a value, by the call that did it
            return Classified(TENSOR_METHODS[func.attr], f"`.{func.attr}()`")
        if isinstance(func.value, ast.Name) and func.value.id == "math":
            return Classified("WSC204", f"`math.{func.attr}()` on a tensor")
        if func.attr == "format":
            return Classified("WSC206", "a tensor formatted into a string")
        if any(k.arg in _SCALAR_KEYWORDS for k in call.keywords):
            names = ", ".join(f"{k.arg}=" for k in call.keywords if k.arg in _SCALAR_KEYWORDS)
            return Classified("WSC401", f"a tensor passed as a Python number ({names}) to `.{func.attr}()`")
    if isinstance(func, ast.Name):
        if func.id in BUILTINS:
            return Classified(BUILTINS[func.id], f"`{func.id}()` on a tensor")
        if any(k.arg in _SCALAR_KEYWORDS for k in call.keywords):
            return Classified("WSC401", f"a tensor passed as a Python number to `{func.id}()`")
    return None


def _context_code(node: ast.AST, parents: dict[int, ast.AST]) -> Classified | None:
    """Walk outwards from the forced expression to the construct that needed its truth value."""
    child = node
    while True:
        if isinstance(child, ast.BoolOp) or (isinstance(child, ast.UnaryOp) and isinstance(child.op, ast.Not)):
            parent = parents.get(id(child))
            if not (isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and parent.test is child):
                return Classified("WSC105", "`and`/`or`/`not` on a tensor")
        if isinstance(child, (ast.JoinedStr, ast.FormattedValue)):
            return Classified("WSC206", "a tensor formatted into a string")
        parent = parents.get(id(child))
        if parent is None:
            return None
        # 3.11 gives a conditional jump the span of its whole statement
        if isinstance(child, ast.While):
            return Classified("WSC102", "`while` on a tensor condition")
        if isinstance(child, ast.If):
            return Classified("WSC101", "`if` on a tensor condition")
        if isinstance(child, ast.Assert):
            return Classified("WSC104", "`assert` on a tensor")
        if isinstance(parent, ast.If) and parent.test is child:
            return Classified("WSC101", "`if` on a tensor condition")
        if isinstance(parent, ast.While) and parent.test is child:
            return Classified("WSC102", "`while` on a tensor condition")
        if isinstance(parent, ast.IfExp) and parent.test is child:
            return Classified("WSC103", "a conditional expression on a tensor condition")
        if isinstance(parent, ast.Assert) and parent.test is child:
            return Classified("WSC104", "`assert` on a tensor")
        if isinstance(parent, ast.comprehension) and child in parent.ifs:
            return Classified("WSC106", "a comprehension filter on a tensor")
        if isinstance(parent, ast.For) and parent.iter is child:
            return Classified("WSC107", "a loop whose trip count comes from a tensor")
        if isinstance(child, ast.stmt):
            return None
        child = parent


def classify(kind: str, path: str, span: tuple[int, int, int, int] | None) -> Classified:
    default = Classified(*KIND_DEFAULTS[kind])
    if kind in ("dynamic_shape", "boolean_index", "boolean_store", "dtype"):
        return default
    parsed = _parsed(path)
    if parsed is None or span is None:
        return default
    index = parsed.at(span[0])
    parents = index.parents
    node = index.at_span.get(span)
    if node is None:
        return default
    parent = parents.get(id(node))
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "range":
        return Classified("WSC107", "a loop whose trip count comes from a tensor")  # range(int(n))
    if kind == "scalar" and isinstance(node, ast.Subscript):  # `experts[i]` with `i` a 0-dim tensor
        return Classified("WSC207", "a tensor used as an index (Python needs an int)")
    if isinstance(node, ast.Call):
        found = _call_code(node)
        if found is not None:
            return found
    return _context_code(node, parents) or default


def classify_line(path: str, line: int) -> Classified | None:
    """For backends that only know the line (dynamo): the first construct on it that forces a value."""
    parsed = _parsed(path)
    if parsed is None:
        return None
    statements = [n for n in parsed.at(line).on_line.get(line, ()) if isinstance(n, ast.stmt)]
    if not statements:
        return None
    stmt = statements[-1]
    if isinstance(stmt, ast.While):
        return Classified("WSC102", "`while` on a tensor condition")
    if isinstance(stmt, ast.If):
        return Classified("WSC101", "`if` on a tensor condition")
    if isinstance(stmt, ast.Assert):
        return Classified("WSC104", "`assert` on a tensor")
    for node in ast.walk(stmt):
        if isinstance(node, ast.IfExp):
            return Classified("WSC103", "a conditional expression on a tensor condition")
        if isinstance(node, ast.Call) and (found := _call_code(node)) is not None:
            return found
    # dynamo traces NumPy's generator through torch._numpy, whose `np.random.choice` reads a value and breaks
    # the graph at the call: the host draw the static rule names (a read the user wrote, above, comes first)
    if any(_draws_on_the_host(node, parsed.tree) for node in ast.walk(stmt)):
        return Classified("WSC704", "a draw from NumPy's or Python's random generator")
    return None


_HOST_RANDOM = ("np.random.", "numpy.random.", "random.")


def _draws_on_the_host(node: ast.AST, tree: ast.Module) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = _dotted(node.func)
    if name is None or not name.startswith(_HOST_RANDOM):
        return False
    return not name.startswith("random.") or any(  # `random` the standard module, not a local of that name
        isinstance(stmt, ast.Import) and any(a.name == "random" and a.asname is None for a in stmt.names)
        for stmt in tree.body)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


def called_name(path: str, line: int) -> str | None:
    """What an expression statement on `line` calls: `loss.backward()` -> "backward", `print(x)` -> "print"."""
    parsed = _parsed(path)
    if parsed is None:
        return None
    for node in parsed.at(line).on_line.get(line, ()):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return None


# The backend-flag context managers WSC706 reports, by the end of their dotted name.
_BACKEND_FLAGS = ("cudnn.flags", "mkldnn.flags", "sdp_kernel", "opt_einsum.flags")


def sets_backend_flags(path: str, line: int) -> bool:
    """Is `line` a `with` entering a backend-flag context manager (`with torch.backends.cudnn.flags(...)`)?"""
    parsed = _parsed(path)
    if parsed is None:
        return False
    for node in parsed.at(line).on_line.get(line, ()):
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and (_dotted(call.func) or "").endswith(_BACKEND_FLAGS):
                    return True
    return False


_RESUMED_AT = re.compile(r"torch_dynamo_resume_in_\w+_at_(\d+)$")
_EMPTY = re.compile(r"^(?:not (?P<a>[\w.\[\]'\"]+)|len\((?P<b>[\w.\[\]'\"]+)\) == 0)$")


def guard_origin(path: str, line: int, guard: str, function: str) -> tuple[int, Classified | None] | None:
    """Where the value a failed dynamo guard tests comes from: dynamo puts the guard where the compiled frame
    first read it, which is not always the line to change.

    - A frame resumed after a graph break (`torch_dynamo_resume_in_f_at_122`) takes the values the break left
      on the stack (`___stack0`), the result of the call at the break's line, and the function's locals
      (`epsilon`), assigned before that line: a Python value read there (`np.random.rand(1).item()`) that
      differs per step is guarded in the resumed frame and recompiles it every step.
    - `not self.state` read at `state = self.state[p]`: the container was empty on the first step and the step
      filled it, behind the `if len(state) == 0:` the same function takes on the first step only.
    - A loop's variable in a frame resumed inside that loop is the variant compiled for another iteration
      (dynamo lists the guard each cached variant failed): no change between steps, None.
    Returns the line and, when the origin says more than the line's form, its classification."""
    parsed = _parsed(path)
    if parsed is None:
        return line, None
    resumed = _RESUMED_AT.match(function)
    if resumed is not None:
        at = int(resumed[1])
        local = re.match(r"(\w+) == ", guard)
        if local is not None and _loop_variable(parsed, local[1], at):
            return None
        origin = at if guard.startswith("___stack") else \
            _last_assignment(parsed, local[1], at) if local is not None else None
        if origin is not None:
            return origin, _host_draw_origin(parsed, origin)
    emptied = _EMPTY.match(guard.strip())
    if emptied is not None:
        branch = _first_step_branch(parsed, line, emptied["a"] or emptied["b"])
        if branch is not None:
            return branch, Classified("WSC703", "state the step creates on its first run (create it before the first "
                                                  "step) decides this branch")
    return line, None


def _loop_variable(parsed: _Source, name: str, line: int) -> bool:
    region = _region(parsed.tree, line)
    return region is not None and any(
        isinstance(node, ast.For) and node.lineno <= line <= (node.end_lineno or node.lineno)
        and any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(node.target)) for node in ast.walk(region))


def _host_draw_origin(parsed: _Source, line: int) -> Classified | None:
    statements = [n for n in parsed.at(line).on_line.get(line, ()) if isinstance(n, ast.stmt)]
    if statements and any(_draws_on_the_host(n, parsed.tree) for n in ast.walk(statements[-1])):
        return Classified("WSC704", "a value drawn from NumPy's or Python's random generator, different on every "
                                    "step, is a constant of the graph")
    return None


def _last_assignment(parsed: _Source, name: str, before: int) -> int | None:
    """The line of the last assignment to `name` above `before` in the function holding `before`."""
    region = _region(parsed.tree, before)
    lines = [node.lineno for node in ast.walk(region) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
             and node.lineno < before and any(isinstance(t, ast.Name) and t.id == name for t in (
                 node.targets if isinstance(node, ast.Assign) else [node.target]))] if region is not None else []
    return max(lines, default=None)


def _first_step_branch(parsed: _Source, line: int, container: str) -> int | None:
    """`state = self.state[p]` on `line` (with `container` "self.state"): the `if` below it in the same function
    that tests `state` for emptiness (`len(state) == 0`, `not state`, `"step" not in state`)."""
    bound = next((node.targets[0].id for node in parsed.at(line).on_line.get(line, ())
                  if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and isinstance(node.value, ast.Subscript) and ast.unparse(node.value.value) == container), None)
    region = _region(parsed.tree, line)
    if bound is None or region is None:
        return None
    tests = [node.lineno for node in ast.walk(region) if isinstance(node, ast.If) and node.lineno > line
             and _tests_emptiness(node.test, bound)]
    return min(tests, default=None)


def _tests_emptiness(test: ast.expr, name: str) -> bool:
    is_name = lambda node: isinstance(node, ast.Name) and node.id == name  # noqa: E731
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return is_name(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.NotIn):
            return is_name(right)
        sized = isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" \
            and len(left.args) == 1 and is_name(left.args[0])
        bound = {ast.Eq: 0, ast.LtE: 0, ast.Lt: 1}.get(type(op))
        return sized and bound is not None and isinstance(right, ast.Constant) and right.value == bound
    return False


def enclosing_if(path: str, line: int) -> int | None:
    """The line of the innermost `if` whose body holds `line` (`if len(state) == 0:` above the entry it makes)."""
    parsed = _parsed(path)
    region = _region(parsed.tree, line) if parsed is not None else None
    if region is None:
        return None
    holding = [node.lineno for node in ast.walk(region) if isinstance(node, ast.If) and node.body
               and node.body[0].lineno <= line <= (node.body[-1].end_lineno or node.body[-1].lineno)]
    return max(holding, default=None)


def classify_guard_line(path: str, line: int) -> Classified:
    """A failed dynamo guard: mutation of Python state on that line (WSC702), else a value feeding the graph."""
    parsed = _parsed(path)
    if parsed is not None:
        for node in parsed.at(line).on_line.get(line, ()):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets):
                    return Classified("WSC702", "Python state mutated in the traced step")
            if isinstance(node, ast.Global):
                return Classified("WSC702", "a global mutated in the traced step")
    return Classified("WSC703", "a Python value that changes per step feeds the graph")


def state_created_in_step(optimizer: str, keys: list[str], preinitialize: bool = False) -> str:
    """WSC301's message, for the optimizer check and for a traced step alike."""
    names = ", ".join(f"`{k}`" for k in keys)
    if preinitialize:
        return f"`{optimizer}.preinitialize()` does not create state {names}; `step()` creates it"
    return (f"optimizer state {names} of `{optimizer}` is created inside `step()`; it must exist before the "
            "first step: create it in `preinitialize()`")


def _is_cpu(node: ast.expr) -> bool:
    """`"cpu"` or `torch.device("cpu")` written out."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.split(":")[0] == "cpu"
    return isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and \
        (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "device" and \
        bool(node.args) and _is_cpu(node.args[0])


def names_the_cpu(path: str, span: tuple[int, int, int, int] | None) -> bool:
    """The call at `span` names the CPU as its device in the source (`x.to("cpu")`, `device=torch.device("cpu")`):
    where tensors live on the CPU while traced, this is what tells a copy to the host from a `.to(device)`."""
    parsed = _parsed(path)
    if parsed is None or span is None:
        return False
    node = parsed.at(span[0]).at_span.get(span)
    if not isinstance(node, ast.Call):
        return False
    return any(_is_cpu(arg) for arg in node.args) or \
        any(k.arg == "device" and _is_cpu(k.value) for k in node.keywords)
