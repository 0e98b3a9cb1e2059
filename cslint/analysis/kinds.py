"""What a value is at trace time: the lattice tensor-value inference works on.

Rules only ever ask two questions of an expression: "is this a traced tensor?" and "does this Python
value come from tensor data?". Everything else (structure of containers, modules, optimizer state) is
here so inference can follow values through the code people actually write.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, replace


class Tag(enum.IntEnum):
    # Ordered: the join of two kinds with different tags is the larger one, except where noted.
    STATIC = 0  # a Python value fixed at trace time: shapes, config, hyperparameters
    UNKNOWN = 1  # nothing known; never a finding on its own
    OBJECT = 2  # an instance of a class (module, config, user object); attributes looked up by class
    SEQUENCE = 3  # list/tuple/dict whose elements have kind `elem`
    HOST = 4  # a Python value computed from tensor data (t.item(), float(t), t.tolist())
    TENSOR = 5  # a traced tensor


@dataclass(frozen=True)
class Kind:
    tag: Tag
    # TENSOR: its shape depends on values (nonzero, boolean indexing, unique ...)
    dynamic_shape: bool = False
    # SEQUENCE: element kind; OBJECT of the "module" role: a container of modules (`nn.ModuleList`), the kind
    # of its elements when the project puts in modules of one known class. OBJECT: the role ("module",
    # "param_groups", "group", "opt_state", ...); STATIC: "none" for None itself (NONE)
    elem: Kind | None = None
    role: str = ""
    # OBJECT: qualified name of the project class it is an instance of, when known
    cls: str = ""
    # SEQUENCE: a tuple whose positions have these kinds (`enumerate` pairs, `return a, b`)
    items: tuple[Kind, ...] | None = None
    # SEQUENCE with items: only the leading positions are known, more of kind `elem` may follow (a tuple that
    # is `(a, b)` on one path and `(a, b) + rest` on another): an index from the end reads `elem`
    prefix: bool = False
    # TENSOR: its number of dimensions, when known (0 for `t.sum()`, 2 for `t.nonzero()`): indexing by a
    # zero-dimensional tensor reads its value
    rank: int | None = None
    # TENSOR: its dtype is torch.bool (a comparison, `.bool()`, `dtype=torch.bool`, a `BoolTensor`
    # parameter): indexing by it selects a data-dependent number of elements
    boolean: bool = False
    # TENSOR: its dtype when something shows it is one the WSC6xx rules care about ("float64": `dtype=
    # torch.float64`, `.double()`, arithmetic on float64 tensors); STATIC: the value is that torch dtype itself
    # (`torch.float64`, a variable bound to it, `t.dtype` of a float64 tensor). Empty: not known to be one.
    dtype: str = ""
    # STATIC: the constant it is, where a library class's constructor call shows it (an argument written as a
    # literal, or a parameter left at a literal default: analysis/constructed.py); None: not known
    value: bool | int | float | str | None = None
    # OBJECT: attributes of this instance that its constructor call decided (the classes of the layers a library
    # module is given, its options' constants), read before what the class's methods set in general
    attrs: tuple[tuple[str, Kind], ...] = ()
    # TENSOR: made on the CPU inside the step, under a lazy-tensor tracer (analysis/placement.py): a factory with
    # no device, or computed from such tensors alone; copying it to Python reads nothing from the device
    on_cpu: bool = False

    @property
    def is_tensor(self) -> bool:
        return self.tag is Tag.TENSOR

    @property
    def is_data_dependent(self) -> bool:
        """True when using this value in Python control flow needs tensor data."""
        return self.tag in (Tag.TENSOR, Tag.HOST)

    @property
    def length_is_data(self) -> bool:
        """True when its length (the trip count of a loop over it) depends on tensor values: a tensor or
        list of data-dependent shape, or a value read from tensor data, unless it is the list of a tensor
        whose shape is static (HOST_LIST)."""
        if self.tag is Tag.HOST:
            return self.elem is None
        return self.tag in (Tag.TENSOR, Tag.SEQUENCE) and self.dynamic_shape

    def describe(self) -> str:
        if self.tag is Tag.TENSOR:
            return "a tensor with a data-dependent shape" if self.dynamic_shape else "a tensor"
        if self.tag is Tag.HOST:
            return "a Python value read from tensor data"
        return self.tag.name.lower()


STATIC = Kind(Tag.STATIC)
UNKNOWN = Kind(Tag.UNKNOWN)
HOST = Kind(Tag.HOST)
TENSOR = Kind(Tag.TENSOR)
DYN_TENSOR = Kind(Tag.TENSOR, dynamic_shape=True)
BOOL_TENSOR = Kind(Tag.TENSOR, boolean=True)
MODULE = Kind(Tag.OBJECT, role="module")
# `t.tolist()` of a tensor whose shape is static: values read from tensor data, as many as the tensor has
# elements on every step
HOST_LIST = Kind(Tag.HOST, elem=HOST)
# `None` itself, where a library is summarised for a call that passes it (analysis/none_arguments.py)
NONE = Kind(Tag.STATIC, role="none")
# a Python value the call's own expression shows is not None (`x.shape[1]`, `2 * n`, a literal), where it decides
# a library's test for None; `not_none` marks an unknown value, a value read from tensor data or a tensor the same
# way (a variable bound to `max(sizes)`, `counts.numel()`, a parameter given one where it was None)
SOME = Kind(Tag.STATIC, role="some")
_MAY_BE_SOME = (Tag.STATIC, Tag.UNKNOWN, Tag.HOST, Tag.TENSOR)  # the tags whose kinds have no role of their own


def is_none(kind: Kind) -> bool:
    return kind.tag is Tag.STATIC and kind.role == "none"


def is_some(kind: Kind) -> bool:
    return (kind.role == "some" and kind.tag in _MAY_BE_SOME) or kind.value is not None


def not_none(kind: Kind) -> Kind:
    """The same value, shown not to be None."""
    if kind.tag not in _MAY_BE_SOME or kind.role == "some" or kind.value is not None:
        return kind
    return SOME if kind.tag is Tag.STATIC and not kind.dtype else replace(kind, role="some")


def may_be_none(kind: Kind) -> Kind:
    """The same value without the mark of `not_none`, or `NONE` as any Python value."""
    if not (is_some(kind) or is_none(kind)):
        return kind
    plain = replace(kind, role="", value=None)
    return STATIC if plain == STATIC else plain


def tensor(dynamic_shape: bool = False, rank: int | None = None, boolean: bool = False, dtype: str = "") -> Kind:
    if dtype:
        return Kind(Tag.TENSOR, dynamic_shape=dynamic_shape, rank=rank, dtype=dtype)
    if rank is None and not boolean:
        return DYN_TENSOR if dynamic_shape else TENSOR
    if rank is None and not dynamic_shape:
        return BOOL_TENSOR
    return Kind(Tag.TENSOR, dynamic_shape=dynamic_shape, rank=rank, boolean=boolean)


FLOAT64 = "float64"
FLOAT64_DTYPE = Kind(Tag.STATIC, dtype=FLOAT64)  # `torch.float64` as a value


def with_dtype(kind: Kind, dtype: str) -> Kind:
    """The same tensor with `dtype` (empty: not known)."""
    if kind.tag is not Tag.TENSOR or kind.dtype == dtype:
        return kind
    return tensor(kind.dynamic_shape, kind.rank, kind.boolean and not dtype, dtype)


def is_float64(kind: Kind) -> bool:
    """A float64 tensor, or the dtype torch.float64 itself."""
    return kind.dtype == FLOAT64


def as_boolean(kind: Kind) -> Kind:
    """The same tensor with the bool dtype."""
    return kind if kind.boolean else tensor(kind.dynamic_shape, kind.rank, True)


def sequence_of(elem: Kind, dynamic_length: bool = False) -> Kind:
    return Kind(Tag.SEQUENCE, elem=elem, dynamic_shape=dynamic_length)


MAPPING = "mapping"  # SEQUENCE's role for a dict or a set: `k in it` hashes `k` (a tensor by identity), reads no value


def mapping_of(elem: Kind) -> Kind:
    """A dict (of values of kind `elem`) or a set (of elements of kind `elem`)."""
    return Kind(Tag.SEQUENCE, elem=elem, role=MAPPING)


def hashes_its_members(container: Kind) -> bool:
    """`x in container` hashes `x` (a tensor by identity) instead of comparing values: a dict or a set, or an
    optimizer's state (a dict keyed by parameters)."""
    return (container.tag is Tag.SEQUENCE and container.role == MAPPING) or \
        (container.tag is Tag.OBJECT and container.role in ("state_map", "opt_state"))


