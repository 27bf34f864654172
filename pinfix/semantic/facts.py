"""What the engine found in one module: the copies, the host reads, the functions.

Rules (:mod:`pinfix.rules`) read these facts and nothing else: a
:class:`Copy` knows its sink, what memory its CPU side may hold on every path
(:class:`~pinfix.semantic.values.Value`), where the destination lives; a
:class:`HostRead` is a read of a device-to-host copy's destination before any
wait. :class:`ModuleFacts` also answers the syntactic questions fixes ask (uses
of a name, the loops around a node), in written order, so every message is
deterministic. Rules import this module and :mod:`~pinfix.semantic.values` only
(``tests/test_layers.py``); what else they read of a module (whether two texts are
one source, whether a file is a demo of another) is re-exported here.
"""

from __future__ import annotations

import ast
import copy
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from .aliasing import Hazard, MemoryWrites

# What rules read of the source besides the facts (re-exported: rules import only facts and values).
from .roots import is_demo_of as is_demo_of
from .scope import FunctionInfo, ModuleInfo, binds, enclosing_loops, iter_nodes
from .source import SourceText
from .source import holds as holds
from .source import same_source as same_source
from .values import ANY_DEVICE, CPU, Pending, Step, Tensor, Value, join


class Copy:
    """A call that may copy between host and device with ``non_blocking``."""

    __slots__ = (
        "call",
        "method",
        "function_form",
        "source_node",
        "source",
        "destination",
        "non_blocking",
        "non_blocking_node",
        "direction",
        "device_node",
        "function",
        "given_by",
        "target",
    )

    def __init__(
        self,
        call: ast.Call,
        method: str,
        function_form: bool,
        source_node: ast.expr,
        source: Value,
        destination: Optional[Value],
        non_blocking: Optional[bool],
        non_blocking_node: ast.expr,
        direction: str,
        device_node: Optional[ast.expr],
        function: FunctionInfo,
    ):
        self.call = call
        #: ``copy_``, ``to``, ``cuda``, ``xpu``.
        self.method = method
        #: ``torch.Tensor.copy_(dst, src, ...)``.
        self.function_form = function_form
        #: The CPU side's expression (the receiver of ``.to``, the source of ``copy_``).
        self.source_node = source_node
        self.source = source
        #: ``copy_``'s destination (its receiver).
        self.destination = destination
        #: ``True`` written out (or a name bound only to ``True``); ``None``: an expression.
        self.non_blocking = non_blocking
        self.non_blocking_node = non_blocking_node
        #: ``h2d`` (host to device, on some path), ``d2h``, ``h2h`` or ``none`` (a dtype conversion).
        self.direction = direction
        self.device_node = device_node
        self.function = function
        #: Where a call of the function passes ``True`` to the parameter that is ``non_blocking`` here (deep mode).
        self.given_by: Optional[Step] = None
        #: Where the copy goes: ``accelerator`` when every path names one (``.cuda()``,
        #: ``.to("cuda")``, a ``copy_`` into a device tensor), else ``unknown``: a
        #: ``.to(dev)`` to a CPU ``dev`` returns its receiver itself, not a copy.
        self.target = ANY_DEVICE

    def given(self, where: Step) -> "Copy":
        """This copy as one call of its function makes it: ``where`` gives its ``non_blocking``."""
        out = copy.copy(self)
        out.given_by = where
        return out

    def merge(self, other: "Copy") -> None:
        """Another evaluation of the same call (a later loop round): join what it saw."""
        self.source = join(self.source, other.source)
        if other.destination is not None:
            self.destination = join(self.destination, other.destination)
        if self.direction != other.direction:
            order = ("h2d", "d2h", "h2h", "none")
            self.direction = min(self.direction, other.direction, key=order.index)

    @property
    def blocking(self) -> Tuple[Tensor, ...]:
        """The CPU tensors on the way here whose non_blocking copy blocks the host."""
        return tuple(t for t in self.source.tensors if t.blocks)


class HostRead:
    """A read on the host of a non_blocking device-to-host copy's destination
    with no wait in between (PIN003)."""

    __slots__ = ("node", "pending", "direct", "function")

    def __init__(self, node: ast.AST, pending: Pending, direct: bool, function: FunctionInfo):
        self.node = node
        self.pending = pending
        #: The copy's result read at once (``t.to("cpu", non_blocking=True).tolist()``).
        self.direct = direct
        self.function = function


