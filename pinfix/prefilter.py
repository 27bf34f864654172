"""Sound shortcuts: tell, without LibCST, that a file cannot hold a finding.

Two stages, each a superset of what :mod:`pinfix.analysis` reports, both
derived from the tables in :mod:`pinfix.patterns`:

1. bytes (:func:`may_contain_finding`): the text must name a source (or say
   ``cpu``, for PIN003's ``.to("cpu", ...)``) and say non_blocking;
2. syntax (:func:`has_candidate_sink`, stdlib ``ast``): some sink call whose
   non_blocking may be true must be fed by a call spelled like a source (its
   own name, a pinning method, or a local alias from ``from torch import
   from_numpy as X``) or by a name assigned such a call in the same scope, seen
   through the views and conversions the analysis follows (``x[:n]``,
   ``.view(...)``, ``.long()``, transitively through names); or (PIN003) be a
   ``.to(...)`` with a string or call argument (``"cpu"``, ``torch.device(...)``).

Only files that pass both are parsed with LibCST and get scope metadata,
the expensive part. ``PINFIX_NO_PREFILTER=1`` turns both off, to prove them
sound: findings must be identical either way (``tests/test_prefilter.py``).
"""

from __future__ import annotations

import ast
import os
import re
from typing import Dict, List, Optional, Set, Tuple

from .patterns import (
    CONVERSION_METHODS,
    COPY_SINKS,
    DEFAULT_HELPER,
    HOST_READ_BUILTINS,
    HOST_READ_METHODS,
    NON_BLOCKING_KEYWORD,
    PAGEABLE_METHOD_SOURCES,
    PAGEABLE_SOURCES,
    PINNING_METHODS,
    VIEW_METHODS,
)

#: The default pinned helper; another configured one turns the pre-filter to
#: sinks only (see ``engine._sink_only_prefilter``).
DEFAULT_HELPER_NAME = DEFAULT_HELPER.rsplit(".", 1)[-1]

PREFILTER_OFF = os.environ.get("PINFIX_NO_PREFILTER", "") not in ("", "0")

#: Last components of the sources' qualified names: every spelling that
#: resolves to ``torch.from_numpy`` contains one (``torch.from_numpy``,
#: ``th.from_numpy``, or the name in ``from torch import from_numpy [as x]``).
#: Pinning methods and method sources are spelled by their own names.
SOURCE_NAMES = frozenset(s.qualified_name.rsplit(".", 1)[-1] for s in PAGEABLE_SOURCES) | PINNING_METHODS | frozenset(
    PAGEABLE_METHOD_SOURCES
)
#: ``cpu`` also covers PIN003's ``.to("cpu")`` / ``torch.device("cpu")``; some
#: names contain others (``zeros_like`` holds ``zeros``), so keep the shortest.
SOURCE_SPELLINGS = tuple(
    sorted(n.encode() for n in SOURCE_NAMES | {"cpu"} if not any(o != n and o in n for o in SOURCE_NAMES | {"cpu"}))
)
#: Calls the analysis looks through to their receiver.
_FLOW_METHODS = VIEW_METHODS | CONVERSION_METHODS

# A positional non_blocking slot is never the first (``copy_(src, True)``,
# ``cuda(dev, True)``, ``to(dev, dtype, True)``), so its ``True`` follows a
# comma and precedes a comma or ``)``, with only whitespace, continuations or
# comments between.
_GAP = rb"(?:\s|\\(?:\r\n|\r|\n)|#[^\r\n]*(?:\r\n|\r|\n))*"
POSITIONAL_TRUE = re.compile(rb"," + _GAP + rb"True" + _GAP + rb"[,)]")


def may_contain_finding(data: bytes, deep: bool = False) -> bool:
    """Byte stage. Python source encodings are ASCII-compatible, so an
    identifier's bytes appear verbatim whatever the declared encoding.
    ``deep``: a source may be made in another file, so only the sink counts."""
    if PREFILTER_OFF:
        return True
    if not deep and not any(s in data for s in SOURCE_SPELLINGS):
        return False
    if NON_BLOCKING_KEYWORD.encode() in data:
        return True
    return POSITIONAL_TRUE.search(data) is not None and _positional_true_in_sink(data)


# A positional ``True`` that can be non_blocking sits inside the parentheses of
# a sink call (``.copy_(``, ``.to(``, ``.cuda(``, ``.xpu(``, also the function
# form ``torch.Tensor.copy_(``).
_SINK_OPEN = re.compile(
    rb"\.(?:\s|\\(?:\r\n|\r|\n))*(?:" + b"|".join(re.escape(n.encode()) for n in sorted(COPY_SINKS)) + rb")\s*\("
)
_SPECIAL = re.compile(rb"[()'\"#]")


