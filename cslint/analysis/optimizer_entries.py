"""Which entries of an optimizer's state (`state["step"]`) and param groups (`group["d"]`) are Python numbers
and which tensors, read from the assignments in the optimizer's methods: on WSC a param group's
hyperparameters are Python values (the learning rate a traced tensor), so an entry computed only from
them and from Python numbers is a Python number wherever it is read."""

from __future__ import annotations

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.kinds import HOST, STATIC, Kind, join
from cslint.analysis.signatures import all_params, first_param
from cslint.analysis.syntax import string_value
from cslint.analysis.walk import iter_nodes


def state_entry_kinds(methods: list[cst.FunctionDef],
                      tensor_group_keys: frozenset[str] = frozenset()) -> dict[str, Kind | None]:
    """Keys of `<...state...>['key'] = value` assignments: the Python number every value is (a literal:
    STATIC; a read of tensor data, `.item()` or `float(...)`: HOST), or None when some value is not one.
    An update computed only from Python numbers, param-group hyperparameters (on WSC `group['lr']` and the
    entries `tensor_group_keys` a tensor is stored into are traced tensors, the rest are Python) and such
    entries, itself included (`state['d'] = beta2 * state['d'] + (1.0 - beta2)`), is a Python number too."""
    kinds: dict[str, Kind | None] = {}
    reads: dict[str, set[str]] = {}  # the entries an update of each entry reads
    passed = _hyperparameters_passed(methods, tensor_group_keys)
    for method in methods:
        hyperparameters = _hyperparameter_names(method, tensor_group_keys, passed.get(method.name.value, frozenset()))
        for node in iter_nodes(method):
            if type(node) is not cst.Assign:
                continue
            for target in node.targets:
                key = _state_key(target.target)
                if key is None:
                    continue
                kind = _python_number_kind(node.value)
                if kind is None:
                    entries = _python_arithmetic_reads(node.value, hyperparameters,
                                                       tensor_group_keys)
                    if entries is not None:
                        reads.setdefault(key, set()).update(entries)
                        kind = STATIC  # Python arithmetic adds no tensor: the entries it reads decide
                old = kinds.get(key, kind) if key in kinds else kind
                kinds[key] = None if kind is None or old is None else join(old, kind)
    changed = True
    while changed:  # an entry computed from an entry that is not a Python number is not one either
        changed = False
        for key, entries in reads.items():
            kind = kinds[key]
            for entry in entries:
                read = kinds.get(entry)
                kind = None if kind is None or read is None else join(kind, read)
            if kind != kinds[key]:
                kinds[key] = kind
                changed = True
    return kinds


def _python_arithmetic_reads(value: cst.BaseExpression, hyperparameters: frozenset[str],
                             tensor_group_keys: frozenset[str]) -> set[str] | None:
    """The state entries arithmetic over Python numbers, hyperparameters and state entries reads, or None
    when it holds anything else."""
    kind = type(value)
    if kind in (cst.Integer, cst.Float) or (kind is cst.Name and value.value in hyperparameters):  # type: ignore[attr-defined]
        return set()
    if kind is cst.IfExp:  # `group['beta'] if group['beta'] is not None else beta2`: one of two values
        body = _python_arithmetic_reads(value.body, hyperparameters, tensor_group_keys)  # type: ignore[attr-defined]
        orelse = _python_arithmetic_reads(value.orelse, hyperparameters,  # type: ignore[attr-defined]
                                          tensor_group_keys)
        return None if body is None or orelse is None else body | orelse
    if kind is cst.UnaryOperation:
        return _python_arithmetic_reads(value.expression, hyperparameters,  # type: ignore[attr-defined]
                                        tensor_group_keys)
    if kind is cst.BinaryOperation:
        left = _python_arithmetic_reads(value.left, hyperparameters, tensor_group_keys)  # type: ignore[attr-defined]
        right = _python_arithmetic_reads(value.right, hyperparameters,  # type: ignore[attr-defined]
                                         tensor_group_keys)
        return None if left is None or right is None else left | right
    key = _state_key(value)
    if key is not None:
        return {key}
    return set() if _is_group_hyperparameter(value, tensor_group_keys) else None


def _hyperparameter_names(method: cst.FunctionDef, tensor_group_keys: frozenset[str],
                          passed: frozenset[str] = frozenset()) -> frozenset[str]:
    """Local names every binding of which in the method is a Python hyperparameter of a param group
    (`beta1, beta2 = group['betas']`, `eps = group['eps']`), not `lr` nor a tensor entry; `passed`: the
    method's parameters that every call gives such a value (`_hyperparameters_passed`)."""
    good: set[str] = set(passed)
    bad: set[str] = set()
    own = {id(p) for p in all_params(method)}
    for node in iter_nodes(method):
        kind = type(node)
        if kind is cst.Param:
            if id(node) not in own or node.name.value not in passed:  # type: ignore[attr-defined]
                bad.add(node.name.value)  # type: ignore[attr-defined]
        elif kind is cst.Assign:
            hyper = _is_group_hyperparameter(node.value, tensor_group_keys)  # type: ignore[attr-defined]
            for target in node.targets:  # type: ignore[attr-defined]
                t = target.target
                names = [t] if type(t) is cst.Name else [e.value for e in t.elements] \
                    if type(t) in (cst.Tuple, cst.List) else []
                for name in names:
                    if type(name) is cst.Name:
                        (good if hyper else bad).add(name.value)
        elif kind in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.AsName):
            bound = node.target if kind is not cst.AsName else node.name  # type: ignore[attr-defined]
            bad.update(n.value for n in iter_nodes(bound) if type(n) is cst.Name)
    return frozenset(good - bad)


