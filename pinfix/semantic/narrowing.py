"""Narrowing: what a test being true (or false) says of the values it tests.

The one place a test refines a value, on pyright's type-guard model:
:func:`refinements` maps a test expression, its truth and the state to
:class:`Refinements` (a narrower value for some names and access paths, or "this
path is impossible"), and every construct that branches applies it: ``if`` /
``elif``, a ``while`` head and exit, ``assert`` (and a function's preconditions,
:func:`preconditions`), ``IfExp``, ``and`` / ``or`` short-circuits, comprehension
``if``s and ``match`` guards; and a call of a *validator*, a function that returns
only when its argument passes such a test (:func:`checked`, from :func:`postconditions`
solved over the calls between validators by :func:`checked_by`). Early ``return`` /
``raise`` / ``continue`` / ``break`` need nothing more: their branch ends, and what
stays is the other branch's narrowing.

What a test says:

- of a tensor's memory: ``t.is_pinned()`` (pinned), ``t.is_cpu``, ``t.is_cuda``,
  ``t.device.type == "cpu"`` / ``"cuda"`` (where it is);
- of the program's setting: an *availability test* is false only where pinned
  memory (an accelerator) is unavailable, where no copy of ours can block, so its
  false branch is no path of ours. A test is one when its value is a flag derived
  from a known availability source (the ``Availability`` entries of
  :mod:`pinfix.effects`: ``is_pin_memory_available()``, ``torch.cuda.is_available()``,
  ...), when it is the configured ``pin-memory-expr``, or when it is a ``pin_memory``
  parameter whose default is ``True`` (:func:`availability_parameter`); the same
  flag passed as ``pin_memory=`` makes a pinned tensor. A flag whose value pinfix cannot
  see (:func:`unseen_flag`) is read the same way where it decides pinning
  (``pin_memory=flag``, and :func:`pinning_arms` for ``if flag: x = x.pin_memory()``),
  unless ``strict``;
- of a value's class: ``isinstance(x, C)``, ``type(x) is C`` / ``==`` (a tensor torch
  makes is exactly ``torch.Tensor``, so a test for a subclass such as ``DTensor``
  is false for it; arrays, lists, tuples, dicts, numbers, ``None``);
- ``x is None`` / ``x is not None``, ``hasattr(x, "attr")`` and ``x`` itself (true:
  not ``None``);

through ``not``, ``and`` and ``or`` (a disjunction narrows a name by the join of
what each way through it says, as pyright's does). The work per test is bounded
(:data:`MAX_PARTS`), so no test makes the analysis superlinear.
"""

from __future__ import annotations

import ast
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from ..effects import CLASS_KINDS, TENSOR_ATTRIBUTES, TENSOR_BASES, TENSOR_METHODS
from .scope import FUNCTION_NODES, binds, iter_nodes
from .state import PATHS, PENDING, State
from .values import (
    ACCEL,
    ANY_DEVICE,
    ANY_MEMORY,
    CPU,
    DENSE,
    EMPTY,
    PINNED,
    Array,
    Class,
    Const,
    DictAtom,
    Flag,
    NoneValue,
    Origin,
    Ref,
    Seq,
    Tensor,
    Unknown,
    Value,
    join,
    same,
)

#: The origin label of a tensor a test puts on the CPU (``assert t.is_cpu``).
BY_TEST = "<CPU tensor by a test>"
#: Tests of more parts than this in a disjunction (``a or b or ...`` true) narrow nothing, and
#: one test's refinements visit at most :data:`MAX_LEAVES` of its parts (``and``/``or``/``not``
#: included; a disjunction visits its parts twice): the work per test stays bounded.
MAX_PARTS = 16
MAX_LEAVES = 256

#: What ``t.pin_memory()`` makes is named by this (its origin's qualified name).
PIN_METHOD = "torch.Tensor.pin_memory"

#: Device types that are not the host's, and the tensor flags that name them (``t.is_cuda``).
ACCEL_TYPES = frozenset({"cuda", "xpu", "hip", "mps", "npu", "hpu", "mtia", "privateuseone"})
_ACCEL_FLAGS = frozenset(f"is_{t}" for t in ACCEL_TYPES)


class Refinements:
    """What one test's truth says: ``values`` (name or access path -> its narrower
    value) and ``impossible`` (no path of ours makes the test so)."""

    __slots__ = ("values", "impossible")

    def __init__(self, values: Optional[Dict[str, Value]] = None, impossible: bool = False):
        self.values: Dict[str, Value] = values or {}
        self.impossible = impossible


NOTHING = Refinements()
IMPOSSIBLE = Refinements(impossible=True)


def refinements(ev: Any, test: ast.AST, truth: bool, state: State) -> Refinements:
    """What ``test`` being ``truth`` says of the values in ``state`` (``ev``: the
    evaluator, for names, access paths and the values of a test's parts)."""
    return _refine(ev, test, truth, state, [MAX_LEAVES])


