"""What a function's signature says of its parameters: the kind an annotation or a default gives each
(`x: Tensor`, `mask: dict[str, Tensor] | None`, `use_cache=None`), and the parameters themselves."""

from __future__ import annotations

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.kinds import BOOL_TENSOR, FLOAT64_DTYPE, STATIC, TENSOR, UNKNOWN, Kind, join, sequence_of, tuple_of
from cslint.analysis.syntax import string_value

FLOAT64_SPELLINGS = frozenset({"torch.float64", "torch.double"})  # as written: a default has no imports here
STATIC_FLAG_PREFIXES = ("use_", "return_", "output_", "is_", "has_", "do_", "enable_", "training")


def annotation_kind(annotation: cst.Annotation | None) -> Kind | None:
    if annotation is None:
        return None
    return _annotated_kind(annotation.annotation)


# Generic containers by the position of their element type (`dict[str, Tensor]`: the values).
_CONTAINER_ANNOTATIONS = {
    "list": 0, "List": 0, "Sequence": 0, "MutableSequence": 0, "Iterable": 0, "Iterator": 0, "set": 0,
    "Set": 0, "frozenset": 0, "FrozenSet": 0, "Collection": 0, "deque": 0, "Deque": 0,
    "dict": -1, "Dict": -1, "Mapping": -1, "MutableMapping": -1, "OrderedDict": -1, "DefaultDict": -1,
    "defaultdict": -1, "tuple": None, "Tuple": None,
}
BARE_CONTAINER = sequence_of(UNKNOWN)  # `list`, `dict`, `Sequence`: nothing said about the elements


def _annotated_kind(node: cst.BaseExpression) -> Kind:
    """`Tensor` is a tensor; `dict[str, Tensor]`, `list[Tensor] | None`, `tuple[Tensor, ...]` are containers
    of tensors (`"labels" in inputs` asks about a key); `int`, `str`, a config class are Python values."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.BitOr:  # `X | None`
        return join(_annotated_kind(node.left), _annotated_kind(node.right))
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):  # a forward reference: `"Tensor"`
        text = string_value(node) if type(node) is cst.SimpleString else None
        if not text:
            return STATIC
        try:
            return _annotated_kind(cst.parse_expression(text))
        except cst.ParserSyntaxError:
            return TENSOR if "Tensor" in text or "Parameter" in text else STATIC
    if type(node) is cst.Subscript:
        head = (dotted_name(node.value) or "").rsplit(".", 1)[-1]
        args = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        if head in ("Optional", "Union", "Annotated") and args:
            members = args[:1] if head == "Annotated" else args
            kind = _annotated_kind(members[0])
            for member in members[1:]:
                kind = join(kind, _annotated_kind(member))
            return kind
        if head in _CONTAINER_ANNOTATIONS and args:
            position = _CONTAINER_ANNOTATIONS[head]
            elements = [a for a in args if type(a) is not cst.Ellipsis]
            if position is None:  # `tuple[Tensor, int]`, `tuple[Tensor, ...]`
                return tuple_of(*map(_annotated_kind, elements)) if len(elements) == len(args) else \
                    sequence_of(_annotated_kind(elements[0]) if elements else UNKNOWN)
            return sequence_of(_annotated_kind(args[position]))
        if head in _CONTAINER_ANNOTATIONS:
            return BARE_CONTAINER
        if _annotated_kind(node.value).is_tensor or head in ("Callable", "type", "Type", "Literal", "ClassVar"):
            return _annotated_kind(node.value)
        # `Float[Tensor, "b n"]` (jaxtyping) is a tensor; `MyBox[int]` is not
        return TENSOR if any(_annotated_kind(a).is_tensor for a in args) else STATIC
    name = dotted_name(node)
    if name is not None:
        last = name.rsplit(".", 1)[-1]
        if "Tensor" in last or "Parameter" in last:
            return BOOL_TENSOR if last == "BoolTensor" else TENSOR
        if last in _CONTAINER_ANNOTATIONS:
            return BARE_CONTAINER
    return STATIC  # int, str, None, a config object or other user class: its attributes are static


def _python_literals(node: cst.BaseExpression | None) -> bool:
    """`[1, 2, 2]`, `("a", -1)`: a non-empty list, tuple or set of number and string literals."""
    if type(node) not in (cst.List, cst.Tuple, cst.Set) or not node.elements:  # type: ignore[union-attr]
        return False
    for element in node.elements:  # type: ignore[union-attr]
        value = element.value
        if type(value) is cst.UnaryOperation:
            value = value.expression
        if type(value) not in (cst.Integer, cst.Float, cst.SimpleString):
            return False
    return True


def default_kind(param: cst.Param) -> Kind | None:
    default = param.default
    if default is None:
        return None
    if isinstance(default, cst.Name) and default.value == "None":
        name = param.name.value
        # `use_cache=None`, `return_dict=None`: flags, not optional tensors
        return STATIC if name.startswith(STATIC_FLAG_PREFIXES) else None
    if dotted_name(default) in FLOAT64_SPELLINGS:  # `dtype=torch.float64`: the dtype when no caller says another
        return FLOAT64_DTYPE
    return STATIC


def signature_kind(param: cst.Param, unannotated: Kind) -> Kind:
    """Kind of a parameter from its annotation or default, else `unannotated`. `*args` and `**kwargs` are
    containers of such values (the keys of `kwargs` are strings)."""
    from_annotation = annotation_kind(param.annotation)
    if param.star in ("*", "**"):
        return sequence_of(from_annotation if from_annotation is not None else unannotated)
    if from_annotation is not None:
        if from_annotation == BARE_CONTAINER and _python_literals(param.default):
            return sequence_of(STATIC)  # `patch_size: list = [1, 2, 2]`: the default tells what the elements are
        return from_annotation
    from_default = default_kind(param)
    return from_default if from_default is not None else unannotated


def all_params(node: cst.FunctionDef | cst.Lambda) -> list[cst.Param]:
    p = node.params
    params = [*p.posonly_params, *p.params, *p.kwonly_params]
    if isinstance(p.star_arg, cst.Param):
        params.append(p.star_arg)
    if p.star_kwarg is not None:
        params.append(p.star_kwarg)
    return params


def first_param(node: cst.FunctionDef) -> str | None:
    p = node.params
    positional = [*p.posonly_params, *p.params]
    return positional[0].name.value if positional else None
