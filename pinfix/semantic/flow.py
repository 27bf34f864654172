"""Statements: assignments and control flow, each evaluated once per visit.

Branches fork the state and join after; loops run to a fixpoint (a value only
grows, and values are bounded, so a few rounds settle it); ``try`` handlers
start from every state the body passed through; ``break``/``continue`` carry
their state to the loop's exit or head; ``return`` and ``raise`` end a path.
A budget proportional to the function's size bounds the work: past it, a loop
that has not settled gives the names it assigns an unknown value and runs once
more, so no input makes the analysis superlinear.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set, Tuple

from ..effects import ALLOCATION_ERRORS
from . import narrowing
from .calls import Calls
from .scope import FUNCTION_NODES, iter_nodes, target_names
from .state import DEFAULT_DEVICE, PATHS, PENDING, State
from .values import (
    CPU,
    PAGEABLE,
    PINNED,
    Array,
    Class,
    Const,
    Device,
    DictAtom,
    Func,
    NoneValue,
    Opened,
    Ref,
    Seq,
    Tensor,
    Unknown,
    Value,
    join,
    mark,
    same,
    unknown,
)

if TYPE_CHECKING:
    from .slices import Slice

#: What a ``try`` body returns, among the names of an allocation fallback (:meth:`Flow.fallback_names`).
RETURNED = "#returned"
#: A loop runs at most this many rounds before it is widened.
MAX_ROUNDS = 6
#: Statement visits allowed per statement of the function (then loops are widened).
BUDGET_PER_STATEMENT = 24
#: Decorators that leave a function callable as written.
TRANSPARENT_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "lru_cache",
        "cache",
        "cached_property",
        "wraps",
        "no_grad",
        "inference_mode",
        "override",
        "abstractmethod",
    }
)


class Loop:
    """What ``break`` and ``continue`` in one loop hand on."""

    __slots__ = ("head", "breaks", "continues")

    def __init__(self, head: State):
        self.head = head
        self.breaks: List[State] = []
        self.continues: List[State] = []


class Flow(Calls):
    """Statement evaluation."""

    loops: List[Loop]
    budget: int
    widened: bool
    #: Deep mode: the statements whose project questions can matter (``None``: all),
    #: and whether the statement being run is one of them.
    relevant: Optional["Slice"] = None
    deep_on: bool = True
    #: The ``except`` handlers being run that follow a failed pinned allocation
    #: (:meth:`fallback_names`), innermost last: name -> the pinned value the body gave it.
    fallbacks: Tuple[Dict[str, Value], ...] = ()

    def run_block(self, body: Sequence[ast.AST], state: State) -> None:
        relevant = self.relevant
        for stmt in body:
            if state.dead:
                return
            self.budget -= 1
            if relevant is not None:
                self.deep_on = stmt in relevant
            handler = _STATEMENTS.get(type(stmt))
            if handler is None:
                self.exec_opaque(stmt, state)
            else:
                handler(self, stmt, state)

    # --- simple statements -----------------------------------------------------------------

    def exec_expr(self, node: ast.Expr, state: State) -> None:
        self.eval(node.value, state)

    def exec_assign(self, node: ast.Assign, state: State) -> None:
        value = self.eval(node.value, state)
        for target in node.targets:
            self.assign(target, value, state, node)

    def exec_annassign(self, node: ast.AnnAssign, state: State) -> None:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value, state), state, node)

    def exec_augassign(self, node: ast.AugAssign, state: State) -> None:
        current = self.eval(_as_load(node.target), state)
        added = self.eval(node.value, state)

        def each(a: Any) -> Optional[Value]:
            if isinstance(a, Tensor):
                return None  # in place: the tensor keeps its memory
            if isinstance(a, Seq) and a.kind == "list" and isinstance(node.op, ast.Add):
                return Value((Seq("list", None, join(a.elements, self.elements_of(added, node)), a.site),))
            if isinstance(a, Array):
                return None
            return self.arithmetic(node, [Value((a,)), added], state)

        self.assign(node.target, current.map(each), state, node, rebinds=False)

    def exec_delete(self, node: ast.Delete, state: State) -> None:
        for target in node.targets:
            for name in target_names(target):
                if name in self.func.locals:
                    state.delete(name)
                    self.forget_paths(name, state)

    def exec_return(self, node: ast.Return, state: State) -> None:
        value = self.eval(node.value, state) if node.value is not None else Value((NoneValue(),))
        value = self.fallback_value(RETURNED, value)
        self.escape_value(value, state)
        self.facts.add_return(value)
        state.dead = True

    def exec_raise(self, node: ast.Raise, state: State) -> None:
        if node.exc is not None:
            self.eval(node.exc, state)
        state.dead = True

    def exec_assert(self, node: ast.Assert, state: State) -> None:
        test = self.eval(node.test, state)
        self.implicit_call("__bool__", test, node.test, state)
        narrowing.narrow(self, node.test, True, state)

    def exec_break(self, node: ast.Break, state: State) -> None:
        if self.loops:
            self.loops[-1].breaks.append(state.snapshot(self.loops[-1].head))
        state.dead = True

    def exec_continue(self, node: ast.Continue, state: State) -> None:
        if self.loops:
            self.loops[-1].continues.append(state.snapshot(self.loops[-1].head))
        state.dead = True

    def exec_import(self, node: Any, state: State) -> None:
        from .values import Ref

        for local, qualified, _ in self.module.import_bindings(node):
            if local in self.func.locals:
                # Resolved when used (called, or an attribute read): a module's imports are not all read.
                state.set(local, Value((Ref(qualified),)))

    def exec_def(self, node: Any, state: State) -> None:
        for d in node.decorator_list:
            self.eval(d, state)
        for d in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.eval(d, state)
        info = self.module.functions.get(id(node))
        names = {self.short(d).split("(", 1)[0].rsplit(".", 1)[-1] for d in node.decorator_list}
        if info is None or not names <= TRANSPARENT_DECORATORS:
            value = unknown("is decorated in a way pinfix does not follow", node)
        else:
            value = Value((Func(info),))
        if node.name in self.func.locals:
            state.set(node.name, value)

    def exec_class(self, node: ast.ClassDef, state: State) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.eval(expr, state)
        info = self.module.classes.get(id(node))
        if node.name in self.func.locals:
            state.set(node.name, Value((Class(info),)) if info is not None else unknown(node=node))

    def exec_opaque(self, node: ast.AST, state: State) -> None:
        """Statements with nothing to evaluate (``pass``, ``global``)."""

    # --- assignment -------------------------------------------------------------------------

    def assign(self, target: ast.AST, value: Value, state: State, node: ast.AST, rebinds: bool = True) -> None:
        if isinstance(target, ast.Name):
            self.bind_name(target.id, target, value, state)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target, value, state, node)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, Value((Seq("list", None, self.elements_of(value, node), node),)), state, node)
        elif isinstance(target, ast.Attribute):
            receiver = self.eval(target.value, state)
            self.facts.stores.append((receiver, target.attr, value, node))
            path = self.path_of(target)
            if path is not None:
                self.store_path(path, value, state, target)
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, state)
            self.eval(target.slice, state)
            self.store_item(target, container, value, state)

    def bind_name(self, name: str, target: ast.AST, value: Value, state: State) -> None:
        if name not in self.func.locals:
            return  # `global x`: not ours to follow
        step = self.step("bound", target, f"bound to `{name}`", name)
        state.set(name, mark(self.fallback_value(name, value), step))
        self.forget_paths(name, state)

    def bind_target(
        self, target: ast.AST, value: Value, state: State, node: ast.AST, comprehension: bool = False
    ) -> None:
        if comprehension:
            # A comprehension's own variables: not the function's names.
            for name, item in _unpacked(target, value, self, node):
                state.vars[name] = item
            return
        self.assign(target, value, state, node)

    def unpack(self, target: Any, value: Value, state: State, node: ast.AST) -> None:
        for sub, item in _parts(target, value, self, node):
            self.assign(sub, item, state, node)

    def store_path(self, path: str, value: Value, state: State, target: ast.AST) -> None:
        step = self.step("bound", target, f"stored in `{path}`", path)
        state.set(path, value.map(lambda a: Value((a.step(step),)) if isinstance(a, Tensor) else None))
        narrowing.remember_path(path, state)

    def forget_paths(self, root: str, state: State) -> None:
        paths = state.get(PATHS)
        if not paths:
            return
        gone = [a for a in paths.only(Const) if a.value.split(".", 1)[0] == root]
        if gone:
            for a in gone:
                state.delete(a.value)
            state.set(PATHS, Value(tuple(a for a in paths.only(Const) if a not in gone)))

    def store_item(self, target: ast.Subscript, container: Value, value: Value, state: State) -> None:
        """``d["k"] = v`` / ``xs[i] = v``: the container now may hold ``value``."""
        key = target.slice.value if isinstance(target.slice, ast.Constant) else None

        def each(a: Any) -> Optional[Value]:
            if isinstance(a, DictAtom):
                items = tuple((k, v) for k, v in a.items if k != key) + (((key, value),) if key is not None else ())
                # Under a key pinfix cannot read, the dict may now hold keys it does not know.
                added = value if key is not None else join(value, unknown(node=target))
                return Value((DictAtom(items, join(a.elements, added), a.site),))
            if isinstance(a, Seq) and a.kind == "list":
                return Value((Seq("list", None, join(a.elements, value), a.site),))
            return None

        updated = container.map(each)
        if not same(updated, container):
            holder = target.value
            name = holder.id if isinstance(holder, ast.Name) and holder.id in self.func.locals else self.path_of(holder)
            if name is not None:
                state.set(name, updated)

    def escape_value(self, value: Value, state: State) -> None:
        """A value handed out of the function (returned): pending copies into it are the caller's."""
        pending = state.get(PENDING)
        if not pending:
            return
        given = {id(t.origin.node) for t in value.tensors if t.origin is not None}
        from .values import Pending

        kept = tuple(p for p in pending.only(Pending) if p.target not in given)
        if len(kept) != len(pending):
            state.set(PENDING, Value(kept))

    # --- control flow -------------------------------------------------------------------------

    def exec_if(self, node: ast.If, state: State) -> None:
        test = self.eval(node.test, state)
        self.implicit_call("__bool__", test, node.test, state)
        then, orelse = state.fork(), state.fork()
        narrowing.narrow(self, node.test, True, then)
        narrowing.narrow(self, node.test, False, orelse)
        self.run_block(node.body, then)
        self.run_block(node.orelse, orelse)
        self.join_branches(state, then, orelse, self.short(node.test, 40), node.test)

    def join_branches(
        self, state: State, then: State, orelse: State, test: str, test_node: Optional[ast.AST] = None
    ) -> None:
        """Join two branches, marking the tensors only one branch makes with its condition
        (``test_node``: the test whose word on where a value is ends here)."""
        tested = {id(n) for n in ast.walk(test_node)} if test_node is not None else set()
        seen: List[bool] = []

        def unseen() -> bool:  # asked once per join, and only where the arms differ in pinning
            if not seen:
                seen.append(test_node is not None and narrowing.unseen_flag(self, test_node, state))
            return seen[0]

        if not then.dead and not orelse.dead:
            for name in then.changed_since(state) | orelse.changed_since(state):
                if name.startswith("#"):
                    continue
                a, b = then.get(name), orelse.get(name)
                # Where the other way goes on too, a test's word that an unknown value is on
                # the CPU ends with its branch (code that runs on either device tests where a
                # tensor is, and then copies it to where the others are).
                a, b = narrowing.ended(a, b, tested), narrowing.ended(b, a, tested)
                if a is not then.get(name):
                    then.vars[name] = a
                if b is not orelse.get(name):
                    orelse.vars[name] = b
                if a and b and not same(a, b) and test_node is not None:
                    pinned_a, pinned_b = narrowing.pinning_arms(a, b, unseen)
                    if pinned_a is not a:
                        a = then.vars[name] = pinned_a
                    if pinned_b is not b:
                        b = orelse.vars[name] = pinned_b
                if a and b and not same(a, b):
                    then.vars[name] = _mark(a, b, f"`{test}` is true")
                    orelse.vars[name] = _mark(b, a, f"`{test}` is false")
        state.absorb([then, orelse])

    def exec_while(self, node: ast.While, state: State) -> None:
        forever = isinstance(node.test, ast.Constant) and bool(node.test.value)

        def enter(head: State) -> None:
            test = self.eval(node.test, head)
            self.implicit_call("__bool__", test, node.test, head)

        self.loop(node, state, enter, node.body, node.orelse, exits_normally=not forever, test=node.test)

    def exec_for(self, node: Any, state: State) -> None:
        iterable = self.eval(node.iter, state)
        elements = self.elements_of(iterable, node.iter)
        if elements.unknown is not None:
            names = ", ".join(f"`{n}`" for n in target_names(node.target))
            why = f"{names} is bound in a way pinfix does not follow (a loop over `{self.short(node.iter, 40)}`)"
            elements = elements.map(lambda a: unknown(why, node.target) if isinstance(a, Unknown) else None)

        def enter(head: State) -> None:
            self.assign(node.target, elements, head, node)

        self.loop(node, state, enter, node.body, node.orelse, exits_normally=True, bind_in_body=True)

    def loop(
        self,
        node: ast.AST,
        state: State,
        enter: Any,
        body: Sequence[ast.AST],
        orelse: Sequence[ast.AST],
        exits_normally: bool,
        bind_in_body: bool = False,
        test: Optional[ast.AST] = None,
    ) -> None:
        """Run a loop to its fixpoint; ``test``: a ``while`` test, true in the body and false where the loop ends."""
        head = state.fork()
        hurried = self.budget < 0
        if hurried:
            # Out of budget: no fixpoint; what the loop assigns is unknown from the start.
            self.widen(head, _assigned_names(body))
        if not bind_in_body:
            enter(head)
        rounds = 0
        while True:
            rounds += 1
            frame = Loop(head)
            self.loops.append(frame)
            inner = head.fork()
            if bind_in_body:
                enter(inner)
            if test is not None:
                narrowing.narrow(self, test, True, inner)
            self.run_block(body, inner)
            self.loops.pop()
            back = [s for s in [inner, *frame.continues] if not s.dead]
            changed = head.absorb(back, keep=True)
            if not changed or hurried or rounds > MAX_ROUNDS + 1:
                # (Past widening, a loop whose head the test itself keeps changing, e.g. a
                # `while` test's call forgetting an attribute path the body stores again,
                # stops here: what it could still change was widened to unknown.)
                break
            if not bind_in_body:
                enter(head)
            if rounds >= MAX_ROUNDS or self.budget < 0:
                names: Set[str] = set()
                for s in back:
                    names |= s.changed_since(head)
                self.widen(head, names)
                self.facts.widened = True
        exits: List[State] = []
        if exits_normally:
            normal = head.fork()
            if test is not None:
                narrowing.narrow(self, test, False, normal)
            self.run_block(orelse, normal)
            exits.append(normal)
        exits.extend(frame.breaks)
        state.absorb(exits)

    def widen(self, head: State, names: Set[str]) -> None:
        """A loop that would not settle: every name it changes may also be unknown."""
        for name in sorted(names):
            if not name.startswith("#"):
                head.set(name, join(head.get(name), unknown("changes in a loop pinfix could not follow to the end")))
        self.facts.widened = True

    def exec_with(self, node: Any, state: State) -> None:
        before: Optional[Value] = None
        for item in node.items:
            context = self.eval(item.context_expr, state)
            if context and context.all(lambda a: isinstance(a, Device)):
                # `with torch.device(d):` makes `d` the default device inside the block.
                if before is None:
                    before = self.default_device(state)
                state.set(DEFAULT_DEVICE, context)
            if item.optional_vars is not None:
                # An open file of tensors enters as itself (`with safe_open(...) as f:`).
                entered = (
                    context
                    if context and context.all(lambda a: isinstance(a, Opened))
                    else unknown("is bound by a `with`", item.optional_vars)
                )
                self.assign(item.optional_vars, entered, state, node)
        self.run_block(node.body, state)
        if before is not None:
            state.set(DEFAULT_DEVICE, before)

    def exec_try(self, node: Any, state: State) -> None:
        body = state.fork()
        recorder = body.record()
        earlier, self.facts.returns = self.facts.returns, None
        self.run_block(node.body, body)
        body.stop(recorder)
        returned, self.facts.returns = self.facts.returns, earlier
        if returned is not None:
            recorder = {**recorder, RETURNED: returned}
            self.facts.add_return(returned)
        exits: List[State] = []
        if not body.dead:
            normal = body.fork()
            self.run_block(node.orelse, normal)
            exits.append(normal)
        for handler in node.handlers:
            # An exception may come from any statement of the body: start from all of them.
            entry = state.fork()
            for name in sorted(recorder):
                entry.set(name, join(state.get(name), recorder[name]))
            if handler.type is not None:
                self.eval(handler.type, entry)
            if handler.name and handler.name in self.func.locals:
                entry.set(handler.name, unknown("is an exception", handler))
            fallback = self.fallback_names(handler, entry, recorder)
            if fallback:
                self.fallbacks = (*self.fallbacks, fallback)
            try:
                self.run_block(handler.body, entry)
            finally:
                if fallback:
                    self.fallbacks = self.fallbacks[:-1]
            exits.append(entry)
        state.absorb(exits)
        if node.finalbody:
            if state.dead:
                after = state.fork()
                after.dead = False
                self.run_block(node.finalbody, after)  # for what it does; the path ends anyway
            else:
                self.run_block(node.finalbody, state)

    def fallback_value(self, name: str, value: Value) -> Value:
        """What ``name`` (or :data:`RETURNED`) is given in a handler that follows a failed
        pinned allocation: its pageable CPU tensors stand for that pinned allocation."""
        if not self.fallbacks or name not in self.fallbacks[-1]:
            return value
        pinned = self.fallbacks[-1][name]
        return value.map(
            lambda a: pinned if isinstance(a, Tensor) and a.device == CPU and a.memory == PAGEABLE else None
        )

    def fallback_names(self, handler: Any, entry: State, recorder: Dict[str, Value]) -> Dict[str, Value]:
        """A handler of what a failed pinned allocation raises (``except RuntimeError``,
        :data:`~pinfix.effects.ALLOCATION_ERRORS`) after a ``try`` that gives names pinned
        memory: name -> that pinned value. What the handler then gives those names is
        the documented "pinned unless pinning is impossible" fallback, and counts as the
        pinned allocation (as ``pin_memory=is_pin_memory_available()`` does)."""
        pinned = {
            name: Value(tuple(t for t in value.tensors if t.device == CPU and t.memory == PINNED))
            for name, value in recorder.items()
            if (name == RETURNED or not name.startswith("#"))
            and value.any(lambda a: isinstance(a, Tensor) and a.device == CPU and a.memory == PINNED)
        }
        if not pinned:
            return {}
        if handler.type is not None:
            caught = self.eval(handler.type, entry)
            names = {a.name for a in caught.only(Ref)} | {
                a.name for s in caught.only(Seq) for a in s.elements.only(Ref)
            }
            if not names & ALLOCATION_ERRORS:
                return {}
        return pinned

    def exec_match(self, node: Any, state: State) -> None:
        subject = self.eval(node.subject, state)
        exits: List[State] = []
        irrefutable = False
        for case in node.cases:
            branch = state.fork()
            for name in sorted(_capture_names(case.pattern)):
                if name in self.func.locals:
                    captured = (
                        subject
                        if isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None
                        else unknown("is captured by a `match` pattern", case.pattern)
                    )
                    branch.set(name, captured)
            if case.guard is not None:
                guard = self.eval(case.guard, branch)
                self.implicit_call("__bool__", guard, case.guard, branch)
                narrowing.narrow(self, case.guard, True, branch)
            self.run_block(case.body, branch)
            exits.append(branch)
            if case.guard is None and isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None:
                irrefutable = True
        if not irrefutable:
            exits.append(state.fork())
        state.absorb(exits)