def apply(refs: Refinements, state: State) -> None:
    """Make ``state`` what ``refs`` say: narrower values, or a dead path."""
    if refs.impossible:
        state.dead = True
        return
    for name, value in refs.values.items():
        if not same(state.get(name), value):
            state.set(name, value)
            if "." in name:
                remember_path(name, state)


def narrow(ev: Any, test: ast.AST, truth: bool, state: State) -> Refinements:
    """Apply what ``test`` being ``truth`` says to ``state`` (a branch of a statement)."""
    refs = refinements(ev, test, truth, state)
    apply(refs, state)
    return refs


class Arm:
    """A fork of a state where a test's refinements hold for what an expression
    evaluates in it (an ``IfExp`` arm, the rest of an ``and``, a comprehension's
    element), and end with it: :meth:`effects` is what the evaluation itself did."""

    __slots__ = ("state", "refined")

    def __init__(self, state: State):
        self.state = state.fork()
        self.refined: Dict[str, Value] = {}

    def narrow(self, ev: Any, test: ast.AST, truth: bool) -> None:
        refs = narrow(ev, test, truth, self.state)
        self.refined.update(refs.values)

    def effects(self) -> State:
        for name, value in self.refined.items():
            if self.state.vars.get(name) is value:
                del self.state.vars[name]
        return self.state


def rejoin(state: State, arms: Sequence[State]) -> None:
    """Join what expressions evaluated in ``arms`` (overlays of ``state``) did."""
    live = [a for a in arms if not a.dead]
    if live:
        state.absorb(live)


# --- the tests ---------------------------------------------------------------------------------


def _refine(ev: Any, test: ast.AST, truth: bool, state: State, leaves: List[int]) -> Refinements:
    leaves[0] -= 1
    if leaves[0] < 0:
        return NOTHING  # every visit counts: a test's refinements cost a bounded amount of work
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truth = test.operand, not truth
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == truth:
            return _all(ev, test.values, truth, state, leaves)
        return _any(ev, test.values, truth, state, leaves)
    if isinstance(test, ast.NamedExpr):
        return _refine(ev, test.target, truth, state, leaves)
    fact = memory_test(test)
    if fact is not None:
        return _memory(ev, test, fact, truth, state)
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id in ("isinstance", "hasattr")
        and len(test.args) == 2
        and not test.keywords
    ):
        if test.func.id == "isinstance":
            return _class_test(ev, test.args[0], test.args[1], truth, False, state)
        return _hasattr(ev, test.args[0], test.args[1], truth, state)
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
    ):
        holds = truth == isinstance(test.ops[0], (ast.Is, ast.Eq))
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Constant) and left.value is None:
            left, right = right, left
        if isinstance(right, ast.Constant) and right.value is None and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
            return _keep(ev, left, state, lambda a: _is_none(a) if holds else _not_none(a))
        for one, other in ((left, right), (right, left)):
            if (
                isinstance(one, ast.Call)
                and isinstance(one.func, ast.Name)
                and one.func.id == "type"
                and len(one.args) == 1
            ):
                return _class_test(ev, one.args[0], other, holds, True, state)
    settled = truth_of(ev, test, state)
    if settled is not None:
        return NOTHING if truth == settled else IMPOSSIBLE
    if truth and _subject(ev, test) is not None:
        return _keep(ev, test, state, _not_none)  # `if x:`: not None
    return NOTHING


def _all(ev: Any, parts: Sequence[ast.AST], truth: bool, state: State, leaves: List[int]) -> Refinements:
    """Every part is ``truth``: each narrows what the next sees."""
    scratch = state.fork()
    out: Dict[str, Value] = {}
    for part in parts:
        refs = _refine(ev, part, truth, scratch, leaves)
        if refs.impossible:
            return IMPOSSIBLE
        apply(refs, scratch)
        out.update(refs.values)
    return Refinements(out)


def _any(ev: Any, parts: Sequence[ast.AST], truth: bool, state: State, leaves: List[int]) -> Refinements:
    """Some part is ``truth`` (the ones before it are not): the join of each way."""
    if len(parts) > MAX_PARTS:
        return NOTHING
    scratch = state.fork()
    before: Dict[str, Value] = {}
    ways: List[Dict[str, Value]] = []
    for part in parts:
        refs = _refine(ev, part, truth, scratch, leaves)
        if not refs.impossible:
            ways.append({**before, **refs.values})
        past = _refine(ev, part, not truth, scratch, leaves)
        if past.impossible:
            break  # no way goes past this part
        apply(past, scratch)
        before.update(past.values)
    if not ways:
        return IMPOSSIBLE
    common = set(ways[0]).intersection(*ways[1:])
    return Refinements({name: join(*(w[name] for w in ways)) for name in sorted(common)})


