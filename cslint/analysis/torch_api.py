"""What PyTorch functions and tensor methods return at trace time, in one place.

Tables, not logic: inference asks them whether a call yields a tensor, a static Python value (shapes,
dtypes, flags), a Python value read from tensor data, or a tensor whose shape depends on its values.
"""

from __future__ import annotations

# torch.* functions that return Python values fixed at trace time, not tensors.
STATIC_TORCH_FUNCTIONS = frozenset({
    "torch.is_tensor", "torch.is_storage", "torch.is_floating_point", "torch.is_complex",
    "torch.numel", "torch.get_default_dtype", "torch.get_default_device",
    "torch.is_grad_enabled", "torch.is_inference_mode_enabled", "torch.is_autocast_enabled",
    "torch.are_deterministic_algorithms_enabled", "torch.finfo", "torch.iinfo", "torch.device",
    "torch.Size", "torch.dtype", "torch.no_grad", "torch.enable_grad", "torch.inference_mode",
    "torch.set_grad_enabled", "torch.autocast", "torch.cuda.is_available", "torch.cuda.device_count",
    "torch.cuda.current_device", "torch.jit.is_scripting", "torch.jit.is_tracing",
    "torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling", "torch._dynamo.is_compiling",
    "torch.distributed.is_initialized", "torch.distributed.is_available", "torch.distributed.get_rank",
    "torch.distributed.get_world_size", "torch.promote_types", "torch.result_type",
    "torch.can_cast", "torch.broadcast_shapes", "torch.get_rng_state", "torch.typename",
    "torch.autograd.graph.saved_tensors_hooks", "torch.amp.autocast", "torch.cuda.amp.autocast",
    "torch.autograd.profiler.record_function", "torch.profiler.record_function",
    "torch.utils.checkpoint.checkpoint",
})

# torch.* functions that return a Python bool computed from tensor values (a host read).
HOST_TORCH_FUNCTIONS = frozenset({"torch.allclose", "torch.equal", "torch.is_nonzero"})
# `torch.is_*` / `torch.are_*`: predicates on flags, modes and metadata that return Python bools (those that
# read tensor values are in HOST_TORCH_FUNCTIONS, looked up first).
PREDICATE_PREFIXES = ("is_", "are_")

# torch_xla calls that return Python values (devices, ordinals, None), not lazy tensors; other torch_xla
# calls (xm.all_reduce, ...) are tensor operations. `if xm.is_master_ordinal():` in a training loop is
# not a branch on a tensor.
XLA_STATIC_FUNCTIONS = frozenset({
    "torch_xla.device", "torch_xla.devices", "torch_xla.device_count", "torch_xla.real_devices",
    "torch_xla.sync", "torch_xla.step", "torch_xla.compile",
    *(f"torch_xla.core.xla_model.{name}" for name in (
        "xla_device", "xla_device_hw", "xla_real_devices", "get_xla_supported_devices", "is_xla_tensor",
        "is_master_ordinal", "get_ordinal", "get_local_ordinal", "xrt_world_size", "world_size",
        "master_print", "mark_step", "wait_device_ops", "add_step_closure", "rendezvous", "set_rng_state",
        "get_rng_state", "get_memory_info", "save", "get_stablehlo", "get_stablehlo_bytecode")),
})
STATIC_TORCH_FUNCTIONS = STATIC_TORCH_FUNCTIONS | XLA_STATIC_FUNCTIONS

STATIC_PREFIXES = ("torch.distributed.", "torch.cuda.", "torch.backends.", "torch.utils.data.",
                   "torch_xla.runtime.", "torch_xla.debug.")

# Functions whose output shape depends on the values of their input.
DYNAMIC_SHAPE_FUNCTIONS = frozenset({
    "torch.nonzero", "torch.argwhere", "torch.masked_select", "torch.unique",
    "torch.unique_consecutive", "torch.bincount",
})

# Tensor attributes that are static at trace time.
STATIC_TENSOR_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "device", "is_cuda", "is_cpu", "requires_grad", "is_leaf", "layout",
    "names", "is_sparse", "is_quantized", "is_meta", "is_mps", "is_xla", "grad_fn", "itemsize",
    "nbytes", "output_nr", "_version", "is_nested",
})
SHAPE_ATTRIBUTES = frozenset({"shape"})

# Tensor methods that return static Python values.
STATIC_TENSOR_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "is_floating_point", "is_complex",
    "is_contiguous", "get_device", "element_size", "stride", "data_ptr", "storage_offset", "is_signed",
    "type", "is_shared", "is_pinned", "has_names", "is_set_to", "untyped_storage", "storage",
})
SHAPE_METHODS = frozenset({"size", "numel", "nelement"})

# Tensor methods that read values back to Python.
HOST_VALUE_METHODS = frozenset({
    "item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "allclose", "equal",
})

