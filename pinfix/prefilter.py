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

Both stages take the :class:`~pinfix.config.Config`, because what may be a
finding depends on it: ``deep`` (a source may sit in another function or
file, so any sink whose non_blocking may be true counts; so does
``cpu-tensor-names``), ``strict`` (a non-literal positional non_blocking counts)
and the pinned producers (pinned memory a computed tensor may be made from).

Stage 2 only looks closely at the top-level statements (and methods) whose
text holds a sink spelling, and the flow it follows is deliberately looser
than the analysis's: anything a sink's operand is computed from (arguments,
operands, elements, through names assigned in the scope) counts, so a new
kind of computed source in the analysis does not make it unsound.
"""

from __future__ import annotations

import ast
import bisect
import gc
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from .patterns import (
    COMPUTED_FUNCTIONS,
    COMPUTED_METHODS,
    CONVERSION_METHODS,
    COPY_SINKS,
    HOST_READ_BUILTINS,
    HOST_READ_METHODS,
    NON_BLOCKING_KEYWORD,
    PAGEABLE_METHOD_SOURCES,
    PAGEABLE_SOURCES,
    PINNING_METHODS,
    VIEW_METHODS,
)

if TYPE_CHECKING:
    from .config import Config

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
#: Calls whose result is computed from their arguments (``torch.cat(xs)``, ``F.pad(x)``).
COMPUTED_NAMES = frozenset(q.rsplit(".", 1)[-1] for q in COMPUTED_FUNCTIONS) | frozenset(COMPUTED_METHODS)

# A positional non_blocking slot is never the first (``copy_(src, True)``,
# ``cuda(dev, True)``, ``to(dev, dtype, True)``), so its ``True`` follows a
# comma and precedes a comma or ``)``, with only whitespace, continuations or
# comments between.
_GAP = rb"(?:\s|\\(?:\r\n|\r|\n)|#[^\r\n]*(?:\r\n|\r|\n))*"
POSITIONAL_TRUE = re.compile(rb"," + _GAP + rb"True" + _GAP + rb"[,)]")




# --- what the settings change ---------------------------------------------------

PAGEABLE, PINNED = "pageable", "pinned"
#: A string escape that may spell a letter of "cpu" (``"\x63pu"`` is ``"cpu"``).
_CPU_ESCAPE = re.compile(rb"\\(?:[xX](?:63|70|75)|1(?:43|60|65)|u00(?:63|70|75)|U000000(?:63|70|75)|N\{)")


@dataclass(frozen=True)
class _Options:
    deep: bool
    strict: bool
    #: Names a call is spelled with when it makes a CPU tensor or pinned memory
    #: (last components: ``np_to_pinned_tensor`` for ``vllm.utils.torch_utils.np_to_pinned_tensor``).
    pinned_names: FrozenSet[str]
    #: Bytes one of which every file holding a (non-deep) finding contains.
    spellings: Tuple[bytes, ...]
    #: A name followed by ``as ALIAS``: the alias is spelled like the name.
    alias: "re.Pattern[bytes]"


@lru_cache(maxsize=16)
def _options(deep: bool, strict: bool, producers: FrozenSet[str]) -> _Options:
    pinned = frozenset(p.rsplit(".", 1)[-1] for p in producers) | PINNING_METHODS
    words = SOURCE_NAMES | {"cpu"} | pinned
    names = b"|".join(re.escape(n.encode()) for n in sorted(SOURCE_NAMES | pinned | COMPUTED_NAMES, key=len, reverse=True))
    return _Options(
        deep=deep,
        strict=strict,
        pinned_names=pinned,
        spellings=tuple(sorted(n.encode() for n in words if not any(o != n and o in n for o in words))),
        alias=re.compile(rb"\b(?:" + names + rb")" + _GAP + rb"as\b" + _GAP + rb"(\w+)"),
    )


def _options_for(config: "Optional[Config]") -> _Options:
    if config is None:
        from .config import Config

        config = Config()
    # A project naming convention for CPU tensors (`*_cpu`) can make any sink's
    # source a CPU tensor: then, as in deep mode, every sink counts.
    return _options(bool(config.deep or config.cpu_tensor_names), bool(config.strict), frozenset(config.pinned_producers))


# --- stage 1: bytes -------------------------------------------------------------


def may_contain_finding(data: bytes, config: "Optional[Config]" = None) -> bool:
    """Byte stage. Python source encodings are ASCII-compatible, so an
    identifier's bytes appear verbatim whatever the declared encoding.

    The cheapest test that rejects most files runs first (``non_blocking``
    is one fast substring search); the source spellings are looked for only
    in the few files that pass it."""
    if PREFILTER_OFF:
        return True
    options = _options_for(config)
    if not _may_hold_sink(data, options.strict):
        return False
    if options.deep:
        return True  # the source may be made in another function or file
    return any(s in data for s in options.spellings) or _CPU_ESCAPE.search(data) is not None


#: A sink whose positional non_blocking may be a non-literal (``--strict``).
_STRICT_SINK_OPEN = re.compile(rb"\.(?:\s|\\(?:\r\n|\r|\n))*(?:copy_|cuda|xpu)\s*\(")


def _may_hold_sink(data: bytes, strict: bool) -> bool:
    if NON_BLOCKING_KEYWORD.encode() in data:
        return True
    if strict and _STRICT_SINK_OPEN.search(data) is not None:
        return True
    return _maybe_positional_true(data) and _positional_true_in_sink(data)


# ``True`` then what may close a positional slot: the literal prefix makes the
# search fast; the comma before it is then checked by hand (POSITIONAL_TRUE,
# which starts at the comma, is ten times slower over a whole tree).
_TRUE_THEN_CLOSE = re.compile(rb"True(?=" + _GAP + rb"[,)])")
_BACK_GAP = frozenset(b" \t\x0b\x0c\r\n\\")


def _maybe_positional_true(data: bytes) -> bool:
    """Whether some ``True`` may follow a comma (a superset of POSITIONAL_TRUE's matches)."""
    for mo in _TRUE_THEN_CLOSE.finditer(data):
        i = k = mo.start()
        while k > 0 and data[k - 1] in _BACK_GAP:
            k -= 1
        if k > 0 and data[k - 1] == 0x2C:  # ","
            return True
        if b"\n" in data[k:i] or b"\r" in data[k:i]:
            # Across a line end: a comment there may hide the comma.
            start = max(data.rfind(b"\n", 0, k), data.rfind(b"\r", 0, k)) + 1
            if b"#" in data[start:k]:
                return True
    return False


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



# --- stage 2: syntax ----------------------------------------------------------------


def _may_be_non_blocking(call: ast.Call, strict: bool) -> bool:
    if any(isinstance(a, ast.Starred) for a in call.args):
        return True
    for kw in call.keywords:
        if kw.arg is None:
            return True  # **kwargs
        if kw.arg == NON_BLOCKING_KEYWORD and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
            return True
    if strict and len(call.args) > 1:
        return True  # `dst.copy_(src, flag)`: strict reports a non-literal too
    return any(isinstance(a, ast.Constant) and a.value is True for a in call.args)


def _is_sink(node: ast.AST, strict: bool) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in COPY_SINKS
        and _may_be_non_blocking(node, strict)
    )