def _hyperparameters_passed(methods: list[cst.FunctionDef],
                            tensor_group_keys: frozenset[str]) -> dict[str, frozenset[str]]:
    """Per method of the class, the parameters that every call of it from the class's methods
    (`self.init_preconditioner(state, frequency=group['frequency'])`) gives a Python hyperparameter or a
    Python number, or leaves at a Python-number default: hyperparameters inside it, as the group entries they
    come from are (so an entry copied from one into the state is a Python number, the learning rate a tensor).
    A method no call in the class reaches has none: its callers are not known."""
    by_name = {m.name.value: m for m in methods}
    calls = [(caller, call) for caller in methods for call in _self_calls(caller, by_name)]
    passed: dict[str, frozenset[str]] = {}
    while True:  # a parameter handed on from a caller's parameter needs the caller's answer first
        names = {m.name.value: _hyperparameter_names(m, tensor_group_keys, passed.get(m.name.value, frozenset()))
                 for m in methods}
        found: dict[str, frozenset[str]] = {}
        for caller, call in calls:
            callee = call.func.attr.value  # type: ignore[attr-defined]
            given = _python_arguments(by_name[callee], call, names[caller.name.value], tensor_group_keys)
            found[callee] = given & found[callee] if callee in found else given
        if found == passed:
            return passed
        passed = found


def _self_calls(caller: cst.FunctionDef, methods: dict[str, cst.FunctionDef]) -> list[cst.Call]:
    """`self.<method>(...)` calls of the class's own methods in `caller`."""
    first = first_param(caller)
    return [node for node in iter_nodes(caller) if type(node) is cst.Call
            and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name
            and node.func.value.value == first and node.func.attr.value in methods]


def _python_arguments(callee: cst.FunctionDef, call: cst.Call, hyperparameters: frozenset[str],
                      tensor_group_keys: frozenset[str]) -> frozenset[str]:
    """The parameters of `callee` this call gives a Python hyperparameter or number (or leaves at one)."""
    if any(arg.star for arg in call.args):
        return frozenset()  # `*args`, `**kwargs`: which value goes where is not known
    p = callee.params
    positional = [*p.posonly_params, *p.params]
    if not any(type(d.decorator) is cst.Name and d.decorator.value == "staticmethod" for d in callee.decorators):
        positional = positional[1:]
    values: dict[str, cst.BaseExpression | None] = {
        param.name.value: param.default for param in (*positional, *p.kwonly_params)}
    for i, arg in enumerate(call.args):
        if arg.keyword is not None:
            if arg.keyword.value in values:
                values[arg.keyword.value] = arg.value
        elif i < len(positional):
            values[positional[i].name.value] = arg.value
    return frozenset(name for name, value in values.items() if value is not None and (
        _python_number_kind(value) is STATIC
        or _python_arithmetic_reads(value, hyperparameters, tensor_group_keys) == set()))


def _is_group_hyperparameter(value: cst.BaseExpression, tensor_group_keys: frozenset[str]) -> bool:
    """`group['eps']`, `group['betas'][1]`: a param-group entry that is a Python value on WSC."""
    while type(value) is cst.Subscript and type(value.value) is cst.Subscript:
        value = value.value
    if type(value) is not cst.Subscript or len(value.slice) != 1 or not isinstance(value.slice[0].slice, cst.Index):
        return False
    key = string_value(value.slice[0].slice.value)
    base = cst.Module([]).code_for_node(value.value)
    return key is not None and key != "lr" and key not in tensor_group_keys and "group" in base and "state" not in base


def group_tensor_entries(methods: list[cst.FunctionDef]) -> set[str]:
    """Keys of `<...group...>['key'] = torch.<function>(...)`: a tensor stored into a param group (the masked
    fixes' `group["d"] = torch.where(proceed, d, group["d"])`), which later steps read back."""
    keys: set[str] = set()
    for method in methods:
        for node in iter_nodes(method):
            if type(node) is not cst.Assign or type(node.value) is not cst.Call:
                continue
            func = dotted_name(node.value.func)
            if func is None or not func.startswith("torch."):
                continue
            for target in node.targets:
                t = target.target
                if type(t) is cst.Subscript and len(t.slice) == 1 and isinstance(t.slice[0].slice, cst.Index):
                    key = string_value(t.slice[0].slice.value)
                    if key is not None and "group" in cst.Module([]).code_for_node(t.value):
                        keys.add(key)
    return keys


def _state_key(target: cst.BaseExpression) -> str | None:
    if type(target) is not cst.Subscript or len(target.slice) != 1:
        return None
    index = target.slice[0].slice
    key = string_value(index.value) if isinstance(index, cst.Index) else None
    base = cst.Module([]).code_for_node(target.value) if key is not None else ""
    return key if "state" in base else None


def _python_number_kind(value: cst.BaseExpression) -> Kind | None:
    if type(value) is cst.UnaryOperation:
        value = value.expression
    if type(value) in (cst.Integer, cst.Float) or (type(value) is cst.Name and value.value in ("True", "False")):
        return STATIC
    if type(value) is cst.Call:
        func = value.func
        if type(func) is cst.Attribute and func.attr.value == "item" and not value.args:
            return HOST
        if type(func) is cst.Name and func.value in ("float", "int"):
            return HOST
    return None