class FunctionFacts:
    """What one evaluation of a function saw."""

    def __init__(self, info: FunctionInfo):
        self.info = info
        self.copies: Dict[int, Copy] = {}
        self.reads: Dict[Tuple[int, int], HostRead] = {}
        self.returns: Optional[Value] = None
        #: What a generator hands out (``yield v``; ``None``: nothing).
        self.yields: Optional[Value] = None
        #: Every value each local name held (free names of nested functions read these).
        self.all_values: Dict[str, Value] = {}
        #: ``receiver.attr = value`` stores: (receiver's value, attribute, value, statement).
        self.stores: List[Tuple[Value, str, Value, ast.AST]] = []
        #: The evaluation gave up precision somewhere (a loop that would not settle).
        self.widened = False
        #: Calls of project functions: (the callee, the call, its arguments, the receiver).
        self.sites: List[Tuple[FunctionInfo, ast.Call, Any, Optional[Value]]] = []
        #: Records (dataclasses, NamedTuples) made here: (the class, the call, the fields it gives).
        self.made: List[Tuple[Any, ast.Call, Tuple[Tuple[str, Value], ...]]] = []

    def add_copy(self, copy: Copy) -> None:
        known = self.copies.get(id(copy.call))
        if known is None:
            self.copies[id(copy.call)] = copy
        else:
            known.merge(copy)

    def with_copies(self, copies: Dict[int, Copy]) -> "FunctionFacts":
        """The same facts, with ``copies`` instead."""
        out = copy.copy(self)
        out.copies = copies
        return out

    def add_read(self, read: HostRead) -> None:
        self.reads.setdefault((id(read.node), id(read.pending.copy)), read)

    def add_return(self, value: Value) -> None:
        self.returns = join(self.returns, value)

    def add_yield(self, value: Value) -> None:
        self.yields = join(self.yields, value)


class ModuleFacts:
    """Every fact of one module, and the syntactic questions fixes ask of it."""

    def __init__(self, module: ModuleInfo):
        self.module = module
        self.functions: List[FunctionFacts] = []
        #: Internal errors the analysis (or a rule) met and contained: ``(line or 0,
        #: what was lost, the error)``; each loses only its own function's or copy's findings.
        self.problems: List[Tuple[int, str, Exception]] = []
        self._loops: Dict[int, Dict[int, Tuple[ast.AST, ...]]] = {}
        self._names: Dict[int, Dict[str, List[ast.Name]]] = {}
        self._own: Dict[int, Set[int]] = {}
        self._writes: Dict[int, MemoryWrites] = {}
        self._seen: Dict[int, FrozenSet[str]] = {}

    @property
    def src(self) -> SourceText:
        return self.module.src

    @property
    def copies(self) -> List[Copy]:
        out = [c for f in self.functions for c in f.copies.values()]
        out.sort(key=lambda c: (c.call.lineno, c.call.col_offset))
        return out

    @property
    def reads(self) -> List[HostRead]:
        out = [r for f in self.functions for r in f.reads.values()]
        out.sort(key=lambda r: (r.node.lineno, r.node.col_offset))  # type: ignore[attr-defined]
        return out

    # --- syntactic questions, in written order ---------------------------------------

    def loops(self, func: FunctionInfo, node: ast.AST) -> Tuple[ast.AST, ...]:
        """The loops of ``func`` that ``node`` sits in (outermost first)."""
        table = self._loops.get(id(func.node))
        if table is None:
            table = self._loops[id(func.node)] = enclosing_loops(func)
        return table.get(id(node), ())

    def uses(self, func: FunctionInfo, name: str) -> List[ast.Name]:
        """Every ``Name`` node spelling ``name`` in ``func`` (its nested functions
        too, where the name is free), in written order."""
        table = self._names.get(id(func.node))
        if table is None:
            table = {}
            for stmt in func.body:
                for node in iter_nodes(stmt, enter_scopes=True):
                    if isinstance(node, ast.Name):
                        table.setdefault(node.id, []).append(node)
            for nodes in table.values():
                nodes.sort(key=position)
            self._names[id(func.node)] = table
        return table.get(name, [])

    def may_change(self, func: FunctionInfo, roots: Sequence[str], after: ast.AST, before: ast.AST) -> Optional[Hazard]:
        """Where the memory the names ``roots`` hold may change, through them or any
        other reference (an alias, a view, a container, a second tensor on it, a call
        that receives any of them or can see them, ``yield``/``await``), after the
        end of ``after`` and before ``before`` starts (:mod:`.aliasing`)."""
        writes = self._writes.get(id(func.node))
        if writes is None:
            writes = self._writes[id(func.node)] = MemoryWrites(self.module, func, self._seen)
        return writes.hazard(roots, end_position(after), position(before))

    def reached_uses(self, func: FunctionInfo, binding: ast.AST, name: str) -> List[ast.Name]:
        """The uses of ``name`` in ``func`` that the binding at ``binding`` (a
        target) may reach, in written order: those after it, up to a plain
        rebinding (``name = ...``) in its own block or a block around it; those
        before it in a loop around both; any in a nested function."""
        uses = self.uses(func, name)
        if not uses:
            return uses
        own = self._own.get(id(func.node))
        if own is None:
            own = self._own[id(func.node)] = {id(n) for stmt in func.body for n in iter_nodes(stmt)}
        around = self.loops(func, binding)
        # The statements after each rebinding, in written order (they do not overlap): a
        # use lies in one of them only if it lies in the last one starting before it.
        killed: List[Tuple[List[Tuple[int, int]], Sequence[ast.AST]]] = []
        for block, index in _blocks_around(func.body, binding):
            for k in range(index + 1, len(block)):
                if _rebinds(block[k], name):
                    rest = block[k + 1 :]
                    killed.append(([position(st) for st in rest], rest))
                    break
        out: List[ast.Name] = []
        # Uses come in written order: each rebinding's statements are swept once, not searched per use.
        cursors = [0] * len(killed)
        at = position(binding)
        for use in uses:
            if id(use) not in own:
                out.append(use)
            elif position(use) > at:
                if not any(_swept_into(use, starts, rest, cursors, k) for k, (starts, rest) in enumerate(killed)):
                    out.append(use)
            elif set(map(id, around)) & set(map(id, self.loops(func, use))):
                out.append(use)
        return out