def _cpu_literal(v: ast.AST) -> bool:
    return isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.split(":", 1)[0].strip() == "cpu"


def _maybe_cpu_device(v: ast.AST) -> bool:
    """Could the analysis read ``v`` as plainly the CPU (``"cpu"``, ``torch.device("cpu")``)?"""
    if _cpu_literal(v):
        return True
    return isinstance(v, ast.Call) and any(_cpu_literal(a) for a in [*v.args, *(k.value for k in v.keywords)])


def _seed_kind(expr: ast.AST, names: Set[str], pinned_names: FrozenSet[str], bound: "Dict[str, Reach]") -> Optional[str]:
    """What a call makes, as far as a finding goes: ``"pageable"`` for a call
    spelled like a source (a finding by itself), ``"pinned"`` for pinned memory
    or a CPU tensor that is not a finding by itself (``.pin_memory()``, a
    pinned producer, a factory with a ``pin_memory=`` that is not ``False``,
    ``.to("cpu")``): only a tensor computed from one can be."""
    if not isinstance(expr, ast.Call):
        return None
    func = expr.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name is None:
        return None
    if name in pinned_names:
        return PINNED
    if not (name in SOURCE_NAMES if isinstance(func, ast.Attribute) else name in names):
        return None
    for kw in expr.keywords:
        if kw.arg == "device" and not (_maybe_cpu_device(kw.value) or _cpu_tensor_device(kw.value, names, pinned_names, bound)):
            return None  # an accelerator (or unknown) device: never a CPU source
    for kw in expr.keywords:
        if kw.arg == "pin_memory" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
            return PINNED
    return PAGEABLE


