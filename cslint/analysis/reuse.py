"""Function analyses kept between an editor's analyses of a project, reused when nothing they read changed.

An edit changes one document; every other function traced from it (a model's `forward` calling into the
project's losses, attention registries and utilities) is analysed again on every edit, with the same
parameters, in a project that is the same except for that document. An analysis is a function of the
function's tree, its parameters and the answers to the questions it asks beyond its own body: callees'
results and class attributes (the oracle), definitions and class hierarchies (the project), module-level
objects, tracing predicates. So each kept analysis records those questions with their answers; the
next analysis of the same function (the same index entry and parsed node: a file not indexed again) with
the same parameters asks them again of the new run, in the order it asked them, and gets the kept
analysis back when every answer is the same: what it would have computed. A project object answers "the
same" only when it is the same object (a file indexed again gives new ones, so whatever reads the edited
document's definitions is analysed again), any other answer by equality. Only the answers are compared,
never the run's history, so the result never depends on which analyses came before.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

import libcst as cst

from cslint.analysis.function_analysis import FunctionAnalysis
from cslint.analysis.function_tables import Key
from cslint.analysis.index import ClassInfo, FunctionInfo, ModuleInfo
from cslint.analysis.inference import FunctionInference
from cslint.analysis.kinds import Kind
from cslint.analysis.project import Project
from cslint.analysis.oracle import Oracle
from cslint.analysis.tracing_guards import Guards

# (whom it was asked of, the question, its arguments, the answer); the project's, the oracle's and the
# guards' arguments are (positional, named)
Read = tuple[str, str, tuple[Any, ...], Any]
_Answer = TypeVar("_Answer")

_PROJECT_QUESTIONS = frozenset({"lookup", "lookup_class", "lookup_function", "find_method", "mro", "overrides",
                                "is_module_class", "is_optimizer_class"})
_ORACLE_QUESTIONS = frozenset({"return_kind", "call_return", "self_kind", "state_entries", "group_entries",
                               "instance_kind", "function_table", "attributes"})


def _kept(answer: Any) -> Any:
    """The answer as it is kept: an iterator is read out, a dict copied (the oracle fills its own)."""
    if answer is None or type(answer) in _PLAIN:
        return answer
    if isinstance(answer, dict):
        return dict(answer)
    if hasattr(answer, "__next__"):
        return tuple(answer)
    return answer


_PLAIN = frozenset({Kind, FunctionInfo, ClassInfo, ModuleInfo, bool, str, tuple, frozenset})


def same_answer(old: Any, new: Any) -> bool:
    if old is new:
        return True
    if isinstance(old, (FunctionInfo, ClassInfo, ModuleInfo)):
        return old is new
    if isinstance(old, tuple) and old and isinstance(old[0], (FunctionInfo, ClassInfo, ModuleInfo)):
        return isinstance(new, tuple) and len(old) == len(new) and all(a is b for a, b in zip(old, new))
    return type(old) is type(new) and old == new


_UNASKED = object()


class _Reads:
    """The reads of one analysis, in the order they were made. A question asked again with the same answer
    is written down once: a kept analysis is checked for reuse (on every edit, for every function kept) by
    asking its questions again all at once, so a second copy would only repeat the first one's check. This
    holds for the oracle too: its answers can change as the run goes on (a callee's result becomes known),
    but not while the check asks them. A question asked again with another answer is written down again."""

    def __init__(self, reads: list[Read]) -> None:
        self.reads = reads
        self._first: dict[Hashable, Any] = {}

    def add(self, who: str, name: str, args: tuple[Any, ...], named: dict[str, Any] | None, answer: Any) -> None:
        try:
            key = (who, name, *map(_as_key, args), tuple(sorted(named.items())) if named else ())
            first = self._first.get(key, _UNASKED)
        except TypeError:  # an argument that is not hashable (or a dict's keys not ordered): written down each time
            pass
        else:
            if first is _UNASKED:
                self._first[key] = answer
            elif same_answer(first, answer):
                return
        self.reads.append((who, name, (_kept_args(args), named or {}) if named is not None else args, answer))


def _as_key(argument: Any) -> Any:
    """An argument as part of a question's key: a dict (a call's arguments, a guard's names) by its items
    as they are when asked."""
    return tuple(sorted(argument.items())) if isinstance(argument, dict) else argument


class _Asking:
    """Stands for the project, the oracle or the tracing guards inside one analysis: passes the questions
    on and writes each down with its answer."""

    def __init__(self, target: Any, who: str, questions: frozenset[str], reads: _Reads) -> None:
        self._target = target
        self._who = who
        self._questions = questions
        self._reads = reads

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name not in self._questions:
            return value

        def asked(*args: Any, **named: Any) -> Any:
            answer = _kept(value(*args, **named))
            self._reads.add(self._who, name, args, named, answer)
            return answer

        return asked


def _kept_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(dict(a) if isinstance(a, dict) else a for a in args)  # a guard's names are filled later


class _RecordingInference(FunctionInference):
    def __init__(self, project: Project, oracle: Oracle, func: FunctionInfo, params: dict[str, Kind],
                 keywords: dict[str, Kind] | None, guards: Guards | None, recorded: list[Read]) -> None:
        reads = self._reads = _Reads(recorded)
        self._project_itself = project
        asking_guards = _Asking(guards, "guards", frozenset({"value"}), reads) if guards is not None else None
        super().__init__(_Asking(project, "project", _PROJECT_QUESTIONS, reads),  # type: ignore[arg-type]
                         _Asking(oracle, "oracle", _ORACLE_QUESTIONS, reads),
                         func, params, keywords=keywords, guards=asking_guards)  # type: ignore[arg-type]

    def _object_in_module(self, qualified: str) -> Kind | None:
        return self._asked_of_module("_object_in_module", super()._object_in_module, qualified)

    def _global(self, name: str) -> Kind:
        return self._asked_of_module("_global", super()._global, name)

    def _local_definition(self, name: str) -> FunctionInfo | ClassInfo | None:
        return self._asked_of_module("_local_definition", super()._local_definition, name)

    def _selected_functions(self, question: tuple[str, tuple[Key, ...]]) -> Kind | None:
        return self._asked_of_module("_selected_functions", super()._selected_functions, question)

    def _asked_of_module(self, question: str, ask: Callable[[Any], _Answer], argument: Any) -> _Answer:
        """A question about module-level code, answered by the project itself and recorded as one read."""
        real, self.project = self.project, self._project_itself
        try:
            answer = ask(argument)
        finally:
            self.project = real
        self._reads.add("module", question, (argument,), None, answer)
        return answer


@dataclass(eq=False)
class _Kept:
    func: FunctionInfo
    node: cst.FunctionDef
    analysis: FunctionAnalysis
    reads: list[Read]
    module: ModuleInfo  # the function's when it was analysed (an edited buffer's index carries it over)


class KeptAnalyses:
    """Analyses kept from an editor's last two analyses of a project (older ones are dropped, so what is
    kept stays the size of an analysis). A function is analysed several times in one run with the same
    parameters while its callees' results become known: each of those analyses is kept."""

    def __init__(self) -> None:
        self._older: dict[tuple[Any, ...], list[_Kept]] = {}  # the run before the last one's
        self._last: dict[tuple[Any, ...], list[_Kept]] = {}  # the last (or current) run's
        # rules' findings by the analysis they read: (analysis, what else they read, findings), as for analyses
        self._older_findings: dict[int, tuple[FunctionAnalysis, FindingsKey, list[Any]]] = {}
        self._last_findings: dict[int, tuple[FunctionAnalysis, FindingsKey, list[Any]]] = {}
        self.reused = 0
        self.analysed = 0
        # answers read from a class's methods alone (`class_answer`): (question, class, extra) -> the
        # methods' names and texts, the answer
        self._class_answers: dict[tuple[str, str, Hashable], tuple[tuple[tuple[str, str], ...], Any]] = {}
        self.class_answers_reused = 0

    def start(self) -> None:
        """A new analysis of the project begins."""
        self._older, self._last = self._last, {}
        self._older_findings, self._last_findings = self._last_findings, {}

    def findings(self, analysis: FunctionAnalysis, key: FindingsKey) -> list[Any] | None:
        """The findings the rules made of `analysis` (the same object: a kept analysis reused) when what
        else they read was `key`."""
        for kept in (self._last_findings, self._older_findings):
            found = kept.get(id(analysis))
            if found is not None and found[0] is analysis and _same_key(found[1], key):
                self._last_findings[id(analysis)] = found
                return found[2]
        return None

    def keep_findings(self, analysis: FunctionAnalysis, key: FindingsKey, findings: list[Any]) -> None:
        self._last_findings[id(analysis)] = (analysis, key, findings)

    def class_answer(self, question: str, klass: ClassInfo, answer: Callable[[], _Answer],
                     extra: Hashable = None) -> _Answer:
        """`answer()`, a function of the class's methods' nodes alone, as it was given for methods of the
        same names and text (a node is what its text parses to); without their text, computed."""
        texts = _method_texts(klass)
        if texts is None:
            return answer()
        key = (question, klass.qualname, extra)
        kept = self._class_answers.get(key)
        if kept is not None and kept[0] == texts:
            self.class_answers_reused += 1
            return kept[1]  # type: ignore[no-any-return]
        found = answer()
        self._class_answers[key] = (texts, found)
        return found

    def analyse(self, project: Project, oracle: Oracle, func: FunctionInfo, params: dict[str, Kind],
                keywords: dict[str, Kind], guards: Guards | None) -> FunctionAnalysis:
        node = func.node
        key = (id(func), id(node), guards.tracer if guards is not None else None,
               tuple(sorted(params.items())), tuple(sorted(keywords.items())))
        now = self._last.setdefault(key, [])
        for kept in (*now, *self._older.get(key, [])):
            if kept.func is func and kept.node is node and \
                    _answers_again(kept.reads, project, oracle, guards, func, kept.module):
                if kept not in now:
                    now.append(kept)
                self.reused += 1
                return kept.analysis
        reads: list[Read] = []
        analysis = _RecordingInference(project, oracle, func, dict(params), keywords, guards, reads).run()
        now.append(_Kept(func, node, analysis, reads, func.module))
        self.analysed += 1
        return analysis


