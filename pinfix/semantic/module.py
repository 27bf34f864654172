"""The engine's entry point for one module: which functions to evaluate, and what
they read from their module and from the functions they are nested in.

Only functions that hold a copy (found from the lines the byte pre-filter
marks) are evaluated, each once; a nested function's free names take every
value the enclosing function gives them (evaluated once too); a module-level
name takes every value the module body gives it, unless some function rebinds
it with ``global``.
"""

from __future__ import annotations

import array
import ast
import re
from collections import deque
from contextlib import nullcontext
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    ContextManager,
    Deque,
    Dict,
    FrozenSet,
    Iterable,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
)

from ..effects import IMPLIED_NON_BLOCKING
from ..settings import Settings
from . import narrowing
from .facts import FunctionFacts, ModuleFacts
from .scope import FunctionInfo, ModuleInfo
from .slices import runs_always
from .source import SourceText
from .values import Func, Value, unknown

if TYPE_CHECKING:
    from .evaluator import Evaluator

#: A module or class body that runs more statements than this besides its defs, classes and
#: imports is evaluated once for all the names it binds (deep mode), not once for each.
MAX_BODY_PER_NAME = 64


class Questions:
    """What one module's analysis may ask beyond the module, declared: the
    interface deep mode's project implements
    (:class:`pinfix.semantic.deep.project.DeepProject`). This base class is plain
    mode's (:data:`NO_PROJECT`): it answers nothing, and a module is analysed alone."""

    #: Whether the answers come from the whole project (deep mode).
    deep = False

    def open(self, src: SourceText, tree: ast.Module, path: Optional[Path], settings: Settings) -> "ModuleContext":
        """The context in which the checked module's functions are evaluated."""
        return ModuleContext(ModuleInfo(src, tree, path), settings, self)

    def evaluator(
        self, ctx: "ModuleContext", func: FunctionInfo, params: Optional[Dict[str, Value]], purpose: Any
    ) -> "Evaluator":
        """An evaluation of ``func`` (``params``: the values a call gives it), asking what ``purpose`` needs."""
        from .evaluator import Evaluator

        return Evaluator(ctx, func, params)

    def run(self, evaluator: "Evaluator") -> Optional[FunctionFacts]:
        """``evaluator`` run, its work counted against the checked module's budget for
        project questions (``None``: that budget is spent)."""
        return evaluator.run()

    def recording(self, key: Optional[Tuple[Any, ...]] = None) -> ContextManager[Set[str]]:
        """Collect what the answers given inside read (deep mode's cache keeps it)."""
        return nullcontext(set())

    def reused(self, key: Tuple[Any, ...]) -> None:
        """An answer given again: what it read is read again."""

    def global_value(self, module: ModuleInfo, name: str) -> Optional[Value]:
        """What another module binds ``name`` to (``None``: not known here)."""
        return None

    def refine(self, ctx: "ModuleContext", facts: FunctionFacts) -> FunctionFacts:
        """``facts`` with what the function's callers give its parameters."""
        return facts


#: Plain mode's questions: none answered beyond the module.
NO_PROJECT = Questions()