Reach = Set[Tuple[str, bool]]


def _cpu_tensor_device(v: ast.AST, names: Set[str], pinned_names: FrozenSet[str], bound: Dict[str, Reach]) -> bool:
    """``x.device`` of an ``x`` that may hold a CPU tensor: ``device=x.device``
    puts a factory on the CPU then."""
    return isinstance(v, ast.Attribute) and v.attr == "device" and bool(_reach(v.value, names, pinned_names, bound))


def _reach(expr: ast.AST, names: Set[str], pinned_names: FrozenSet[str], bound: Dict[str, Reach]) -> Reach:
    """What may reach ``expr``: (kind, plain) pairs; ``plain``: only through
    names, views and conversions (of pinned memory, no finding). What a
    computed tensor is computed from counts too, not plainly: the receiver
    of any method, the arguments of a computing function (``torch.cat``),
    operands, elements, subscripts (a gapped view of pinned memory, a gather)."""
    out: Reach = set()
    stack: List[Tuple[ast.AST, bool]] = [(expr, True)]
    while stack:
        node, plain = stack.pop()
        kind = _seed_kind(node, names, pinned_names, bound)
        if kind is not None:
            out.add((kind, plain))
        elif isinstance(node, ast.Name):
            out.update((k, p and plain) for k, p in bound.get(node.id, ()))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                if func.attr in _FLOW_METHODS:
                    if func.attr == "to" and any(_maybe_cpu_device(v) for v in [*node.args, *(k.value for k in node.keywords)]):
                        out.add((PINNED, plain))  # `x.to("cpu")`: a CPU tensor, whatever `x` is
                    stack.append((func.value, plain))  # a view or conversion of its receiver
                    continue
                stack.append((func.value, False))  # `x.cumsum(0)`, `x.clone()`: computed from x
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in COMPUTED_NAMES:
                # Inputs are positional (`out=` and the like are not).
                stack.extend((a, False) for a in node.args)
        elif isinstance(node, _COMPOUND):
            stack.extend((child, False) for child in ast.iter_child_nodes(node))
    return out


#: Expressions a tensor may be computed from or taken out of, part by part
#: (``a if c else b`` too; not ``a or b``: the analysis does not follow it).
_COMPOUND = (
    ast.IfExp, ast.Subscript, ast.Slice, ast.BinOp, ast.UnaryOp, ast.Compare, ast.List, ast.Tuple,
    ast.Set, ast.Starred, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.comprehension, ast.NamedExpr,
)


#: Calls that put a value into the container they are called on.
_GROWING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "__setitem__"})


def _bind(target: ast.AST, value: ast.AST, plain: bool, out: List[Tuple[str, bool, ast.AST]]) -> None:
    """``target = value``: every name ``target`` binds or stores into gets what ``value`` may carry."""
    if isinstance(target, ast.Name):
        out.append((target.id, plain, value))
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _bind(element, value, False, out)
    elif isinstance(target, ast.Starred):
        _bind(target.value, value, False, out)
    # `xs[i] = t`, `obj.x = t`: the analysis follows a name only to its own bindings.


