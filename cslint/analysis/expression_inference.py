"""Expressions in one function's walk: the kind of each (recorded for the rules), names and attribute or item
paths read from the environment, attributes and items of tracked objects, operators, comprehensions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.call_inference import AUTOGRAD_CONTEXT, CallInference
from cslint.analysis.function_analysis import Env
from cslint.analysis.index import FunctionInfo
from cslint.analysis.kinds import (
    BOOL_TENSOR, FLOAT64_DTYPE, HOST, STATIC, TENSOR, UNKNOWN, Kind, Tag, attribute_of, classes_of, combine,
    element_of, hashes_its_members, is_float64, join, mapping_of, obj, sequence_of, tensor, tuple_of,
)
from cslint.analysis.placement import placed_operation
from cslint.analysis.ranks import elementwise_rank, subscript_rank
from cslint.analysis.sequence_kinds import literal_int, operation, slice_of
from cslint.analysis.syntax import none_question, path_key, string_value


class ExpressionInference(CallInference):
    """The expressions of FunctionInference's walk."""

    _nones: bool

    # ---- statements' narrowing and binding (inference.py) ----------------------------------------

    def _bind(self, target: cst.BaseExpression, kind: Kind, env: Env, record: bool = True) -> None:
        """Bind `target` (a name, a path, a tuple of them) to `kind` in `env`."""
        raise NotImplementedError

    def _narrow(self, test: cst.BaseExpression, env: Env, holds: bool = True) -> None:
        """What `test` being `holds` says about the values in `env`."""
        raise NotImplementedError

    def _none_test(self, node: cst.If | cst.IfExp, env: Env) -> bool | None:
        """The truth of the test of `node` where names known to be None decide it."""
        raise NotImplementedError

    # ---- expressions -----------------------------------------------------------------------------

    def ev(self, node: cst.BaseExpression, env: Env) -> Kind:
        return self._record(node, self._ev(node, env))

    def _ev(self, node: cst.BaseExpression, env: Env) -> Kind:
        # dispatch on the exact type: isinstance() against libcst's ABC-based classes is slow
        handler = _EXPRESSION_HANDLERS.get(type(node))
        return handler(self, node, env) if handler is not None else STATIC  # literals, strings, ellipsis

    def _binary(self, node: cst.BinaryOperation, env: Env) -> Kind:
        left, right = self.ev(node.left, env), self.ev(node.right, env)
        result = operation(node.operator, left, right)
        if result.tag is Tag.TENSOR:
            rank = elementwise_rank(node.operator, ((node.left, left), (node.right, right)))
            boolean = type(node.operator) in _BITWISE and (left.boolean or right.boolean)  # `mask & (x > 0)`
            if rank is not None or boolean:
                result = tensor(rank=rank, boolean=boolean, dtype=result.dtype)
            return placed_operation(result, left, right)
        return result

    def _unary(self, node: cst.UnaryOperation, env: Env) -> Kind:
        operand = self.ev(node.expression, env)
        if type(node.operator) is cst.Not:
            return HOST if operand.is_data_dependent else combine(operand)
        return operand if operand.tag in (Tag.TENSOR, Tag.HOST) else combine(operand)

    def _boolean(self, node: cst.BooleanOperation, env: Env) -> Kind:
        left = self.ev(node.left, env)
        if type(node.left) not in (cst.Call, cst.UnaryOperation, cst.BooleanOperation):
            return join(left, self.ev(node.right, env))
        # the right side runs only where the left one is true (`and`) or false (`or`): in
        # `isinstance(norm, torch.Tensor) or norm != 1.0` the comparison is on a Python number
        right_env = dict(env)
        self._narrow(node.left, right_env, holds=type(node.operator) is cst.And)
        narrowed = {key for key, kind in right_env.items() if env.get(key) is not kind}
        right = self.ev(node.right, right_env if narrowed else env)
        if narrowed:  # what the right side binds (`:=`) stays bound
            env.update({key: kind for key, kind in right_env.items() if key not in narrowed})
        return join(left, right)

    def _ifexp(self, node: cst.IfExp, env: Env) -> Kind:
        self.ev(node.test, env)
        decided = self.guards.value(self.module, node.test) if self.guards is not None else None
        if decided is not None:  # `x if torch.jit.is_scripting() else y`: only one side is traced
            self.result.dead.add(id(node.orelse if decided else node.body))
            return self.ev(node.body if decided else node.orelse, env)
        if self._nones:
            known = self._none_test(node, env)
            if known is not None:  # the other side is settled at the end
                return self.ev(node.body if known else node.orelse, env)
        body_env, else_env = dict(env), dict(env)
        self._narrow(node.test, body_env)
        self._narrow(node.test, else_env, holds=False)
        return join(self.ev(node.body, body_env), self.ev(node.orelse, else_env))

    def _sequence(self, node: cst.Tuple | cst.List | cst.Set, env: Env) -> Kind:
        kinds = [self.ev(e.value, env) for e in node.elements]
        starred = [i for i, e in enumerate(node.elements) if type(e) is cst.StarredElement]
        if type(node) is cst.Tuple and not starred:
            return tuple_of(*kinds)
        if type(node) is cst.Tuple and len(starred) == 1:
            i = starred[0]
            items = kinds[i].items
            if items is not None:  # `a, *group["betas"], b` with the starred value's positions known
                return tuple_of(*kinds[:i], *items, *kinds[i + 1:])
        elem = kinds[0] if kinds else UNKNOWN
        for k in kinds[1:]:
            elem = join(elem, k)
        return mapping_of(elem) if type(node) is cst.Set else sequence_of(elem)

    def _dict(self, node: cst.Dict, env: Env) -> Kind:
        elem = UNKNOWN
        for element in node.elements:
            if type(element) is cst.DictElement:
                self.ev(element.key, env)
                value = self.ev(element.value, env)
            else:
                value = element_of(self.ev(element.value, env))
            elem = value if elem is UNKNOWN else join(elem, value)
        return mapping_of(elem)

    def _element_comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp, env: Env) -> Kind:
        inner = self._comprehension(node.for_in, env)
        elem = self.ev(node.elt, inner)
        return mapping_of(elem) if type(node) is cst.SetComp else sequence_of(elem)

    def _dict_comprehension(self, node: cst.DictComp, env: Env) -> Kind:
        inner = self._comprehension(node.for_in, env)
        self.ev(node.key, inner)
        return mapping_of(self.ev(node.value, inner))

    def _named(self, node: cst.NamedExpr, env: Env) -> Kind:
        kind = self.ev(node.value, env)
        self._bind(node.target, kind, env)
        return kind

    def _fstring(self, node: cst.FormattedString, env: Env) -> Kind:
        for part in node.parts:
            if type(part) is cst.FormattedStringExpression:
                self.ev(part.expression, env)
        return STATIC

    def _starred(self, node: cst.StarredElement, env: Env) -> Kind:
        return self.ev(node.value, env)

    def _comprehension(self, for_in: cst.CompFor, env: Env) -> Env:
        inner = dict(env)
        current: cst.CompFor | None = for_in
        while current is not None:
            iter_kind = self.ev(current.iter, inner)
            self._bind(current.target, element_of(iter_kind), inner)
            for cond in current.ifs:
                self.ev(cond.test, inner)
            current = current.inner_for_in
        return inner

    def _name(self, node: cst.Name, env: Env) -> Kind:
        if node.value in env:
            return env[node.value]
        qualified = self.module.imports.names.get(node.value)
        if qualified is not None and isinstance(self.project.lookup(qualified), FunctionInfo):
            # `func = _single_tensor_sgd; func(...)`: remember which function, so the call is followed
            return obj("function", qualified)
        if qualified is not None:  # an object built at the top of the module it is imported from
            imported = self._object_in_module(qualified)
            if imported is not None:
                return imported
        # module-level objects (`model = Net()`) have their class; other globals, builtins, imports are static
        return self._global(node.value)

    def _attribute(self, node: cst.Attribute, env: Env) -> Kind:
        key = path_key(node)
        if key is not None and key in env:
            self.ev(node.value, env)
            return env[key]
        if self._is_import(node, env) in api.FLOAT64_DTYPES:
            return FLOAT64_DTYPE
        base = self.ev(node.value, env)
        attr = node.attr.value
        if base.tag is Tag.TENSOR:
            if attr in api.SHAPE_ATTRIBUTES and base.dynamic_shape:
                return HOST
            if attr == "dtype" and is_float64(base):
                return FLOAT64_DTYPE
            if attr in api.STATIC_TENSOR_ATTRIBUTES:
                return STATIC
            return base if attr in ("T", "mT", "H", "mH", "data", "real", "imag") else TENSOR
        if base.tag is Tag.OBJECT:
            return self._object_attribute(base, attr)
        if base.tag is Tag.HOST:
            return HOST
        if base.tag is Tag.SEQUENCE:
            return UNKNOWN
        return base  # STATIC stays static (config.hidden_size), UNKNOWN stays unknown

    def _object_attribute(self, base: Kind, attr: str) -> Kind:
        if base == AUTOGRAD_CONTEXT:
            if attr == "saved_tensors":
                return sequence_of(TENSOR)
            return sequence_of(STATIC) if attr == "needs_input_grad" else UNKNOWN
        if base.role == "optimizer":
            if attr == "param_groups":
                return sequence_of(obj("group"))
            if attr == "state":
                return obj("state_map")
            if attr == "defaults":
                return STATIC
        decided = attribute_of(base, attr)
        if decided is not None:  # what this instance's constructor call set it to (analysis/constructed.py)
            return decided
        if "|" in base.cls:  # one of several classes' instances: what any of them holds
            found = [self._object_attribute(obj(base.role, cls), attr) for cls in classes_of(base)]
            known = [kind for kind in found if kind.tag is not Tag.UNKNOWN]
            joined = known[0] if known else UNKNOWN
            for kind in known[1:]:
                joined = join(joined, kind)
            return joined
        if base.cls:
            attrs = self.oracle.attributes(base.cls)
            if attr in attrs:
                return attrs[attr]
            cls = self.project.lookup_class(base.cls)
            method = self.project.find_method(cls, attr) if cls is not None else None
            if method is not None:  # `self.loss_map = {"ce": self.ce_loss, ...}`: remember which method
                return obj("method", method.qualname)
        if base.role == "module":
            if attr == "training":
                return STATIC
            if attr in ("weight", "bias", "running_mean", "running_var", "in_proj_weight"):
                return TENSOR
        return UNKNOWN

    def _subscript(self, node: cst.Subscript, env: Env) -> Kind:
        key = path_key(node)
        base = self.ev(node.value, env)
        index_kinds = []
        tensor_index = False
        for element in node.slice:
            sliced = element.slice
            if isinstance(sliced, cst.Index):
                index_kinds.append(self.ev(sliced.value, env))
                tensor_index = tensor_index or index_kinds[-1].tag is Tag.TENSOR
            elif isinstance(sliced, cst.Slice):
                for part in (sliced.lower, sliced.upper, sliced.step):
                    if part is not None:
                        index_kinds.append(self.ev(part, env))
        if key is not None and key in env:
            return env[key]
        if base.tag is Tag.TENSOR:  # `mask[:, None]` is still a mask, `mask[idx]` a gather of one
            return placed_operation(tensor(rank=subscript_rank(base.rank, node.slice),
                                           boolean=base.boolean and not tensor_index, dtype=base.dtype),
                                    base, *index_kinds)
        if base.tag is Tag.SEQUENCE:
            elem = base.elem
            if elem is not None and (elem.tag is Tag.SEQUENCE or elem.tag is Tag.OBJECT and elem.role == "function"):
                chosen = self._table_lookup(node, env)  # `ROUTINES["sinkhorn"][backend]` on a table of functions
                if chosen is not None:
                    return chosen
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):
                return slice_of(base, node.slice[0].slice)
            if base.items is not None and len(node.slice) == 1:
                i = literal_int(node.slice[0].slice)
                if i is not None and (0 if base.prefix else -len(base.items)) <= i < len(base.items):
                    return base.items[i]
            return element_of(base)
        if base.tag is Tag.OBJECT:
            if base.role == "group":
                entry = node.slice[0].slice if len(node.slice) == 1 else None
                name = string_value(entry.value) if isinstance(entry, cst.Index) else None
                if name == "lr":
                    return TENSOR
                if name == "params":
                    return sequence_of(TENSOR)
                cls = self.func.cls
                if name is not None and cls is not None and name in self.oracle.group_entries(cls):
                    return TENSOR
                return STATIC
            if base.role == "state_map":
                return obj("opt_state")
            if base.role == "opt_state":
                entry = node.slice[0].slice if len(node.slice) == 1 else None
                name = string_value(entry.value) if isinstance(entry, cst.Index) else None
                cls = self.func.cls
                if name is not None and cls is not None and self.project.is_optimizer_class(cls):
                    return self.oracle.state_entries(cls).get(name, TENSOR)
                return TENSOR
            if base.role == "module":  # `self.blocks[i]`; `self.blocks[1:]` is a list of the same blocks
                return base if any(isinstance(e.slice, cst.Slice) for e in node.slice) else element_of(base)
            return self.oracle.function_table(base.cls) or UNKNOWN  # `ATTENTION_FUNCTIONS[name]`
        if base.tag is Tag.HOST:
            return HOST
        if base.tag is Tag.STATIC:
            return combine(STATIC, *index_kinds) if any(k.tag is Tag.HOST for k in index_kinds) else STATIC
        return UNKNOWN

    def _comparison(self, node: cst.Comparison, env: Env) -> Kind:
        kinds = [self.ev(node.left, env)]
        for target in node.comparisons:
            kinds.append(self.ev(target.comparator, env))
        operators = [t.operator for t in node.comparisons]
        lefts = [node.left, *(t.comparator for t in node.comparisons)]
        if all(isinstance(t.operator, (cst.Is, cst.IsNot)) or none_question(left, t) is not None
               for left, t in zip(lefts, node.comparisons)):
            return STATIC  # identity, or a question about None (`mem == None` of a tensor is Python's False)
        if any(type(n) in _STRING_NODES for n in (node.left, *(t.comparator for t in node.comparisons))):
            return STATIC  # `layer_type == "full"`, `"labels" in inputs`: a question about strings or keys
        if all(isinstance(op, (cst.In, cst.NotIn)) for op in operators):
            # `"exp_avg" in state`, `k in config`: membership of a key; `x in tensor` reads values, and so does a
            # tensor's membership in a list (`==` on each element); in a dict or a set it is hashed, by identity
            container = kinds[-1]
            if container.tag is Tag.TENSOR or (kinds[0].tag is Tag.TENSOR and not hashes_its_members(container)):
                return HOST
            return HOST if kinds[0].tag is Tag.HOST else STATIC
        result = combine(*kinds)
        return placed_operation(BOOL_TENSOR, *kinds) if result.tag is Tag.TENSOR else result