def truth_of(ev: Any, test: ast.AST, state: State) -> Optional[bool]:
    """What ``test`` is on every path of ours, where that is settled: ``True`` for an
    availability test (its value is an availability flag,
    :class:`~pinfix.semantic.values.Flag`, or it is the configured
    ``pin-memory-expr``: false only where no copy can block), or the truth of a
    constant (``PIN_MEMORY = True``); ``None`` otherwise."""
    expr = ev.settings.pin_memory_expr
    if expr is not None and ast.dump(test) == _dump_expression(expr):
        return True
    if isinstance(test, ast.Constant):
        return bool(test.value)
    simple = isinstance(test, (ast.Name, ast.Attribute)) or (
        isinstance(test, ast.Call)
        and not test.args
        and not test.keywords
        and isinstance(test.func, (ast.Name, ast.Attribute))
    )
    if not simple:
        return None
    probe = state.fork()
    probe.vars[PENDING] = EMPTY  # a second look reads nothing
    value = ev.eval(test, probe)
    # An imported name is resolved where it is used: here (the table's flags; in deep mode, the project's).
    value = value.map(lambda a: ev.reference(a.name, test) if isinstance(a, Ref) else None)
    if value.all(lambda a: isinstance(a, Flag)):
        return True
    if value.all(lambda a: isinstance(a, (Const, NoneValue))):
        truths = {bool(a.value) if isinstance(a, Const) else False for a in value}
        if len(truths) == 1:
            return truths.pop()
    return None


def unseen_flag(ev: Any, test: ast.AST, state: State) -> bool:
    """Whether ``test`` is a flag whose value pinfix cannot see, outside ``strict``: every
    value it may hold is one pinfix could not follow (a parameter no caller it sees
    passes, an attribute plain mode does not read, a call it cannot follow, a library
    value) or an availability flag, and at least one is unseen; through ``not``,
    ``and`` and ``or``. A flag computed by a comparison or a boolean operation pinfix
    reads is traced, whatever it cannot tell of the operands (``pin = n > 0``; in deep
    mode ``PIN = os.environ.get("PIN") == "1"`` in another module). Where an unseen flag
    decides whether memory is pinned (:func:`pinning_arms`, and ``pin_memory=flag``), its
    false path is not reported: only a flag whose value pinfix traces (``pin = n > 0``,
    ``not v2 and PIN_MEMORY``) and that is no availability flag keeps its false path.
    ``strict`` reports both."""
    if ev.settings.strict:
        return False
    return _unseen(ev, test, state, [MAX_PARTS]) is True