def _bindings(nodes: Sequence[ast.AST]) -> List[Tuple[str, bool, ast.AST]]:
    """(name, plainly, value) for each way a scope's names may come to hold a
    value: assignments of any form, loop and ``with`` targets, and calls
    that grow a container (``xs.append(t)``: a ``torch.cat(xs)`` may carry ``t``)."""
    out: List[Tuple[str, bool, ast.AST]] = []
    for n in nodes:
        if isinstance(n, ast.Assign):
            for t in n.targets:
                _bind(t, n.value, True, out)
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign)) and n.value is not None:
            _bind(n.target, n.value, isinstance(n, ast.AnnAssign), out)
        elif isinstance(n, ast.NamedExpr):
            _bind(n.target, n.value, True, out)
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
            _bind(n.target, n.iter, False, out)
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            _bind(n.optional_vars, n.context_expr, False, out)
        elif (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in _GROWING_METHODS
            and isinstance(n.func.value, ast.Name)
        ):
            for a in [*n.args, *(k.value for k in n.keywords)]:
                out.append((n.func.value.id, False, a))
    return out


def _bound(nodes: Sequence[ast.AST], names: Set[str], pinned_names: FrozenSet[str]) -> Dict[str, Reach]:
    """Followed transitively to a fixpoint: ``x = torch.tensor(...)``, ``y = x[:n].long()``."""
    bound: Dict[str, Reach] = {}
    pairs = _bindings(nodes)
    changed = True
    while changed:
        changed = False
        for name, plain, value in pairs:
            reach = {(k, p and plain) for k, p in _reach(value, names, pinned_names, bound)}
            if reach and not reach <= bound.get(name, set()):
                bound.setdefault(name, set()).update(reach)
                changed = True
    return bound


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



@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for a while: syntax trees (``ast``'s, LibCST's) are
    freed by reference counting, so it finds little in them; yet building one
    triggers it again and again as the heap grows (for ``ast``, three times
    the parse's own cost on a large file). The previous state is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _sink_offsets(data: bytes, options: _Options) -> List[int]:
    """Offsets of every text that may be part of a sink the analysis reports:
    the keyword, a positional ``True`` (``--strict``: any sink opening)."""
    out: List[int] = []
    keyword = NON_BLOCKING_KEYWORD.encode()
    i = data.find(keyword)
    while i >= 0:
        out.append(i)
        i = data.find(keyword, i + 1)
    out += [mo.end() - 1 for mo in POSITIONAL_TRUE.finditer(data)]
    if options.strict:
        out += [mo.start() for mo in _STRICT_SINK_OPEN.finditer(data)]
    return sorted(out)


def _hot_lines(data: bytes, options: _Options) -> Optional[List[int]]:
    """Sorted line numbers (as ``ast`` counts them) holding sink text;
    ``None`` when lines cannot be told for sure (then every statement is hot)."""
    if b"\r" in data:
        return None  # `\r` alone also ends a line for the tokenizer: keep it simple
    lines: List[int] = []
    line, at = 1, 0
    for off in _sink_offsets(data, options):
        line += data.count(b"\n", at, off)
        at = off
        lines.append(line)
    return lines


def _start_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno, *(d.lineno for d in decorators)]) if decorators else node.lineno  # type: ignore[attr-defined]


def _is_hot(st: ast.stmt, hot: Optional[List[int]]) -> bool:
    if hot is None:
        return True
    k = bisect.bisect_left(hot, _start_line(st))
    return k < len(hot) and hot[k] <= (st.end_lineno or st.lineno)


