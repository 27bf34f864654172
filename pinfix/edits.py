"""A fix is data: text edits, imports to add or drop, how safe it is and why.

Rules plan fixes from the engine's facts (:mod:`pinfix.rules`); one applier
(:mod:`pinfix.fixes`) applies them for every front end (the CLI, the LibCST
codemod, the Fixit rules). Nothing here knows any syntax tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional, Tuple


class Applicability(Enum):
    """How freely a fix may be applied (as ruff's ``Applicability``): a *safe* fix
    cannot change what the program computes; an *unsafe* one may, and is applied
    only when asked (``--unsafe-fixes``). The value is what output and JSON say."""

    UNSAFE = "unsafe"
    SAFE = "safe"

    @classmethod
    def required(cls, unsafe_fixes: bool) -> Applicability:
        """The least applicability a run applies: unsafe fixes too, or safe ones only."""
        return cls.UNSAFE if unsafe_fixes else cls.SAFE

    def applies(self, required: Applicability) -> bool:
        """Whether a fix this free is applied where ``required`` is asked for."""
        return _RANK[self] >= _RANK[required]


_RANK = {Applicability.UNSAFE: 0, Applicability.SAFE: 1}
SAFE = Applicability.SAFE
UNSAFE = Applicability.UNSAFE


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` of the file's (decoded) text with ``new``."""

    start: int
    end: int
    new: str


@dataclass(frozen=True)
class Fix:
    """What to change, and whether it may change behaviour."""

    #: :data:`SAFE` or :data:`UNSAFE` (applied only with ``--unsafe-fixes``).
    applicability: Applicability
    #: Why it is unsafe (``None`` when safe).
    reason: Optional[str]
    edits: Tuple[Edit, ...]
    #: ``(module, name)`` pairs that must be importable after the fix (``from module import name``).
    imports: Tuple[Tuple[str, str], ...] = ()
    #: Local names whose import may be left unused by the edits (``from_numpy``, ``torch``).
    drops: Tuple[str, ...] = ()

    @property
    def span(self) -> Tuple[int, int]:
        return min(e.start for e in self.edits), max(e.end for e in self.edits)
