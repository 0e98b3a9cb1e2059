"""Calls in one function's walk: a project function (followed: its call site recorded with the kinds of its
arguments), an installed library's function (summarised), a method of a tracked object, a nested
function, a custom autograd function, a builtin or a callable outside the project (call_kinds.py); and
whether the tensor a call makes is a mask (of the bool dtype)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.call_kinds import (
    builtin_call_kind, host_constant, known_external_kind, object_method_kind, tensor_method_kind, unknown_call_kind,
)
from cslint.analysis.constant_arguments import constant_tests, literal_arguments, with_constant_arguments
from cslint.analysis.factories import local_classes
from cslint.analysis.function_analysis import CallSite, Env, FunctionAnalysis
from cslint.analysis.function_tables import ANY, Key, cst_key, selected
from cslint.analysis.imports import dotted_name
from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis.kinds import (
    FLOAT64, FLOAT64_DTYPE, HOST, MODULE, STATIC, TENSOR, UNKNOWN, Kind, Tag, as_boolean, attribute_of, classes_of, element_of,
    is_float64, join, known_items, members, modules_of, obj, sequence_of, tensor, tuple_of, with_dtype,
)
from cslint.analysis.library_env import Summary, both, either
from cslint.analysis.none_arguments import literal_nones, shown_not_none, with_none_arguments
from cslint.analysis.numpy_draws import draws_a_number
from cslint.analysis.placement import placed_call, placed_method
from cslint.analysis.project import Project
from cslint.analysis.ranks import method_rank
from cslint.analysis.step_functions import global_kind, imported_object_kind, table_entries, table_kind
from cslint.analysis.syntax import path_key, string_value
from cslint.analysis.tracing_guards import Guards
from cslint.core.targets import DYNAMO, LAZY

if TYPE_CHECKING:
    from cslint.analysis.oracle import Oracle

# numpy.random functions that set up or read the generator rather than draw numbers
NUMPY_RANDOM_STATE = frozenset({"seed", "default_rng", "RandomState", "Generator", "get_state", "set_state",
                                "PCG64", "SeedSequence", "BitGenerator", "MT19937", "Philox", "SFC64"})

# The `ctx` autograd passes a custom Function's `forward` and `backward`.
AUTOGRAD_CONTEXT = obj("autograd_context")


class CallInference:
    """The calls of FunctionInference's walk, and what they share with its expressions and statements (set by
    FunctionInference.__init__: see there)."""

    project: Project
    oracle: Oracle
    func: FunctionInfo
    module: ModuleInfo
    result: FunctionAnalysis
    self_name: str | None
    keywords: dict[str, Kind]
    star_kwarg: str | None
    guards: Guards | None
    # per call node: the latest summary of each installed library function it reaches (one call may reach
    # several: a method of a module that is one of several classes)
    _library_targets: dict[int, dict[str, Summary]]
    _running_each: set[int]  # call nodes that run every library function they reach, not one of them

    @property
    def _lazy(self) -> bool:
        """Traced by a lazy-tensor tracer: a tensor made with no device is an eager CPU tensor (placement.py)."""
        return self.guards is not None and self.guards.tracer == LAZY

    # ---- walking expressions and nested functions (expression_inference.py, inference.py) --------

    def ev(self, node: cst.BaseExpression, env: Env) -> Kind:
        """The kind of `node` in `env`, recorded."""
        raise NotImplementedError

    def _call_nested(self, node: cst.Call, name: str, arg_kinds: list[Kind], env: Env) -> Kind:
        """What calling the function defined under `name` in this function returns."""
        raise NotImplementedError

    # ---- recording -------------------------------------------------------------------------------

    def _record(self, node: cst.CSTNode, kind: Kind) -> Kind:
        kinds = self.result.kinds
        key = id(node)
        old = kinds.get(key)
        kinds[key] = kind if old is None or old is kind else join(old, kind)
        return kind

    # ---- names the module defines or imports -----------------------------------------------------

    def _object_in_module(self, qualified: str) -> Kind | None:
        """The kind of `pkg.mod.name` when it is an object built at the top of `pkg.mod` (its own method, so
        an analysis kept for reuse can record the answer: see reuse.py)."""
        return imported_object_kind(self.project, qualified)

    def _global(self, name: str) -> Kind:
        """The kind of a name at the top of this function's module."""
        return global_kind(self.project, self.module, name)

    def _is_import(self, node: cst.BaseExpression, env: Env) -> str | None:
        """Qualified name when `node` is a reference through an import (not shadowed by a local)."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head = dotted.split(".")[0]
        if head in env:
            return None
        return self.module.imports.resolve(node)

    def _local_definition(self, name: str) -> FunctionInfo | ClassInfo | None:
        """The function (else class) the module defines under `name`."""
        return self.module.functions.get(name) or self.module.classes.get(name)

    def _imported_object(self, node: cst.BaseExpression, env: Env) -> Kind | None:
        qualified = self._is_import(node, env)
        return self._object_in_module(qualified) if qualified is not None else None

    def _selected_functions(self, question: tuple[str, tuple[Key, ...]]) -> Kind | None:
        """What `NAME[k1][k2]...` is when NAME is a table of functions at the top of this module or imported
        into it (function_tables.py): the entries the keys select, given as (NAME, keys). None when NAME is
        no such table or nothing is selected (its own method, for reuse.py, like `_global`)."""
        name, keys = question
        found = table_entries(self.project, self.module, name)
        if found is None:
            return None
        home, table = found
        entries = selected(table, keys)
        return table_kind(self.project, home, entries) if entries else None

    def _table_lookup(self, node: cst.BaseExpression, env: Env, last: tuple[Key, ...] = ()) -> Kind | None:
        """`ROUTINES["sinkhorn"][backend]` (then `last`, the key of a `.get(key)` on it): the functions of a
        table its literal keys select; None where no key is a literal (the table's kind already joins them all)."""
        keys = list(last)
        while type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
            keys.append(cst_key(node.slice[0].slice.value))
            node = node.value
        if type(node) is not cst.Name or node.value in env or all(k is ANY for k in keys):
            return None
        return self._selected_functions((node.value, tuple(reversed(keys))))

    # ---- calls -----------------------------------------------------------------------------------

    def _call(self, node: cst.Call, env: Env) -> Kind:
        arg_kinds = shown_not_none(node, [self.ev(arg.value, env) for arg in node.args], env)
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "apply":
            applied = self._autograd_function(func.value, env)
            if applied is not None:
                self._record(func, STATIC)
                return self._apply_autograd_function(node, *applied, arg_kinds)
        qualified = self._is_import(func, env)
        if qualified is not None and not (isinstance(func, cst.Attribute) and self._imported_object(func.value, env)):
            self._record(func, STATIC)
            kind = self._call_qualified(qualified, node, arg_kinds, env)
            if kind.tag is Tag.TENSOR and not kind.boolean and \
                    self._function_makes_mask(qualified, node, arg_kinds, env):
                kind = as_boolean(kind)
            else:
                kind = self._function_dtype(qualified, node, kind, arg_kinds)
            return placed_call(qualified, node, arg_kinds, kind) if self._lazy else kind
        if isinstance(func, cst.Name) and func.value not in env:
            self._record(func, STATIC)
            return self._call_builtin(func.value, node, arg_kinds)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            imported = self._imported_object(func.value, env) if qualified is not None else None
            if imported is not None:  # `REGISTRY.get(...)` on an object imported from another module
                self._record(func.value, imported)
                self._record(func, UNKNOWN)
                return self._call_method(node, imported, method, arg_kinds, env)
            if self._is_super_call(func.value):
                return self._call_super(node, method, arg_kinds, env)
            receiver = self.ev(func.value, env)
            self._record(func, UNKNOWN)
            self._grow_list(func.value, receiver, method, arg_kinds, env)
            return self._call_method(node, receiver, method, arg_kinds, env)
        callee = self.ev(func, env)
        if type(func) is cst.Name and callee.tag in (Tag.STATIC, Tag.UNKNOWN):
            classes = local_classes(self.project, self.func).get(func.value)
            if classes:  # `cls = A if flag else B; cls(d)`: builds one of them
                return _joined([self._construct(node, self.project, cls, arg_kinds, self.oracle.instance_kind(cls))
                                for cls in classes])
        return self._call_value(node, callee, arg_kinds, env)

    def _grow_list(self, target: cst.BaseExpression, receiver: Kind, method: str, arg_kinds: list[Kind],
                   env: Env) -> None:
        """`masks.append(x > 0)`: a local list's elements are what is put in it, so a loop over it (`for idx, m
        in zip(indices, masks)`) gets tensors where tensors were appended, and `layers.append(Block(d))` modules of
        that class. Only tensors (or tuples of them) and modules: a number read from a tensor and put in a list is
        reported where it is read, not again in each loop."""
        if type(target) is not cst.Name or receiver.tag is not Tag.SEQUENCE or receiver.items is not None or \
                target.value not in env:
            return
        if method in ("append", "insert") and arg_kinds:
            added = sequence_of(arg_kinds[-1])
        elif method == "extend" and len(arg_kinds) == 1 and arg_kinds[0].tag is Tag.SEQUENCE:
            added = sequence_of(arg_kinds[0].elem or UNKNOWN)
        else:
            return
        if not _holds_tensors(added.elem or UNKNOWN) and not _known_modules(added.elem or UNKNOWN):
            return
        grown = join(receiver, added)
        if grown != receiver:
            env[target.value] = grown

    # ---- masks: tensors of the bool dtype --------------------------------------------------------

    def _dtype_argument(self, node: cst.Call) -> cst.BaseExpression | None:
        return next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "dtype"), None)

    def _function_makes_mask(self, qualified: str, node: cst.Call, arg_kinds: list[Kind], env: Env) -> bool:
        """`torch.isnan(x)`, `torch.tensor(m, dtype=torch.bool)`, `torch.flatten(mask)`."""
        dtype = self._dtype_argument(node)
        if dtype is not None:
            return self._is_import(dtype, env) == "torch.bool"
        if not qualified.startswith("torch."):
            return False
        name = qualified.rsplit(".", 1)[-1]
        if name in api.BOOLEAN_RESULT_CALLS:
            return True
        return name in api.DTYPE_PRESERVING_CALLS and bool(arg_kinds) and arg_kinds[0].boolean

    def _method_makes_mask(self, method: str, receiver: Kind, node: cst.Call, arg_kinds: list[Kind],
                           env: Env) -> bool:
        """`x.isnan()`, `m.bool()`, `x.to(torch.bool)`, `x.new_zeros(n, dtype=torch.bool)`; `mask.view(-1)` and
        `mask.to(device)` of a mask (not `x.to(torch.float32)`, nor `x.to(other)`, which takes its dtype)."""
        if method in api.BOOLEAN_RESULT_CALLS:
            return True
        dtype = self._dtype_argument(node)
        if dtype is not None:
            return self._is_import(dtype, env) == "torch.bool"
        if method in ("to", "type") and node.args and self._is_import(node.args[0].value, env) == "torch.bool":
            return True
        if not receiver.boolean:
            return False
        if method in api.DTYPE_PRESERVING_CALLS:
            return True
        if method not in api.DEVICE_MOVES:
            return False
        for arg, kind in zip(node.args, arg_kinds):
            if arg.keyword is not None:
                continue
            named = self._is_import(arg.value, env) or ""
            if kind.tag is Tag.TENSOR or named.startswith("torch.") and named != "torch.device":
                return False
        return True

    # ---- float64: dtypes as values (`dtype = torch.float64`, `t.dtype`) and the tensors made with them --------

    def _function_dtype(self, qualified: str, node: cst.Call, kind: Kind, arg_kinds: list[Kind]) -> Kind:
        """`torch.as_tensor(v, dtype=dtype)` with `dtype` a float64 value makes a float64 tensor;
        `torch.promote_types(dtype, other)` of float64 is float64; `torch.zeros_like(t)` keeps `t`'s dtype."""
        if qualified == "torch.promote_types":
            return FLOAT64_DTYPE if any(is_float64(k) for k in arg_kinds) else kind
        if kind.tag is not Tag.TENSOR or not qualified.startswith("torch."):
            return kind
        given = self._dtype_given(node, arg_kinds, positional=False)
        if given is not None:
            return with_dtype(kind, given)
        name = qualified.rsplit(".", 1)[-1]
        keeps = name in api.DTYPE_PRESERVING_CALLS or name in api.DTYPE_KEEPING_MATH
        tensors = [k for k in arg_kinds if k.tag is Tag.TENSOR]
        return with_dtype(kind, FLOAT64 if keeps and tensors and all(is_float64(k) for k in tensors) else "")

    def _method_dtype(self, method: str, receiver: Kind, node: cst.Call, arg_kinds: list[Kind], env: Env) -> str:
        """The dtype of a tensor method's result, where it is float64: `.double()`, `.to(dtype)` and `.type(dtype)`
        with a float64 dtype value, `.to(device)` and shape, copy or elementwise ops of a float64 tensor."""
        if method in api.FLOAT64_METHODS:
            return FLOAT64
        if method == "type_as" and arg_kinds:
            return arg_kinds[0].dtype if arg_kinds[0].tag is Tag.TENSOR else ""
        if method in ("to", "type"):
            given = self._dtype_given(node, arg_kinds, positional=True)
            if given is not None:
                return given
            return receiver.dtype if all(self._names_a_device(a) for a in node.args) else ""
        if method in api.DEVICE_MOVES or method in api.DTYPE_PRESERVING_CALLS or method in api.DTYPE_KEEPING_MATH:
            return receiver.dtype if self._dtype_argument(node) is None else ""
        return ""

    def _dtype_given(self, node: cst.Call, arg_kinds: list[Kind], positional: bool) -> str | None:
        """The dtype a call is told to make (`dtype=`, or a positional dtype or tensor of `.to`): "float64",
        "" for another or an unknown one, None when it names none."""
        for arg, kind in zip(node.args, arg_kinds):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword == "dtype":
                return FLOAT64 if is_float64(kind) else ""
            if positional and keyword is None and (kind.dtype or kind.tag is Tag.TENSOR):
                return FLOAT64 if is_float64(kind) else ""  # `.to(dtype)`, `.to(other)`
            if positional and keyword is None and not self._names_a_device(arg):
                return ""  # `.to(t_dtype)`: perhaps a dtype, not known to be float64
        return None

    def _names_a_device(self, arg: cst.Arg) -> bool:
        """`device=...`, `"cuda"`, `x.device`, `torch.device(...)`, a name or attribute called `device`."""
        if arg.keyword is not None:
            return arg.keyword.value in ("device", "non_blocking", "copy", "memory_format")
        value = arg.value
        if type(value) is cst.SimpleString:
            return True
        if type(value) is cst.Call:
            return dotted_name(value.func) in ("torch.device", "device")
        last = value.attr.value if type(value) is cst.Attribute else value.value if type(value) is cst.Name else ""
        return last == "device" or last.endswith("_device")

    def _call_qualified(self, qualified: str, node: cst.Call, arg_kinds: list[Kind], env: Env) -> Kind:
        if self.guards is not None and self.guards.tracer == DYNAMO and qualified.startswith("numpy.random.") \
                and qualified.rsplit(".", 1)[-1] not in NUMPY_RANDOM_STATE:
            if draws_a_number(qualified.rsplit(".", 1)[-1], node.args):
                return HOST  # one Python number drawn on the host, as `.item()` of a drawn array is
            return TENSOR  # dynamo traces NumPy as tensors: a draw in the compiled step is a traced value
        target = self.project.lookup(qualified)
        if isinstance(target, FunctionInfo):
            return self._call_project_function(node, target, arg_kinds, receiver=None)
        if isinstance(target, ClassInfo):
            return self._construct(node, self.project, target, arg_kinds, self.oracle.instance_kind(target))
        if qualified in api.LAZY_HOST_CONSTANT_FUNCTIONS and self.guards is not None and self.guards.tracer == LAZY \
                and host_constant(node, arg_kinds, of_lists=True):
            return STATIC
        known = known_external_kind(qualified, node, arg_kinds)
        if known is not None:
            return known
        libraries = self.project.libraries
        found = libraries.lookup(qualified) if libraries is not None else None
        if isinstance(found, FunctionInfo):  # `_get_value(step_t)` from an installed torch.optim.optimizer
            return self._call_project_function(node, found, arg_kinds, receiver=None)
        if isinstance(found, ClassInfo) and libraries is not None:
            return self._construct(node, libraries.project, found, arg_kinds,
                                   libraries.instance_kind(found, node, arg_kinds))
        return unknown_call_kind(arg_kinds)

    def _call_builtin(self, name: str, node: cst.Call, arg_kinds: list[Kind]) -> Kind:
        local = self._local_definition(name)
        if isinstance(local, FunctionInfo):
            return self._call_project_function(node, local, arg_kinds, receiver=None)
        if local is not None:
            return self._construct(node, self.project, local, arg_kinds, self.oracle.instance_kind(local))
        module_object = self._global(name)
        if module_object.tag is Tag.OBJECT:  # `model(x)` on a module-level `model = Net()`
            return self._call_value(node, module_object, arg_kinds)
        return builtin_call_kind(name, arg_kinds)

    def _construct(self, node: cst.Call, owner: Project, cls: ClassInfo, arg_kinds: list[Kind], instance: Kind) -> Kind:
        """`Interval(t0=ts[0], t1=ts[-1])` in traced code: the object is made in the step, so its constructor runs
        there with the call's arguments (a library's is summarised for them). Not an nn.Module's, an optimizer's
        or an exception's: those are built around steps (a module made inside `forward` is its own problem), or
        only when the step fails."""
        if owner.is_module_class(cls) or owner.is_optimizer_class(cls) or owner.is_autograd_function_class(cls) \
                or _is_exception_class(owner, cls):
            return instance
        init = owner.find_method(cls, "__init__")
        if init is not None and not init.is_static_method:
            self._call_project_function(node, init, arg_kinds, receiver=instance)
        return instance

    def _is_super_call(self, node: cst.BaseExpression) -> bool:
        return (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super")

    def _call_super(self, node: cst.Call, method: str, arg_kinds: list[Kind], env: Env) -> Kind:
        cls = self.func.cls
        if cls is not None:
            target = self.project.find_method(cls, method, after=cls)
            if target is not None:
                receiver = env.get(self.self_name or "self", self.oracle.self_kind(cls))
                return self._call_project_function(node, target, arg_kinds, receiver=receiver)
            if method == "__call__" and self.project.is_module_class(cls):  # nn.Module's: runs `forward`
                forward = self.project.find_method(cls, "forward")
                if forward is not None:
                    receiver = env.get(self.self_name or "self", self.oracle.self_kind(cls))
                    return self._call_project_function(node, forward, arg_kinds, receiver=receiver)
            if method in ("forward", "__call__") and self.project.is_module_class(cls):
                return TENSOR
            looked_up = self._function_table_get(cls.qualname, method, arg_kinds)
            if looked_up is not None:  # `super().get(name, default)` in a registry's own lookup method
                return looked_up
        return unknown_call_kind(arg_kinds)

    def _function_table_get(self, cls_name: str, method: str, arg_kinds: list[Kind]) -> Kind | None:
        """`registry.get(name, default)` on a mapping class whose entries are a dict of functions."""
        if method not in ("get", "pop", "setdefault", "__getitem__"):
            return None
        table = self.oracle.function_table(cls_name)
        if table is None:
            return None
        return join(table, arg_kinds[1]) if len(arg_kinds) > 1 else table

    def _call_method(self, node: cst.Call, receiver: Kind, method: str, arg_kinds: list[Kind],
                     env: Env) -> Kind:
        if receiver.tag is Tag.TENSOR:
            kind = method_rank(method, receiver, node) or tensor_method_kind(method, receiver, arg_kinds)
            if kind.tag is Tag.TENSOR:  # `x.float()` of a mask (returned as is when its shape is dynamic) is not one
                boolean = self._method_makes_mask(method, receiver, node, arg_kinds, env)
                if boolean != kind.boolean:
                    kind = tensor(kind.dynamic_shape, kind.rank, boolean)
                kind = with_dtype(kind, self._method_dtype(method, receiver, node, arg_kinds, env))
                return placed_method(method, receiver, node, arg_kinds, kind)  # (marks come only under lazy)
            return kind
        if receiver.tag is Tag.OBJECT and receiver.role == "module" and "|" in receiver.cls:
            # one of several classes' modules (a layer of a list of layers of different classes): each one's
            # method, and each runs (`for i in ...: z = self.flows[i].inverse(z)` goes through every layer)
            self._running_each.add(id(node))
            return _joined([self._call_method(node, obj("module", cls), method, arg_kinds, env)
                            for cls in classes_of(receiver)])
        if receiver.tag is Tag.OBJECT and receiver.role == "object" and "|" in receiver.cls:
            # an instance of one of several classes: that class's method runs, which one not known here
            return _joined([self._call_method(node, obj("object", cls), method, arg_kinds, env)
                            for cls in classes_of(receiver)])
        if receiver.tag is Tag.OBJECT:
            self._note_registration(node, receiver, method, arg_kinds)
            decided = attribute_of(receiver, method)
            if decided is not None:  # `self.body(x)`: a layer this instance's constructor call decided
                return self._call_value(node, decided, arg_kinds, env)
            if receiver.cls:
                owner = self.project
                cls = owner.lookup_class(receiver.cls)
                if cls is None and receiver.role in ("object", "module") and self.project.libraries is not None:
                    owner = self.project.libraries.project  # an instance of an installed library's class
                    cls = owner.lookup_class(receiver.cls)
                if cls is not None:
                    target = owner.find_method(cls, method)
                    if target is not None and target.is_property:  # `self.loss_function(logits, labels)`
                        getter = self._call_project_function(node, target, [], receiver=receiver)
                        return self._call_value(node, getter, arg_kinds)
                    overrides = self._overrides_reached(node, owner, method, target)
                    if target is not None or overrides:
                        kinds = [self._call_project_function(node, target, arg_kinds, receiver=receiver)] \
                            if target is not None else []
                        for override in overrides:  # (methods of subclasses of this method's class)
                            assert override.cls is not None and self.func.cls is not None
                            kinds.append(self._call_project_function(
                                node, override, arg_kinds, receiver=self.oracle.self_kind(override.cls),
                                overriding=target.display_name if target is not None else self.func.cls.name))
                        kind = kinds[0]
                        for other in kinds[1:]:
                            kind = join(kind, other)
                        return kind
                attr = self.oracle.attributes(receiver.cls).get(method)
                if attr is not None:
                    return self._call_value(node, attr, arg_kinds)
                looked_up = self._function_table_get(receiver.cls, method, arg_kinds)
                if looked_up is not None:
                    return looked_up
            return object_method_kind(receiver, method, arg_kinds)
        if receiver.tag is Tag.SEQUENCE:
            if method == "get" and node.args and type(node.func) is cst.Attribute:
                # `ROUTINES.get(name, fallback)`: a function of the table, or the fallback where the key is not known
                key = cst_key(node.args[0].value)
                chosen = self._table_lookup(node.func.value, env, (key,))
                default = arg_kinds[1] if len(arg_kinds) > 1 else None
                if key is ANY and default is not None and default.tag is Tag.OBJECT and default.role == "function":
                    return join(chosen or element_of(receiver), default)
                if chosen is not None:
                    return chosen
            if method in ("items",):
                return sequence_of(tuple_of(STATIC, element_of(receiver)))
            if method in ("values", "get", "pop", "copy", "setdefault"):
                return element_of(receiver) if method != "values" and method != "copy" else receiver
            if method == "keys":
                return sequence_of(STATIC)
            return STATIC
        if receiver.tag is Tag.HOST:
            return HOST
        return unknown_call_kind(arg_kinds, default=receiver if receiver.tag is Tag.STATIC else UNKNOWN)

    def _overrides_reached(self, node: cst.Call, owner: Project, method: str,
                           found: FunctionInfo | None) -> tuple[FunctionInfo, ...]:
        """`self.method()` in a method of a project class runs, on an instance of a subclass, that
        subclass's override: a template method's hooks (`self.compute_loss(...)` in a base loss's
        `forward`) are the subclasses' methods. Only through the function's own `self`, only classes of
        the project deriving from the function's class (not in an installed library's summary)."""
        cls = self.func.cls
        if cls is None or owner is not self.project or self.func.module.library is not None \
                or not isinstance(node.func, cst.Attribute) \
                or self.self_name is None or path_key(node.func.value) != self.self_name:
            return ()
        if found is not None and found.is_static_method:
            return ()
        return tuple(o for o in self.project.overrides(self.func, method)
                     if o is not found and not o.is_property and not o.is_static_method)

    def _note_registration(self, node: cst.Call, receiver: Kind, method: str, arg_kinds: list[Kind]) -> None:
        """`self.register_buffer("step", t)` declares a tensor attribute like `self.step = t` would."""
        if method == "append" and receiver.role == "module" and len(arg_kinds) == 1:
            self._note_appended_module(node, arg_kinds[0])
        if method not in ("register_buffer", "register_parameter", "add_module") or len(node.args) < 2:
            return
        name = string_value(node.args[0].value)
        if name is None or not isinstance(node.func, cst.Attribute):
            return
        if path_key(node.func.value) != self.self_name:
            return
        kind = MODULE if method == "add_module" else TENSOR
        attrs = self.result.attribute_assignments
        attrs[name] = kind

    def _note_appended_module(self, node: cst.Call, module: Kind) -> None:
        """`self.blocks.append(Block(...))` on a module container of this method's instance (`self.blocks =
        nn.ModuleList()`): a list of such blocks, like `nn.ModuleList([Block(...) ...])`, while every module
        appended is of that class."""
        assert isinstance(node.func, cst.Attribute)
        key = path_key(node.func.value)
        if self.self_name is None or key is None or not key.startswith(self.self_name + ".") or key.count(".") != 1:
            return
        attrs = self.result.attribute_assignments
        attr = key.split(".", 1)[1]
        before = attrs.get(attr)
        if before is None or before.tag is not Tag.OBJECT or before.role != "module":
            return
        appended = modules_of(module)
        attrs[attr] = appended if before.elem is None else join(before, appended)

    def _call_value(self, node: cst.Call, callee: Kind, arg_kinds: list[Kind], env: Env | None = None) -> Kind:
        if callee.tag is Tag.OBJECT and callee.role == "nested" and env is not None:
            return self._call_nested(node, callee.cls, arg_kinds, env)
        if callee.tag is Tag.OBJECT and callee.role in ("function", "method") and callee.cls:
            # `func` may be one of several functions (`func = _multi_tensor_sgd if foreach else ...`); a method
            # taken from an object (`self.loss_map[kind](...)`) is called on an instance of its class
            results = [self._call_project_function(node, target, arg_kinds, receiver=self._bound_to(target, callee))
                       for target in map(self.project.lookup_function, callee.cls.split("|")) if target is not None]
            if results:
                kind = results[0]
                for other in results[1:]:
                    kind = join(kind, other)
                return kind
        if callee.tag is Tag.OBJECT and callee.role == "module" and "|" in callee.cls:
            self._running_each.add(id(node))  # `for layer in self.layers: x = layer(x)`: each class's runs
            return _joined([self._call_value(node, obj("module", cls), arg_kinds, env) for cls in classes_of(callee)])
        if callee.tag is Tag.OBJECT and callee.role == "module" and not callee.cls and callee.elem is not None \
                and callee.elem.cls:
            # `nn.Sequential(*layers)(x)`: its layers run, each a module of the container's element classes
            self._call_value(node, callee.elem, arg_kinds, env)
            return TENSOR
        if callee.tag is Tag.OBJECT and callee.role == "module":
            if callee.cls:
                owner = self.project
                cls = owner.lookup_class(callee.cls)
                if cls is None and self.project.libraries is not None:
                    owner = self.project.libraries.project  # `norm(x)`: an installed library's module
                    cls = owner.lookup_class(callee.cls)
                # `module(x)` runs the class's own `__call__` where it has one (a library's base module
                # checking its inputs first), else nn.Module's, which runs `forward`
                forward = (owner.find_method(cls, "__call__") or owner.find_method(cls, "forward")) \
                    if cls is not None else None
                if forward is not None:
                    kind = self._call_project_function(node, forward, arg_kinds, receiver=callee)
                    return kind if kind.tag is not Tag.UNKNOWN else TENSOR
            return TENSOR
        return unknown_call_kind(arg_kinds)

    def _bound_to(self, target: FunctionInfo, callee: Kind) -> Kind | None:
        if callee.role != "method" or target.cls is None or target.is_static_method:
            return None
        return self.oracle.self_kind(target.cls)

    def _autograd_function(self, node: cst.BaseExpression, env: Env) -> tuple[Project, ClassInfo] | None:
        """The custom autograd function `node` names (`MyFn` in `MyFn.apply(x)`), with the project defining it."""
        qualified = self._is_import(node, env)
        if qualified is None:
            if not isinstance(node, cst.Name) or node.value in env:
                return None
            qualified = f"{self.module.name}.{node.value}"
        owners = [self.project]
        if self.project.libraries is not None:
            owners.append(self.project.libraries.project)
        for owner in owners:
            cls = owner.lookup_class(qualified)
            if cls is not None:
                return (owner, cls) if owner.is_autograd_function_class(cls) else None
        return None

    def _apply_autograd_function(self, node: cst.Call, owner: Project, cls: ClassInfo, arg_kinds: list[Kind]) -> Kind:
        """`MyFn.apply(x)`: autograd calls `forward(ctx, x)` in the step and `backward(ctx, grad)` in the step's
        backward (`loss.backward()`), both traced, `backward` given a tensor for each gradient; static methods or
        class methods (`forward(cls, ctx, x)`). An installed library's Function is summarised, its `backward`'s
        effects reported on the call with its `forward`'s."""
        forward = owner.find_method(cls, "forward")
        result = self._call_project_function(node, forward, arg_kinds, receiver=AUTOGRAD_CONTEXT) \
            if forward is not None else TENSOR
        backward = owner.find_method(cls, "backward")
        if backward is not None:
            names, star = backward.signature
            first = 1 if backward.is_class_method else 0
            bound = {name: AUTOGRAD_CONTEXT if i == first else STATIC if i < first else TENSOR
                     for i, name in enumerate(names)}
            if star is not None:
                bound[star] = sequence_of(TENSOR)
            libraries = self.project.libraries
            if backward.module.library is None:
                self._record_call(node, backward, bound)
            elif libraries is not None:
                tracer = self.guards.tracer if self.guards is not None else None
                self._running_each.add(id(node))
                self._note_library_call(node, backward.qualname, libraries.summary(backward, bound, tracer))
        return TENSOR if result.tag is Tag.UNKNOWN else result

    def _call_project_function(self, node: cst.Call, target: FunctionInfo, arg_kinds: list[Kind],
                               receiver: Kind | None, overriding: str | None = None) -> Kind:
        """`overriding`: the method (or, when it has none, the class) whose `self.name()` call reaches
        `target` as a subclass's override."""
        libraries = self.project.libraries
        if target.module.library is not None and libraries is not None:
            # a library function: summarised for these arguments, not traced (see analysis/libraries.py), with
            # the Nones that decide its tests (none_arguments.py)
            bound = bind_arguments(target, node, literal_nones(node, arg_kinds), receiver)
            bound = with_none_arguments(target, node, bound)
            if constant_tests(target).deciding:  # and the literals (constant_arguments.py)
                given = bind_arguments(target, node, literal_arguments(node, arg_kinds), receiver)
                bound = with_constant_arguments(target, node, bound, given)
            summary = libraries.summary(target, bound, self.guards.tracer if self.guards is not None else None)
            self._note_library_call(node, target.qualname, summary)
            return summary.returns
        # the Nones, and the values shown not to be None, that decide the helper's tests for None: joined over
        # its callers, a test is decided only where every caller agrees
        bound = with_none_arguments(target, node, bind_arguments(target, node, literal_nones(node, arg_kinds),
                                                                 receiver))
        if self.keywords and any(a.star == "**" and isinstance(a.value, cst.Name) and a.value.value == self.star_kwarg
                                 for a in node.args):
            explicit = {a.keyword.value for a in node.args if a.keyword is not None}
            for name, kind in self.keywords.items():  # by name beats a `*args` spread over every position
                if name not in explicit:
                    bound[name] = kind
        self._record_call(node, target, bound, overriding)
        return self._project_result(target, bound)

    def _note_library_call(self, node: cst.Call, qualname: str, summary: Summary) -> None:
        """What the call does in the library: the summary of the function it reaches, or, where it reaches
        several, their summaries together (each target's latest). Where each of them runs (the layers of a
        module list of several classes, a Function's `forward` and then its `backward`: `_running_each`) the
        call does what each does; where one of them runs, which one not known here (a table's entry for a key
        that is not a literal, a function chosen by a flag), it surely does only the kinds of thing every one
        does, and the rest possibly (library_env.either)."""
        targets = self._library_targets.setdefault(id(node), {})
        targets[qualname] = summary
        summaries = list(targets.values())
        combine = both if id(node) in self._running_each else either
        merged = summaries[0]
        for other in summaries[1:]:
            merged = combine(merged, other)
        self.result.library_calls[id(node)] = ("|".join(targets), merged)

    def _record_call(self, node: cst.Call, target: FunctionInfo, bound: dict[str, Kind],
                     overriding: str | None = None) -> None:
        site = self.result.calls.get((id(node), target.qualname))
        if site is not None:
            for name, kind in bound.items():
                site.args[name] = join(site.args[name], kind) if name in site.args else kind
        else:
            self.result.calls[(id(node), target.qualname)] = CallSite(node=node, callee=target, args=bound,
                                                                      overriding=overriding)

    def _project_result(self, target: FunctionInfo, bound: dict[str, Kind]) -> Kind:
        specific = self.oracle.call_return(target.qualname, bound)
        if specific is not None:
            return specific
        known = self.oracle.return_kind(target)
        # Not analysed yet: assume nothing; the caller is analysed again once the callee's result is known.
        return known if known is not None else UNKNOWN


def bind_arguments(target: FunctionInfo, node: cst.Call, arg_kinds: list[Kind],
                   receiver: Kind | None) -> dict[str, Kind]:
    """Map the call's argument kinds onto the callee's parameter names."""
    names, star = target.signature
    positional = list(names)
    bound: dict[str, Kind] = {}
    if receiver == AUTOGRAD_CONTEXT and target.is_class_method and len(positional) > 1:
        bound[positional[0]], bound[positional[1]] = STATIC, receiver  # `forward(cls, ctx, x)`
        positional = positional[2:]
    elif receiver is not None and positional and (not target.is_static_method or receiver == AUTOGRAD_CONTEXT):
        bound[positional[0]] = receiver
        positional = positional[1:]
    index = 0
    for arg, kind in zip(node.args, arg_kinds):
        if arg.keyword is not None:
            bound[arg.keyword.value] = kind
        elif arg.star == "*":
            if known_items(kind) is not None:  # `f(*(a, b))`, a tuple whose positions are known
                for name, item in zip(positional[index:], kind.items or ()):
                    bound[name] = item
            else:  # `self.decoder(*args, **kwargs)`: the inputs fill the required positions; options (with a
                # default) come by name, so `use_cache=None` keeps what its signature says
                optional = _positional_with_default(target)
                for name in positional[index:]:
                    if name not in optional:
                        bound[name] = element_of(kind)
            index = len(positional)
        elif arg.star == "**":
            continue
        elif index < len(positional):
            bound[positional[index]] = kind
            index += 1
        elif star is not None:
            bound[star] = join(bound[star], sequence_of(kind)) if star in bound else sequence_of(kind)
    return bound


def _positional_with_default(target: FunctionInfo) -> set[str]:
    p = target.node.params
    return {param.name.value for param in (*p.posonly_params, *p.params) if param.default is not None}


def _is_exception_class(owner: Project, cls: ClassInfo) -> bool:
    """A class deriving from an exception (`class SolverError(ValueError)`): made where the step fails."""
    return any(base.rsplit(".", 1)[-1].endswith(("Error", "Exception", "Warning")) or
               base.rsplit(".", 1)[-1] in ("BaseException", "Exception")
               for base in owner.external_bases(cls))


def _joined(kinds: list[Kind]) -> Kind:
    kind = kinds[0]
    for other in kinds[1:]:
        kind = join(kind, other)
    return kind


def _known_modules(kind: Kind) -> bool:
    """Modules of known classes (`layers.append(Block(d))`): a container built from the list runs them."""
    return kind.tag is Tag.OBJECT and kind.role == "module" and bool(kind.cls)


def _holds_tensors(kind: Kind) -> bool:
    """A tensor, or a tuple or list of tensors (`recoveries.append((models, scores, counts))`)."""
    if kind.tag is Tag.TENSOR:
        return True
    if kind.tag is Tag.SEQUENCE:
        parts = members(kind)
        return bool(parts) and all(_holds_tensors(part) for part in parts)
    return False