def _scope_parts(scope: ast.AST) -> Tuple[List[ast.AST], List[ast.AST]]:
    """:func:`_scope_nodes`, and the scopes met on the way (nested directly):
    one walk where finding them first would take another."""
    out: List[ast.AST] = []
    nested: List[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope)) if isinstance(scope, ast.Module) else _evaluated_inside(scope)
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, _SCOPES):
            nested.append(node)
            stack.extend(_evaluated_outside(node))
        else:
            stack.extend(ast.iter_child_nodes(node))
    return out, nested


ScopeNodes = List[Tuple[ast.AST, List[ast.AST]]]


def _hot_scopes(body: Sequence[ast.stmt], hot: Optional[List[int]]) -> Iterator[Tuple[ast.AST, List[ast.AST]]]:
    """Scopes (defs, lambdas, classes) inside the statements of ``body`` whose
    lines hold sink text, with their nodes: a sink's call spans its own
    ``non_blocking`` or ``True``, so no other statement can hold one. Classes
    are entered member by member, so a large class costs only its hot methods."""
    for st in body:
        if not _is_hot(st, hot):
            continue
        if isinstance(st, ast.ClassDef):
            yield st, _scope_parts(st)[0]
            yield from _hot_scopes(st.body, hot)
            continue
        work = [st] if isinstance(st, _SCOPES) else _scope_parts(ast.Module(body=[st], type_ignores=[]))[1]
        while work:
            scope = work.pop()
            nodes, nested = _scope_parts(scope)
            yield scope, nodes
            work.extend(nested)


def _module_nodes(body: Sequence[ast.stmt]) -> List[ast.AST]:
    return _scope_nodes(ast.Module(body=list(body), type_ignores=[]))


_BLOCKS = tuple(t for t in (ast.stmt, ast.excepthandler, getattr(ast, "match_case", None)) if t is not None)


def _aliases(data: bytes, tree: ast.Module, scopes: ScopeNodes, options: _Options) -> Set[str]:
    """Names a call may be spelled with for a source, a computing function or
    a pinned producer: their own, and the ``as`` names of their imports that
    a hot scope can see (at module level, in if/try/with blocks too, or in
    the hot scopes themselves). A ``global`` could bind one from any function:
    then every ``NAME as ALIAS`` in the text counts."""
    names = set(SOURCE_NAMES) | options.pinned_names
    if b"global" in data:
        names.update(m.decode("ascii", "replace") for m in options.alias.findall(data))
        return names
    wanted = names | COMPUTED_NAMES

    def imported(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname and a.name in wanted)

    stack: List[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        imported(node)
        stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, _BLOCKS))
    for _, nodes in scopes:
        for node in nodes:
            imported(node)
    return names


def has_candidate_sink(data: bytes, config: "Optional[Config]" = None) -> bool:
    """Syntax stage; ``True`` also when ``ast`` cannot parse the file (LibCST
    then decides, and reports the error)."""
    return candidate_source(data, config) is not None


def candidate_source(data: bytes, config: "Optional[Config]" = None) -> Optional[bytes]:
    """``None`` when the file cannot hold a finding; else the bytes to analyse.

    Those are ``data`` with every function or class that holds no candidate
    sink reduced to a stub (``def f():`` and a string literal spanning its
    lines; its body only, where its header runs in a candidate scope), every
    line and column of the rest where it was.
    Findings live in candidate scopes and depend only on them and on
    module-level bindings, which are all kept, so the analysis of the slice
    reports exactly what it reports on the whole file, at a fraction of the
    metadata cost. In deep mode (and with ``cpu-tensor-names``) a source may
    be anything, so every scope with a sink is a candidate. ``data`` itself when ``ast``
    cannot parse it (LibCST then decides, and reports the error).
    """
    if PREFILTER_OFF:
        return data
    options = _options_for(config)
    with gc_paused():
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError):
            return data
        hot = _hot_lines(data, options)
        scopes = list(_hot_scopes(tree.body, hot))
        # The module scope: its own sinks can only sit in hot statements too.
        module_nodes = _module_nodes([st for st in tree.body if _is_hot(st, hot)])
        if any(_is_sink(n, options.strict) for n in module_nodes):
            scopes.insert(0, (tree, _scope_nodes(tree)))
        if options.deep:
            # Any sink whose non_blocking may be true, whatever its source: the
            # resolver reads the rest of the file (and others) on its own.
            sinky = [scope for scope, nodes in scopes if any(_is_sink(n, options.strict) for n in nodes)]
            return slice_source(data, tree, sinky) if sinky else None
        candidates = _candidate_scopes(scopes, _aliases(data, tree, scopes, options), options)
        if not candidates:
            return None
        return slice_source(data, tree, candidates)


