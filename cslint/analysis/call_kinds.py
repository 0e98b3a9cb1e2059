"""What a call returns when the project does not define the callee: torch and the standard library (by
torch_api), builtins, tensor methods, methods of the objects inference tracks (modules, optimizers and
their state, param groups), and an unknown callable."""

from __future__ import annotations

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.kinds import (
    DYN_TENSOR, HOST, HOST_LIST, MODULE, STATIC, TENSOR, UNKNOWN, Kind, Tag, combine, element_of, join,
    mapping_of, modules_of, obj, sequence_of, tuple_of,
)
from cslint.analysis.ranks import function_rank
from cslint.analysis.syntax import string_value


def unknown_call_kind(arg_kinds: list[Kind], default: Kind = UNKNOWN) -> Kind:
    """An unknown callable: given a tensor it most likely returns one (activations, einops, ...)."""
    if any(k.tag is Tag.TENSOR for k in arg_kinds):
        return TENSOR
    if any(k.tag is Tag.HOST for k in arg_kinds):
        return HOST
    return default


def known_external_kind(qualified: str, node: cst.Call, arg_kinds: list[Kind]) -> Kind | None:
    """What a call outside the project returns when torch_api (or the standard library) says; None for a
    function only its source can tell about."""
    if qualified in api.STATIC_TORCH_FUNCTIONS or qualified.startswith(api.STATIC_PREFIXES):
        return STATIC
    if qualified in api.HOST_TORCH_FUNCTIONS:
        return HOST
    if qualified in api.MAPPING_CONSTRUCTORS:
        return mapping_of(UNKNOWN)
    namespace, _, last = qualified.rpartition(".")
    ranked = function_rank(last, node) if namespace == "torch" else None
    if ranked is not None:  # torch.nonzero(x, as_tuple=True), torch.argmax(x)
        return ranked
    if qualified in api.DYNAMIC_SHAPE_FUNCTIONS:
        return DYN_TENSOR
    if qualified in ("torch.where",) and len(node.args) == 1:
        return DYN_TENSOR
    if qualified in api.HOST_CONSTANT_CONSTRUCTORS and host_constant(node, arg_kinds):
        return STATIC
    if qualified in api.TENSOR_CONSTRUCTORS:
        return TENSOR
    if qualified.startswith("torch.optim.") and qualified.rsplit(".", 1)[-1][:1].isupper():
        return obj("optimizer")
    if qualified.startswith(("torch.nn.", "cerebras.pytorch.nn.")):
        last = qualified.rsplit(".", 1)[-1]
        if last == "ModuleList" and arg_kinds and arg_kinds[0].tag is Tag.SEQUENCE:
            return modules_of(element_of(arg_kinds[0]))  # `nn.ModuleList([Block(d) for _ in range(n)])`
        if last == "Sequential" and arg_kinds:
            return modules_of(_layers(node, arg_kinds))  # `nn.Sequential(*layers)`, `nn.Sequential(a, b)`
        if last[:1].isupper():
            return MODULE
    if namespace == "torch" and last.startswith("_") and not last.startswith(api.PRIVATE_TORCH_OPS):
        return unknown_call_kind(arg_kinds)  # torch._use_cudnn_rnn_flatten_weight() and other private helpers
    if namespace in api.TENSOR_OP_NAMESPACES or namespace.startswith("torch.ops."):
        if last[:1].isupper():  # torch.Generator, torch.Size, dtype objects
            return STATIC
        if last.startswith(api.PREDICATE_PREFIXES):  # torch.is_autocast_cpu_enabled(), torch.is_conj(t)
            return STATIC
        return TENSOR
    if qualified.startswith(("math.", "numpy.", "statistics.")):
        return HOST if any(k.is_data_dependent for k in arg_kinds) else STATIC
    if qualified.startswith(("einops.", "torch_xla.")):
        return TENSOR
    if qualified in ("copy.deepcopy", "copy.copy") and arg_kinds:
        return arg_kinds[0]
    if qualified in ("functools.partial",):
        return obj("function")
    return None


def _layers(node: cst.Call, arg_kinds: list[Kind]) -> Kind:
    """What `nn.Sequential(...)` holds: its positional arguments, the elements of a starred one (joined)."""
    parts = [element_of(kind) if arg.star == "*" else kind for arg, kind in zip(node.args, arg_kinds)
             if arg.keyword is None and arg.star != "**"]
    if not parts:
        return UNKNOWN
    layer = parts[0]
    for part in parts[1:]:
        layer = join(layer, part)
    return layer