DYNAMIC_SHAPE_METHODS = frozenset({
    "nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount",
})

# Reductions to a fixed shape: a value-dependent shape does not survive them.
REDUCTIONS = frozenset({
    "sum", "mean", "max", "min", "prod", "any", "all", "norm", "std", "var", "count_nonzero",
    "logsumexp", "amax", "amin", "nansum", "nanmean", "median",
})

# Calls to a bare Python builtin: what they return when given (any) tensor argument.
SHAPE_OF_BUILTINS = frozenset({"len"})
HOST_CONVERSION_BUILTINS = frozenset({"int", "float", "bool", "complex", "str", "repr", "format"})
STATIC_BUILTINS = frozenset({
    "isinstance", "issubclass", "hasattr", "callable", "type", "id", "print", "ValueError",
    "TypeError", "RuntimeError", "NotImplementedError", "AssertionError", "KeyError", "object",
})
SEQUENCE_BUILTINS = frozenset({"list", "tuple", "sorted", "reversed", "set", "frozenset", "iter"})
TENSOR_PRESERVING_BUILTINS = frozenset({"min", "max", "sum", "abs", "round", "pow", "next"})
# torch's classes of Python values fixed at trace time: a value `isinstance` shows is one is no tensor
STATIC_TORCH_CLASSES = frozenset({
    "torch.dtype", "torch.device", "torch.Size", "torch.layout", "torch.memory_format", "torch.finfo", "torch.iinfo",
})
# dicts and sets outside the builtins: a tensor's membership in one is hashed (by identity), no value read
MAPPING_CONSTRUCTORS = frozenset({
    "collections.defaultdict", "collections.OrderedDict", "collections.Counter", "weakref.WeakKeyDictionary",
    "weakref.WeakValueDictionary", "weakref.WeakSet",
})

# Constructors in torch.nn that build tensors rather than modules.
TENSOR_CONSTRUCTORS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.Tensor",
                                 "torch.tensor", "torch.nn.Buffer", "torch.nn.parameter.Buffer"})

# Made on the CPU from Python values when no device is named: constants whose value is known while tracing.
HOST_CONSTANT_CONSTRUCTORS = frozenset({"torch.tensor", "torch.as_tensor", "torch.scalar_tensor"})
# Under lazy-tensor tracing a tensor made without a device is an eager CPU tensor: one these make from Python
# numbers only (ranges, and grids of them) is a value known while tracing, like `torch.tensor(0.9)`.
# (Under torch.compile dynamo traces them, and reading one back still breaks the graph.)
LAZY_HOST_CONSTANT_FUNCTIONS = frozenset({
    "torch.arange", "torch.linspace", "torch.logspace", "torch.stack", "torch.cat", "torch.concat",
    "torch.concatenate", "torch.meshgrid", "torch.cartesian_prod",
})
# `pred(x)` holds exactly when x is a tensor.
TENSOR_PREDICATES = frozenset({"torch.is_tensor", "torch.overrides.is_tensor_like"})

TORCH_PREFIXES = ("torch.", "cerebras.pytorch.")
# Private torch.* functions that are tensor operations (other private ones are helpers).
PRIVATE_TORCH_OPS = ("_foreach_", "_fused_", "_softmax", "_log_softmax", "_scaled_dot_product", "_weight_norm")
# Namespaces whose functions are tensor operations. Elsewhere in torch (torch.utils, torch.jit,
# torch._dynamo, ...) a function is judged like any library function, by its arguments.
TENSOR_OP_NAMESPACES = frozenset({
    "torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.nn.init",
    "torch.sparse", "torch.masked", "torch.autograd", "torch.Tensor", "torch.nested", "torch.signal.windows",
    "cerebras.pytorch", "torch._C._nn", "torch._C._VariableFunctions",
})

# The decorators and wrappers that make a function a traced root, and the calls that end a lazily traced
# step, are each target's: `wrappers` and `step_calls` of its record (cslint/core/targets.py).