_STRING_NODES = frozenset({cst.SimpleString, cst.ConcatenatedString, cst.FormattedString})
_BITWISE = frozenset({cst.BitAnd, cst.BitOr, cst.BitXor})

_EXPRESSION_HANDLERS: dict[type, Callable[[ExpressionInference, Any, Env], Kind]] = {
    cst.Name: ExpressionInference._name,
    cst.Attribute: ExpressionInference._attribute,
    cst.Subscript: ExpressionInference._subscript,
    cst.Call: ExpressionInference._call,
    cst.BinaryOperation: ExpressionInference._binary,
    cst.UnaryOperation: ExpressionInference._unary,
    cst.BooleanOperation: ExpressionInference._boolean,
    cst.Comparison: ExpressionInference._comparison,
    cst.IfExp: ExpressionInference._ifexp,
    cst.Tuple: ExpressionInference._sequence,
    cst.List: ExpressionInference._sequence,
    cst.Set: ExpressionInference._sequence,
    cst.Dict: ExpressionInference._dict,
    cst.ListComp: ExpressionInference._element_comprehension,
    cst.SetComp: ExpressionInference._element_comprehension,
    cst.GeneratorExp: ExpressionInference._element_comprehension,
    cst.DictComp: ExpressionInference._dict_comprehension,
    cst.NamedExpr: ExpressionInference._named,
    cst.FormattedString: ExpressionInference._fstring,
    cst.StarredElement: ExpressionInference._starred,
    cst.Lambda: lambda self, node, env: obj("function"),
    cst.Await: lambda self, node, env: UNKNOWN,
    cst.Yield: lambda self, node, env: UNKNOWN,
}