class ModuleContext:
    """Everything one module's evaluations share."""

    def __init__(self, module: ModuleInfo, settings: Settings, project: Optional[Questions] = None):
        self.module = module
        self.settings = settings
        #: What may be asked beyond the module: deep mode's project, or :data:`NO_PROJECT`.
        self.project: Questions = project if project is not None else NO_PROJECT
        self.results: Dict[int, FunctionFacts] = {}
        #: Deep mode: what a module or class body binds each name to (by the body and the name),
        #: and every name's values of a body evaluated once for all (:meth:`_binds_in_one`).
        self.bindings: Dict[Tuple[int, str], Optional[Value]] = {}
        self.body_values: Dict[int, Dict[str, Value]] = {}
        self._in_one: Dict[int, bool] = {}
        self._active: set = set()
        #: Plain mode: what each ``collate_fn`` of this module returns for a list of dataset
        #: items (by its node; ``None`` while it is evaluated).
        self.collated: Dict[int, Optional[Value]] = {}
        #: The local names each function uses only as dicts whose keys the flow sees (by its node).
        self.plain_dicts: Dict[int, FrozenSet[str]] = {}
        #: Lambdas met on the way, evaluated once the scopes around them are done.
        self.pending: Deque[FunctionInfo] = deque()
        self._pending: Set[int] = set()  # (their identities: one met again is not added twice)
        #: What each function asked about guarantees of its parameters when it returns (by its node).
        self.guaranteed: Dict[int, Tuple[narrowing.Guarantee, ...]] = {}
        #: Deep mode: the lines that may hold a copy (what a function's slice starts
        #: from), found in the module's own text, so every evaluation of a function of
        #: this module asks the same question whoever asks it first.
        self.lines: FrozenSet[int] = frozenset()
        #: Deep mode with ``everything``: no slice (every project question asked).
        self.whole = False
        if self.project.deep:
            data = module.src.data if module.src.data is not None else module.src.text.encode("utf-8")
            self.lines = frozenset(hot_lines(data, settings.strict))

    def later(self, func: FunctionInfo) -> None:
        if id(func.node) not in self.results and id(func) not in self._pending:
            self.pending.append(func)
            self._pending.add(id(func))

    def drain(self, problems: Optional[List[Tuple[int, str, Exception]]] = None) -> None:
        while self.pending:
            func = self.pending.popleft()
            self._pending.discard(id(func))
            if problems is None:
                self.evaluate(func)
            else:
                contained(problems, func, lambda: self.evaluate(func))

    def evaluator(self, func: FunctionInfo, params: Optional[Dict[str, Value]] = None) -> "Evaluator":
        purpose = None if self.whole or not self.project.deep else ("copies", self.lines)
        return self.project.evaluator(self, func, params, purpose)

    def evaluate(self, func: FunctionInfo) -> Optional[FunctionFacts]:
        """``func`` evaluated with its own parameters (memoised); ``None`` while it is being evaluated."""
        found = self.results.get(id(func.node))
        if found is not None:
            self.project.reused(("evaluate", id(func.node)))
            return found
        if id(func.node) in self._active:
            return None
        self._active.add(id(func.node))
        try:
            with self.project.recording(("evaluate", id(func.node))):
                facts = self.evaluator(func).run()
        finally:
            self._active.discard(id(func.node))
        self.results[id(func.node)] = facts
        return facts

    def binding(self, scope: FunctionInfo, name: str) -> Optional[Value]:
        """Deep mode: every value the module body (or a class body) gives ``name``,
        evaluated asking the project only where that can matter; ``None`` where it
        binds none, or while it is being evaluated (memoised: only the value is kept,
        as what the evaluation saw of its other names was 20 KB a question on vLLM)."""
        whole = self._binds_in_one(scope)
        key = (id(scope.node), "" if whole else name)
        if whole and id(scope.node) in self.body_values:
            self.project.reused(("binding",) + key)
            return self.body_values[id(scope.node)].get(name)
        if key in self.bindings:
            self.project.reused(("binding",) + key)
            return self.bindings[key]
        if key in self._active:
            return None
        self._active.add(key)
        try:
            with self.project.recording(("binding",) + key):
                purpose = None if whole else ("binds", name)
                facts = self.project.run(self.project.evaluator(self, scope, None, purpose))
        finally:
            self._active.discard(key)
        if facts is None:
            return None  # past the budget of the module being checked: asked again, under another, it is answered
        if whole:
            self.body_values[id(scope.node)] = facts.all_values
            return facts.all_values.get(name)
        found = self.bindings[key] = facts.all_values.get(name)
        return found

    def _binds_in_one(self, scope: FunctionInfo) -> bool:
        """Whether every name ``scope`` (a module or class body) binds is worked out in one
        evaluation of it: where it runs more than :data:`MAX_BODY_PER_NAME` statements besides
        defs, classes and imports, which an evaluation for one name runs all of (one for each
        name of a module of a thousand assignments was quadratic). Decided by the body alone,
        so no answer depends on what was asked first."""
        found = self._in_one.get(id(scope.node))
        if found is None:
            found = self._in_one[id(scope.node)] = len(runs_always(scope.body)) > MAX_BODY_PER_NAME
        return found

    def guarantees(self, func: FunctionInfo) -> Tuple[narrowing.Guarantee, ...]:
        """What a call of the project function ``func`` that returns says of the
        arguments it was given (its checks, and those of the functions it hands them
        to by name, solved together: :func:`narrowing.checked_by`); memoised."""
        found = self.guaranteed.get(id(func.node))
        if found is None:
            self.guaranteed.update(narrowing.checked_by(_checks, self._checked_callee, func))
            found = self.guaranteed[id(func.node)]
        return found

    def _checked_callee(self, func: FunctionInfo, call: ast.Call) -> Optional[FunctionInfo]:
        """The plain function a check of ``func`` calls by a module-level name (``None``: another)."""
        name = call.func.id if isinstance(call.func, ast.Name) else None
        if name is None or name in func.locals:
            return None
        value = self.global_value(func.module, name)
        callees = {id(a.info.node): a.info for a in value or () if isinstance(a, Func) and a.receiver is None}
        if value is None or len(callees) != 1 or len(value) != 1:
            return None
        callee = next(iter(callees.values()))
        return callee if callee.kind == "function" else None

    def closure_of(self, func: FunctionInfo) -> Dict[str, Value]:
        """Free names of ``func`` bound in the functions it is nested in."""
        out: Dict[str, Value] = {}
        parent = func.parent
        while parent is not None and not parent.is_module:
            if parent.is_class_body:  # a class body's names are not visible in its methods
                parent = parent.parent
                continue
            facts = self.evaluate(parent)
            for name in parent.locals:
                if name not in out and name not in func.locals:
                    found = facts.all_values.get(name) if facts is not None else None
                    out[name] = found if found is not None else unknown("comes from an enclosing function")
            parent = parent.parent
        return out

    def global_value(self, module: ModuleInfo, name: str) -> Optional[Value]:
        """Every value module-level code gives ``name``; ``None`` when it binds none."""
        if module is not self.module:
            return self.project.global_value(module, name)
        if name not in module.body.locals:
            return None
        if name in module.rebound_globals:
            return unknown("is a module-level name some function rebinds")
        if not self.project.deep or self.whole:
            facts = self.evaluate(module.body)
            found = facts.all_values.get(name) if facts is not None else None
        else:
            found = self.binding(module.body, name)
        return found if found is not None else unknown("is a module-level name")