def _blocks_around(body: Sequence[ast.AST], node: ast.AST) -> List[Tuple[Sequence[ast.AST], int]]:
    """The statement lists holding ``node``, outermost first, with the index of
    the statement in each that holds it."""
    out: List[Tuple[Sequence[ast.AST], int]] = []
    block: Optional[Sequence[ast.AST]] = body
    while block:
        found = next((i for i, stmt in enumerate(block) if inside(node, stmt)), None)
        if found is None:
            break
        out.append((block, found))
        stmt = block[found]
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        lists: List[Sequence[ast.AST]] = [getattr(stmt, f, None) or [] for f in ("body", "orelse", "finalbody")]
        lists += [part.body for f in ("handlers", "cases") for part in getattr(stmt, f, None) or []]
        block = next((inner for inner in lists if any(inside(node, s) for s in inner)), None)
    return out


def _swept_into(
    node: Any, starts: List[Tuple[int, int]], statements: Sequence[ast.AST], cursors: List[int], k: int
) -> bool:
    """Whether ``node`` lies within one of ``statements`` (in written order, ``starts``
    their positions), for nodes asked in written order: ``cursors[k]`` is the first
    statement that may hold the next one."""
    here = position(node)
    i = cursors[k]
    while i < len(starts) and starts[i] <= here:
        i += 1
    cursors[k] = i
    return i > 0 and inside(node, statements[i - 1])


def _rebinds(stmt: ast.AST, name: str) -> bool:
    """``name = value`` (or an unpacking that binds it): a new object, every time
    the statement runs (``name += ...`` may work in place)."""
    if isinstance(stmt, ast.Assign):
        targets: List[ast.AST] = list(stmt.targets)
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    else:
        return False
    while targets:
        t = targets.pop()
        if isinstance(t, ast.Name) and binds(t, name):
            return True
        if isinstance(t, (ast.Tuple, ast.List)):
            targets.extend(t.elts)
        elif isinstance(t, ast.Starred):
            targets.append(t.value)
    return False


def position(node: Any) -> Tuple[int, int]:
    return (node.lineno, node.col_offset)


def end_position(node: Any) -> Tuple[int, int]:
    return (node.end_lineno, node.end_col_offset)


def inside(node: Any, outer: Any) -> bool:
    """Whether ``node`` lies within ``outer``'s span."""
    return position(outer) <= position(node) and end_position(node) <= end_position(outer)


def on_cpu(value: Optional[Value]) -> bool:
    """Every path gives a CPU tensor."""
    return value is not None and value.all(lambda a: isinstance(a, Tensor) and a.device == CPU)


def names_in(nodes: Sequence[ast.AST]) -> List[str]:
    return [n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)]