def _unseen(ev: Any, test: ast.AST, state: State, parts: List[int]) -> Optional[bool]:
    """``True``: unseen; ``False``: an availability flag (no path of ours is false);
    ``None``: a value pinfix sees, which may be false."""
    parts[0] -= 1
    if parts[0] < 0:
        return None  # bounded: a test's parts are looked at once, at most MAX_PARTS of them
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.BoolOp):
        found = [_unseen(ev, part, state, parts) for part in test.values]
        return None if None in found else any(found)
    if truth_of(ev, test, state) is True:
        return False
    if not isinstance(test, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return None
    probe = state.fork()
    probe.vars[PENDING] = EMPTY  # a second look reads nothing
    value = ev.eval(test, probe)
    value = value.map(lambda a: ev.reference(a.name, test) if isinstance(a, Ref) else None)
    param = _parameter(ev, test)
    if param is not None and same(value, ev.parameter_value(param)):
        # What the parameter's annotation alone says (``is_pin_memory: bool``): no value seen,
        # unless its default says what callers that pass nothing get (``pin: bool = False``).
        return (
            None
            if param.default is not None and not (isinstance(param.default, ast.Constant) and param.default.value)
            else True
        )
    if not value or not value.all(
        lambda a: isinstance(a, (Ref, Flag)) or (isinstance(a, Unknown) and not isinstance(a.node, _COMPUTED))
    ):
        return None
    return not value.all(lambda a: isinstance(a, Flag))


#: What computes a flag pinfix can see even where it cannot tell the result (``n > 0``,
#: ``os.environ.get("PIN") == "1"``): a flag made so is traced, not unseen.
_COMPUTED = (ast.Compare, ast.BoolOp, ast.UnaryOp)


def _parameter(ev: Any, test: ast.AST) -> Any:
    """The parameter of the function being evaluated that ``test`` names, if any."""
    func = getattr(ev, "func", None)
    if not isinstance(test, ast.Name) or func is None:
        return None
    return next(
        (p for p in getattr(func, "params", ()) if p.name == test.id and p.kind not in ("vararg", "kwarg")), None
    )


def pinning_arms(first: Value, second: Value, unseen: Callable[[], bool]) -> Tuple[Value, Value]:
    """The values one name holds where a test is true (``first``) and false (``second``),
    where the test is a flag pinfix cannot see (``unseen()``: :func:`unseen_flag`, asked
    only here) that decides whether the memory is pinned (``if flag: x = x.pin_memory()``,
    ``x.pin_memory() if flag else x``): one arm holds pinned CPU memory where the other
    holds pageable CPU memory the first has not. The pageable arm then stands for the
    pinned one, as an availability flag's false branch would (``pin_memory=flag`` reads
    the same flag the same way)."""
    if not (_pinning_split(first, second) or _pinning_split(second, first)) or not unseen():
        return first, second
    return _pinned_for(first, second), _pinned_for(second, first)


def _pinning_split(pinned: Value, pageable: Value) -> bool:
    """Whether ``pinned`` pins what ``pageable`` leaves pageable: it holds memory pinned by
    ``.pin_memory()`` that ``pageable`` has not, and ``pageable`` holds pageable CPU memory
    ``pinned`` has not. Other pinned memory (a pinned buffer, or ``torch.zeros(n,
    pin_memory=True)`` against ``torch.zeros(n)``) is another choice than pinning what
    is there, and keeps both paths."""
    return any(
        t.device == CPU
        and t.memory == PINNED
        and t.key not in pageable.keys
        and t.origin is not None
        and t.origin.qualified == PIN_METHOD
        for t in pinned.tensors
    ) and any(t.device == CPU and t.memory != PINNED and t.key not in pinned.keys for t in pageable.tensors)


def _pinned_for(value: Value, other: Value) -> Value:
    """``value`` with its pageable CPU tensors that ``other`` has not replaced by ``other``'s
    pinned ones (nothing changes where ``other`` pins nothing of its own)."""
    pinned = [t for t in other.tensors if t.device == CPU and t.memory == PINNED and t.key not in value.keys]
    if not pinned:
        return value
    kept = value.map(
        lambda a: (
            EMPTY
            if isinstance(a, Tensor) and a.device == CPU and a.memory != PINNED and a.key not in other.keys
            else None
        )
    )
    return join(kept, Value(tuple(pinned)))


def availability_parameter(param: Any) -> bool:
    """A parameter that is an availability flag: named ``pin_memory`` (``use_pin_memory``,
    ...) with the default ``True``."""
    default = getattr(param, "default", None)
    return "pin_memory" in param.name and isinstance(default, ast.Constant) and default.value is True


# --- memory tests ---------------------------------------------------------------------------------


def memory_test(test: ast.AST) -> Optional[Tuple[ast.AST, str, bool]]:
    """``(subject, kind, holds)`` for a test of a tensor's memory: kind ``"pinned"``
    (``t.is_pinned()``) or ``"cpu"`` (``t.is_cpu``, ``t.is_cuda``, ``t.device.type == "cpu"``),
    ``holds``: what the test being true says."""
    if (
        isinstance(test, ast.Call)
        and not test.args
        and not test.keywords
        and isinstance(test.func, ast.Attribute)
        and test.func.attr == "is_pinned"
    ):
        return test.func.value, "pinned", True
    if isinstance(test, ast.Attribute):
        if test.attr == "is_cpu":
            return test.value, "cpu", True
        if test.attr in _ACCEL_FLAGS:
            return test.value, "cpu", False
        return None
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
    ):
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Constant):
            left, right = right, left
        if not (isinstance(right, ast.Constant) and isinstance(right.value, str)):
            return None
        if not (
            isinstance(left, ast.Attribute)
            and left.attr == "type"
            and isinstance(left.value, ast.Attribute)
            and left.value.attr == "device"
        ):
            return None
        equal = isinstance(test.ops[0], (ast.Eq, ast.Is))
        if right.value == "cpu":
            return left.value.value, "cpu", equal
        if right.value in ACCEL_TYPES:
            return left.value.value, "cpu", not equal
    return None


def _memory(ev: Any, test: ast.AST, fact: Tuple[ast.AST, str, bool], truth: bool, state: State) -> Refinements:
    subject, kind, holds = fact
    if not truth:
        holds = not holds
    name, value = _current(ev, subject, state)
    if name is None or not value:
        return NOTHING
    if kind == "pinned" and holds:
        narrowed = value.map(
            lambda a: (
                Value((a.evolve(device=CPU, memory=PINNED),)) if isinstance(a, Tensor) and a.device != ACCEL else None
            )
        )
    elif kind == "cpu" and not holds:
        narrowed = value.map(
            lambda a: Value((a.evolve(device=ACCEL),)) if isinstance(a, Tensor) and a.device != ACCEL else None
        )
    elif kind == "cpu":
        # A test that names the CPU (``t.is_cpu``, ``t.device.type == "cpu"``; not one that
        # only denies an accelerator) also makes a value pinfix could not follow a CPU tensor:
        # its memory stays unknown, but what is computed from it is fresh host memory.
        names = _names_cpu(test)
        narrowed = value.map(
            lambda a: (
                Value((a.evolve(device=CPU),))
                if isinstance(a, Tensor) and a.device == ANY_DEVICE
                else tested_cpu(ev, subject, a)
                if names and isinstance(a, Unknown)
                else None
            )
        )
    else:
        return NOTHING
    return NOTHING if same(narrowed, value) else Refinements({name: narrowed})


