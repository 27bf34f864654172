"""Abstract values: what an expression may hold at a point of the program.

A :class:`Value` is a small set of *atoms*, one per way the expression may have
been made (one per path, merged when two paths make the same thing). Atoms are
small immutable classes, as pyflakes keeps its bindings:

- :class:`Tensor`: device (CPU / accelerator / unknown), memory (pinned /
  pageable / unknown), layout (dense / gapped), where the memory was made
  (:class:`Origin`) and the evidence chain that brought it here;
- :class:`Array` (a NumPy array), :class:`Host` (plain host data: numbers,
  strings), :class:`Const` (a literal), :class:`NoneValue`;
- :class:`Seq` (list, tuple, set, generator) and :class:`DictAtom` with the values of
  their items; :class:`Instance` of a project class with the fields the program
  sets; :class:`SliceAtom`;
- :class:`Device`, :class:`DType`, :class:`Flag` (pinned memory is available);
- :class:`Opened` (an open file of tensors: what its reads give), :class:`Wrapper` (a
  library object that wraps data loaders);
- :class:`Ref` (a library module, function or value, by qualified name),
  :class:`Func` and :class:`Class` (the project's own);
- :class:`Unknown`, with the reason pinfix cannot tell.

Each atom has a ``key``: what it is, without how pinfix learnt it (the evidence).
Joins and the loop fixpoint compare keys only, so evidence never keeps a loop
going, and a value's size is bounded: past :data:`MAX_ATOMS` a join *widens*
(:func:`widen`) rather than drop a path.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple, TypeVar

CPU, ACCEL, ANY_DEVICE = "cpu", "accelerator", "unknown"
PINNED, PAGEABLE, ANY_MEMORY = "pinned", "pageable", "unknown"
DENSE, GAPPED = "dense", "gapped"

#: Atoms one value keeps apart; a join past this widens (:func:`widen`): a bound on the
#: lattice's height, so every loop reaches its fixpoint in a few rounds.
MAX_ATOMS = 12
#: How deep containers nest inside values (deeper: unknown).
MAX_CONTAINER_DEPTH = 4


class Step:
    """One step of evidence: where it happened and what it did."""

    __slots__ = ("kind", "node", "message", "src", "name")

    def __init__(self, kind: str, node: Any, message: str, src: Any, name: Optional[str] = None):
        #: ``made``, ``bound``, ``view``, ``converted``, ``gapped``, ``computed``,
        #: ``attribute``, ``returned``, ``argument``, ``read``, ``pinned``, ``branch``.
        self.kind = kind
        #: The stdlib ``ast`` node it happened at.
        self.node = node
        self.message = message
        #: The :class:`~pinfix.semantic.source.SourceText` of the node's file.
        self.src = src
        #: The name or access path the step is about (``x``, ``self.buf``): what a
        #: ``bound`` step bound; ``None`` where the step is about no name.
        self.name = name

    @property
    def line(self) -> int:
        return int(self.node.lineno)

    @property
    def column(self) -> int:
        """1-based, in characters."""
        return int(self.src.column(self.node.lineno, self.node.col_offset)) + 1

    def __repr__(self) -> str:
        return f"Step({self.kind}, {self.line}, {self.message!r})"


#: Evidence chains are linked lists ``(step, rest)``, newest first: adding a step
#: costs nothing however long the chain is.
Chain = Optional[Tuple[Step, Any]]


def chain(*steps: Step) -> Chain:
    out: Chain = None
    for s in steps:
        out = (s, out)
    return out


def extend(route: Chain, step: Step) -> Chain:
    return (step, route)


def steps(route: Chain, limit: int = 200) -> Tuple[Step, ...]:
    """The chain, oldest first (at most ``limit`` steps: the first and the last ones)."""
    out = []
    while route is not None:
        out.append(route[0])
        route = route[1]
    out.reverse()
    if len(out) > limit:
        out = out[: limit // 2] + out[-(limit // 2) :]
    return tuple(out)


class Origin:
    """Where a tensor's memory was made: the node, the table entry (or a
    pseudo-entry such as arithmetic), and its file."""

    __slots__ = ("node", "effect", "src", "label", "qualified", "data")

    def __init__(self, node: Any, effect: Any, src: Any, label: str, qualified: str = "", data: Any = None):
        self.node = node
        self.effect = effect
        self.src = src
        #: How messages name it: ``torch.from_numpy(...)``, ``the result of arithmetic``.
        self.label = label
        #: The qualified name of the call that made it (``torch.zeros``), or a ``<pseudo>`` name.
        self.qualified = qualified
        #: What its data argument held (``torch.tensor(data)``), where that matters to a fix.
        self.data = data

    @property
    def line(self) -> int:
        return int(self.node.lineno)


class Atom:
    __slots__ = ("key",)
    key: Tuple[Any, ...]

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.key[1:]}"


class Tensor(Atom):
    """A tensor: where its data lives, and how it got here."""

    __slots__ = (
        "device",
        "memory",
        "layout",
        "origin",
        "scalar",
        "route",
        "converted",
        "gapped",
        "explicit",
        "via",
        "cond",
        "pending",
        "widened",
    )

    def __init__(
        self,
        device: str,
        memory: str = ANY_MEMORY,
        layout: str = DENSE,
        origin: Optional[Origin] = None,
        scalar: bool = False,
        route: Chain = None,
        converted: Optional[str] = None,
        gapped: Optional[str] = None,
        explicit: bool = False,
        via: Optional[Step] = None,
        cond: Optional[str] = None,
        pending: Optional[Any] = None,
        widened: bool = False,
    ):
        self.device = device
        self.memory = memory if device == CPU else ANY_MEMORY
        self.layout = layout
        self.origin = origin
        #: May be a 0-dim tensor (``x.sum()``, ``x[i]``), which follows the other operand's device.
        self.scalar = scalar
        self.route = route
        #: A conversion after the origin made a fresh tensor (``.long()``): pinning the origin no longer helps.
        self.converted = converted
        #: The text of a gapped view on the way.
        self.gapped = gapped
        #: ``pin_memory=False`` written out.
        self.explicit = explicit
        #: The step where the flow crossed a function boundary (deep mode).
        self.via = via
        #: The condition under which this path runs, where visible (``c`` is false).
        self.cond = cond
        #: The non_blocking device-to-host copy whose data may not have arrived yet.
        self.pending = pending
        #: Stands for several paths that agree on device, memory and layout (:func:`widen`):
        #: its origin and evidence are one of theirs, so no fix can be made from it.
        self.widened = widened
        self.key = (
            "T",
            device,
            self.memory,
            layout,
            id(origin.node) if origin is not None else None,
            scalar,
            converted is not None,
            gapped is not None,
            explicit,
            id(pending) if pending is not None else None,
        )

    def evolve(self, **changes: Any) -> "Tensor":
        fields = {name: getattr(self, name) for name in Tensor.__slots__}
        fields.update(changes)
        return Tensor(**fields)

    def step(self, step: Step) -> "Tensor":
        return self.evolve(route=(step, self.route))

    @property
    def blocks(self) -> bool:
        """A CPU tensor a non_blocking host-to-device copy of which blocks the host."""
        return self.device == CPU and (self.memory == PAGEABLE or self.layout == GAPPED)


class Array(Atom):
    """A NumPy array: host memory, never pinned by pinfix's reckoning."""

    __slots__ = ("origin",)

    def __init__(self, origin: Any = None):
        self.origin = origin
        self.key = ("A",)