def fixed_before_tracing(kind: Kind) -> Kind:
    """What a value computed before the step runs (in a constructor) is at trace time: a Python value read
    from tensor data there is a constant (`self.dims = torch.nonzero(m)[:, 0].tolist()`), and a tensor's
    value-dependent shape is already known; tensors stay tensors."""
    if kind.tag is Tag.HOST:
        return STATIC
    if kind.tag is Tag.TENSOR and kind.dynamic_shape:
        return tensor(rank=kind.rank, boolean=kind.boolean, dtype=kind.dtype)
    if kind.tag is Tag.SEQUENCE:
        elem = fixed_before_tracing(kind.elem) if kind.elem is not None else None
        items = tuple(fixed_before_tracing(k) for k in kind.items) if kind.items is not None else None
        return replace(kind, elem=elem, items=items, dynamic_shape=False)
    return kind


def tuple_of(*items: Kind) -> Kind:
    elem = items[0] if items else UNKNOWN
    for item in items[1:]:
        elem = join(elem, item)
    return Kind(Tag.SEQUENCE, elem=elem, items=tuple(items))


def starting_with(items: tuple[Kind, ...], rest: Kind) -> Kind:
    """A tuple whose first positions have the kinds `items`, followed by any number of `rest` elements."""
    if not items:
        return sequence_of(rest)
    return replace(tuple_of(*items, rest), items=items, prefix=True)