def _checks(func: FunctionInfo) -> narrowing.Checks:
    """``func``'s :class:`narrowing.Checks`, found once (a function is asked about many times)."""
    found = func.exit_checks
    if found is None:
        named = {p.name for p in func.params if p.kind in ("posonly", "positional", "kwonly")}
        found = func.exit_checks = narrowing.postconditions(func.node, named, func.is_generator)
    return found


#: Where a copy may be: ``non_blocking``, a name that implies it, ``True`` after no name byte
#: and before a comma or a closing parenthesis; with ``strict``, a sink's call too.
_HOT_WORDS = (b"non_blocking", *sorted(n.encode() for n in IMPLIED_NON_BLOCKING))
_AFTER_TRUE = re.compile(rb"\s*[,)]")
_STRICT_HOT = re.compile(rb"\.\s*(?:copy_|to|cuda|xpu)\s*\(")
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def hot_lines(data: bytes, strict: bool = False) -> List[int]:
    """Lines that may hold a non_blocking copy (1-based; a superset), read as
    Python reads the code (:func:`pinfix.prefilter.readable`): each line where one of
    :data:`_HOT_WORDS` starts, or a ``True`` as :data:`_AFTER_TRUE` says (with
    ``strict``, a match of :data:`_STRICT_HOT`). The words are found by substring
    search and their lines by counting line ends up to each (one expression of the
    alternatives, tried at every byte, and the start of every line found: 26 ms a
    megabyte of the modules deep mode reads, 4 ms so)."""
    from ..prefilter import readable

    data = readable(data) or data
    offsets = []
    for word in _HOT_WORDS:
        at = data.find(word)
        while at >= 0:
            offsets.append(at)
            at = data.find(word, at + len(word))
    at = data.find(b"True")
    while at >= 0:
        if (at == 0 or data[at - 1] not in _WORD_BYTES) and _AFTER_TRUE.match(data, at + 4):
            offsets.append(at)
        at = data.find(b"True", at + 4)
    if strict:
        offsets.extend(m.start() for m in _STRICT_HOT.finditer(data))
    if not offsets:
        return []
    offsets.sort()
    lines = set()
    line, done = 1, 0
    crs = b"\r" in data
    for at in offsets:
        # Line ends as Python counts them (CRLF, CR, LF); no offset falls inside a CRLF.
        line += data.count(b"\n", done, at)
        if crs:
            line += data.count(b"\r", done, at) - data.count(b"\r\n", done, at)
        done = at
        lines.add(line)
    return sorted(lines)


def functions_at(module: ModuleInfo, lines: Iterable[int]) -> List[FunctionInfo]:
    """The innermost function (or class body, or the module body) whose body holds
    each line; for a line of a def's header (decorators, defaults: evaluated
    where the def stands) also the scope around it. The answer for every line of
    the module is found once (:func:`_scope_table`), so a module asked about for
    each of its thousand methods is not swept a thousand times."""
    spans, best, header = _scope_table(module)
    out: Dict[int, FunctionInfo] = {}
    size = len(best)
    for line in lines:
        found = best[line] if 0 <= line < size else -1
        chosen = spans[found][3] if found >= 0 else module.body
        out[id(chosen.node)] = chosen
        around = header[line] if 0 <= line < size else -1
        if around >= 0:
            outer = _scope_of(spans[around][3], module)
            out[id(outer.node)] = outer
    return sorted(out.values(), key=lambda f: getattr(f.node, "lineno", 0))