def _names_cpu(test: ast.AST) -> bool:
    """Whether a test of a tensor's device names the CPU itself (``t.is_cpu``,
    ``t.device.type == "cpu"``), rather than an accelerator (``t.is_cuda``)."""
    if isinstance(test, ast.Attribute):
        return test.attr == "is_cpu"
    return isinstance(test, ast.Compare) and any(
        isinstance(side, ast.Constant) and side.value == "cpu" for side in (test.left, *test.comparators)
    )


def tested_cpu(ev: Any, node: ast.AST, was: Unknown) -> Value:
    """What a test such as ``assert t.device.type == "cpu"`` says ``node`` holds where
    pinfix could not follow it (``was``): a CPU tensor whose memory is not known
    (its origin keeps ``was``, for a join that ends the test's word: :func:`ended`)."""
    step = ev.step("named", node, f"`{ev.short(node)}` is on the CPU by the test at line {node.lineno}")
    origin = Origin(node, None, ev.src, ev.short(node), BY_TEST, data=was)
    return Value((Tensor(CPU, ANY_MEMORY, DENSE, origin, route=(step, None)),))


def ended(value: Optional[Value], other: Optional[Value], tested: Set[int]) -> Optional[Value]:
    """``value`` without the CPU tensors the test (its nodes: ``tested``) made of unknown
    values (:data:`BY_TEST`) that ``other`` does not hold too: unknown again (where the
    other way goes on too, a test's word that an unknown value is on the CPU ends with
    its branch)."""
    if not value or not tested:
        return value
    kept = {a.key for a in other or ()}

    def ends(a: Any) -> bool:
        return (
            isinstance(a, Tensor)
            and a.origin is not None
            and a.origin.qualified == BY_TEST
            and id(a.origin.node) in tested
            and a.key not in kept
        )

    if not any(ends(a) for a in value):
        return value
    return value.map(lambda a: Value((a.origin.data,)) if ends(a) else None)


# --- class, None and attribute tests ----------------------------------------------------------------


def _kind(a: Any) -> Optional[str]:
    """The exact class of what an atom holds, as a :data:`~pinfix.effects.CLASS_KINDS` kind."""
    if isinstance(a, Tensor):
        return "tensor"
    if isinstance(a, Array):
        return "array"
    if isinstance(a, Seq) and a.kind in ("list", "tuple", "set"):
        return a.kind
    if isinstance(a, DictAtom) and not a.record:
        return "dict"
    if isinstance(a, NoneValue):
        return "none"
    if isinstance(a, Const):
        return type(a.value).__name__ if type(a.value).__name__ in ("int", "float", "bool", "str") else None
    return None


def _classes(ev: Any, node: ast.AST, state: State) -> Optional[List[Any]]:
    """The classes a class argument names (a tuple of them too): qualified names, or
    :class:`Class` atoms of the project; ``None`` where one is not known."""
    parts = list(node.elts) if isinstance(node, ast.Tuple) else [node]
    out: List[Any] = []
    for part in parts:
        if isinstance(part, ast.Constant) and part.value is None:
            out.append("builtins.NoneType")
            continue
        probe = state.fork()
        probe.vars[PENDING] = EMPTY
        value = ev.eval(part, probe)
        if not value or not value.all(lambda a: isinstance(a, (Ref, Class))):
            return None
        out.extend(a.name if isinstance(a, Ref) else a for a in value)
    return out


def _instance(a: Any, cls: Any, exact: bool) -> Optional[bool]:
    """Whether atom ``a`` is an instance of ``cls`` (exactly: ``type(a) is cls``); ``None``: not known."""
    kind = _kind(a)
    if kind is None:
        return None
    if isinstance(cls, str) and cls in CLASS_KINDS:
        named = CLASS_KINDS[cls]
        return named == kind or (not exact and named == "int" and kind == "bool")
    if kind == "tensor":
        if isinstance(cls, str) and cls in TENSOR_BASES:
            return not exact
        # A project class, or another torch class (a subclass: DTensor, Parameter): a
        # tensor torch makes is exactly torch.Tensor.
        return False if isinstance(cls, Class) or (isinstance(cls, str) and cls.startswith("torch.")) else None
    if isinstance(cls, str) and cls == "builtins.object":
        return not exact
    return None


def _class_test(ev: Any, subject: ast.AST, classes: ast.AST, holds: bool, exact: bool, state: State) -> Refinements:
    found = _classes(ev, classes, state)
    if found is None:
        return NOTHING

    def keep(a: Any) -> bool:
        verdicts = [_instance(a, c, exact) for c in found]
        if holds:
            return any(v is not False for v in verdicts)
        return not any(v is True for v in verdicts)

    return _keep(ev, subject, state, keep)


def _hasattr(ev: Any, subject: ast.AST, attr: ast.AST, truth: bool, state: State) -> Refinements:
    if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
        return NOTHING
    name = attr.value
    tensor_has = name in TENSOR_METHODS or name in TENSOR_ATTRIBUTES
    if truth:
        return _keep(ev, subject, state, lambda a: not isinstance(a, NoneValue) or name.startswith("__"))
    return _keep(ev, subject, state, lambda a: not (isinstance(a, Tensor) and tensor_has))