def members(kind: Kind) -> tuple[Kind, ...]:
    """The kinds a sequence's elements may have: its positions, and its elements' kind where more may follow."""
    rest = (kind.elem,) if kind.elem is not None and known_items(kind) is None else ()
    return (*(kind.items or ()), *rest)


def known_items(kind: Kind) -> tuple[Kind, ...] | None:
    """The kinds of every position of a tuple whose length is known; None when it is not."""
    return None if kind.prefix else kind.items


def concatenation(a: Kind, b: Kind) -> Kind:
    """The kind of `a + b` on two sequences: the positions of both where both are tuples of known length,
    `a`'s positions and then `b`'s elements where only `a`'s length is known."""
    a_items, b_items = known_items(a), known_items(b)
    if a_items is not None and b_items is not None:
        return tuple_of(*a_items, *b_items)
    rest = join(a.elem or UNKNOWN, b.elem or UNKNOWN)
    if a.items is not None:
        return starting_with(a.items, rest)
    return sequence_of(rest, a.dynamic_shape or b.dynamic_shape)


def items_mapped(kind: Kind, change: Callable[[Kind], Kind]) -> Kind:
    """A tuple of items with `change` applied to each known position and to the elements that may follow."""
    assert kind.items is not None
    items = tuple(map(change, kind.items))
    return starting_with(items, change(kind.elem or UNKNOWN)) if kind.prefix else tuple_of(*items)


def element_of(kind: Kind) -> Kind:
    """The kind of one element when iterating, indexing or unpacking a value of this kind."""
    if kind.tag is Tag.SEQUENCE:
        return kind.elem or UNKNOWN
    if kind.tag is Tag.TENSOR:  # the rows of a mask are masks
        return tensor(rank=kind.rank - 1, boolean=kind.boolean, dtype=kind.dtype) if kind.rank else \
            BOOL_TENSOR if kind.boolean else tensor(dtype=kind.dtype)
    if kind.tag is Tag.OBJECT and kind.role == "module":
        return kind.elem or MODULE  # ModuleList / Sequential
    if kind.tag is Tag.HOST:
        return kind.elem or kind
    if kind.tag is Tag.STATIC:
        return kind
    return UNKNOWN


def obj(role: str, cls: str = "") -> Kind:
    return Kind(Tag.OBJECT, role=role, cls=cls)


def constant(value: bool | int | float | str) -> Kind:
    """A Python constant whose value is known (a constructor's literal argument or default)."""
    return Kind(Tag.STATIC, value=value)


def without_constant(kind: Kind) -> Kind:
    """The same Python value, its constant forgotten (still not None)."""
    return replace(kind, value=None, role="some") if kind.value is not None else kind


def attribute_of(kind: Kind, name: str) -> Kind | None:
    """What this instance's constructor call set its attribute `name` to, when it decided it."""
    for attr, found in kind.attrs:
        if attr == name:
            return found
    return None


def classes_of(kind: Kind) -> list[str]:
    """The classes an object may be an instance of (`A|B` after a join of an A and a B)."""
    return kind.cls.split("|") if kind.cls else []


# At most this many classes in a join of modules of different classes (`nn.ModuleList([A(), B(), C()])`): more
# are modules of no known class, so what one call runs stays bounded
MAX_MODULE_CLASSES = 8


def modules_of(element: Kind) -> Kind:
    """An `nn.ModuleList` of modules of this kind (`nn.ModuleList([Block(d) for _ in range(n)])`): iterating
    or indexing it gives them, so calling one reaches their `forward`."""
    return Kind(Tag.OBJECT, role="module", elem=element) if element.tag is Tag.OBJECT and element.cls else MODULE


def join(a: Kind, b: Kind) -> Kind:
    """The kind of a value that may be `a` or `b` (after an if/else, across loop iterations)."""
    if a is b or a == b:
        return a
    joined = _join(a, b)
    if is_some(joined) and not (is_some(a) and is_some(b)):
        return may_be_none(joined)  # not None only where both are
    return joined


