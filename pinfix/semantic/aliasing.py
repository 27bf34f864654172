"""May another reference change this memory between two points of a function?

The question a fix asks before it swaps a tensor that shares an array's memory
(``torch.from_numpy(a)``) for a pinned copy taken at the same place: the copy is
only the same if nothing can write the array between the binding and the copy.

One walk of a function (cached per function) puts its names in *alias classes*
(union-find): names that may hold, view or contain the same memory. A binding
joins its targets with the names its value may share (``b = a``, ``v = a[1:]``,
``lst = [a]``, ``t = torch.as_tensor(a)``, ``for x in xs``, a nested function with
the names its body sees, ``lst.append(a)`` its receiver); what plainly makes fresh
data or metadata (``len(a)``, ``a.shape``, ``a.tolist()``, ``torch.tensor(a)``: the
kinds of :mod:`pinfix.effects`) joins nothing. Memory a class holds has
*escaped* when one of its names is a parameter or not local, or is passed to a
call pinfix cannot see into: then any such call may write it.

The same walk records, in written order, what may write memory: a use of a name
of a class other than a plain read (a call, a store through it, ``+=``, a method
of it), a call pinfix cannot see into, and what lets any other code run
(``yield``, ``await``, ``exec``/``eval``/``locals``...). A question is then a
binary search in those lists: linear in the function, whatever is asked.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from ..effects import (
    ARRAY_METHODS,
    FUNCTIONS,
    TENSOR_ATTRIBUTES,
    TENSOR_METHODS,
    Availability,
    Computes,
    Constant,
    Effect,
    HostData,
    Makes,
    Metadata,
    ReadsOnHost,
)
from .scope import SCOPE_NODES, FunctionInfo, ModuleInfo, child_nodes, iter_nodes, target_names

__all__ = ["Hazard", "MemoryWrites", "RUNS_ANY_CODE"]

#: Builtins that may read or write any local (``exec("a[0] = 1")``, ``locals()["a"]``).
RUNS_ANY_CODE = frozenset({"exec", "eval", "locals", "vars", "globals", "breakpoint", "__import__"})


def _fresh(effect: Optional[Effect]) -> bool:
    """A call of this kind returns data that shares no memory with its arguments,
    and calls back no code of the project."""
    if isinstance(effect, (Metadata, HostData, ReadsOnHost, Constant, Availability, Computes)):
        return True
    return isinstance(effect, Makes) and not effect.shares_argument and not effect.host_data_only


#: Methods and attributes that read no memory into anything shared (``a.size()``, ``a.tolist()``, ``a.shape``).
_FRESH_METHODS: FrozenSet[str] = frozenset(
    name
    for table in (TENSOR_METHODS, ARRAY_METHODS)
    for name, e in table.items()
    if isinstance(e, (Metadata, HostData, ReadsOnHost))
) - frozenset(n for n, e in ARRAY_METHODS.items() if not isinstance(e, (Metadata, HostData, ReadsOnHost)))
_METADATA_ATTRIBUTES: FrozenSet[str] = frozenset(n for n, e in TENSOR_ATTRIBUTES.items() if isinstance(e, Metadata))


_OPERATORS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
}


class Hazard:
    """Where and why the memory may change."""

    __slots__ = ("node", "reason")

    def __init__(self, node: ast.AST, reason: str):
        self.node = node
        self.reason = reason

    def __repr__(self) -> str:
        return f"Hazard({getattr(self.node, 'lineno', '?')}, {self.reason!r})"


Event = Tuple[Tuple[int, int], ast.AST, str]


class MemoryWrites:
    """One function's alias classes and the points where memory may be written."""

    def __init__(self, module: ModuleInfo, func: FunctionInfo, seen: Optional[Dict[int, FrozenSet[str]]] = None):
        self.module = module
        self.func = func
        #: The names each nested scope's body reads or binds (shared by a module's functions).
        self.seen: Dict[int, FrozenSet[str]] = seen if seen is not None else {}
        self.params = frozenset(p.name for p in func.params)
        self.parent: Dict[str, str] = {}
        self.escapes: Set[str] = set()
        #: A name used other than in a plain read: (position, node, what) by name.
        self.uses: Dict[str, List[Event]] = {}
        #: Calls pinfix cannot see into.
        self.opaque: List[Event] = []
        #: What lets any code run (``yield``, ``await``, ``exec``).
        self.anything: List[Event] = []
        self.walk()
        self.by_class: Dict[str, List[Event]] = {}
        for name, events in self.uses.items():
            self.by_class.setdefault(self.find(name), []).extend(events)
        for events in (self.anything, self.opaque, *self.by_class.values()):
            events.sort(key=lambda e: e[0])
        self.starts: Dict[int, List[Tuple[int, int]]] = {
            id(e): [at for at, _, _ in e] for e in (self.anything, self.opaque, *self.by_class.values())
        }
        self.escaped = {self.find(n) for n in self.escapes}
        for n in list(self.parent):
            if not n.startswith("#") and self.foreign(n):
                self.escaped.add(self.find(n))

    # --- the question -----------------------------------------------------------------------------

    def hazard(self, roots: Iterable[str], after: Tuple[int, int], before: Tuple[int, int]) -> Optional[Hazard]:
        """The first point strictly between ``after`` and ``before`` (positions in
        this function's own scope, in written order) where memory held by ``roots``
        may change through any reference; ``None`` when there is none."""
        found: List[Event] = []
        classes = {self.find(r) for r in roots}
        lists = [self.anything] + [self.by_class[c] for c in classes if c in self.by_class]
        escaped = [c for c in classes if c in self.escaped]
        if escaped:
            lists.append(self.opaque)
        for events in lists:
            first = _first_after(events, self.starts[id(events)], after)
            if first is not None and first[0] < before:
                found.append(first)
        if not found:
            return None
        at, node, what = min(found, key=lambda e: e[0])
        return Hazard(node, what)

    # --- alias classes ------------------------------------------------------------------------------

    def find(self, name: str) -> str:
        parent = self.parent
        parent.setdefault(name, name)
        root = name
        while parent[root] != root:
            root = parent[root]
        while parent[name] != root:
            parent[name], name = root, parent[name]
        return root

    def union(self, names: Iterable[str]) -> None:
        first: Optional[str] = None
        for n in names:
            r = self.find(n)
            if first is None:
                first = r
            elif r != first:
                self.parent[r] = first

    def foreign(self, name: str) -> bool:
        """Held where other code can reach it: a parameter, a global, a free name."""
        func = self.func
        return name not in func.locals or name in self.params or func.is_module

    def imported(self, name: str) -> bool:
        """A module-level import (``torch``, ``np``): a namespace, not memory."""
        return name not in self.func.locals and self.module.global_import(name) is not None

    def qualified(self, func: ast.expr) -> Optional[str]:
        """``torch.as_tensor`` / ``builtins.len`` for a call's callee, when the module says so."""
        parts: List[str] = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id in self.func.locals:
            return None
        base = self.module.global_import(func.id)
        if base is None:
            if parts or func.id in self.module.top_bindings:
                return None
            base = "builtins." + func.id
        return ".".join([base, *reversed(parts)])

    def fresh_call(self, call: ast.Call) -> bool:
        if isinstance(call.func, ast.Attribute) and call.func.attr in _FRESH_METHODS:
            return True
        qualified = self.qualified(call.func)
        return qualified is not None and _fresh(FUNCTIONS.get(qualified))

    def library_call(self, call: ast.Call) -> bool:
        """A torch / NumPy / builtin call the effects table knows, or a method it knows
        of a receiver (neither calls back the project's code)."""
        qualified = self.qualified(call.func)
        if qualified is not None:
            return qualified in FUNCTIONS and qualified.rpartition(".")[2] not in RUNS_ANY_CODE
        return isinstance(call.func, ast.Attribute) and (
            call.func.attr in TENSOR_METHODS or call.func.attr in ARRAY_METHODS
        )

    def shares(self, parent: ast.AST, child: ast.AST) -> bool:
        """Whether ``parent``'s value may hold, view or contain ``child``'s memory."""
        if not isinstance(child, ast.expr) or isinstance(
            parent, (ast.Constant, ast.Compare, ast.JoinedStr, ast.FormattedValue)
        ):
            return False
        if isinstance(parent, ast.Attribute):
            return parent.attr not in _METADATA_ATTRIBUTES
        if isinstance(parent, ast.Call):
            if child is parent.func:
                return not isinstance(child, ast.Name) and not self.fresh_call(
                    parent
                )  # the callee object, not what it returns
            if (
                isinstance(parent.func, ast.Attribute)
                and self.qualified(parent.func) is None
                and self.library_call(parent)
            ):
                return False  # a tensor / array method's arguments (`dst.copy_(src)` returns `dst`)
            return not self.fresh_call(parent)
        return isinstance(parent, ast.expr)

    def key(self, node: Optional[ast.AST]) -> List[str]:
        """The alias-class element of an expression (its value's memory): names are
        joined to it as the walk meets them (:meth:`shares`)."""
        if node is None or isinstance(node, ast.Constant):
            return []
        if isinstance(node, ast.Name):
            return [] if self.imported(node.id) else [node.id]
        return [f"#{id(node)}"]

    # --- the walk ----------------------------------------------------------------------------------

    def walk(self) -> None:
        func = self.func
        body = [func.node.body] if isinstance(func.node, ast.Lambda) else list(func.body)  # type: ignore[attr-defined]
        # (node, its parent): the parent says whether a name is only read.
        stack: List[Tuple[ast.AST, Optional[ast.AST]]] = [(stmt, None) for stmt in reversed(body)]
        while stack:
            node, parent = stack.pop()
            self.visit(node, parent)
            if isinstance(node, SCOPE_NODES):
                self.nested(node)
                continue
            children = child_nodes(node)
            for child in children:
                if self.shares(node, child):
                    self.union([*self.key(node), *self.key(child)])
            stack.extend((child, node) for child in reversed(children))

    def nested(self, node: ast.AST) -> None:
        """A nested function or class: its name stands for every name its body sees;
        its decorators and defaults run here."""
        seen = {n for n in self.names_seen(node) if not self.imported(n)}
        name = getattr(node, "name", None)
        if name is not None:
            seen.add(name)
        self.union([*self.key(node), *seen] if isinstance(node, ast.Lambda) else seen)

    def names_seen(self, scope: ast.AST) -> FrozenSet[str]:
        """Every name spelt in ``scope`` and the scopes inside it; each scope read once
        for the module (its own nodes, then its nested scopes' answers), without recursion."""
        seen = self.seen
        # Post-order over the nested scopes: (scope, its own names, its inner scopes) once read.
        pending: List[Tuple[ast.AST, Optional[Tuple[Set[str], List[ast.AST]]]]] = [(scope, None)]
        while pending:
            node, read = pending.pop()
            if id(node) in seen:
                continue
            if read is None:
                own: Set[str] = set()
                inner: List[ast.AST] = []
                for sub in iter_nodes(node):
                    if sub is not node and isinstance(sub, SCOPE_NODES):
                        inner.append(sub)
                    elif isinstance(sub, ast.Name):
                        own.add(sub.id)
                pending.append((node, (own, inner)))
                pending.extend((sub, None) for sub in inner if id(sub) not in seen)
                continue
            own, inner = read
            for sub in inner:
                own |= seen[id(sub)]
            seen[id(node)] = frozenset(own)
        return seen[id(scope)]

    def visit(self, node: ast.AST, parent: Optional[ast.AST]) -> None:
        where = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load) or self.imported(node.id) or self.plain_read(node, parent):
                self.find(node.id)
                return
            if isinstance(parent, ast.Call) and node is parent.func:
                what = f"the call of `{node.id}` at line {node.lineno} can reach the array's memory"
            else:
                what = f"`{node.id}` is used at line {node.lineno} (it may share the array's memory)"
            self.uses.setdefault(node.id, []).append((where, node, what))
            if isinstance(parent, ast.Call) and node is not parent.func and not self.library_call(parent):
                self.escapes.add(node.id)
            return
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            self.anything.append(
                (where, node, f"the `yield` at line {node.lineno} lets other code run (and write the array)")
            )
        elif isinstance(node, ast.Await):
            self.anything.append(
                (where, node, f"the `await` at line {node.lineno} lets other code run (and write the array)")
            )
        elif isinstance(node, ast.Call):
            qualified = self.qualified(node.func)
            if qualified is not None and qualified.startswith("builtins.") and qualified[9:] in RUNS_ANY_CODE:
                self.anything.append(
                    (where, node, f"`{qualified[9:]}(...)` at line {node.lineno} may read or write any local")
                )
            elif not self.library_call(node):
                self.opaque.append(
                    (
                        where,
                        node,
                        f"the call at line {node.lineno} may write the array through a reference pinfix cannot see",
                    )
                )
            if isinstance(node.func, ast.Attribute) and not self.library_call(node):
                # `lst.append(a)`, `self.keep(a)`: the receiver may hold the arguments now.
                receiver = _root(node.func.value)
                if receiver is not None and not self.imported(receiver):
                    self.union(
                        [receiver, *(k for a in [*node.args, *(kw.value for kw in node.keywords)] for k in self.key(a))]
                    )
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                # `b += x` may work in place (an array, a tensor, a list).
                self.uses.setdefault(node.target.id, []).append(
                    (
                        where,
                        node,
                        f"`{node.target.id} {_OPERATORS.get(type(node.op), '?')}= ...` at line {node.lineno} may change the array in place",
                    )
                )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            self.union([*_bound(targets), *self.key(node.value)])
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self.union([*_bound([node.target]), *self.key(node.iter)])
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self.union([*_bound([node.optional_vars]), *self.key(node.context_expr)])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            self.escapes.update(node.names)

    def plain_read(self, name: ast.Name, parent: Optional[ast.AST]) -> bool:
        """A read that changes no memory: metadata (``a.shape``), a fresh call
        (``len(a)``, ``a.tolist()``, ``torch.tensor(a)``), a plain ``b = a``."""
        if isinstance(parent, ast.Attribute):
            return parent.attr in _METADATA_ATTRIBUTES or False
        if isinstance(parent, ast.Call):
            if name is parent.func:
                return False
            return self.fresh_call(parent)
        if isinstance(parent, (ast.Assign, ast.AnnAssign)):
            return parent.value is name
        return isinstance(parent, ast.Compare)


def _first_after(events: List[Event], starts: List[Tuple[int, int]], after: Tuple[int, int]) -> Optional[Event]:
    i = bisect_right(starts, after)
    return events[i] if i < len(events) else None


def _root(node: ast.AST) -> Optional[str]:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _bound(targets: Iterable[ast.AST]) -> Set[str]:
    """The names a store binds, and the root of a store through an attribute or item
    (``x.attr = a``, ``x[i] = a``: ``x`` now holds ``a``)."""
    out: Set[str] = set()
    for t in targets:
        if isinstance(t, (ast.Attribute, ast.Subscript)):
            root = _root(t)
            if root is not None:
                out.add(root)
        elif isinstance(t, (ast.Tuple, ast.List)):
            out |= _bound(t.elts)
        elif isinstance(t, ast.Starred):
            out |= _bound([t.value])
        else:
            out.update(target_names(t))
    return out
