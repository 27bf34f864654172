"""Which statements of a function can matter to a question (a backward slice).

Deep mode asks the project (calls, attributes, callers, imported names) only
where the answer can reach what is being asked: the copies of a checked
function, the returns of a helper, the stores of one attribute, the arguments
given to one callee. Elsewhere a function is still evaluated statement by
statement (its bindings and loops as always), but a project question there is
answered "unknown" at no cost. Without this, every attribute read in every
method one hop away fans out over the project.

The slice is syntactic, flow-insensitive and conservative: a statement is in it
when it binds or mutates a *key* that a statement already in it reads. Keys are
names (``x``) and one attribute below a name (``self.buf``); rebinding a name
also defines every key below it. A compound statement is in the slice when any
statement inside it is (its test may decide what the copy sees). One pass over
the statements and one worklist over the keys: linear in the function's size.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from .scope import FunctionInfo, last_name

#: A question a slice answers: ``("copies", lines)``, ``("returns",)``,
#: ``("stores", attr)`` (``attr`` ``None``: any attribute of the receiver;
#: :data:`ANY_ATTRIBUTE`: any store at all), ``("calls", name)``, ``("binds", name)``
#: (a module's or class body's name).
Purpose = Tuple[object, ...]
#: ``("stores", ANY_ATTRIBUTE)``: every ``obj.attr = v`` of the function.
ANY_ATTRIBUTE = "*"

_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
#: Statements that bind their names and do nothing else an evaluation of another name sees:
#: a ``("binds", name)`` evaluation leaves out those of them its slice does not hold.
_ONLY_BIND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import)


class Slice:
    """The statements (by ``id``) of one function that may matter, and the keys they read;
    for a ``("binds", name)`` question, the statements of the body an evaluation runs
    (``run``; ``None``: all of them)."""

    __slots__ = ("statements", "keys", "run")

    def __init__(
        self, statements: FrozenSet[int], keys: FrozenSet[str], run: Optional[Tuple[ast.AST, ...]] = None
    ) -> None:
        self.statements = statements
        self.keys = keys
        self.run = run

    def __contains__(self, stmt: object) -> bool:
        return id(stmt) in self.statements

    def reads_name(self, name: str) -> bool:
        """Whether the slice reads ``name`` (or something below it)."""
        return name in self.keys or any(k.startswith(name + ".") for k in self.keys)


class _Marks:
    """What one statement reads, binds and stores, as :func:`_collect` finds it."""

    __slots__ = ("loads", "receivers", "defines", "rebinds", "stored", "calls", "given", "returns")

    def __init__(self) -> None:
        self.loads: Set[str] = set()
        #: Names whose objects it stores into (``b`` in ``b.x = v``): what they are
        #: bound to matters, not what else is stored into them.
        self.receivers: Set[str] = set()
        self.defines: Set[str] = set()
        self.rebinds: Set[str] = set()
        #: ``(receiver name or None, attr)`` for each ``receiver.attr = v`` it holds.
        self.stored: Set[Tuple[Optional[str], str]] = set()
        #: The names its calls say (``f`` in ``f(x)`` and ``obj.f(x)``).
        self.calls: Set[str] = set()
        #: ``(receiver, names)`` of each call given names (``None``: ``f(x)``; ``"obj"``:
        #: ``obj.f(x)``; ``""``: another callee): a validator there narrows them.
        self.given: List[Tuple[Optional[str], Tuple[str, ...]]] = []
        #: It returns or yields a value.
        self.returns = False


class _Unit:
    """A statement of the graph: its :class:`_Marks`, kept as tuples (in the sets' order):
    a deep run keeps the graphs of thousands of functions, and most of these are empty
    (six sets a statement took 130 MB over vLLM 0.34.0)."""

    __slots__ = (
        "stmt",
        "parent",
        "header",
        "first",
        "last",
        "loads",
        "receivers",
        "defines",
        "rebinds",
        "stored",
        "calls",
        "returns",
    )

    def __init__(self, stmt: ast.AST, parent: Optional["_Unit"], header: bool, marks: _Marks):
        self.stmt = stmt
        self.parent = parent
        #: A compound statement: only its header is this unit's own.
        self.header = header
        self.first: int = getattr(stmt, "lineno", 0)
        self.last: int = _header_end(stmt) if header else getattr(stmt, "end_lineno", self.first)
        self.loads: Tuple[str, ...] = tuple(marks.loads)
        self.receivers: Tuple[str, ...] = tuple(marks.receivers)
        self.defines: Tuple[str, ...] = tuple(marks.defines)
        self.rebinds: Tuple[str, ...] = tuple(marks.rebinds)
        self.stored: Tuple[Tuple[Optional[str], str], ...] = tuple(marks.stored)
        self.calls: Tuple[str, ...] = tuple(marks.calls)
        self.returns = marks.returns


class Graph:
    """What each statement of a function reads, binds and stores, indexed once
    (every slice of the function is then a walk over it)."""

    def __init__(self, func: FunctionInfo, closures: bool):
        self.func = func
        #: Nested functions read this one's names when they run (its own copies' question).
        self.closures = closures
        self.units: List[_Unit] = []
        _collect(func.body, None, self.units, closures, func)
        self.defined: Dict[str, List[_Unit]] = {}
        self.rebound: Dict[str, List[_Unit]] = {}
        #: For ``("binds", name)`` questions (a module's or class body's), made when first asked:
        #: see :meth:`_for_names`.
        self._names: Optional[Tuple[List[_Unit], Dict[int, int], Set[int]]] = None
        for unit in self.units:
            for key in unit.defines:
                self.defined.setdefault(key, []).append(unit)
            for name in unit.rebinds:
                self.rebound.setdefault(name, []).append(unit)

    def seeds(self, purpose: Purpose) -> List[_Unit]:
        kind = purpose[0]
        units = self.units
        if kind == "copies":
            lines = purpose[1]
            assert isinstance(lines, frozenset)
            nested = self.closures
            return [
                u
                for u in units
                if (nested and isinstance(u.stmt, _NESTED)) or any(n in lines for n in range(u.first, u.last + 1))
            ]
        if kind == "returns":
            return [u for u in units if u.returns]
        if kind == "stores":
            attr = purpose[1]
            if attr is None:
                me = self.func.self_name
                return [u for u in units if any(name == me for name, _ in u.stored)] if me else []
            if attr == ANY_ATTRIBUTE:
                return [u for u in units if u.stored]
            return [u for u in units if any(a == attr for _, a in u.stored)]
        if kind == "calls":
            return [u for u in units if purpose[1] in u.calls]
        if kind == "binds":
            return list(self.rebound.get(str(purpose[1]), ()))
        raise ValueError(f"unknown purpose {purpose!r}")

    def slice(self, purpose: Purpose) -> Slice:
        """The statements that may matter to ``purpose``: its seeds, and what binds
        or mutates the keys they read, transitively (one worklist: linear)."""
        seeds = self.seeds(purpose)
        chosen, keys = self._closure(seeds)
        run = None
        if purpose[0] == "binds":
            # A module (or class body) asked for one name of thousands: its defs, classes and
            # imports that neither bind the name nor what is read on the way to it (by the
            # statements that bind it, or by those every such evaluation runs) are not run.
            # Each name's evaluation costs what it reads and the body's other statements, not
            # the whole body (evaluated once for each of its names, it was quadratic).
            top, place, always = self._for_names()
            run = tuple(top[i].stmt for i in sorted(place[n] for n in chosen | always if n in place))
        return Slice(frozenset(chosen), frozenset(keys), run)

    def _for_names(self) -> Tuple[List[_Unit], Dict[int, int], Set[int]]:
        """The body's own statements' units, where each stands in it (by ``id``), and the
        statements (by ``id``) every ``("binds", name)`` evaluation runs: those that do more
        than bind names (:func:`runs_always`) and what they read, the same for every name
        (a closure of seeds is the union of their closures)."""
        if self._names is None:
            top = [unit for unit in self.units if unit.parent is None]
            always, _ = self._closure([top[i] for i in runs_always([unit.stmt for unit in top])])
            self._names = (top, {id(unit.stmt): i for i, unit in enumerate(top)}, always)
        return self._names

    def _closure(self, seeds: List[_Unit]) -> Tuple[Set[int], Set[str]]:
        """The statements (by ``id``) of ``seeds`` and of what binds or mutates the keys they
        read, transitively; and the keys (and receivers) read."""
        chosen: Set[int] = set()
        keys: Set[str] = set()
        receivers: Set[str] = set()
        work: List[str] = []
        bound: List[str] = []

        def take(unit: Optional[_Unit]) -> None:
            while unit is not None and id(unit.stmt) not in chosen:
                chosen.add(id(unit.stmt))
                for key in unit.loads:
                    if key not in keys:
                        keys.add(key)
                        work.append(key)
                for name in unit.receivers:
                    if name not in receivers:
                        receivers.add(name)
                        bound.append(name)
                unit = unit.parent

        for unit in seeds:
            take(unit)
        while work or bound:
            if bound:
                for unit in self.rebound.get(bound.pop(), ()):
                    take(unit)
                continue
            key = work.pop()
            for unit in self.defined.get(key, ()):
                take(unit)
            root, dot, _ = key.partition(".")
            if dot:
                for unit in self.rebound.get(root, ()):
                    take(unit)
        return chosen, keys | receivers


def slice_of(func: FunctionInfo, purpose: Purpose) -> Slice:
    """The statements of ``func`` that may matter to ``purpose`` (callers that
    slice one function often keep its :class:`Graph` instead)."""
    return Graph(func, purpose[0] == "copies").slice(purpose)


def runs_always(body: Sequence[ast.AST]) -> List[int]:
    """Where the statements of ``body`` stand that an evaluation of it for one name runs
    whatever the name: all but those that only bind names (:func:`_only_binds`)."""
    return [i for i, stmt in enumerate(body) if not _only_binds(stmt)]


def _only_binds(stmt: ast.AST) -> bool:
    """Whether ``stmt`` binds its names and does nothing else (``from m import *`` binds
    names no one knows; ``@register(HOST := ...)`` binds one more where the def stands)."""
    if isinstance(stmt, ast.ImportFrom):
        return all(alias.name != "*" for alias in stmt.names)
    if not isinstance(stmt, _ONLY_BIND):
        return False
    return isinstance(stmt, ast.Import) or not any(
        isinstance(node, ast.NamedExpr) for part in _def_time_parts(stmt) for node in ast.walk(part)
    )


def _collect(
    body: Iterable[ast.AST], parent: Optional[_Unit], out: List[_Unit], closures: bool, func: FunctionInfo
) -> None:
    for stmt in body:
        header = isinstance(stmt, _COMPOUND) or _is_match(stmt) or _is_trystar(stmt)
        marks = _Marks()
        if isinstance(stmt, _NESTED):
            # A nested def or class binds its name. For a function's own copies, it
            # reads, when it runs, every name it mentions (its free names come from
            # here, and may reach a copy in it): then it is always in the slice.
            marks.defines.add(stmt.name)
            marks.rebinds.add(stmt.name)
            for part in [stmt] if closures else _def_time_parts(stmt):
                for node in ast.walk(part):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                        marks.loads.add(node.id)
            out.append(_Unit(stmt, parent, header, marks))
            continue
        for node in _header_parts(stmt) if header else (stmt,):
            _read(node, marks)
        for target in _targets(stmt):
            _define(target, marks)
        if isinstance(stmt, ast.Return):
            marks.returns = True
        # `check_pinned(t)`, `checks.check_pinned(t)`, `self.check(t)`: a function that returns
        # only when its argument passes a test narrows it (narrowing.checked), as an `assert`
        # would. A method of a local object (`buf.copy_(t)`) is no project validator pinfix sees.
        for receiver, names in marks.given:
            if receiver is None or receiver in (func.self_name, "cls") or (receiver and receiver not in func.locals):
                marks.defines.update(names)
        unit = _Unit(stmt, parent, header, marks)
        out.append(unit)
        if header:
            for block in _blocks(stmt):
                _collect(block, unit, out, closures, func)


def _def_time_parts(stmt: ast.AST) -> List[ast.AST]:
    """What a ``def`` or ``class`` statement evaluates where it stands."""
    parts: List[ast.AST] = list(getattr(stmt, "decorator_list", ()))
    args = getattr(stmt, "args", None)
    if isinstance(args, ast.arguments):
        parts += [d for d in (*args.defaults, *args.kw_defaults) if d is not None]
    parts += list(getattr(stmt, "bases", ())) + [k.value for k in getattr(stmt, "keywords", ())]
    return parts


def _read(node: ast.AST, unit: _Marks) -> None:
    """The keys ``node`` reads, and the receivers its method calls may mutate."""
    below: Set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            below.add(id(n.value))
            if isinstance(n.ctx, ast.Load):
                unit.loads.add(f"{n.value.id}.{n.attr}")
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in below:
            unit.loads.add(n.id)
        elif isinstance(n, ast.Call):
            unit.calls.add(last_name(n.func))
            key = _key(n.func.value) if isinstance(n.func, ast.Attribute) else None
            if key is not None:
                unit.defines.add(key)  # `x.append(v)`, `self.buf.copy_(t)`
            names = tuple(g.id for g in (*n.args, *(k.value for k in n.keywords)) if isinstance(g, ast.Name))
            if names:
                func = n.func
                receiver = None if isinstance(func, ast.Name) else ""
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                    receiver = func.value.id
                unit.given.append((receiver, names))
        elif isinstance(n, (ast.Yield, ast.YieldFrom)):
            unit.returns = True
        elif isinstance(n, ast.NamedExpr):
            _define(n.target, unit)


def _define(target: ast.AST, unit: _Marks) -> None:
    if isinstance(target, ast.Name):
        unit.defines.add(target.id)
        unit.rebinds.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for item in target.elts:
            _define(item, unit)
    elif isinstance(target, ast.Starred):
        _define(target.value, unit)
    elif isinstance(target, (ast.Attribute, ast.Subscript)):
        if isinstance(target, ast.Attribute):
            receiver = target.value.id if isinstance(target.value, ast.Name) else None
            unit.stored.add((receiver, target.attr))
        key = _key(target if isinstance(target, ast.Attribute) else target.value)
        if key is not None:
            unit.defines.add(key)
            unit.receivers.add(key.partition(".")[0])


def _key(node: ast.AST) -> Optional[str]:
    """``x`` for ``x`` and ``x[i]``; ``x.a`` for ``x.a``, ``x.a.b``, ``x.a[i]``, ``x.a()``."""
    above: Optional[ast.AST] = None
    while not isinstance(node, ast.Name):
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            above, node = node, node.value
        elif isinstance(node, ast.Call):
            above, node = node, node.func
        else:
            return None
    return f"{node.id}.{above.attr}" if isinstance(above, ast.Attribute) else node.id


def _targets(stmt: ast.AST) -> List[ast.AST]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return [stmt.target]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    if isinstance(stmt, ast.Delete):
        return list(stmt.targets)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [ast.Name(id=(a.asname or a.name).split(".")[0], ctx=ast.Store()) for a in stmt.names]
    if isinstance(stmt, ast.Try) or _is_trystar(stmt):
        return [ast.Name(id=h.name, ctx=ast.Store()) for h in stmt.handlers if h.name]  # type: ignore[attr-defined]
    if _is_match(stmt):
        names = [n.name for c in stmt.cases for n in ast.walk(c.pattern) if getattr(n, "name", None)]  # type: ignore[attr-defined]
        return [ast.Name(id=name, ctx=ast.Store()) for name in names]
    return []


def _header_parts(stmt: ast.AST) -> List[ast.AST]:
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in stmt.items] + [i.optional_vars for i in stmt.items if i.optional_vars]
    if isinstance(stmt, ast.Try) or _is_trystar(stmt):
        return [h.type for h in stmt.handlers if h.type is not None]  # type: ignore[attr-defined]
    if _is_match(stmt):
        return [stmt.subject] + [c.guard for c in stmt.cases if c.guard is not None] + [c.pattern for c in stmt.cases]  # type: ignore[attr-defined]
    return []


def _blocks(stmt: ast.AST) -> List[List[ast.AST]]:
    if isinstance(stmt, ast.Try) or _is_trystar(stmt):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]  # type: ignore[attr-defined]
    if _is_match(stmt):
        return [c.body for c in stmt.cases]  # type: ignore[attr-defined]
    return [getattr(stmt, "body", []), getattr(stmt, "orelse", [])]


def _is_match(stmt: ast.AST) -> bool:
    return type(stmt).__name__ == "Match"


def _is_trystar(stmt: ast.AST) -> bool:
    return type(stmt).__name__ == "TryStar"


def _header_end(stmt: ast.AST) -> int:
    body = getattr(stmt, "body", None)
    first = stmt.lineno  # type: ignore[attr-defined]
    if isinstance(body, list) and body:
        return max(first, body[0].lineno - 1)
    return first


__all__ = ["ANY_ATTRIBUTE", "Graph", "Purpose", "Slice", "runs_always", "slice_of"]