# torch.distributions' distribution classes (torch 2.13), each with the module that defines it. Built with
# argument validation on (`validate_args`, on unless Python runs with -O), each checks its parameters when
# made and each value given to `log_prob`/`cdf`/`icdf`: `if not torch._is_all_true(valid): raise`.
_DISTRIBUTION_MODULES = {
    "Bernoulli": "bernoulli", "Beta": "beta", "Binomial": "binomial", "Categorical": "categorical",
    "Cauchy": "cauchy", "Chi2": "chi2", "ContinuousBernoulli": "continuous_bernoulli", "Dirichlet": "dirichlet",
    "Exponential": "exponential", "FisherSnedecor": "fishersnedecor", "Gamma": "gamma",
    "GeneralizedPareto": "generalized_pareto", "Geometric": "geometric", "Gumbel": "gumbel",
    "HalfCauchy": "half_cauchy", "HalfNormal": "half_normal", "Independent": "independent",
    "InverseGamma": "inverse_gamma", "Kumaraswamy": "kumaraswamy", "LKJCholesky": "lkj_cholesky",
    "Laplace": "laplace", "LogNormal": "log_normal", "LogisticNormal": "logistic_normal",
    "LowRankMultivariateNormal": "lowrank_multivariate_normal", "MixtureSameFamily": "mixture_same_family",
    "Multinomial": "multinomial", "MultivariateNormal": "multivariate_normal",
    "NegativeBinomial": "negative_binomial", "Normal": "normal", "OneHotCategorical": "one_hot_categorical",
    "OneHotCategoricalStraightThrough": "one_hot_categorical", "Pareto": "pareto", "Poisson": "poisson",
    "RelaxedBernoulli": "relaxed_bernoulli", "RelaxedOneHotCategorical": "relaxed_categorical",
    "StudentT": "studentT", "TransformedDistribution": "transformed_distribution", "Uniform": "uniform",
    "VonMises": "von_mises", "Weibull": "weibull", "Wishart": "wishart",
}
VALIDATING_DISTRIBUTIONS = frozenset(
    [f"torch.distributions.{name}" for name in _DISTRIBUTION_MODULES]
    + [f"torch.distributions.{module}.{name}" for name, module in _DISTRIBUTION_MODULES.items()])

# Ops that draw random numbers: computing them on both sides of a torch.where changes the RNG stream.
RANDOM_FUNCTIONS = frozenset({
    "torch.rand", "torch.randn", "torch.randint", "torch.randperm", "torch.rand_like", "torch.randn_like",
    "torch.randint_like", "torch.bernoulli", "torch.multinomial", "torch.normal", "torch.poisson",
    "torch.nn.functional.dropout", "torch.nn.functional.dropout1d", "torch.nn.functional.dropout2d",
    "torch.nn.functional.dropout3d", "torch.nn.functional.alpha_dropout",
    "torch.nn.functional.feature_alpha_dropout", "torch.nn.functional.gumbel_softmax", "torch.dropout",
})
RANDOM_METHODS = frozenset({"bernoulli", "multinomial", "uniform_", "normal_", "random_", "exponential_",
                            "geometric_", "cauchy_", "log_normal_"})

# Ops defined only on part of their domain: the branch a Python `if` skipped may produce inf/NaN once
# torch.where computes it, and NaN gradients flow back through the unselected side.
PARTIAL_FUNCTIONS = frozenset({
    "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "acos", "asin", "atanh", "acosh",
    "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "float_power", "lgamma", "digamma",
    "polygamma", "erfinv", "logit", "xlogy", "arccos", "arcsin", "arctanh", "arccosh", "divide",
})

# Calls that produce boolean tensors, so their result can be a torch.where condition as is.
BOOLEAN_RESULT_CALLS = frozenset({
    "any", "all", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "logical_and",
    "logical_or", "logical_not", "logical_xor", "eq", "ne", "lt", "gt", "le", "ge", "greater",
    "less", "greater_equal", "less_equal", "not_equal", "isclose", "signbit", "isin", "bool",
})
# Ops whose result has the dtype of the tensor they are given (a mask stays a mask): shape and copy ops,
# `zeros_like(m)`, `m.new_zeros(n)` and `m.masked_fill(...)` unless told another dtype.
DTYPE_PRESERVING_CALLS = frozenset({
    "clone", "view", "reshape", "expand", "expand_as", "unsqueeze", "squeeze", "flatten", "transpose",
    "permute", "contiguous", "detach", "t", "view_as", "reshape_as", "tril", "triu", "roll", "flip",
    "zeros_like", "ones_like", "empty_like", "full_like", "new_zeros", "new_ones", "new_empty", "new_full",
    "masked_fill", "masked_fill_",
})
# The dtype torch.float64 under its names (the WSC6xx rules' concern), and tensor methods that cast to it.
FLOAT64_DTYPES = frozenset({"torch.float64", "torch.double"})
FLOAT64_METHODS = frozenset({"double"})
# Elementwise and reducing ops whose result has their tensor's floating dtype (`t.abs()`, `torch.clamp(t, lo)`).
DTYPE_KEEPING_MATH = frozenset({
    "abs", "neg", "sqrt", "rsqrt", "exp", "log", "clamp", "clamp_min", "clamp_max", "reciprocal", "sign", "pow",
    "sum", "mean", "min", "max", "maximum", "minimum", "cumsum", "mul", "add", "sub", "div",
})
# Tensor methods that copy to another device, keeping the dtype unless told otherwise.
DEVICE_MOVES = frozenset({"to", "cuda", "cpu"})