def _scope_table(
    module: ModuleInfo,
) -> Tuple[List[Tuple[int, int, int, FunctionInfo, int]], "array.array[int]", "array.array[int]"]:
    """Each scope's span (first line, body's first line, last line, the scope, its
    header's last line), and for each line of ``module`` the span of the innermost
    body holding it and of the innermost header holding it (``-1``: none). Kept on
    the module until it indexes another scope (a lambda, when first evaluated)."""
    count = len(module.functions) + len(module.classes)
    kept = module.scope_table
    if kept is not None and kept[0] == count:
        return kept[1]
    scopes = [f for f in module.functions.values()] + [c.body_function for c in module.classes.values()]
    spans = []
    src = module.src
    for f in scopes:
        node = f.node
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        last = f.body_line
        if last > first and src.line_text(last - 1).rstrip().endswith(":"):
            # The body starts on a line of its own (below `def f(...):`): that line is no
            # line of the header. Were it taken for one, the scope around would be evaluated
            # too, for each line a question leads to.
            last -= 1
        spans.append((first, f.body_line, getattr(node, "end_lineno", node.lineno), f, last))
    spans.sort(key=lambda s: (s[0], -s[2]))
    size = max([len(src.line_starts) + 1, *(end + 1 for _, _, end, _, _ in spans)])
    best = _last_holding([(body_start, end) for _, body_start, end, _, _ in spans], size)
    header = _last_holding([(first, min(end, last)) for first, _, end, _, last in spans], size)
    table = (spans, best, header)
    module.scope_table = (count, table)
    return table


def _last_holding(intervals: List[Tuple[int, int]], size: int) -> "array.array[int]":
    """For each line below ``size``, the last of ``intervals`` (inclusive) that holds
    it, by index: the one nested deepest (``-1``: none). Each interval written over
    its lines in the order given, a slice at a time, not a loop over every line
    (nested scopes write a line once each: at most the parser's hundred levels)."""
    found = array.array("i", [-1]) * size
    for i, (first, last) in enumerate(intervals):
        first, last = max(first, 0), min(last, size - 1)
        if first <= last:
            found[first : last + 1] = array.array("i", [i]) * (last - first + 1)
    return found


def _scope_of(func: FunctionInfo, module: ModuleInfo) -> FunctionInfo:
    """The scope a def's header is evaluated in."""
    return func.parent if func.parent is not None else module.body


def contained(problems: List[Tuple[int, str, Exception]], func: FunctionInfo, work: Callable[[], object]) -> None:
    """``work()`` for ``func``; an internal error (a bug of ours) is noted in
    ``problems`` and loses only that function's facts, not the module's."""
    try:
        work()
    except RecursionError:
        raise  # the caller's: the whole file is too deep
    except Exception as e:  # noqa: BLE001  # contained: one function lost, reported at its line
        what = "the module's top level" if func.name == "<module>" else f"`{func.qualname}`"
        problems.append((getattr(func.node, "lineno", 0), f"the findings of {what} are lost", e))


def analyze_module(
    src: SourceText,
    tree: ast.Module,
    settings: Settings,
    path: Optional[Path] = None,
    project: Optional[Questions] = None,
    lines: Optional[Sequence[int]] = None,
    everything: bool = False,
) -> ModuleFacts:
    """The facts of every function of the module that may hold a copy
    (``lines``: where copies may be; by default found in the text;
    ``everything``: evaluate every function, to prove that shortcut sound)."""
    questions = project if project is not None else NO_PROJECT
    ctx = questions.open(src, tree, path, settings)
    module = ctx.module
    if lines is None:
        data = src.data if src.data is not None else src.text.encode("utf-8")
        lines = hot_lines(data, settings.strict)
    facts = ModuleFacts(module)
    chosen = functions_at(module, lines)
    ctx.whole = everything
    if everything:
        chosen = [module.body, *module.functions.values(), *(c.body_function for c in module.classes.values())]
    for func in chosen:
        contained(facts.problems, func, lambda: ctx.evaluate(func))
    ctx.drain(facts.problems)
    if questions.deep:
        # Parameters the copies depend on: what the project's callers pass.
        for key, result in list(ctx.results.items()):
            if result.copies:

                def refine(key: int = key, result: FunctionFacts = result) -> None:
                    ctx.results[key] = questions.refine(ctx, result)

                contained(facts.problems, result.info, refine)
    # Functions evaluated on the way (enclosing functions, lambdas) may hold copies too.
    found = [r for r in ctx.results.values() if r.copies or r.reads]
    found.sort(key=lambda r: (getattr(r.info.node, "lineno", 0), getattr(r.info.node, "col_offset", 0)))
    facts.functions = found
    return facts