def _matching_paren(data: bytes, i: int) -> Optional[int]:
    """Index of the ``)`` closing the ``(`` just before ``i``, skipping string
    literals and comments; ``None`` when that cannot be told (the caller then
    keeps the file)."""
    depth = 1
    n = len(data)
    while True:
        mo = _SPECIAL.search(data, i)
        if mo is None:
            return None
        c = data[mo.start() : mo.start() + 1]
        i = mo.end()
        if c == b"(":
            depth += 1
        elif c == b")":
            depth -= 1
            if depth == 0:
                return mo.start()
        elif c == b"#":
            nl = data.find(b"\n", i)
            if nl < 0:
                return None
            i = nl + 1
        else:  # a string literal: skip to its unescaped closing quote
            quote = c * 3 if data[mo.start() : mo.start() + 3] == c * 3 else c
            i = mo.start() + len(quote)
            while True:
                if i >= n:
                    return None
                ch = data[i : i + 1]
                if ch == b"\\":
                    i += 2
                elif data[i : i + len(quote)] == quote:
                    i += len(quote)
                    break
                elif len(quote) == 1 and ch in (b"\n", b"\r"):
                    return None  # unterminated: we lost track
                else:
                    i += 1


def _positional_true_in_sink(data: bytes) -> bool:
    for mo in _SINK_OPEN.finditer(data):
        end = _matching_paren(data, mo.end())
        if end is None or POSITIONAL_TRUE.search(data, mo.end() - 1, end + 1) is not None:
            return True
    return False


def _may_be_non_blocking(call: ast.Call) -> bool:
    if any(isinstance(a, ast.Starred) for a in call.args):
        return True
    for kw in call.keywords:
        if kw.arg is None:
            return True  # **kwargs
        if kw.arg == NON_BLOCKING_KEYWORD and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
            return True
    return any(isinstance(a, ast.Constant) and a.value is True for a in call.args)


def _root(expr: ast.AST) -> Tuple[ast.AST, bool]:
    """Strip what the analysis's data flow looks through (subscripts, views,
    conversions); also say whether a subscript was stripped."""
    subscripted = False
    while True:
        if isinstance(expr, ast.Subscript):
            expr, subscripted = expr.value, True
        elif (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in _FLOW_METHODS
        ):
            expr = expr.func.value
        else:
            return expr, subscripted


def _cpu_literal(v: ast.AST) -> bool:
    return isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.split(":", 1)[0].strip() == "cpu"


def _maybe_cpu_device(v: ast.AST) -> bool:
    """Could the analysis read ``v`` as plainly the CPU (``"cpu"``, ``torch.device("cpu")``)?"""
    if _cpu_literal(v):
        return True
    return isinstance(v, ast.Call) and any(_cpu_literal(a) for a in [*v.args, *(k.value for k in v.keywords)])


PAGEABLE, PINNED = "pageable", "pinned"


def _root_kind(root: ast.AST, names: Set[str]) -> Optional[str]:
    """``"pinned"`` for a call the analysis sees as pinned memory (``.pin_memory()``,
    a factory with a ``pin_memory=`` that is not ``False``), ``"pageable"`` for
    any other source-spelled call, ``None`` otherwise."""
    if not _source_spelled(root, names):
        return None
    assert isinstance(root, ast.Call)
    func = root.func
    if isinstance(func, ast.Attribute) and func.attr in PINNING_METHODS:
        return PINNED
    for kw in root.keywords:
        if kw.arg == "device" and not _maybe_cpu_device(kw.value):
            return None  # an accelerator (or unknown) device: never a CPU source
    for kw in root.keywords:
        if kw.arg == "pin_memory" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
            return PINNED
    return PAGEABLE


def _flow(expr: ast.AST, names: Set[str], bound: Dict[str, Set[Tuple[str, bool]]]) -> Set[Tuple[str, bool]]:
    """What may reach ``expr``: (kind, through a subscript) pairs."""
    root, subscripted = _root(expr)
    kind = _root_kind(root, names)
    if kind is not None:
        return {(kind, subscripted)}
    if isinstance(root, ast.Name):
        return {(k, sub or subscripted) for k, sub in bound.get(root.id, ())}
    return set()