def _is_none(a: Any) -> bool:
    return _kind(a) in (None, "none")


def _not_none(a: Any) -> bool:
    return not isinstance(a, NoneValue)


def _keep(ev: Any, subject: ast.AST, state: State, keep: Any) -> Refinements:
    """The subject narrowed to the atoms ``keep`` allows (none left: no path of ours,
    where the subject is a local name; an access path such as a record's field may hold
    what code pinfix does not see stores there, so a test that rules out all it knows
    says nothing of it)."""
    name, value = _current(ev, subject, state)
    if name is None or not value:
        return NOTHING
    kept = tuple(a for a in value if keep(a))
    if len(kept) == len(value):
        return NOTHING
    if not kept:
        return NOTHING if "." in name else IMPOSSIBLE
    return Refinements({name: Value(kept)})


# --- subjects ----------------------------------------------------------------------------------------


def _subject(ev: Any, node: ast.AST) -> Optional[str]:
    """The name (a local, or a comprehension's own variable) or access path a test narrows."""
    if isinstance(node, ast.Name):
        return node.id
    path: Optional[str] = ev.path_of(node)
    return path


def _current(ev: Any, subject: ast.AST, state: State) -> Tuple[Optional[str], Optional[Value]]:
    name = _subject(ev, subject)
    if name is None:
        return None, None
    value = state.get(name)
    if "." not in name:
        if name not in ev.func.locals and value is None:
            return None, None  # a global or a closure's name: not this function's to narrow
        return name, value
    if not value:
        probe = state.fork()
        probe.vars[PENDING] = EMPTY
        value = ev.eval(subject, probe)
    return name, value


def remember_path(path: str, state: State) -> None:
    """Keep ``path`` among the access paths the state knows (so a rebinding of its root forgets it)."""
    paths = state.get(PATHS)
    if not paths or path not in {a.value for a in paths.only(Const)}:
        state.set(PATHS, join(paths, Value((Const(path),))))


# --- preconditions --------------------------------------------------------------------------------------


def preconditions(body: Sequence[ast.stmt], params: Set[str]) -> List[ast.Assert]:
    """The ``assert`` statements of a function's body that hold from its start:
    top-level ones, before any statement that can return (or yield), testing only
    parameters that nothing before them rebinds. A call that gets past such an
    assert was made with arguments that pass it, so what it tests of a parameter
    holds from the first statement on (``device = t.device`` above
    ``assert t.device.type == "cpu"`` is a CPU device)."""
    if not any(isinstance(stmt, ast.Assert) for stmt in body):
        return []  # most functions: one look at their top-level statements
    found: List[ast.Assert] = []
    rebound: Set[str] = set()
    last = max(n for n, stmt in enumerate(body) if isinstance(stmt, ast.Assert))
    for stmt in body[: last + 1]:  # (what the statements after the last assert rebind matters to none)
        if isinstance(stmt, ast.Assert):
            subjects = [fact[0] for fact in map(memory_test, _and_parts(stmt.test)) if fact is not None]
            if subjects and all(isinstance(s, ast.Name) and s.id in params and s.id not in rebound for s in subjects):
                found.append(stmt)
            continue
        if _may_leave(stmt):
            break
        rebound |= {p for node in iter_nodes(stmt) for p in params if binds(node, p)}
    return found


# --- what a function guarantees of its arguments when it returns ---------------------------------


class Guarantee(NamedTuple):
    """What a function's normal return says of one of its parameters, as the memory
    test ``form`` (``is_pinned``: ``t.is_pinned()``; ``is_cpu``, ``is_cuda``: ``t.is_cpu``,
    ``t.is_cuda``, standing for any test of where it lives) being ``truth`` says it:
    a validator that raises unless its argument is pinned guarantees ``is_pinned``."""

    param: str
    form: str
    truth: bool


class Checks(NamedTuple):
    """What one function checks of its parameters before it can return (see
    :func:`postconditions`): its own tests, and the calls it makes there that pass a
    parameter on unchanged, each with ``(argument, parameter)`` pairs (``"0"``, ``"1"``:
    positions; else a keyword), whose callees' guarantees become its own."""

    own: Tuple[Guarantee, ...]
    calls: Tuple[Tuple[ast.Call, Tuple[Tuple[str, str], ...]], ...]


NO_CHECKS = Checks((), ())