def _method_texts(klass: ClassInfo) -> tuple[tuple[str, str], ...] | None:
    texts = []
    for name, method in klass.methods.items():
        if method.span is None:
            return None
        texts.append((name, method.module.source[method.span.start:method.span.end]))
    return tuple(texts)


# What rules read besides a function's analysis: values compared by equality, objects by identity
# (the functions up its chain: their nodes and classes).
FindingsKey = tuple[tuple[Any, ...], tuple[Any, ...]]


def _same_key(old: FindingsKey, new: FindingsKey) -> bool:
    return old[0] == new[0] and len(old[1]) == len(new[1]) and all(a is b for a, b in zip(old[1], new[1]))


def _answers_again(reads: list[Read], project: Project, oracle: Oracle, guards: Guards | None,
                   func: FunctionInfo, module: ModuleInfo) -> bool:
    """Whether the new run answers `reads` as they were answered; questions about the function's own
    module (`module` then) are asked about its module now."""
    inference: FunctionInference | None = None
    asked: dict[str, Callable[[str], Callable[..., Any]]] = {
        "project": lambda name: getattr(project, name),
        "oracle": lambda name: getattr(oracle, name),
        "guards": lambda name: getattr(guards, name),
    }
    for who, name, args, answer in reads:
        if who == "module":
            if inference is None:  # its module-level lookups, without its walk
                inference = FunctionInference(project, oracle, func, {}, guards=guards)
            again = getattr(FunctionInference, name)(inference, *args)
        else:
            positional, named = args
            if module is not func.module:
                positional = tuple(func.module if a is module else a for a in positional)
            again = _kept(asked[who](name)(*positional, **named))
        if not same_answer(answer, again):
            return False
    return True