def _operands(sink: ast.Call) -> List[ast.AST]:
    """Where a sink's CPU tensor may be: its source (the receiver of
    ``x.to(...)``, the argument of ``dst.copy_(src)``, by position or keyword),
    shifted by one for the function form (``torch.Tensor.copy_(dst, src)``:
    any receiver that is a plain name may be a class), and, for PIN003's copy
    into pageable memory, a destination that is a name or a slice of one."""
    assert isinstance(sink.func, ast.Attribute)
    spec = COPY_SINKS[sink.func.attr]
    receiver = sink.func.value
    function_form = isinstance(receiver, (ast.Name, ast.Attribute))
    out: List[ast.AST] = []
    if spec.source == "receiver":
        out += [receiver, *sink.args[:1]] if function_form else [receiver]
    else:
        out += sink.args[:2] if function_form else sink.args[:1]
        out += [kw.value for kw in sink.keywords if kw.arg == spec.source_keyword]
        root = receiver
        while isinstance(root, ast.Subscript):
            root = root.value
        if isinstance(root, ast.Name):
            out.append(receiver)
    return out


def _candidate_scopes(scopes: ScopeNodes, names: Set[str], options: _Options) -> List[ast.AST]:
    found: List[ast.AST] = []
    for scope, nodes in scopes:
        sinks = [n for n in nodes if _is_sink(n, options.strict)]
        if not sinks:
            continue
        bound = _bound(nodes, names, options.pinned_names)
        reads: Optional[Tuple[Set[int], Set[str]]] = None
        for sink in sinks:
            assert isinstance(sink, ast.Call) and isinstance(sink.func, ast.Attribute)
            if _d2h_candidate(sink):
                reads = reads if reads is not None else _host_reads(nodes)
                if _d2h_read(sink, nodes, reads):
                    found.append(scope)
                    break
            reach: Reach = set()
            for e in _operands(sink):
                reach |= _reach(e, names, options.pinned_names, bound)
            if any(k == PAGEABLE or not plain for k, plain in reach):
                found.append(scope)
                break
    return found


#: Where statements hold statements (``match`` cases and ``except`` clauses too).
STATEMENT_LISTS = ("body", "handlers", "orelse", "finalbody", "cases")  # as written


def _binds_outside(node: ast.AST) -> bool:
    """Whether a module- or class-level def or class binds names outside its
    own scope (``global``, a ``:=`` in a decorator, default or base): a stub
    would lose them. (A ``nonlocal`` there can only name its own locals.)
    ``global`` is a statement: only statements are walked, not expressions."""
    stack: List[ast.AST] = [node]
    while stack:
        st = stack.pop()
        if isinstance(st, ast.Global):
            return True
        for name in STATEMENT_LISTS:
            stack.extend(getattr(st, name, ()))
    return any(isinstance(n, ast.NamedExpr) for part in _evaluated_outside(node) for n in ast.walk(part))