def postconditions(node: ast.AST, params: Set[str], generator: Optional[bool] = None) -> Checks:
    """What a function (its ``def`` node) checks of its parameters on every way to a
    normal return: the top-level ``assert`` statements and ``if <test>: raise ...``
    guards (no ``else``) before any statement that can return, on parameters nothing
    before them rebinds. A generator's or a coroutine's body does not run when it is
    called, and a lambda checks nothing: none of them guarantees anything
    (``generator``: whether it yields, where the caller knows; else its body is walked)."""
    if not isinstance(node, ast.FunctionDef):
        return NO_CHECKS
    if generator is None:
        generator = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for stmt in node.body for n in iter_nodes(stmt))
    if generator:
        return NO_CHECKS
    own: List[Guarantee] = []
    calls: List[Tuple[ast.Call, Tuple[Tuple[str, str], ...]]] = []
    rebound: Set[str] = set()
    for stmt in node.body:
        # One walk of the statement: whether it can leave, and the parameters it rebinds.
        nodes = list(iter_nodes(stmt))
        if not isinstance(stmt, (*FUNCTION_NODES, ast.ClassDef)) and any(isinstance(n, _LEAVING) for n in nodes):
            break  # (as :func:`_may_leave` says)
        usable = params - rebound
        if isinstance(stmt, ast.Assert):
            own.extend(_guaranteed(_parts(stmt.test, True), usable))
        elif isinstance(stmt, ast.If) and not stmt.orelse and _raises(stmt.body):
            own.extend(_guaranteed(_parts(stmt.test, False), usable))
        else:
            call = _statement_call(stmt)
            passed = _passed_on(call, usable) if call is not None else ()
            if call is not None and passed:
                calls.append((call, passed))
        for n in nodes:
            if isinstance(n, ast.Name):  # (what :func:`binds` says of a name, without a call a parameter)
                if n.id in params and not isinstance(n.ctx, ast.Load):
                    rebound.add(n.id)
            elif not isinstance(n, ast.expr):
                rebound.update(p for p in params if binds(n, p))
    return Checks(tuple(dict.fromkeys(own)), tuple(calls))


#: What ends a function's call (or hands a value out) where it stands.
_LEAVING = (ast.Return, ast.Yield, ast.YieldFrom)


def _parts(test: ast.AST, truth: bool) -> List[Tuple[ast.AST, bool]]:
    """The leaves of ``test`` each of which is known to be ``truth`` when ``test`` is
    (every part of a true ``and``, of a false ``or``; through ``not``)."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truth = test.operand, not truth
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == truth:
            return [leaf for part in test.values for leaf in _parts(part, truth)]
        return []  # one part or another: no one leaf is known
    return [(test, truth)]


def _guaranteed(leaves: List[Tuple[ast.AST, bool]], params: Set[str]) -> List[Guarantee]:
    out = []
    for leaf, truth in leaves:
        fact = memory_test(leaf)
        if fact is None or not isinstance(fact[0], ast.Name) or fact[0].id not in params:
            continue
        subject, kind, holds = fact
        said = holds if truth else not holds  # pinned (or on the CPU) when true
        if kind == "pinned":
            if said:
                out.append(Guarantee(subject.id, "is_pinned", True))
        elif said:
            # On the CPU: a test that names it also makes an unknown value a CPU tensor
            # (:func:`_names_cpu`); one that only denies an accelerator does not.
            out.append(
                Guarantee(subject.id, "is_cpu", True) if _names_cpu(leaf) else Guarantee(subject.id, "is_cuda", False)
            )
        else:
            out.append(Guarantee(subject.id, "is_cuda", True))
    return out


def _raises(body: Sequence[ast.stmt]) -> bool:
    """Whether a block always ends by raising (its last statement a ``raise``, none before it leaving)."""
    return bool(body) and isinstance(body[-1], ast.Raise) and not any(_may_leave(s) for s in body)


def _statement_call(stmt: ast.stmt) -> Optional[ast.Call]:
    """The call a statement makes as a whole: ``f(x)``, ``y = f(x)``, ``await``-less."""
    value = getattr(stmt, "value", None) if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
    return value if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None


def _passed_on(call: ast.Call, params: Set[str]) -> Tuple[Tuple[str, str], ...]:
    """``(argument, parameter)`` for each argument of ``call`` that is one of ``params``."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return ()  # which parameter gets what is not known
    passed = [(str(n), a.id) for n, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id in params]
    passed += [
        (k.arg, k.value.id) for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id in params and k.arg
    ]
    return tuple(passed)


def guarantee_test(guarantee: Guarantee, subject: ast.expr, at: ast.AST) -> ast.expr:
    """The test ``guarantee`` stands for, of the caller's ``subject`` (placed at ``at``)."""
    attribute = ast.Attribute(value=subject, attr=guarantee.form, ctx=ast.Load())
    test: ast.expr = ast.Call(func=attribute, args=[], keywords=[]) if guarantee.form == "is_pinned" else attribute
    for made in (attribute, test):
        ast.copy_location(made, at)
    return test


def _parameter_given(func: Any, argument: str) -> Optional[str]:
    """The parameter of ``func`` an argument (``"0"``: the first positional; else a keyword) gives."""
    if argument.isdigit():
        n = int(argument)
        return next((p.name for p in func.params if p.index == n and p.kind in ("posonly", "positional")), None)
    return next((p.name for p in func.params if p.name == argument and p.kind in ("positional", "kwonly")), None)