def host_constant(node: cst.Call, arg_kinds: list[Kind], of_lists: bool = False) -> bool:
    """`torch.tensor(0.9)`: a CPU tensor made of Python values, whose value is known while tracing (no
    device, or the CPU, named); `of_lists`: lists of such values count (`torch.stack([a, b])`)."""
    device = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "device"), None)
    if device is not None and string_value(device) not in ("cpu",):
        return False
    values = [k for a, k in zip(node.args, arg_kinds) if a.keyword is None]
    return bool(values) and all(_python_made(k) if of_lists else k.tag is Tag.STATIC for k in values)


def _python_made(kind: Kind) -> bool:
    """A Python value, or a list of them (`torch.stack([a, b])` of host constants)."""
    if kind.tag is Tag.SEQUENCE:
        return kind.elem is not None and _python_made(kind.elem) and all(_python_made(k) for k in kind.items or ())
    return kind.tag is Tag.STATIC


def builtin_call_kind(name: str, arg_kinds: list[Kind]) -> Kind:
    first = arg_kinds[0] if arg_kinds else STATIC
    if name == "len":
        return HOST if first.length_is_data else STATIC
    if name in api.HOST_CONVERSION_BUILTINS:
        return HOST if any(k.is_data_dependent for k in arg_kinds) else STATIC
    if name in api.STATIC_BUILTINS:
        return STATIC
    if name == "range":
        return sequence_of(combine(*arg_kinds) if arg_kinds else STATIC)
    if name == "enumerate":
        return sequence_of(tuple_of(STATIC, element_of(first)), first.dynamic_shape)
    if name == "zip":
        return sequence_of(tuple_of(*(element_of(k) for k in arg_kinds)))
    if name in ("set", "frozenset"):
        return mapping_of(element_of(first) if arg_kinds else UNKNOWN)
    if name in api.SEQUENCE_BUILTINS:
        return sequence_of(element_of(first), first.dynamic_shape)
    if name in ("any", "all"):
        return HOST if element_of(first).is_data_dependent or first.is_data_dependent else STATIC
    if name in api.TENSOR_PRESERVING_BUILTINS:
        kinds = arg_kinds if len(arg_kinds) > 1 else [element_of(first) if first.tag is Tag.SEQUENCE else first]
        return combine(*kinds)
    if name == "super":
        return obj("super")
    if name in ("getattr", "vars", "dict", "map", "filter"):
        return UNKNOWN
    return unknown_call_kind(arg_kinds)


def tensor_method_kind(method: str, receiver: Kind, arg_kinds: list[Kind]) -> Kind:
    if method in api.STATIC_TENSOR_METHODS:
        return HOST if receiver.dynamic_shape and method in api.SHAPE_METHODS else STATIC
    if method == "tolist" and receiver.tag is Tag.TENSOR and not receiver.dynamic_shape and receiver.rank != 0:
        return HOST_LIST
    if method in api.HOST_VALUE_METHODS:
        return HOST
    if method in api.DYNAMIC_SHAPE_METHODS:
        return DYN_TENSOR
    if method == "repeat_interleave" and arg_kinds and arg_kinds[0].is_tensor:
        return DYN_TENSOR
    if method in api.REDUCTIONS and not arg_kinds:
        return TENSOR
    return receiver if receiver.dynamic_shape else TENSOR


def object_method_kind(receiver: Kind, method: str, arg_kinds: list[Kind]) -> Kind:
    if receiver.role == "module":
        if method in ("parameters", "buffers"):
            return sequence_of(TENSOR)
        if method in ("named_parameters", "named_buffers"):
            return sequence_of(tuple_of(STATIC, TENSOR))
        if method in ("modules", "children"):
            return sequence_of(MODULE)
        if method in ("named_modules", "named_children"):
            return sequence_of(tuple_of(STATIC, MODULE))
        if method in ("forward", "__call__"):
            return TENSOR
        if method in ("train", "eval", "to", "cuda", "cpu", "requires_grad_", "apply", "half", "float"):
            return receiver
        if method in ("register_buffer", "register_parameter", "add_module", "zero_grad"):
            return STATIC
        if method in ("state_dict",):
            return sequence_of(TENSOR)
        return unknown_call_kind(arg_kinds)
    if receiver.role == "optimizer":
        return STATIC
    if receiver.role in ("opt_state", "state_map"):
        if method in ("get", "pop", "setdefault"):
            return TENSOR
        if method in ("keys",):
            return sequence_of(STATIC)
        if method in ("values",):
            return sequence_of(TENSOR)
        if method in ("items",):
            return sequence_of(tuple_of(STATIC, TENSOR))
        return STATIC
    if receiver.role == "group":
        if method == "get" and arg_kinds:
            return UNKNOWN
        return STATIC
    return unknown_call_kind(arg_kinds)