def _spells_a_cpu_tensor(nodes: List[ast.AST], names: Set[str]) -> bool:
    """Whether the scope makes a CPU tensor the analysis can see: a
    source-spelled call (pinned or not), the pinned helper, or a ``"cpu"``
    device (``x.to("cpu")``)."""
    return any(
        _root_kind(n, names) is not None
        or _cpu_literal(n)
        or isinstance(n, ast.Call) and _called_name(n) == DEFAULT_HELPER_NAME
        for n in nodes
    )


def _called_name(call: ast.Call) -> Optional[str]:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _d2h_candidate(sink: ast.Call) -> bool:
    """PIN003's ``.to("cpu", non_blocking=True)``."""
    assert isinstance(sink.func, ast.Attribute)
    if sink.func.attr != "to":
        return False
    return any(_maybe_cpu_device(v) for v in [*sink.args, *(kw.value for kw in sink.keywords)])


def _host_reads(nodes: List[ast.AST]) -> Tuple[Set[int], Set[str]]:
    """Expressions read on the host in a scope (by ``id``) and the names read so:
    ``E.tolist()`` (any read method), ``E[...]``, comparisons, truth tests,
    ``print(E)`` and the other reading builtins; a superset of the analysis's reads."""
    read: List[ast.AST] = []
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in HOST_READ_METHODS:
            read.append(node.func.value)
        elif isinstance(node, ast.Subscript):
            read.append(node.value)
        elif isinstance(node, ast.Compare):
            read += [node.left, *node.comparators]
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            read.append(node.test)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HOST_READ_BUILTINS:
            read += list(node.args)
    return {id(e) for e in read}, {e.id for e in read if isinstance(e, ast.Name)}


def _d2h_read(sink: ast.Call, nodes: List[ast.AST], reads: Tuple[Set[int], Set[str]]) -> bool:
    """The result of ``sink`` is read directly, or bound to a name read in this scope."""
    if id(sink) in reads[0]:
        return True
    for node in nodes:
        if isinstance(node, ast.Assign) and node.value is sink:
            return any(isinstance(t, ast.Name) and t.id in reads[1] for t in node.targets)
        if isinstance(node, ast.AnnAssign) and node.value is sink:
            return isinstance(node.target, ast.Name) and node.target.id in reads[1]
    return False


def _source_spelled(expr: ast.AST, names: Set[str]) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Attribute):
        return func.attr in SOURCE_NAMES
    return isinstance(func, ast.Name) and func.id in names


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _evaluated_outside(node: ast.AST) -> List[ast.AST]:
    """Parts of a def, lambda or class that run in the enclosing scope."""
    parts: List[ast.AST] = list(getattr(node, "decorator_list", []))
    if isinstance(node, ast.ClassDef):
        return parts + list(node.bases) + [k.value for k in node.keywords]
    args = node.args  # type: ignore[attr-defined]
    parts += list(args.defaults) + [d for d in args.kw_defaults if d is not None]
    if not isinstance(node, ast.Lambda):
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        parts += [a.annotation for a in every if a is not None and a.annotation is not None]
        parts += [node.returns] if node.returns is not None else []  # type: ignore[attr-defined]
    return parts


def _evaluated_inside(node: ast.AST) -> List[ast.AST]:
    if isinstance(node, ast.Lambda):
        return [node.body]
    return list(node.body)  # type: ignore[attr-defined]


def _scope_nodes(scope: ast.AST) -> List[ast.AST]:
    """Nodes that run in ``scope``'s namespace (comprehensions included, as the
    analysis looks through them), not in nested functions or classes."""
    out: List[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope)) if isinstance(scope, ast.Module) else _evaluated_inside(scope)
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(_evaluated_outside(node) if isinstance(node, _SCOPES) else ast.iter_child_nodes(node))
    return out


def _is_sink(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in COPY_SINKS
        and _may_be_non_blocking(node)
    )


def has_candidate_sink(data: bytes) -> bool:
    """Syntax stage; ``True`` also when ``ast`` cannot parse the file (LibCST
    then decides, and reports the error)."""
    return candidate_source(data) is not None


def candidate_source(data: bytes, deep: bool = False) -> Optional[bytes]:
    """``None`` when the file cannot hold a finding; else the bytes to analyse.

    Those are ``data`` with the body of every function or class that holds no
    candidate sink blanked (``pass`` and empty lines, so every line and column
    of the rest stays where it was). Findings live in candidate scopes and
    depend only on them and on module-level bindings, which are all kept, so
    the analysis of the slice reports exactly what it reports on the whole
    file, at a fraction of the metadata cost. ``data`` itself when ``ast``
    cannot parse it (LibCST then decides, and reports the error).
    """
    if PREFILTER_OFF:
        return data
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError):
        return data
    candidates = _sink_scopes(tree) if deep else _candidate_scopes(tree)
    if not candidates:
        return None
    return _blank_other_bodies(data, tree, candidates)


