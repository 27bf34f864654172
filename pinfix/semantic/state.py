"""The environment at a point of a function: name -> :class:`~pinfix.semantic.values.Value`.

A branch forks the state into an overlay that records only what the branch
changes, and the join after the branches touches only those names: a fork costs
nothing however many names the function has, so a long function with many
branches stays linear.

Besides plain names the environment holds *access paths* (``self.buf``: a
root name and one attribute) and the set of pending device-to-host copies
(:data:`PENDING`); both are names no Python identifier can collide with.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set

from .values import EMPTY, Value, join, same

#: The pending non_blocking device-to-host copies (a value of Pending atoms).
PENDING = "#pending"
#: The access paths currently known (a value of Const atoms naming them).
PATHS = "#paths"
#: The default device where the function has set it (a value of Device atoms): by
#: ``torch.set_default_device(d)``, or inside ``with torch.device(d):``. Unset: the
#: default at the function's entry.
DEFAULT_DEVICE = "#device"


class State:
    __slots__ = ("vars", "parent", "dead", "recorders")

    def __init__(self, parent: Optional["State"] = None):
        self.vars: Dict[str, Value] = {}
        self.parent = parent
        #: No path reaches here (after ``return``, ``raise``, ``break``, ``continue``).
        self.dead = False
        #: Dicts that accumulate every value assigned to each name while they are
        #: active (the entry of ``except`` handlers, free names of nested functions).
        self.recorders: List[Dict[str, Value]] = list(parent.recorders) if parent is not None else []

    def get(self, name: str) -> Optional[Value]:
        """The value of ``name`` here; ``None`` when it was never bound on the way
        here, :data:`~pinfix.semantic.values.EMPTY` after ``del``."""
        s: Optional[State] = self
        while s is not None:
            found = s.vars.get(name)
            if found is not None:
                return found
            s = s.parent
        return None

    def set(self, name: str, value: Value) -> None:
        self.vars[name] = value
        for recorder in self.recorders:
            recorder[name] = join(recorder.get(name), value)

    def delete(self, name: str) -> None:
        self.vars[name] = EMPTY

    def fork(self) -> "State":
        child = State(self)
        child.dead = self.dead
        return child

    def record(self) -> Dict[str, Value]:
        """Start accumulating every value assigned from here on (in forks too)."""
        recorder: Dict[str, Value] = {}
        self.recorders.append(recorder)
        return recorder

    def stop(self, recorder: Dict[str, Value]) -> None:
        self.recorders = [r for r in self.recorders if r is not recorder]

    def changed_since(self, base: "State") -> Set[str]:
        """Names set in the overlays between ``self`` and ``base`` (``base`` excluded)."""
        names: Set[str] = set()
        s: Optional[State] = self
        while s is not None and s is not base:
            names.update(s.vars)
            s = s.parent
        return names

    def snapshot(self, base: "State") -> "State":
        """This state as an overlay of ``base`` that later changes to the states
        in between do not affect (for ``break``/``continue``, kept for later)."""
        out = State(base)
        chain = []
        s: Optional[State] = self
        while s is not None and s is not base:
            chain.append(s)
            s = s.parent
        for s in reversed(chain):
            out.vars.update(s.vars)
        out.dead = self.dead
        out.recorders = list(self.recorders)
        return out

    def absorb(self, states: Iterable["State"], keep: bool = False) -> bool:
        """Join ``states`` (overlays of this one) into this state; whether any
        name changed. With no live state, this state is dead. ``keep``: this
        state's own values are one more way in (a loop's head)."""
        live = [s for s in states if not s.dead]
        if not live:
            if not keep:
                self.dead = True
            return False
        names: Set[str] = set()
        for s in live:
            names |= s.changed_since(self)
        changed = False
        for name in sorted(names):
            value = join(*(s.get(name) for s in live))
            if keep:
                value = join(self.get(name), value)
            mine = self.get(name)
            if not same(mine, value):
                self.set(name, value)
                changed = True
        return changed

    def widen(self, names: Iterable[str], value: Value) -> None:
        """Give ``names`` a value that absorbs everything (a loop that would not settle)."""
        for name in names:
            self.set(name, value)