def _join(a: Kind, b: Kind) -> Kind:
    if a.tag is b.tag:
        if a.tag is Tag.TENSOR:  # a mask only if it is one on every path; on the CPU only if on every path
            joined = tensor(a.dynamic_shape or b.dynamic_shape, a.rank if a.rank == b.rank else None,
                            a.boolean and b.boolean, a.dtype if a.dtype == b.dtype else "")
            return replace(joined, on_cpu=True) if a.on_cpu and b.on_cpu else joined
        if a.tag is Tag.SEQUENCE:
            ea, eb = a.elem or UNKNOWN, b.elem or UNKNOWN
            if a.items is not None and b.items is not None:
                positions = tuple(join(x, y) for x, y in zip(a.items, b.items))
                if len(a.items) == len(b.items) and not a.prefix and not b.prefix:
                    return tuple_of(*positions)
                # tuples of different lengths: the positions both have stay known
                return starting_with(positions, join(ea, eb))
            if a.role == b.role == MAPPING:
                return mapping_of(join(ea, eb))
            return sequence_of(join(ea, eb), a.dynamic_shape or b.dynamic_shape)
        if a.tag is Tag.OBJECT:
            if a.role == b.role and a.role in ("function", "method") and a.cls and b.cls:
                # one of several functions: keep them all, so a call through the variable reaches each
                return obj(a.role, "|".join(sorted(set(a.cls.split("|")) | set(b.cls.split("|")))))
            if a.role == b.role == "module":
                return _join_modules(a, b)
            if a.role == b.role and a.elem != b.elem:  # containers of different modules: elements unknown
                return Kind(Tag.OBJECT, role=a.role, cls=a.cls, elem=MODULE)
            if a.role == b.role and a.cls == b.cls:
                return Kind(Tag.OBJECT, role=a.role, cls=a.cls, elem=a.elem, attrs=_common_attrs(a, b))
            if a.role == b.role == "object" and a.cls and b.cls:
                # an instance of one of several classes (a factory's `return Gaussian(d)` or `return Discrete(n)`)
                classes = sorted(set(classes_of(a)) | set(classes_of(b)))
                return obj("object", "|".join(classes) if len(classes) <= MAX_MODULE_CLASSES else "")
            return a if a.role == b.role else obj("")
        if a.tag is Tag.STATIC:  # None or another Python value; two constants, or values not None, not None
            return SOME if is_some(a) and is_some(b) and not a.dtype and not b.dtype else STATIC
        if a.tag is Tag.HOST:
            return HOST  # a list of static length or any value read from tensor data
        return a
    # A value that is sometimes a tensor is treated as a tensor: that branch will be traced.
    return a if a.tag > b.tag else b


def _join_modules(a: Kind, b: Kind) -> Kind:
    """A module that may be `a` or `b`: an instance of any of their classes (a module of no known class adds
    none), a container of the join of their elements, the attributes both constructors decided alike."""
    classes = sorted(set(classes_of(a)) | set(classes_of(b)))
    cls = "|".join(classes) if len(classes) <= MAX_MODULE_CLASSES else ""
    elem = join(a.elem, b.elem) if a.elem is not None and b.elem is not None else a.elem or b.elem
    return Kind(Tag.OBJECT, role="module", cls=cls, elem=elem, attrs=_common_attrs(a, b) if a.cls == b.cls else ())


def _common_attrs(a: Kind, b: Kind) -> tuple[tuple[str, Kind], ...]:
    """The constructor-decided attributes of an instance that may be `a` or `b`: those both decided, joined."""
    if not a.attrs or not b.attrs:
        return ()
    theirs = dict(b.attrs)
    return tuple((name, join(kind, theirs[name])) for name, kind in a.attrs if name in theirs)


def combine(*kinds: Kind) -> Kind:
    """The kind of an arithmetic result over operands of these kinds (`a + b`, `a < b`)."""
    result = STATIC
    tensors = [k for k in kinds if k.tag is Tag.TENSOR]
    if tensors:  # float64 only where every tensor operand is (a float32 tensor times a 0-d float64 one is float32)
        return tensor(dtype=FLOAT64) if all(is_float64(k) for k in tensors) else TENSOR
    for k in kinds:
        if k.tag is Tag.TENSOR:
            return TENSOR
        if k.tag is Tag.HOST:
            result = HOST
        elif k.tag in (Tag.UNKNOWN, Tag.OBJECT, Tag.SEQUENCE) and result.tag is Tag.STATIC:
            result = UNKNOWN
    return result