def _candidate_scopes(tree: ast.Module) -> List[ast.AST]:
    found: List[ast.AST] = []
    spelled = set(SOURCE_NAMES)
    scopes: List[ast.AST] = [tree]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            spelled.update(a.asname for a in node.names if a.name in SOURCE_NAMES and a.asname)
        elif isinstance(node, _SCOPES):
            scopes.append(node)
    for scope in scopes:
        nodes = _scope_nodes(scope)
        sinks = [n for n in nodes if _is_sink(n)]
        if not sinks:
            continue
        # Names this scope binds to a source-spelled call (the analysis follows
        # a name only to assignments in the same function).
        # Followed transitively: `x = torch.tensor(...)`, `y = x[:n].long()`.
        bound: Dict[str, Set[Tuple[str, bool]]] = {}
        assigns = [n for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
        changed = True
        while changed:
            changed = False
            for node in assigns:
                reach = _flow(node.value, spelled, bound)  # type: ignore[arg-type]
                if not reach:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and not reach <= bound.get(t.id, set()):
                        bound.setdefault(t.id, set()).update(reach)
                        changed = True
        reads: Optional[Tuple[Set[int], Set[str]]] = None
        for sink in sinks:
            assert isinstance(sink, ast.Call) and isinstance(sink.func, ast.Attribute)
            if _d2h_candidate(sink):
                reads = reads if reads is not None else _host_reads(nodes)
                if _d2h_read(sink, nodes, reads):
                    found.append(scope)
                    break
            # The source: the receiver, a positional argument, or a keyword's value.
            # Pinned memory matters only through a (maybe gapped) subscript.
            exprs = [sink.func.value, *sink.args[:2], *(kw.value for kw in sink.keywords)]
            if any(any(k == PAGEABLE or sub for k, sub in _flow(e, spelled, bound)) for e in exprs):
                found.append(scope)
                break
            # What the analysis computes from a CPU tensor (`torch.cat`, arithmetic,
            # indexing) starts at a spelled call in this scope all the same.
            if _spells_a_cpu_tensor(nodes, spelled):
                found.append(scope)
                break
    return found


def _sink_scopes(tree: ast.Module) -> List[ast.AST]:
    """Deep mode: a source may come from anywhere, so every scope with a sink
    whose non_blocking may be true is a candidate."""
    scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, _SCOPES))]
    return [scope for scope in scopes if any(_is_sink(n) for n in _scope_nodes(scope))]


def _blank_other_bodies(data: bytes, tree: ast.Module, candidates: List[ast.AST]) -> bytes:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # ast columns are UTF-8 offsets: slice only what they describe
    lines = data.splitlines(keepends=True)
    spans = [(c.lineno, c.end_lineno or c.lineno) for c in candidates if not isinstance(c, ast.Module)]

    def holds_candidate(node: ast.AST) -> bool:
        start, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return any(start <= a <= end or start <= b <= end or (a <= start and end <= b) for a, b in spans)

    def blank(body: List[ast.stmt]) -> None:
        head = body[0]
        decorators = getattr(head, "decorator_list", [])
        # A decorated statement starts at its first decorator's `@`.
        first = decorators[0].lineno if decorators else head.lineno
        start = decorators[0].col_offset - 1 if decorators else head.col_offset
        last = body[-1].end_lineno or body[-1].lineno
        text = lines[first - 1]
        indent = text[:start]
        if indent.strip() or last > len(lines):
            return  # the body shares a line with its header: keep it
        ending = text[len(text.rstrip(b"\r\n")) :] or b"\n"
        lines[first - 1] = indent + b"pass" + ending
        for i in range(first, last):
            line = lines[i]
            lines[i] = line[len(line.rstrip(b"\r\n")) :]

    def visit(body: List[ast.stmt]) -> None:
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if holds_candidate(node):
                if isinstance(node, ast.ClassDef):
                    visit(node.body)  # keep the class, blank its other methods
                continue
            # `global` / `nonlocal` bind names outside: such a body must stay.
            if not any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(node)):
                blank(node.body)

    visit(tree.body)
    return b"".join(lines)
