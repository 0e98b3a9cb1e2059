"""The kinds of a traced function's parameters: what its signature says, what its body says of the
parameters the signature leaves open, and what its callers pass (a helper) or what a root is assumed to
be given (a tensor for an unannotated input)."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.index import FunctionInfo, ModuleInfo
from cslint.analysis.kinds import (HOST, STATIC, TENSOR, UNKNOWN, Kind, Tag, as_boolean, items_mapped, obj,
                                   sequence_of)
from cslint.analysis.param_uses import param_uses
from cslint.analysis.project import Project
from cslint.analysis.signatures import all_params, annotation_kind, default_kind, first_param, signature_kind
from cslint.analysis.step_params import apply_step_params
from cslint.analysis.syntax import string_value

if TYPE_CHECKING:
    from cslint.analysis.project_oracle import ProjectOracle


def root_param_kinds(project: Project, oracle: ProjectOracle, func: FunctionInfo) -> dict[str, Kind]:
    params = {p.name.value: signature_kind(p, TENSOR) for p in all_params(func.node)}
    _apply_uses(oracle, func, params, assumed_parameters(func) - _receiver(func))
    _apply_self_and_roles(oracle, func, params)
    apply_step_params(project, func, params)
    return params


def assumed_parameters(func: FunctionInfo) -> set[str]:
    """Parameters whose kind nothing in the signature says (no annotation; no default, or `None`)."""
    return {p.name.value for p in all_params(func.node)
            if p.annotation is None and p.star not in ("*", "**") and default_kind(p) is None}


def _apply_uses(oracle: ProjectOracle, func: FunctionInfo, params: dict[str, Kind], assumed: Collection[str]) -> None:
    """What the body says of parameters the signature leaves open: containers, flags, and parameters whose
    None the body replaces by a Python value (param_uses). With none open, the body is not read."""
    if not assumed:
        return
    uses = param_uses(func)
    for name in uses.containers:
        if name in assumed:
            params[name] = sequence_of(params[name] if params[name].tag is not Tag.SEQUENCE else UNKNOWN)
    for name in uses.flags:
        if name in assumed:
            params[name] = STATIC
    for name in uses.numbers | uses.options:
        if name in assumed:
            params[name] = STATIC
    for name, attribute in uses.fallbacks:
        if name in assumed and (not attribute or _static_attribute(oracle, func, attribute)):
            params[name] = STATIC


def _static_attribute(oracle: ProjectOracle, func: FunctionInfo, attribute: str) -> bool:
    """`self.<attribute>` of the function's class is a Python value (set from constructor arguments)."""
    if func.cls is None or func.is_static_method:
        return False
    kind = oracle.attributes(func.cls.qualname).get(attribute)
    return kind is not None and kind.tag is Tag.STATIC


def _receiver(func: FunctionInfo) -> set[str]:
    """The method's first parameter, whose kind `_apply_self_and_roles` sets whatever the body says of it."""
    if func.cls is None or func.is_static_method:
        return set()
    first = first_param(func.node)
    return {first} if first is not None else set()


def _apply_self_and_roles(oracle: ProjectOracle, func: FunctionInfo, params: dict[str, Kind]) -> None:
    if func.cls is not None and not func.is_static_method:
        first = first_param(func.node)
        if first is not None:
            params[first] = oracle.self_kind(func.cls)
        if oracle.project.is_optimizer_class(func.cls):
            for name in params:
                if name in ("group", "param_group"):
                    params[name] = obj("group")
                elif name == "closure":
                    params[name] = STATIC


def callers_kinds(func: FunctionInfo, given: dict[str, Kind], project: Project | None = None) -> dict[str, Kind]:
    """What callers pass, as the function takes it: a parameter annotated as a container stays one when a
    caller's value is a tensor -- the annotation is the author's word on structure, and a caller's tensor
    there comes from a nested container whose own annotation said less (`cache.get("inner")` of a
    `dict[str, Tensor]` holding dicts). The caller's word on data stays: Python numbers it declares
    (`dict[str, float]`) were computed from tensor data. A parameter annotated as an object's class
    (`cache: Cache | None`) stays that object: no tensor is one; a name bound to a union (`Scalar = Union[float,
    Tensor]`, in the module or the one it is imported from, read through `project`) is no class."""
    taken = dict(given)
    for param in all_params(func.node):
        name = param.name.value
        if name in taken and taken[name].tag is Tag.TENSOR:
            declared = annotation_kind(param.annotation)
            if declared is not None and declared.tag is Tag.SEQUENCE:
                taken[name] = _read_from_tensors(declared)
            elif declared is not None and declared.boolean:  # `mask: torch.BoolTensor`: the dtype the author says
                taken[name] = as_boolean(taken[name])
            elif declared is not None and declared.tag is Tag.STATIC and names_an_object_class(param.annotation) \
                    and not _names_a_type_alias(project, func, param.annotation):
                taken[name] = declared
    return taken


