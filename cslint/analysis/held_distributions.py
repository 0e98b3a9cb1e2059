"""Attributes of a class that hold a torch distribution made with argument validation on.

A policy's distribution wrapper makes its distribution in one method and reads it in another:

    def proba_distribution(self, mean, log_std):
        self.distribution = Normal(mean, log_std.exp())   # validates its parameters here
    def log_prob(self, actions):
        return self.distribution.log_prob(actions)         # and the values given to it here

The second test runs where `log_prob` is called, not where the distribution is made: the rule reports it there
when an attribute of the receiver's class (or a class it derives from) is only ever bound to such a
distribution. Read from the methods' text and imports, nothing run.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.index import ClassInfo, FunctionInfo
from cslint.analysis.project import Project
from cslint.analysis.torch_api import VALIDATING_DISTRIBUTIONS
from cslint.analysis.walk import iter_nodes

# the methods of a distribution that test the value they are given
VALUE_TESTS = frozenset({"log_prob", "cdf", "icdf"})


def held_distribution_tested(project: Project, func: FunctionInfo, node: cst.Call) -> str | None:
    """The distribution `node` tests a value with, where it is `self.<attr>.log_prob(...)` (cdf, icdf) in a method
    of a class whose `<attr>` holds one made with validation on; None otherwise."""
    call = node.func
    cls = func.cls
    if type(call) is not cst.Attribute or call.attr.value not in VALUE_TESTS or cls is None or func.is_static_method:
        return None
    held = call.value
    params = func.node.params.params
    if type(held) is not cst.Attribute or type(held.value) is not cst.Name or not params \
            or held.value.value != params[0].name.value:
        return None
    return holds_validating_distribution(project, cls, held.attr.value)


def holds_validating_distribution(project: Project, cls: ClassInfo, attr: str) -> str | None:
    """The distribution (its qualified name) that `self.<attr>` holds in instances of `cls` when every binding
    of it in the class and its bases (but `None`) makes one with validation on; None otherwise."""
    made: str | None = None
    for klass in project.mro(cls):
        if "set_default_validate_args(False)" in klass.module.source:
            return None
        for method in klass.methods.values():
            for name, validating in _bindings(method, attr):
                if not validating:
                    return None
                made = made or name
    return made


def _bindings(method: FunctionInfo, attr: str) -> list[tuple[str, bool]]:
    """`self.<attr> = Dist(...)` in `method`: each distribution made, and whether with validation on; a binding
    to anything else but None is ("", False)."""
    own = method.node.params.params[0].name.value if method.node.params.params and not method.is_static_method \
        else None
    if own is None or f"{own}.{attr}" not in method.module.source[_span(method)]:
        return []
    found: list[tuple[str, bool]] = []
    for node in iter_nodes(method.node.body):
        if type(node) is not cst.Assign:
            continue
        for target in node.targets:
            t = target.target
            if type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == own and t.attr.value == attr:
                found.append(_made(method, node.value))
    return [f for f in found if f != ("None", True)]


def _made(method: FunctionInfo, value: cst.BaseExpression) -> tuple[str, bool]:
    if type(value) is cst.Name and value.value == "None":
        return ("None", True)
    if type(value) is not cst.Call:
        return ("", False)
    made = method.module.imports.resolve(value.func)
    if made not in VALIDATING_DISTRIBUTIONS:
        return ("", False)
    validate = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "validate_args"), None)
    return (made, validate is None or type(validate) is cst.Name and validate.value == "True")


def _span(method: FunctionInfo) -> slice:
    span = method.span
    return slice(span.start, span.end) if span is not None else slice(None)
