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
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from .scope import FunctionInfo

#: A question a slice answers: ``("copies", lines)``, ``("returns",)``,
#: ``("stores", attr)`` (``attr`` ``None``: any attribute of the receiver),
#: ``("calls", name)``, ``("binds", name)`` (a module's or class body's name).
Purpose = Tuple[object, ...]

_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class Slice:
    """The statements (by ``id``) of one function that may matter, and the keys they read."""

    __slots__ = ("statements", "keys")

    def __init__(self, statements: FrozenSet[int], keys: FrozenSet[str]):
        self.statements = statements
        self.keys = keys

    def __contains__(self, stmt: object) -> bool:
        return id(stmt) in self.statements

    def reads_name(self, name: str) -> bool:
        """Whether the slice reads ``name`` (or something below it)."""
        return name in self.keys or any(k.startswith(name + ".") for k in self.keys)


class _Unit:
    __slots__ = ("stmt", "parent", "loads", "receivers", "defines", "rebinds", "seed")

    def __init__(self, stmt: ast.AST, parent: Optional["_Unit"]):
        self.stmt = stmt
        self.parent = parent
        self.loads: Set[str] = set()
        #: Names whose objects it stores into (``b`` in ``b.x = v``): what they are
        #: bound to matters, not what else is stored into them.
        self.receivers: Set[str] = set()
        self.defines: Set[str] = set()
        self.rebinds: Set[str] = set()
        self.seed = False


def slice_of(func: FunctionInfo, purpose: Purpose) -> Slice:
    """The statements of ``func`` that may matter to ``purpose``."""
    seed = _seed_test(func, purpose)
    units: List[_Unit] = []
    _collect(func.body, None, units, seed, purpose[0] == "copies")
    defined: Dict[str, List[_Unit]] = {}
    rebound: Dict[str, List[_Unit]] = {}
    for unit in units:
        for key in unit.defines:
            defined.setdefault(key, []).append(unit)
        for name in unit.rebinds:
            rebound.setdefault(name, []).append(unit)
    chosen: Set[int] = set()
    keys: Set[str] = set()
    work: List[str] = []

    receivers: Set[str] = set()
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

    binds = purpose[1] if purpose[0] == "binds" else None
    for unit in units:
        if unit.seed or (binds is not None and binds in unit.rebinds):
            take(unit)
    while work or bound:
        if bound:
            for unit in rebound.get(bound.pop(), ()):
                take(unit)
            continue
        key = work.pop()
        for unit in defined.get(key, ()):
            take(unit)
        root, dot, _ = key.partition(".")
        if dot:
            for unit in rebound.get(root, ()):
                take(unit)
    return Slice(frozenset(chosen), frozenset(keys | receivers))


def _seed_test(func: FunctionInfo, purpose: Purpose) -> Callable[[ast.AST, bool], bool]:
    """Whether a statement (``header``: only a compound statement's header) seeds the slice."""
    kind = purpose[0]
    if kind == "binds":
        return lambda stmt, header: False  # the statements that bind the name (see slice_of)
    if kind == "copies":
        lines = purpose[1]
        assert isinstance(lines, frozenset)

        def on_lines(stmt: ast.AST, header: bool) -> bool:
            first = stmt.lineno  # type: ignore[attr-defined]
            last = _header_end(stmt) if header else getattr(stmt, "end_lineno", first)
            return any(line in lines for line in range(first, last + 1))

        return on_lines
    if kind == "returns":
        return lambda stmt, header: isinstance(stmt, ast.Return) or (not header and _yields(stmt))
    if kind == "stores":
        attr = purpose[1]
        me = func.self_name

        def stores(stmt: ast.AST, header: bool) -> bool:
            if header:
                return False
            for target in _targets(stmt):
                for node in ast.walk(target):
                    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                        if attr is not None and node.attr == attr:
                            return True
                        if attr is None and isinstance(node.value, ast.Name) and node.value.id == me:
                            return True
            return False

        return stores
    if kind == "calls":
        name = purpose[1]

        def calls(stmt: ast.AST, header: bool) -> bool:
            for node in _own_nodes(stmt, header):
                if isinstance(node, ast.Call) and _final_name(node.func) == name:
                    return True
            return False

        return calls
    raise ValueError(f"unknown purpose {purpose!r}")


def _collect(
    body: Iterable[ast.AST],
    parent: Optional[_Unit],
    out: List[_Unit],
    seed: Callable[[ast.AST, bool], bool],
    closures: bool,
) -> None:
    for stmt in body:
        unit = _Unit(stmt, parent)
        out.append(unit)
        if isinstance(stmt, _NESTED):
            # A nested def or class binds its name. For a function's own copies, it
            # reads, when it runs, every name it mentions (its free names come from
            # here, and may reach a copy in it): then it is always in the slice.
            unit.defines.add(stmt.name)
            unit.rebinds.add(stmt.name)
            parts = [stmt] if closures else _def_time_parts(stmt)
            for part in parts:
                for node in ast.walk(part):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                        unit.loads.add(node.id)
            unit.seed = closures
            continue
        header = isinstance(stmt, _COMPOUND) or _is_match(stmt) or _is_trystar(stmt)
        for node in _header_parts(stmt) if header else (stmt,):
            _read(node, unit)
        for target in _targets(stmt):
            _define(target, unit)
        unit.seed = seed(stmt, header)
        if header:
            for block in _blocks(stmt):
                _collect(block, unit, out, seed, closures)


def _def_time_parts(stmt: ast.AST) -> List[ast.AST]:
    """What a ``def`` or ``class`` statement evaluates where it stands."""
    parts: List[ast.AST] = list(getattr(stmt, "decorator_list", ()))
    args = getattr(stmt, "args", None)
    if isinstance(args, ast.arguments):
        parts += [d for d in (*args.defaults, *args.kw_defaults) if d is not None]
    parts += list(getattr(stmt, "bases", ())) + [k.value for k in getattr(stmt, "keywords", ())]
    return parts


def _read(node: ast.AST, unit: _Unit) -> None:
    """The keys ``node`` reads, and the receivers its method calls may mutate."""
    below: Set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            below.add(id(n.value))
            if isinstance(n.ctx, ast.Load):
                unit.loads.add(f"{n.value.id}.{n.attr}")
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in below:
            unit.loads.add(n.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            key = _key(n.func.value)
            if key is not None:
                unit.defines.add(key)  # `x.append(v)`, `self.buf.copy_(t)`
        elif isinstance(n, ast.NamedExpr):
            _define(n.target, unit)


def _define(target: ast.AST, unit: _Unit) -> None:
    if isinstance(target, ast.Name):
        unit.defines.add(target.id)
        unit.rebinds.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for item in target.elts:
            _define(item, unit)
    elif isinstance(target, ast.Starred):
        _define(target.value, unit)
    elif isinstance(target, (ast.Attribute, ast.Subscript)):
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


def _own_nodes(stmt: ast.AST, header: bool) -> Iterable[ast.AST]:
    if not header:
        return ast.walk(stmt)
    return (n for part in _header_parts(stmt) for n in ast.walk(part))


def _yields(stmt: ast.AST) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(stmt))


def _final_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


__all__ = ["Purpose", "Slice", "slice_of"]