# Annotations a tensor may stand for: numbers (a 0-dim tensor where `timestep: int` is declared: the callers
# win, annotation_overrides), and names that say nothing of the type.
_NOT_A_CLASS = frozenset({"int", "float", "bool", "complex", "Number", "Real", "Integral", "SupportsInt",
                          "SupportsFloat", "SupportsIndex", "Any", "object", "None"})


def names_an_object_class(annotation: cst.Annotation | None) -> bool:
    """`cache: Cache | None`, `config: "PretrainedConfig"`: every member of the annotation (its `X | None`,
    `Optional[X]`) names a class that is neither a number type nor a type variable (`T`): a tensor a caller
    passes there is one its own analysis assumed (a root's unannotated input), not one the function takes."""
    if annotation is None:
        return False
    members = _members(annotation.annotation)
    named = [m for m in members if m != "None"]
    return bool(named) and all(m and m.rsplit(".", 1)[-1] not in _NOT_A_CLASS and len(m.rsplit(".", 1)[-1]) > 1
                               for m in named)


def _names_a_type_alias(project: Project | None, func: FunctionInfo, annotation: cst.Annotation | None) -> bool:
    """A member of the annotation is a module-level name bound to a union (`Scalar = Union[float, Tensor]`,
    `Maybe = Optional[Tensor]`, `Number = int | Tensor`), not a class: found where it is defined."""
    if annotation is None:
        return False
    for member in _members(annotation.annotation):
        if not member or member == "None":
            continue
        home, name = func.module, member
        qualified = func.module.imports.qualify(member)
        if qualified != member or "." in member:
            module_name, _, name = qualified.rpartition(".")
            found = project.lookup(module_name) if project is not None and module_name else None
            if not isinstance(found, ModuleInfo):
                continue
            home = found
        if name not in home.classes and _union_alias(name).search(home.source):
            return True
    return False


def _union_alias(name: str) -> re.Pattern[str]:
    """`name = Union[...]`, `name: TypeAlias = Optional[...]`, `name = A | B` at the start of a line."""
    union = r"[\w.]*\b(?:Union|Optional)\[|[\w.]+(?:\[[^\n]*\])?[ \t]*\|"
    return re.compile(rf"^{re.escape(name)}[ \t]*(?::[^=\n]*)?=[ \t]*(?:{union})", re.MULTILINE)


def _members(node: cst.BaseExpression) -> list[str]:
    """The dotted names a union annotation is made of ("" for a member that is no plain name)."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.BitOr:
        return _members(node.left) + _members(node.right)
    if type(node) is cst.SimpleString:
        text = string_value(node)
        try:
            return _members(cst.parse_expression(text)) if text else [""]
        except cst.ParserSyntaxError:
            return [""]
    if type(node) is cst.Subscript and (dotted_name(node.value) or "").rsplit(".", 1)[-1] in ("Optional", "Union"):
        return [m for e in node.slice if isinstance(e.slice, cst.Index) for m in _members(e.slice.value)]
    return [dotted_name(node) or ""]


def _read_from_tensors(kind: Kind) -> Kind:
    if kind.tag is Tag.STATIC:
        return HOST
    if kind.tag is Tag.SEQUENCE:
        if kind.items is not None:
            return items_mapped(kind, _read_from_tensors)
        return sequence_of(_read_from_tensors(kind.elem or UNKNOWN), kind.dynamic_shape)
    return kind


def helper_param_kinds(oracle: ProjectOracle, func: FunctionInfo, given: dict[str, Kind]) -> dict[str, Kind]:
    """A helper's parameters: what callers pass, else what its signature says, else unknown."""
    given = callers_kinds(func, given, oracle.project)
    params: dict[str, Kind] = {}
    for param in all_params(func.node):
        name = param.name.value
        params[name] = given[name] if name in given else signature_kind(param, UNKNOWN)
    assumed = assumed_parameters(func) - _receiver(func)
    _apply_uses(oracle, func, params, {n for n in assumed if n not in given or n in param_uses(func).containers})
    _apply_self_and_roles(oracle, func, params)
    for name, kind in given.items():  # the receiver, bound by the caller
        if name in params:
            params[name] = kind
    return params


def annotation_overrides(func: FunctionInfo, params: dict[str, Kind]) -> dict[str, str]:
    """`timestep: int` given a tensor by the traced callers: {"timestep": "int"}."""
    overrides = {}
    for param in all_params(func.node):
        name = param.name.value
        if param.annotation is not None and name in params and params[name].is_tensor:
            declared = annotation_kind(param.annotation)
            if declared is not None and declared.tag is Tag.STATIC:
                overrides[name] = cst.Module([]).code_for_node(param.annotation.annotation)
    return overrides