def _as_load(target: ast.AST) -> ast.AST:
    return target


def _assigned_names(body: Sequence[ast.AST]) -> Set[str]:
    """Names (and access paths) a block assigns, read from its syntax."""
    out: Set[str] = set()
    for stmt in body:
        for node in iter_nodes(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
            elif (
                isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
            ):
                out.add(f"{node.value.id}.{node.attr}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
            ):
                out.add(node.func.value.id)  # `xs.append(...)` changes what `xs` holds
    return out


def _mark(value: Value, other: Value, cond: str) -> Value:
    return value.map(
        lambda a: (
            Value((a.evolve(cond=cond),))
            if isinstance(a, Tensor) and a.cond is None and a.key not in other.keys
            else None
        )
    )


def _capture_names(pattern: ast.AST) -> Set[str]:
    out = set()
    for node in ast.walk(pattern):
        name = (
            getattr(node, "name", None)
            if type(node).__name__ in ("MatchAs", "MatchStar")
            else getattr(node, "rest", None)
            if type(node).__name__ == "MatchMapping"
            else None
        )
        if name:
            out.add(name)
    return out


def _parts(target: Any, value: Value, ev: Flow, node: ast.AST) -> List[Any]:
    """``(sub-target, value)`` pairs of an unpacking ``a, b = value``."""
    elts = list(target.elts)
    star = next((i for i, e in enumerate(elts) if isinstance(e, ast.Starred)), None)
    per: List[List[Value]] = [[] for _ in elts]
    for a in value:
        if isinstance(a, Seq) and a.items is not None and star is None and len(a.items) == len(elts):
            for i, item in enumerate(a.items):
                per[i].append(item)
        elif isinstance(a, Seq) and a.items is not None and star is not None and len(a.items) >= len(elts) - 1:
            tail = len(elts) - star - 1
            for i in range(star):
                per[i].append(a.items[i])
            middle = a.items[star : len(a.items) - tail]
            per[star].append(Value((Seq("list", tuple(middle), join(*middle)),)))
            for k in range(tail):
                per[len(elts) - tail + k].append(a.items[len(a.items) - tail + k])
        elif isinstance(a, (Seq, DictAtom)):
            for i in range(len(elts)):
                per[i].append(a.elements if i != star else Value((Seq("list", None, a.elements),)))
        elif isinstance(a, Tensor):
            for i in range(len(elts)):
                per[i].append(Value((a.evolve(scalar=False),)))
        elif isinstance(a, Unknown):
            for i in range(len(elts)):
                per[i].append(Value((a,)))
        else:
            for i in range(len(elts)):
                per[i].append(unknown(node=node))
    return [
        (e.value if isinstance(e, ast.Starred) else e, join(*vs) if vs else unknown(node=node))
        for e, vs in zip(elts, per)
    ]


def _unpacked(target: ast.AST, value: Value, ev: Flow, node: ast.AST) -> List[Any]:
    """Names and values a comprehension's target binds."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, (ast.Tuple, ast.List)):
        out = []
        for sub, item in _parts(target, value, ev, node):
            out.extend(_unpacked(sub.value if isinstance(sub, ast.Starred) else sub, item, ev, node))
        return out
    return []


_STATEMENTS: Dict[type, Any] = {
    ast.Expr: Flow.exec_expr,
    ast.Assign: Flow.exec_assign,
    ast.AnnAssign: Flow.exec_annassign,
    ast.AugAssign: Flow.exec_augassign,
    ast.Delete: Flow.exec_delete,
    ast.Return: Flow.exec_return,
    ast.Raise: Flow.exec_raise,
    ast.Assert: Flow.exec_assert,
    ast.Break: Flow.exec_break,
    ast.Continue: Flow.exec_continue,
    ast.Import: Flow.exec_import,
    ast.ImportFrom: Flow.exec_import,
    ast.FunctionDef: Flow.exec_def,
    ast.AsyncFunctionDef: Flow.exec_def,
    ast.ClassDef: Flow.exec_class,
    ast.If: Flow.exec_if,
    ast.While: Flow.exec_while,
    ast.For: Flow.exec_for,
    ast.AsyncFor: Flow.exec_for,
    ast.With: Flow.exec_with,
    ast.AsyncWith: Flow.exec_with,
    ast.Try: Flow.exec_try,
}
if hasattr(ast, "TryStar"):
    _STATEMENTS[ast.TryStar] = Flow.exec_try  # type: ignore[attr-defined]
if hasattr(ast, "Match"):
    _STATEMENTS[ast.Match] = Flow.exec_match  # type: ignore[attr-defined]

__all__ = ["Flow", "FUNCTION_NODES"]
