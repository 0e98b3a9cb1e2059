"""Where a training script's batches come from, for the WSC55x rules (input shapes of the traced step).

The rules look outside traced code, at the `DataLoader`s, collate functions and collators that make the
batches, but only at those that feed a traced step: a loader iterated by a loop whose body calls a model,
a compiled or traced function, or ends each step with `xm.mark_step()`; a loader handed to Lightning
(`trainer.fit(model, loader)`, a `train_dataloader` hook) or wrapped by torch_xla's `MpDeviceLoader` that
such a loop iterates. A loader nothing iterates, or whose loop calls no model, is data preparation and
gives no finding. Everything is decided from this file's text, conservatively: a loader is "training
only" (its `drop_last=True` fix is safe) when every use found is a loop that calls `.backward()` or
`optimizer.step()`, or a Lightning training argument, and the loader is not used any other way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from cslint.analysis.import_scan import ast_dotted_name
from cslint.analysis.imports import dotted_name
from cslint.analysis.index import ModuleInfo
from cslint.analysis.project import Project
from cslint.analysis.step_functions import MODEL_PARAM_NAMES, MODEL_WRAPPERS, MODULE_PREFIXES, \
    OPTIMIZER_PARAM_NAMES, SELF_RETURNING_METHODS
from cslint.analysis.warm import warm_indexes
from cslint.core.targets import step_calls

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
DEVICE_LOADERS = frozenset({"torch_xla.distributed.parallel_loader.MpDeviceLoader",
                            "torch_xla.distributed.parallel_loader.ParallelLoader"})
HF_TRAINING_ARGUMENTS = frozenset({"transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments",
                                   "transformers.training_args.TrainingArguments",
                                   "transformers.training_args_seq2seq.Seq2SeqTrainingArguments"})
HF_TRAINERS = frozenset({"transformers.Trainer", "transformers.Seq2SeqTrainer", "transformers.trainer.Trainer",
                         "transformers.trainer_seq2seq.Seq2SeqTrainer", "trl.SFTTrainer"})
LIGHTNING_TRAINERS = frozenset({"lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer",
                                "lightning.pytorch.trainer.trainer.Trainer", "lightning.fabric.Fabric",
                                "lightning.Fabric"})
TRAIN_HOOKS = frozenset({"train_dataloader"})
EVAL_HOOKS = frozenset({"val_dataloader", "test_dataloader", "predict_dataloader"})
# calls between a loader and the `for` that iterates it: enumerate(tqdm(loader)), zip(a, b)
ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "zip", "iter", "islice", "trange", "track"})
# builtins whose result is not the loader (`len(loader)`, `print(loader)`)
NOT_A_LOADER = frozenset({"len", "print", "str", "repr", "int", "type", "isinstance", "hasattr", "getattr",
                          "next", "range", "id", "bool"})
BACKWARD_METHODS = frozenset({"backward"})
SIZE_KEYWORDS = frozenset({"length", "size", "num_samples", "n_samples", "samples"})
TENSOR_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})
TENSOR_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty", "torch.randint"})


@dataclass
class Feed:
    """One way a loader reaches a traced step: `how` for a message, `training` when it only trains."""

    how: str
    training: bool
    loop: cst.For | None = None  # the loop whose body runs the step, when it is a loop


@dataclass
class Loader:
    call: cst.Call
    feeds: list[Feed] = field(default_factory=list)
    dataset_size: int | None = None  # when the file builds the dataset with a literal size
    single_sample: bool = False  # its collate function keeps only the first sample of each batch
    iterable: bool = False  # its dataset is an IterableDataset: a stream of unknown, often unbounded, length
    other_uses: bool = False  # used in a way this analysis does not follow (passed to an unknown function)

    @property
    def training_only(self) -> bool:
        return bool(self.feeds) and all(f.training for f in self.feeds) and not self.other_uses


@dataclass
class Pipeline:
    loaders: list[Loader]
    batch_functions: list[tuple[cst.FunctionDef | cst.Lambda, str]]  # code run on each batch, and why
    hf_trainer: bool  # a transformers Trainer is built here: its datasets are batched for its traced step
    transforms: list[tuple[cst.BaseExpression, str]]  # `transform=` values of the feeding loaders' datasets
    compile_static: str | None  # how a `torch.compile` here asks for static shapes (`dynamic=False`)
    # the innermost loops that resize their batch and run a traced step over batches no loader of this file
    # makes (a loader built in another module: `train_loader, dataset = create_dataloader(...)`)
    unfed_step_loops: list[tuple[cst.For, str]] = field(default_factory=list)

    def step_loops(self) -> list[tuple[cst.For, str]]:
        """The loops that iterate a loader and run a traced step, each with how a message names it."""
        loops: dict[int, tuple[cst.For, str]] = {}
        for loader in self.loaders:
            for feed in loader.feeds:
                if feed.loop is not None:
                    loops.setdefault(id(feed.loop), (feed.loop, feed.how))
        return list(loops.values())

    @property
    def feeds_a_step(self) -> bool:
        return self.hf_trainer or any(loader.feeds for loader in self.loaders)


RESIZE_CALLS = ("interpolate", "upsample", "resize")
_WORDS = ("DataLoader", "TrainingArguments", "DataCollator", "pad_sequence", "padding")
# What every finding of the WSC55x rules starts from: a loader or a Hugging Face trainer feeding a traced
# step (`Pipeline.feeds_a_step`), each found as a call whose name resolves to one of DATALOADERS or
# HF_TRAINERS through the file's imports and definitions. The last part of such a name is always written
# in the file, so a file naming neither has nothing to report, however much else it says about padding
# (most model files do): its whole tree is then never parsed nor walked, which an editor would otherwise
# do again on every keystroke in it. The exception is a size drawn at random for a resize (WSC553), which
# follows the loop around it whatever module built its loader.
_FEEDERS = ("DataLoader", "Trainer")
# The calls that draw a size at random (WSC553), by the start of their qualified names.
RANDOM_MODULES = ("random.", "numpy.random.", "torch.randint")
# A call resolves to one of them only when the last part of that prefix is written in the file (at the call
# or in an import) or is part of the module's own name (its definitions and relative imports qualify with
# it): "rand" alone would also match the `torch.randn(...)` of docstring examples, which most vision
# model files have, and have each of their edits parse and walk the whole file.
_RANDOM_WORDS = tuple(dict.fromkeys(prefix.rstrip(".").rsplit(".", 1)[-1] for prefix in RANDOM_MODULES))


def pipeline(module: ModuleInfo, project: Project) -> Pipeline | None:
    """The file's data pipeline (cached with its tree), or None when its text names none of it or nothing
    that could feed a traced step."""
    source = module.source
    feeds = any(word in source for word in _WORDS) and any(word in source for word in _FEEDERS)
    if not feeds and not (any(word in source or word in module.name for word in _RANDOM_WORDS)
                          and any(word in source for word in RESIZE_CALLS)):
        return None
    if module.tree_data.get("data_pipeline calls") is None:
        module.tree_data["data_pipeline calls"] = _may_call_one(module)
    if not module.tree_data["data_pipeline calls"]:
        return None
    cached = module.tree_data.get("data_pipeline")
    if cached is None:
        cached = _Scan(module, project).run()
        module.tree_data["data_pipeline"] = cached
    return cached


def _may_call_one(module: ModuleInfo) -> bool:
    """Whether the file calls a loader, a Hugging Face trainer or a random draw (names resolved as the rules
    resolve them), as far as an editor's buffer's Python tree says; True without one. Words of the file
    also found in its docstrings and comments (a vision model's `>>> torch.randint(...)` example) would
    otherwise have its whole libcst tree made and walked on every edit, to find none."""
    warm = warm_indexes()
    kept = warm.buffer_parse(module.path) if warm is not None else None
    if kept is None or kept[0] != module.source:
        return True
    names = module.imports.names
    for node in ast.walk(kept[1]):
        if type(node) is ast.Call:
            called = ast_dotted_name(node.func)
            if called is not None and called.partition(".")[0] in names:
                qualified = module.imports.qualify(called)
                if qualified in DATALOADERS or qualified in HF_TRAINERS or qualified.startswith(RANDOM_MODULES):
                    return True
    return False


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def is_literal(expr: cst.BaseExpression | None, *values: str) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value in values
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value in values
    return False


def _calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Calls under `node`, not inside nested functions, classes or lambdas."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        for child in current.children:
            if not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                stack.append(child)


class _Scan:
    def __init__(self, module: ModuleInfo, project: Project) -> None:
        self.module = module
        self.project = project
        self.tree = module.tree
        self.parents: dict[int, cst.CSTNode] = {}
        self.scopes: dict[int, cst.CSTNode] = {}  # node -> enclosing FunctionDef (or the module)
        self.functions: dict[str, list[cst.FunctionDef]] = {}
        self._index(self.tree, self.tree)
        self.models = self._model_names()

    def _index(self, node: cst.CSTNode, scope: cst.CSTNode) -> None:
        """Parents, enclosing functions, functions by name, and each dotted name's reads and bindings (one
        walk: a file with many loaders is not walked once per loader)."""
        self.reads: dict[str, list[cst.CSTNode]] = {}
        self.bindings: dict[str, list[cst.BaseExpression]] = {}
        self.calls_by_name: dict[str, list[cst.Call]] = {}
        stack: list[tuple[cst.CSTNode, cst.CSTNode]] = [(node, scope)]
        while stack:
            current, owner = stack.pop()
            self.scopes[id(current)] = owner
            inner = current if isinstance(current, cst.FunctionDef) else owner
            if isinstance(current, cst.FunctionDef):
                self.functions.setdefault(current.name.value, []).append(current)
            elif isinstance(current, (cst.Name, cst.Attribute)) and \
                    not isinstance(self.parents.get(id(current)), cst.Attribute):
                name = dotted_name(current)
                if name is not None:
                    self.reads.setdefault(name, []).append(current)
            elif isinstance(current, cst.Assign) and len(current.targets) == 1:
                name = dotted_name(current.targets[0].target)
                if name is not None:
                    self.bindings.setdefault(name, []).append(current.value)
            elif isinstance(current, cst.Call):
                func = current.func
                called = func.attr.value if isinstance(func, cst.Attribute) else \
                    func.value if isinstance(func, cst.Name) else None
                if called is not None:  # by the last name: `raw["train"].map(...)` too
                    self.calls_by_name.setdefault(called, []).append(current)
            for child in current.children:
                self.parents[id(child)] = current
                stack.append((child, inner))

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        return self.module.imports.resolve(expr)

    # ---- what is a model, what is a step ---------------------------------------------------------------

    def _model_names(self) -> set[str]:
        """Dotted names bound anywhere in the file to a model: an nn.Module built, compiled, moved."""
        names = set(MODEL_PARAM_NAMES)
        for _ in range(2):  # `model = Net()` then `compiled = torch.compile(model)`
            names |= {name for name, values in self.bindings.items()
                      if any(self._is_model_value(v, names) for v in values)}
        return names

    def _is_model_value(self, value: cst.BaseExpression, known: set[str]) -> bool:
        if not isinstance(value, cst.Call):
            return dotted_name(value) in known
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in SELF_RETURNING_METHODS:
            return self._is_model_value(func.value, known)
        if isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained":
            return (dotted_name(func.value) or "").split(".")[-1].startswith(("AutoModel", "GPT", "Bert", "Llama"))
        qualified = self.resolve(func) or (f"{self.module.name}.{dotted_name(func)}" if dotted_name(func) else None)
        if qualified is None:
            return False
        if qualified in MODEL_WRAPPERS or qualified in {"torch.jit.script", "torch.jit.trace"}:
            return True
        if qualified.startswith(MODULE_PREFIXES) and qualified.rsplit(".", 1)[-1][:1].isupper():
            return True
        cls = self.project.lookup_class(qualified)
        return cls is not None and self.project.is_module_class(cls)

    def _step_call(self, call: cst.Call) -> str | None:
        """How a message names the traced step this call runs, if it runs one."""
        qualified = self.resolve(call.func)
        if qualified in step_calls():
            return "xm.mark_step()" if qualified.endswith("mark_step") else f"torch_xla.{qualified.rsplit('.', 1)[1]}()"
        name = dotted_name(call.func)
        if name is None:
            return None
        if name in self.models or (name.startswith("self.") and name[5:] in self.models):
            return f"{name}(...)"
        for func in self.functions.get(name, ()) if "." not in name else ():
            if any(_is_trace_decorator(self.module, d.decorator) for d in func.decorators):
                return f"{name}(...)"
        return None

    def _loop_step(self, body: cst.CSTNode, depth: int = 0) -> tuple[str | None, bool]:
        """The traced step a loop body runs (directly or through a function of this file it calls), and
        whether it trains (calls backward or an optimizer's step)."""
        step: str | None = None
        training = False
        for call in _calls(body):
            found = self._step_call(call)
            step = step or found
            func = call.func
            if isinstance(func, cst.Attribute):
                receiver = (dotted_name(func.value) or "").split(".")[-1]
                if func.attr.value in BACKWARD_METHODS or \
                        func.attr.value == "step" and receiver in OPTIMIZER_PARAM_NAMES | {"optimizer_step"}:
                    training = True
            name = dotted_name(func)
            if depth < 2 and name is not None and "." not in name:
                for helper in self.functions.get(name, ()):
                    inner, trains = self._loop_step(helper.body, depth + 1)
                    if inner is not None and step is None:
                        step = f"{name}(...)"
                    training = training or trains
        return step, training

    # ---- loaders ---------------------------------------------------------------------------------------

    def run(self) -> Pipeline:
        loaders: list[Loader] = []
        hf_trainer = False
        compile_static: str | None = None
        for call in _calls_everywhere(self.tree):
            qualified = self.resolve(call.func)
            if qualified in DATALOADERS:
                loaders.append(self._loader(call))
            elif qualified in HF_TRAINERS:
                hf_trainer = True
            elif qualified == "torch.compile" and is_literal(_value(keyword(call, "dynamic")), "False"):
                compile_static = "torch.compile(dynamic=False)"
            elif qualified in {"torch._dynamo.mark_static", "torch._dynamo.decorators.mark_static"}:
                compile_static = compile_static or "torch._dynamo.mark_static"
        feeds = hf_trainer or any(loader.feeds for loader in loaders)
        fed = {id(feed.loop) for loader in loaders for feed in loader.feeds if feed.loop is not None}
        return Pipeline(loaders, self._batch_functions(loaders) if feeds else [], hf_trainer,
                        self._transforms(loaders), compile_static, self._unfed_step_loops(fed))

    def _unfed_step_loops(self, fed: set[int]) -> list[tuple[cst.For, str]]:
        """For each call that resizes (WSC553 looks for what is resized per batch), the innermost loop around
        it, in its function, that runs a traced step; those no loader of this file feeds."""
        found: dict[int, tuple[cst.For, str]] = {}
        for call in (c for name in RESIZE_CALLS for c in self.calls_by_name.get(name, ())):
            node = self.parents.get(id(call))
            while node is not None and not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                if isinstance(node, cst.For):
                    step, _ = self._loop_step(node.body)
                    if step is not None:
                        if id(node) not in fed:
                            found[id(node)] = (node, f"the loop that calls `{step}`")
                        break
                node = self.parents.get(id(node))
        return list(found.values())

    def _transforms(self, loaders: list[Loader]) -> list[tuple[cst.BaseExpression, str]]:
        """The `transform=` of each feeding loader's dataset, where this file builds both
        (`DataLoader(ImageFolder(root, transform=tf))`, through names bound once in the file)."""
        found: list[tuple[cst.BaseExpression, str]] = []
        for loader in loaders:
            dataset = keyword(loader.call, "dataset") or \
                (loader.call.args[0] if loader.call.args and loader.call.args[0].keyword is None else None)
            if not loader.feeds or dataset is None:
                continue
            for built in self._values(dataset.value):
                transform = keyword(built, "transform") if isinstance(built, cst.Call) else None
                if transform is not None:
                    found += [(value, loader.feeds[0].how) for value in self._values(transform.value)
                              if all(value is not seen for seen, _ in found)]
        return found

    def _values(self, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
        """`expr`, or what the name it is was bound to (every binding in the file)."""
        name = dotted_name(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        return list(self.bindings.get(name, ())) if name is not None else [expr]

    def _batch_functions(self, loaders: list[Loader]) -> list[tuple[cst.FunctionDef | cst.Lambda, str]]:
        """The collate functions of the feeding loaders, and the functions `datasets.map(batched=True)`
        applies to groups of examples: what pads there pads to the longest of that group."""
        found: list[tuple[cst.FunctionDef | cst.Lambda, str]] = []
        for loader in loaders:
            arg = keyword(loader.call, "collate_fn")
            if loader.feeds and arg is not None:
                found += [(f, f"the collate function of a loader feeding {loader.feeds[0].how}")
                          for f in self._functions_of(arg.value)]
        for call in self.calls_by_name.get("map", ()):
            if isinstance(call.func, cst.Attribute) and is_literal(_value(keyword(call, "batched")), "True") \
                    and call.args and call.args[0].keyword is None:
                found += [(f, "a function `.map(batched=True)` applies to groups of examples")
                          for f in self._functions_of(call.args[0].value)]
        return found

    def _class_of(self, func: cst.FunctionDef) -> str | None:
        block = self.parents.get(id(func))
        owner = self.parents.get(id(block)) if block is not None else None
        return owner.name.value if isinstance(owner, cst.ClassDef) else None

    def _functions_of(self, expr: cst.BaseExpression) -> list[cst.FunctionDef | cst.Lambda]:
        """The code a callable expression runs: a function of this file (`collate`, `self.collate`), a
        lambda, `partial(f, ...)`, or the `__call__` of a class of this file built there (`Collator(tok)`)."""
        if isinstance(expr, cst.Lambda):
            return [expr]
        if isinstance(expr, cst.Call):
            called = dotted_name(expr.func) or ""
            if called.rsplit(".", 1)[-1] == "partial" and expr.args:
                return self._functions_of(expr.args[0].value)
            return [f for f in self.functions.get("__call__", ()) if self._class_of(f) == called]
        name = dotted_name(expr)
        if name is None or name.count(".") > 1 or "." in name and not name.startswith("self."):
            return []
        return list(self.functions.get(name.rsplit(".", 1)[-1], ()))

    def _loader(self, call: cst.Call) -> Loader:
        loader = Loader(call)
        self._follow(call, loader, depth=0)
        collate = keyword(call, "collate_fn")
        loader.single_sample = collate is not None and any(
            self._keeps_first_sample(f) for f in self._functions_of(collate.value))
        dataset = keyword(call, "dataset") or (call.args[0] if call.args and call.args[0].keyword is None else None)
        if dataset is not None:
            values = self._values(dataset.value)
            sizes = {self._literal_size(value) for value in values}
            loader.dataset_size = sizes.pop() if len(sizes) == 1 else None
            loader.iterable = any(self._is_iterable_dataset(value) for value in values)
        return loader

    def _is_iterable_dataset(self, built: cst.BaseExpression) -> bool:
        """An instance of a `torch.utils.data.IterableDataset` subclass of the project."""
        if not isinstance(built, cst.Call) or (name := dotted_name(built.func)) is None:
            return False
        cls = self.project.lookup_class(self.resolve(built.func) or f"{self.module.name}.{name}")
        return cls is not None and any(base.rsplit(".", 1)[-1] == "IterableDataset"
                                       for base in self.project.external_bases(cls))

    @staticmethod
    def _keeps_first_sample(func: cst.FunctionDef | cst.Lambda) -> bool:
        """A collate function that reads only `batch[0]`: every batch it makes has the same size."""
        params = func.params.params
        if not params:
            return False
        name = params[0].name.value
        reads = [n for n in _walk(func.body) if isinstance(n, cst.Name) and n.value == name]
        firsts = [n for n in _walk(func.body) if isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name)
                  and n.value.value == name and len(n.slice) == 1 and isinstance(n.slice[0].slice, cst.Index)
                  and isinstance(n.slice[0].slice.value, cst.Integer) and n.slice[0].slice.value.value == "0"]
        return bool(reads) and len(reads) == len(firsts)

    def _literal_size(self, built: cst.BaseExpression) -> int | None:
        """The number of samples of a dataset built with it written out: `RegressionDataset(length=128)`,
        `TensorDataset(torch.randn(100, 8), ...)`."""
        if not isinstance(built, cst.Call):
            return None
        for arg in built.args:
            if arg.keyword is not None and arg.keyword.value in SIZE_KEYWORDS and isinstance(arg.value, cst.Integer):
                return int(arg.value.evaluated_value)
        if self.resolve(built.func) in TENSOR_DATASETS and built.args:
            first = built.args[0].value
            if isinstance(first, cst.Call) and (self.resolve(first.func) or "") in TENSOR_FACTORIES and \
                    first.args and isinstance(first.args[0].value, cst.Integer):
                return int(first.args[0].value.evaluated_value)
        return None

    def _follow(self, expr: cst.CSTNode, loader: Loader, depth: int) -> None:
        """Record the uses of the value `expr` evaluates to: the loops, wrappers and trainers it reaches."""
        if depth > 4:
            return
        parent = self.parents.get(id(expr))
        if isinstance(parent, cst.Arg):
            self._argument_use(parent, loader, depth)
        elif isinstance(parent, cst.For) and parent.iter is expr:
            self._loop_use(parent, loader)
        elif isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = dotted_name(parent.targets[0].target)
            if target is None:
                loader.other_uses = True
                return
            for use in self._uses(target, parent):
                self._follow(use, loader, depth + 1)
        elif isinstance(parent, cst.Return):
            func = self.scopes.get(id(parent))
            if isinstance(func, cst.FunctionDef):
                if func.name.value in TRAIN_HOOKS:
                    loader.feeds.append(Feed(f"the Lightning hook `{func.name.value}`", training=True))
                elif func.name.value in EVAL_HOOKS:
                    loader.feeds.append(Feed(f"the Lightning hook `{func.name.value}`", training=False))
                else:
                    for use in self._calls_of(func.name.value):
                        self._follow(use, loader, depth + 1)
        elif parent is not None and not isinstance(parent, cst.Expr):
            loader.other_uses = True

    def _argument_use(self, arg: cst.Arg, loader: Loader, depth: int) -> None:
        call = self.parents.get(id(arg))
        if not isinstance(call, cst.Call):
            return
        name = dotted_name(call.func) or ""
        short = name.rsplit(".", 1)[-1]
        qualified = self.resolve(call.func) or ""
        if short in NOT_A_LOADER:
            return
        if short == "prepare" and self._follow_unpacked(call, arg, loader, depth):
            return
        if short in ITERATION_WRAPPERS or qualified in DEVICE_LOADERS or short in {"prepare", "MpDeviceLoader"}:
            self._follow(call, loader, depth + 1)
            return
        if short in {"fit", "validate", "test", "predict"} and "trainer" in name.lower() or \
                short == "fit" and isinstance(call.func, cst.Attribute) and self._is_lightning(call.func.value):
            training = short == "fit" and (arg.keyword is None or arg.keyword.value.startswith("train"))
            loader.feeds.append(Feed(f"`{self._code(call.func)}`", training=training))
            return
        helpers = self.functions.get(name, ()) if "." not in name else ()
        if len(helpers) != 1 or not self._follow_parameter(helpers[0], call, arg, loader, depth):
            loader.other_uses = True

    def _follow_unpacked(self, call: cst.Call, arg: cst.Arg, loader: Loader, depth: int) -> bool:
        """`model, optimizer, loader = accelerator.prepare(model, optimizer, loader)`: each argument comes
        back in its place."""
        binding = self.parents.get(id(call))
        if not (isinstance(binding, cst.Assign) and len(binding.targets) == 1 and binding.value is call):
            return False
        target = binding.targets[0].target
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(call.args) or \
                any(a.keyword is not None or a.star for a in call.args):
            return False
        name = dotted_name(target.elements[list(call.args).index(arg)].value)
        if name is None:
            return False
        for use in self._uses(name, binding):
            self._follow(use, loader, depth + 1)
        return True

    def _follow_parameter(self, func: cst.FunctionDef, call: cst.Call, arg: cst.Arg, loader: Loader,
                          depth: int) -> bool:
        """Follow a loader passed to a function of this file into the parameter that receives it."""
        params = [*func.params.posonly_params, *func.params.params]
        if arg.keyword is not None:
            param = next((p.name.value for p in [*params, *func.params.kwonly_params]
                          if p.name.value == arg.keyword.value), None)
        else:
            position = [a for a in call.args if a.keyword is None].index(arg)
            if arg.star or any(a.star for a in call.args[:call.args.index(arg)]):
                return False
            offset = 1 if params and params[0].name.value in ("self", "cls") and \
                isinstance(call.func, cst.Attribute) else 0
            param = params[position + offset].name.value if position + offset < len(params) else None
        if param is None:
            return False
        for node in _walk(func.body):
            if isinstance(node, cst.Name) and node.value == param and not self._is_store(node) and \
                    not isinstance(self.parents.get(id(node)), cst.Attribute):
                self._follow(node, loader, depth + 1)
        return True

    def _is_lightning(self, receiver: cst.BaseExpression) -> bool:
        name = dotted_name(receiver)
        return any(isinstance(value, cst.Call) and self.resolve(value.func) in LIGHTNING_TRAINERS
                   for value in self.bindings.get(name or "", ()))

    def _loop_use(self, loop: cst.For, loader: Loader) -> None:
        step, training = self._loop_step(loop.body)
        if step is not None:
            loader.feeds.append(Feed(f"the loop that calls `{step}`", training=training, loop=loop))

    def _uses(self, target: str, binding: cst.Assign) -> Iterator[cst.CSTNode]:
        """Reads of `target`: in the binding's function (and functions nested in it), or anywhere in the
        file for a module-level name or a `self.` attribute."""
        scope = self.scopes.get(id(binding), self.tree)
        anywhere = target.startswith("self.") or scope is self.tree
        for node in self.reads.get(target, ()):
            if not self._is_store(node) and (anywhere or self._inside(node, scope)):
                yield node

    def _inside(self, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
        owner = self.scopes.get(id(node))
        while owner is not None and owner is not self.tree:
            if owner is scope:
                return True
            owner = self.scopes.get(id(owner))
        return False

    def _is_store(self, node: cst.CSTNode) -> bool:
        """A name being bound: an assignment's or a `for`'s target, or an element of one (`a, b = ...`)."""
        parent = self.parents.get(id(node))
        while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
            node, parent = parent, self.parents.get(id(parent))
        return isinstance(parent, cst.AssignTarget) or isinstance(parent, cst.For) and parent.target is node

    def _calls_of(self, name: str) -> list[cst.Call]:
        return self.calls_by_name.get(name, [])

    @staticmethod
    def _code(node: cst.CSTNode) -> str:
        return " ".join(cst.Module([]).code_for_node(node).split())


def _value(arg: cst.Arg | None) -> cst.BaseExpression | None:
    return arg.value if arg is not None else None


def _is_trace_decorator(module: ModuleInfo, decorator: cst.BaseExpression) -> bool:
    target = decorator.func if isinstance(decorator, cst.Call) else decorator
    qualified = module.imports.resolve(target) or ""
    return qualified in MODEL_WRAPPERS or qualified in {"cerebras.pytorch.trace", "torch_xla.compile"}


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def _calls_everywhere(node: cst.CSTNode) -> Iterator[cst.Call]:
    for current in _walk(node):
        if isinstance(current, cst.Call):
            yield current