def slice_source(data: bytes, tree: ast.Module, candidates: List[ast.AST], classes: FrozenSet[int] = frozenset()) -> bytes:
    """``data`` with what holds no candidate (a scope: the module, a class, a
    function) reduced to a stub, lines and columns kept. ``classes``: the
    lines of classes to keep with their own statements and their members'
    headers (deep mode's views of a module, :mod:`pinfix.deep.slices`)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # ast columns are UTF-8 offsets: slice only what they describe
    lines = data.splitlines(keepends=True)
    spans = [(c.lineno, c.end_lineno or c.lineno) for c in candidates if not isinstance(c, ast.Module)]

    def holds_candidate(node: ast.AST) -> bool:
        start, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return any(start <= a <= end or start <= b <= end or (a <= start and end <= b) for a, b in spans)

    def replace(first: int, start: int, last: int, head: bytes) -> None:
        """Lines ``first``..``last`` become ``head`` (at column ``start`` of
        ``first``) and a body that spans them: ``pass`` on one line, else one
        string literal holding just their line ends. One node, where empty
        lines would be one LibCST node each (and metadata visits each).
        Nothing is done when something precedes ``start`` on its line."""
        text = lines[first - 1]
        indent = text[:start]
        if indent.strip() or last > len(lines):
            return  # the body shares a line with its header: keep it
        ending = text[len(text.rstrip(b"\r\n")) :] or b"\n"
        if first == last:
            lines[first - 1] = indent + head + b"pass" + ending
            return
        lines[first - 1] = indent + head + b'"""' + ending
        for i in range(first, last - 1):
            line = lines[i]
            lines[i] = line[len(line.rstrip(b"\r\n")) :]
        line = lines[last - 1]
        lines[last - 1] = b'"""' + line[len(line.rstrip(b"\r\n")) :]

    def replace_value(first: int, start: int, last: int) -> None:
        text = lines[first - 1]
        lines[first - 1] = text[:start] + b'"""' + text[len(text.rstrip(b"\r\n")) :]
        for i in range(first, last - 1):
            line = lines[i]
            lines[i] = line[len(line.rstrip(b"\r\n")) :]
        line = lines[last - 1]
        lines[last - 1] = b'"""' + line[len(line.rstrip(b"\r\n")) :]

    def first_of(node: ast.stmt) -> Tuple[int, int]:
        decorators = getattr(node, "decorator_list", [])
        # A decorated statement starts at its first decorator's `@`.
        if decorators:
            return decorators[0].lineno, decorators[0].col_offset - 1
        return node.lineno, node.col_offset

    def visit(body: List[ast.stmt], owner_is_candidate: bool) -> None:
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(node, ast.ClassDef) and node.lineno in classes:
                visit(node.body, True)
                continue
            if holds_candidate(node):
                if isinstance(node, ast.ClassDef):
                    # Keep the class, stub its other members.
                    visit(node.body, any(c is node for c in candidates))
                continue
            if _binds_outside(node):
                continue
            if owner_is_candidate:
                # Its decorators, defaults and annotations run in a candidate
                # scope (they may even hold its sink): keep the header.
                first, start = first_of(node.body[0])
                replace(first, start, node.body[-1].end_lineno or node.body[-1].lineno, b"")
            else:
                first, start = first_of(node)
                name = node.name.encode("utf-8")
                head = b"class " + name + b": " if isinstance(node, ast.ClassDef) else b"def " + name + b"(): "
                replace(first, start, node.end_lineno or node.lineno, head)

    module_is_candidate = any(isinstance(c, ast.Module) for c in candidates)
    visit(tree.body, module_is_candidate)
    if not module_is_candidate:
        # A function reads a module-level name's value never (the analysis
        # follows a name only within its own scope): a long value becomes one
        # string literal spanning its lines, the name stays bound where it was.
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                value = node.value
                last = value.end_lineno or value.lineno
                if last == value.lineno or value.end_col_offset is None or holds_candidate(value):
                    continue  # one line, or it holds a candidate (`f = lambda x: x.to(d, True)`)
                tail = lines[last - 1][value.end_col_offset :].strip()
                if tail and not tail.startswith(b"#"):
                    continue  # another statement follows on its last line
                replace_value(value.lineno, value.col_offset, last)
    return b"".join(lines)