class Host(Atom):
    """Plain host data: a number, a string, a list of numbers pinfix does not follow."""

    __slots__ = ()

    def __init__(self) -> None:
        self.key = ("H",)


class Const(Atom):
    """A literal value (a string, a number, a bool)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        if isinstance(value, str) and len(value) > 64:
            value = value[:64]
        self.value = value
        self.key = ("K", type(value).__name__, value)


class NoneValue(Atom):
    __slots__ = ()

    def __init__(self) -> None:
        self.key = ("N",)


class SliceAtom(Atom):
    """A ``slice(...)`` object (``x[s]`` is then a basic slice: a dense view)."""

    __slots__ = ()

    def __init__(self) -> None:
        self.key = ("L",)


class Device(Atom):
    """A device: ``cpu``, an accelerator, or one pinfix cannot tell."""

    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind
        self.key = ("D", kind)


class DType(Atom):
    __slots__ = ()

    def __init__(self) -> None:
        self.key = ("Y",)


class Flag(Atom):
    """True only when pinned memory is available (``is_pin_memory_available()``, a ``pin_memory`` flag)."""

    __slots__ = ()

    def __init__(self) -> None:
        self.key = ("P",)


class Opened(Atom):
    """An open file of tensors (safetensors' ``safe_open``): ``effect`` says which of its methods
    read tensors; ``tensors`` is what each read gives. ``sliced``: a slice handle
    (``f.get_slice(name)``), whose items are such tensors."""

    __slots__ = ("effect", "site", "sliced", "tensors")

    def __init__(self, effect: Any, tensors: "Value", site: Any, sliced: bool = False):
        self.effect = effect
        self.tensors = tensors
        self.site = site
        self.sliced = sliced
        self.key = ("O", id(site), sliced)


class Wrapper(Atom):
    """A library object that wraps data loaders (``accelerate``'s ``Accelerator``): ``effect``
    names its wrapping methods; ``placed`` whether it puts batches on the device (``None``:
    pinfix cannot tell)."""

    __slots__ = ("effect", "placed")

    def __init__(self, effect: Any, placed: Optional[bool]):
        self.effect = effect
        self.placed = placed
        self.key = ("W", placed)


class Ref(Atom):
    """A library module, function or value, by qualified name (``torch``, ``torch.zeros``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name
        self.key = ("R", name)


class Func(Atom):
    """A project function (or method, lambda): ``info`` describes its definition."""

    __slots__ = ("info", "receiver")

    def __init__(self, info: Any, receiver: Optional["Value"] = None):
        self.info = info
        #: A bound method's receiver (``self.m``), passed as its first parameter.
        self.receiver = receiver
        self.key = ("F", id(info), receiver.keys if receiver is not None else None)


class Class(Atom):
    """A project class."""

    __slots__ = ("info",)

    def __init__(self, info: Any):
        self.info = info
        self.key = ("C", id(info))


class Instance(Atom):
    """An object of a project class (``self``, ``Bufs(n)``), with the fields the
    program has set on it (name -> value) where pinfix saw them."""

    __slots__ = ("cls", "fields")

    def __init__(self, cls: Any, fields: Tuple[Tuple[str, "Value"], ...] = ()):
        self.cls = cls
        self.fields = fields
        self.key = ("I", id(cls), tuple((n, v.keys) for n, v in fields))

    def field(self, name: str) -> Optional["Value"]:
        for n, v in self.fields:
            if n == name:
                return v
        return None

    def with_field(self, name: str, value: "Value") -> "Instance":
        kept = tuple((n, v) for n, v in self.fields if n != name)
        return Instance(self.cls, (*kept, (name, value)))


class FieldOf(Atom):
    """A ``dataclasses.Field`` of the record class ``cls``: any one of its fields."""

    __slots__ = ("cls",)

    def __init__(self, cls: Any):
        self.cls = cls
        self.key = ("F", id(cls))


class FieldName(Atom):
    """The name of one of the record class ``cls``'s fields (``f.name`` of a :class:`FieldOf`)."""

    __slots__ = ("cls",)

    def __init__(self, cls: Any):
        self.cls = cls
        self.key = ("FN", id(cls))


class Seq(Atom):
    """A list, tuple, set or generator. ``items``: each item's value where the
    length is known (a display never grown); ``elements``: the join of them all."""

    __slots__ = ("kind", "items", "elements", "site")

    def __init__(self, kind: str, items: Optional[Tuple["Value", ...]], elements: "Value", site: Any = None):
        self.kind = kind
        self.items = items
        self.elements = elements
        self.site = site
        self.key = (
            "S",
            kind,
            id(site) if site is not None else None,
            tuple(i.keys for i in items) if items is not None else None,
            elements.keys,
        )


class DictAtom(Atom):
    """A dict: the values of its constant keys, and the join of all its values.
    ``record``: its keys read as attributes too, and a key pinfix did not see
    stored holds what all its values may (a Hugging Face ``BatchEncoding``)."""

    __slots__ = ("items", "elements", "site", "record")

    def __init__(
        self, items: Tuple[Tuple[Any, "Value"], ...], elements: "Value", site: Any = None, record: bool = False
    ):
        self.items = items
        self.elements = elements
        self.site = site
        self.record = record
        self.key = (
            "M",
            id(site) if site is not None else None,
            tuple((k, v.keys) for k, v in items),
            elements.keys,
            record,
        )

    def get(self, key: Any) -> Optional["Value"]:
        for k, v in self.items:
            if k == key:
                return v
        return None


class Unknown(Atom):
    """What pinfix cannot tell, and why (``why`` completes "`x` ..."; ``hint``:
    whether deep mode might know)."""

    __slots__ = ("why", "node", "route")

    def __init__(self, why: str = "pinfix does not follow how it is made", node: Any = None, route: Chain = None):
        self.why = why
        self.node = node
        #: What was made of it on the way to where it is read (``torch.argsort(x)`` of an unknown ``x``).
        self.route = route
        self.key = ("U",)


#: Why an item of a parameter annotated ``list[torch.Tensor]`` (or the like) is unknown.
ITEM_OF_PARAMETER = "is an item of a parameter"


class Pending(Atom):
    """A non_blocking device-to-host copy whose destination (``target``, the id of
    its memory's origin node) may be read before the data has arrived."""

    __slots__ = ("copy", "target", "name")

    def __init__(self, copy: Any, target: int, name: str):
        self.copy = copy
        self.target = target
        #: How messages name the destination.
        self.name = name
        self.key = ("W", id(copy), target)


A = TypeVar("A", bound=Atom)


class Value:
    """A set of atoms (at most :data:`MAX_ATOMS`), in the order they were found."""

    __slots__ = ("atoms", "keys")

    #: The atoms' keys: made the first time they are asked for (see :meth:`__getattr__`).
    keys: FrozenSet[Any]

    def __init__(self, atoms: Tuple[Atom, ...] = ()):
        self.atoms = atoms

    def __getattr__(self, name: str) -> Any:
        # Only for a slot not yet set: ``keys`` is made on first use, then read as a slot. Most
        # values are never joined or compared (a million on vLLM 0.34.0, 200 MB of sets).
        if name != "keys":
            raise AttributeError(name)
        keys = self.keys = frozenset(a.key for a in self.atoms)
        return keys

    @staticmethod
    def of(*atoms: Atom) -> "Value":
        return join(*(Value((a,)) for a in atoms)) if len(atoms) > 1 else Value(atoms)

    def __iter__(self) -> Iterator[Atom]:
        return iter(self.atoms)

    def __bool__(self) -> bool:
        return bool(self.atoms)

    def __len__(self) -> int:
        return len(self.atoms)

    def __repr__(self) -> str:
        return "Value(" + ", ".join(map(repr, self.atoms)) + ")"

    def only(self, kind: "type[A]") -> Tuple[A, ...]:
        return tuple(a for a in self.atoms if isinstance(a, kind))

    def all(self, test: Callable[[Atom], bool]) -> bool:
        return bool(self.atoms) and all(test(a) for a in self.atoms)

    def any(self, test: Callable[[Atom], bool]) -> bool:
        return any(test(a) for a in self.atoms)

    def map(self, f: Callable[[Atom], Optional["Value"]]) -> "Value":
        """The join of ``f(atom)`` over the atoms (``None``: the atom as it is)."""
        parts = []
        for a in self.atoms:
            out = f(a)
            parts.append(Value((a,)) if out is None else out)
        return join(*parts)

    @property
    def tensors(self) -> Tuple[Tensor, ...]:
        return self.only(Tensor)

    @property
    def unknown(self) -> Optional[Unknown]:
        found = self.only(Unknown)
        return found[0] if found else None


EMPTY = Value()


def join(*values: Optional[Value]) -> Value:
    """The atoms of every value, each key once (the first found keeps its evidence);
    past :data:`MAX_ATOMS`, widened (:func:`widen`)."""
    present = [v for v in values if v]
    if not present:
        return EMPTY
    first = present[0]
    if len(present) == 1:
        return first
    atoms = list(first.atoms)
    keys = set(first.keys)
    changed = False
    for v in present[1:]:
        if v is first or v.keys <= keys:
            continue
        for a in v.atoms:
            if a.key not in keys:
                atoms.append(a)
                keys.add(a.key)
                changed = True
    if not changed:
        return first
    if len(atoms) > MAX_ATOMS:
        atoms = widen(atoms)
    return Value(tuple(atoms))


#: Why a value widened past :data:`MAX_ATOMS` holds an unknown.
TOO_MANY = "may be one of more values than pinfix keeps apart"


def widen(atoms: List[Atom]) -> List[Atom]:
    """More than :data:`MAX_ATOMS` atoms, fewer, and no path lost: tensors that agree on
    device, memory and layout become one (the first, with its evidence, marked
    ``widened``); containers of a kind become one holding all their elements; what is
    still past the bound then becomes one :class:`Unknown`. One tensor atom per device,
    memory and layout (a dozen at most), an unknown and :data:`MAX_ATOMS` others remain."""
    tensors: Dict[Tuple[Any, ...], int] = {}
    containers: Dict[Tuple[Any, ...], int] = {}
    out: List[Atom] = []
    for a in atoms:
        if isinstance(a, Tensor):
            group = (a.device, a.memory, a.layout)
            at = tensors.get(group)
            if at is None:
                tensors[group] = len(out)
                out.append(a)
            elif not out[at].widened:  # type: ignore[attr-defined]
                out[at] = out[at].evolve(widened=True, cond=None)  # type: ignore[attr-defined]
            continue
        kind = _container_kind(a)
        if kind is not None:
            at = containers.get(kind)
            if at is None:
                containers[kind] = len(out)
                out.append(a)
            else:
                out[at] = _merged(out[at], a)
            continue
        out.append(a)
    others = [a for a in out if not isinstance(a, (Tensor, Unknown))]
    if len(others) <= MAX_ATOMS:
        return out
    kept = {id(a) for a in others[:MAX_ATOMS]}
    reason = next((a for a in out if isinstance(a, Unknown)), None) or Unknown(TOO_MANY)
    result = [a for a in out if isinstance(a, Tensor) or id(a) in kept]
    result.append(reason)
    return result


def _container_kind(a: Atom) -> Optional[Tuple[Any, ...]]:
    if isinstance(a, Seq):
        return ("S", a.kind)
    if isinstance(a, DictAtom):
        return ("M",)
    if isinstance(a, Instance):
        return ("I", id(a.cls))
    return None


def _merged(a: Atom, b: Atom) -> Atom:
    """One container of ``a``'s kind holding what ``a`` and ``b`` hold (their items no longer apart)."""
    if isinstance(a, Seq) and isinstance(b, Seq):
        return Seq(a.kind, None, join(a.elements, b.elements), a.site)
    if isinstance(a, DictAtom) and isinstance(b, DictAtom):
        parts = [a.elements, b.elements, *(v for _, v in a.items), *(v for _, v in b.items)]
        return DictAtom((), join(*parts), a.site, a.record or b.record)
    if isinstance(a, Instance) and isinstance(b, Instance):
        names = [n for n, _ in a.fields] + [n for n, _ in b.fields if a.field(n) is None]
        return Instance(a.cls, tuple((n, join(a.field(n), b.field(n))) for n in names))
    return a


def unknown(why: str = "pinfix does not follow how it is made", node: Any = None) -> Value:
    return Value((Unknown(why, node),))


def same(a: Optional[Value], b: Optional[Value]) -> bool:
    """Whether two values hold the same things (evidence aside)."""
    if a is b:
        return True
    if a is None or b is None:
        return False
    return a.keys == b.keys


def flatten(values: Iterable[Value]) -> Value:
    return join(*values)


def mark(value: Value, step: Step, via: bool = False, depth: int = 0) -> Value:
    """``value`` with ``step`` added to the evidence of every tensor it holds (in
    the items of its containers too); ``via``: the step where the flow crossed
    into this function."""

    def each(a: Atom) -> Optional[Value]:
        if isinstance(a, Tensor):
            return Value((a.evolve(route=(step, a.route), via=a.via or (step if via else None)),))
        if isinstance(a, Seq) and depth < 2:
            items = tuple(mark(i, step, via, depth + 1) for i in a.items) if a.items is not None else None
            return Value((Seq(a.kind, items, mark(a.elements, step, via, depth + 1), a.site),))
        if isinstance(a, DictAtom) and depth < 2:
            items = tuple((k, mark(v, step, via, depth + 1)) for k, v in a.items)
            return Value((DictAtom(items, mark(a.elements, step, via, depth + 1), a.site, a.record),))
        if isinstance(a, Instance) and a.fields and depth < 2:
            return Value((Instance(a.cls, tuple((n, mark(v, step, via, depth + 1)) for n, v in a.fields)),))
        return None

    return value.map(each)
