"""A sound shortcut: tell from a file's bytes that it cannot hold a finding.

Derived from the effects table (:mod:`pinfix.effects`), never written out by hand:

1. a *sink* must be spelt: the ``non_blocking`` keyword, or a positional
   ``True`` inside the parentheses of a call of a sink's method name
   (:data:`~pinfix.effects.COPY_SINKS`; with ``strict``, any such call);
2. unless deep mode (or ``cpu-tensor-names``) lets the CPU tensor come from
   elsewhere, a *CPU-memory origin* must be spelt too: the last component of
   every table entry whose kind makes CPU memory (:data:`ORIGIN_KINDS`:
   ``Makes``, ``Pins``, ``ToHost``), of the pinned producers, or ``cpu``
   (``.to("cpu")``, also as a string escape).

Python source encodings are ASCII-compatible, so an identifier's bytes appear
verbatim whatever the declared encoding. ``PINFIX_NO_PREFILTER=1`` turns the
shortcut off (and makes the engine evaluate every function, not only those
whose lines say ``non_blocking``), to prove it sound: findings must be the same
either way (``tests/test_prefilter.py``).
"""

from __future__ import annotations

import gc
import os
import re
from contextlib import contextmanager
from functools import lru_cache
from typing import FrozenSet, Iterator, Mapping, Optional, Protocol, Tuple, Type

from .effects import (
    ARRAY_METHODS,
    COPY_SINKS,
    FUNCTIONS,
    NON_BLOCKING_KEYWORD,
    TENSOR_ATTRIBUTES,
    TENSOR_METHODS,
    Availability,
    Computes,
    Constant,
    Converts,
    CopiesTo,
    Effect,
    HostData,
    KEYWORD_CALLS,
    Makes,
    MakesArray,
    MakesBatch,
    Metadata,
    Pins,
    ReadsOnHost,
    ToHost,
    View,
    Waits,
)



class Options(Protocol):
    """What the shortcut needs of the settings (a ``Settings`` or the shell's ``Config``)."""

    deep: bool
    strict: bool
    show_unknown: bool
    cpu_tensor_names: Tuple[str, ...]

    @property
    def pinned_producers(self) -> FrozenSet[str]: ...  # pragma: no cover

PREFILTER_OFF = os.environ.get("PINFIX_NO_PREFILTER", "") not in ("", "0")

#: What each kind of effect is to the shortcut: an ``origin`` of CPU memory a
#: finding needs, a ``sink``, or ``neither`` (it only passes memory on, or makes
#: none). ``tests/test_prefilter.py`` fails when a kind is missing here.
KIND_ROLES: Mapping[Type[Effect], str] = {
    Makes: "origin",
    MakesBatch: "origin",
    Pins: "origin",
    ToHost: "origin",
    CopiesTo: "sink",
    View: "neither",
    Converts: "neither",
    Computes: "neither",
    MakesArray: "neither",
    HostData: "neither",
    Waits: "neither",
    ReadsOnHost: "neither",
    Metadata: "neither",
    Constant: "neither",
    Availability: "neither",
}
ORIGIN_KINDS = tuple(kind for kind, role in KIND_ROLES.items() if role == "origin")


def origin_names() -> FrozenSet[str]:
    """The spelling (last component) of every table entry that makes CPU memory."""
    names = set()
    for table in (FUNCTIONS, TENSOR_METHODS, TENSOR_ATTRIBUTES, ARRAY_METHODS):
        for key, effect in table.items():
            if isinstance(effect, ORIGIN_KINDS):
                names.add(key.rsplit(".", 1)[-1])
    names.update(keyword for (keyword, _), effect in KEYWORD_CALLS.items() if isinstance(effect, ORIGIN_KINDS))
    return frozenset(names)


#: A string escape that may spell a letter of "cpu" (``"\x63pu"`` is ``"cpu"``).
_CPU_ESCAPE = re.compile(rb"\\(?:[xX](?:63|70|75)|1(?:43|60|65)|u00(?:63|70|75)|U000000(?:63|70|75)|N\{)")
# A positional non_blocking slot is never the first (``copy_(src, True)``,
# ``cuda(dev, True)``, ``to(dev, dtype, True)``), so its ``True`` follows a
# comma and precedes a comma or ``)``, with only whitespace, continuations or
# comments between.
_GAP = rb"(?:\s|\\(?:\r\n|\r|\n)|#[^\r\n]*(?:\r\n|\r|\n))*"
POSITIONAL_TRUE = re.compile(rb"," + _GAP + rb"True" + _GAP + rb"[,)]")
_SINK_NAMES = b"|".join(re.escape(n.encode()) for n in sorted(COPY_SINKS))
_SINK_OPEN = re.compile(rb"\.(?:\s|\\(?:\r\n|\r|\n))*(?:" + _SINK_NAMES + rb")\s*\(")
_SPECIAL = re.compile(rb"[()'\"#]")
_TRUE_THEN_CLOSE = re.compile(rb"True(?=" + _GAP + rb"[,)])")
_BACK_GAP = frozenset(b" \t\x0b\x0c\r\n\\")


@lru_cache(maxsize=16)
def _spellings(producers: FrozenSet[str]) -> Tuple[bytes, ...]:
    words = origin_names() | {"cpu"} | {p.rsplit(".", 1)[-1] for p in producers}
    # Some names contain others (`zeros_like` holds `zeros`): keep the shortest.
    return tuple(sorted(n.encode() for n in words if not any(o != n and o in n for o in words)))


def _options(config: Optional[Options]) -> Tuple[bool, bool, FrozenSet[str]]:
    """``(any sink counts, strict, pinned producers)``."""
    if config is None:
        return False, False, frozenset()
    # PIN004 notes a copy of anything pinfix cannot tell: every sink counts then too.
    elsewhere = bool(config.deep or config.cpu_tensor_names or getattr(config, "show_unknown", False))
    return elsewhere, bool(config.strict), frozenset(config.pinned_producers)


def may_contain_finding(data: bytes, config: Optional[Options] = None) -> bool:
    """Whether ``data`` may hold a finding (``False`` only when it surely cannot).

    The cheapest test that rejects most files runs first (``non_blocking`` is
    one fast substring search); the origin spellings are looked for only in the
    few files that pass it."""
    if PREFILTER_OFF:
        return True
    elsewhere, strict, producers = _options(config)
    if not may_hold_sink(data, strict):
        return False
    if elsewhere:
        return True  # the CPU tensor may be made in another function or file
    return any(s in data for s in _spellings(producers)) or _CPU_ESCAPE.search(data) is not None


def may_hold_sink(data: bytes, strict: bool = False) -> bool:
    """Whether some sink may be spelt in ``data``."""
    if NON_BLOCKING_KEYWORD.encode() in data:
        return True
    if strict and _SINK_OPEN.search(data) is not None:
        return True
    return _maybe_positional_true(data) and _positional_true_in_sink(data)


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


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: syntax trees are freed by reference
    counting, and the collector would only walk the growing heap again and
    again while they are built."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()