def argument_for(func: Any, call: ast.Call, param: str, taken: int = 0) -> Optional[ast.expr]:
    """The argument ``call`` (of ``func``, whose params it names; the first ``taken``
    of them given otherwise: a bound method's receiver) gives ``param``."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    for p in func.params:
        if p.name != param:
            continue
        if p.kind in ("posonly", "positional") and p.index < taken:
            return None  # the receiver
        if p.kind in ("posonly", "positional") and p.index - taken < len(call.args):
            return call.args[p.index - taken]
        if p.kind in ("positional", "kwonly"):
            return next((k.value for k in call.keywords if k.arg == param), None)
    return None


def checked_by(
    checks: Callable[[Any], Checks], resolve: Callable[[Any, ast.Call], Any], func: Any
) -> Dict[int, Tuple[Guarantee, ...]]:
    """What ``func`` and every function its checks call guarantee (by their nodes),
    solved to a fixpoint: a guarantee of a callee's parameter is the caller's for the
    parameter it passes there, through any number of calls and through recursion.
    ``checks`` gives a function's :class:`Checks`; ``resolve`` the plain function a
    call in it calls (``None``: unknown, or not a plain function). Each function's
    checks are read once, and a guarantee is added at most once: the work is linear
    in what the reached functions check."""
    reached: Dict[int, Any] = {}
    edges: Dict[int, List[Tuple[int, Dict[str, str]]]] = {}
    found: Dict[int, Set[Guarantee]] = {}
    todo = [func]
    while todo:
        f = todo.pop()
        key = id(f.node)
        if key in reached:
            continue
        reached[key] = f
        mine = checks(f)
        found[key] = set(mine.own)
        edges[key] = []
        for call, passed in mine.calls:
            callee = resolve(f, call)
            if callee is None:
                continue
            given: Dict[str, str] = {}
            for argument, param in passed:
                target = _parameter_given(callee, argument)
                if target is not None:
                    given[target] = param
            if given:
                edges[key].append((id(callee.node), given))
                todo.append(callee)
    # Reverse edges: a callee's new guarantee is pushed to its callers (a worklist).
    callers: Dict[int, List[Tuple[int, Dict[str, str]]]] = {}
    for key, out in edges.items():
        for callee, given in out:
            callers.setdefault(callee, []).append((key, given))
    work = [(key, g) for key, gs in found.items() for g in gs]
    while work:
        key, g = work.pop()
        for caller, given in callers.get(key, ()):
            param = given.get(g.param)
            if param is None:
                continue
            lifted = Guarantee(param, g.form, g.truth)
            if lifted not in found[caller]:
                found[caller].add(lifted)
                work.append((caller, lifted))
    return {key: tuple(sorted(gs)) for key, gs in found.items()}


def checked(ev: Any, funcs: Sequence[Any], call: ast.Call, state: State, bound: bool = False) -> None:
    """After ``call`` of a project function (every one of ``funcs`` is the same; with
    ``bound``, called on an object, which a method or class method takes first) has
    returned: what it guarantees of the arguments it was given (``ev.ctx``'s
    :meth:`guarantees`) holds of them, as an ``assert`` of its tests would say."""
    if len({id(f.node) for f in funcs}) != 1 or funcs[0].kind == "property":
        return
    func = funcs[0]
    taken = 1 if bound and func.kind in ("method", "classmethod") else 0
    for guarantee in ev.ctx.guarantees(func):
        argument = argument_for(func, call, guarantee.param, taken)
        if argument is not None:
            narrow(ev, guarantee_test(guarantee, argument, call), guarantee.truth, state)


def _unnegated(test: ast.AST) -> ast.AST:
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return test


def _and_parts(test: ast.AST) -> List[ast.AST]:
    """The memory tests of an ``and`` (or one test), unnegated."""
    test = _unnegated(test)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [_unnegated(v) for v in test.values]
    return [test]


def _may_leave(stmt: ast.stmt) -> bool:
    """Whether a statement can end its function's call normally (or hand a value out) before the next one runs."""
    if isinstance(stmt, (*FUNCTION_NODES, ast.ClassDef)):
        return False  # a definition runs nothing of its body
    return any(isinstance(node, _LEAVING) for node in iter_nodes(stmt))


_DUMPS: Dict[str, str] = {}


def _dump_expression(text: str) -> str:
    found = _DUMPS.get(text)
    if found is None:
        try:
            found = ast.dump(ast.parse(text, mode="eval").body)
        except SyntaxError:
            found = ""
        _DUMPS[text] = found
    return found


__all__ = [
    "BY_TEST",
    "Checks",
    "Guarantee",
    "NO_CHECKS",
    "argument_for",
    "checked",
    "checked_by",
    "guarantee_test",
    "postconditions",
    "ACCEL_TYPES",
    "Arm",
    "Refinements",
    "apply",
    "truth_of",
    "unseen_flag",
    "pinning_arms",
    "availability_parameter",
    "ended",
    "memory_test",
    "narrow",
    "preconditions",
    "refinements",
    "rejoin",
    "remember_path",
    "tested_cpu",
]
