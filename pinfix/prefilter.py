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

The tests read the code as Python reads it (:func:`readable`): a file of ASCII
bytes whose declared codec reads ASCII as itself is read as it is (nearly every
file); any other is decoded by its codec (``utf-7``, ``unicode_escape``...) and
folded as Python folds identifiers (NFKC: ``ｎon_blocking`` is ``non_blocking``).
A file Python refuses before parsing (bytes its codec cannot decode, a NUL)
passes, so that the parser reports it. ``PINFIX_NO_PREFILTER=1`` turns the
shortcut off (and makes the engine evaluate every function, not only those
whose lines say ``non_blocking``), to prove it sound: findings must be the same
either way (``tests/test_prefilter.py``).
"""

from __future__ import annotations

import gc
import os
import re
from bisect import bisect_left
from contextlib import contextmanager
from functools import lru_cache
from typing import FrozenSet, Iterator, List, Mapping, Optional, Protocol, Tuple, Type

from .effects import (
    ARRAY_METHODS,
    COPY_SINKS,
    FUNCTIONS,
    IMPLIED_NON_BLOCKING,
    KEYWORD_CALLS,
    NON_BLOCKING_KEYWORD,
    TENSOR_ATTRIBUTES,
    TENSOR_METHODS,
    Availability,
    Collates,
    Computes,
    Constant,
    Converts,
    CopiesTo,
    DefaultDevice,
    Effect,
    HostData,
    Iterates,
    Loads,
    Makes,
    MakesArray,
    MakesBatch,
    Metadata,
    Opens,
    Pins,
    Prepares,
    ReadsFile,
    ReadsOnHost,
    RecordFields,
    Restores,
    Shares,
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
    Collates: "origin",
    Loads: "origin",
    ReadsFile: "origin",
    Opens: "origin",
    Shares: "origin",
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
    RecordFields: "neither",
    Iterates: "neither",
    Prepares: "neither",
    Restores: "neither",
    DefaultDevice: "neither",
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
_CONTINUATION = rb"\\(?:\r\n|\r|\n)"
_SINK_NAMES = b"|".join(re.escape(n.encode()) for n in sorted(COPY_SINKS))
_SINK_OPEN = re.compile(rb"\.(?:\s|" + _CONTINUATION + rb")*(?:" + _SINK_NAMES + rb")\s*\(")
# `True`, then whitespace or continuations, then `,`, `)` or a comment: a
# superset of what may follow a positional flag that reads no comment, so that
# a long line of `True#` is read once, not once per `True`.
_TRUE_THEN_CLOSE = re.compile(rb"True(?=(?:\s|" + _CONTINUATION + rb")*[,)#])")
_BACK_GAP = frozenset(b" \t\x0b\x0c\r\n\\")
#: Where the one pass over the code stops: parentheses, commas, `True`, comments, strings.
_EVENT = re.compile(
    rb"(?P<open>\()|(?P<close>\))|(?P<comma>,)|(?P<true>\bTrue\b)|(?P<comment>#)|(?P<quote>'''|\"\"\"|'|\")"
)
_LINE_END = re.compile(rb"[\r\n]")
#: The rest of a string literal after its opening quote (escapes skipped; a
#: one-quote string ends at its line).
_STRING_REST = {
    b"'": re.compile(rb"(?:[^'\\\r\n]|\\(?:\r\n|[\s\S]))*'"),
    b'"': re.compile(rb'(?:[^"\\\r\n]|\\(?:\r\n|[\s\S]))*"'),
    b"'''": re.compile(rb"(?:[^'\\]|\\[\s\S]|'(?!''))*'''"),
    b'"""': re.compile(rb'(?:[^"\\]|\\[\s\S]|"(?!""))*"""'),
}
#: Something other than whitespace or a line continuation.
_NOT_GAP = re.compile(rb"[^\s\\]|\\(?![\r\n])")


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


#: How far into a file its first two lines (where a coding cookie may stand) are looked for.
_COOKIE = re.compile(rb"\A[^\n]*coding|\A[^\n]*\n[^\n]*coding")
#: What decodes to itself under an ASCII-transparent codec, and not under one that
#: gives ASCII bytes other meanings (``\\x41`` under ``unicode_escape``, ``+AEE-`` under ``utf-7``).
_PROBE = bytes(range(128)) + b"\\x41\\u0041\\N{DIGIT ONE}+AEE-"


@lru_cache(maxsize=32)
def _reads_ascii_as_itself(encoding: str) -> bool:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _PROBE.decode(encoding) == _PROBE.decode("ascii")
    except (LookupError, ValueError, TypeError):
        return False


def readable(data: bytes) -> Optional[bytes]:
    """The bytes the shortcut reads: ``data`` itself where every identifier's
    bytes appear verbatim (ASCII bytes under a codec that reads ASCII as itself);
    else the text Python reads, decoded by its declared codec, folded as Python
    folds identifiers (NFKC), in UTF-8. ``None``: Python cannot decode it.

    Line ends are kept (no character folds into one), so lines found in what this
    returns are the file's lines."""
    if data.isascii():
        if _COOKIE.match(data) is None:
            return data
        import io
        import tokenize

        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError:
            return None
        if _reads_ascii_as_itself(encoding):
            return data
    from .semantic.source import SourceError, decode

    try:
        text, encoding = decode(data)
    except SourceError:
        return None
    import unicodedata

    if _reads_ascii_as_itself(encoding) and unicodedata.is_normalized("NFKC", text):
        return data  # nothing folds (the common case of a comment in another script): its bytes as they are
    return unicodedata.normalize("NFKC", text).encode("utf-8", "surrogatepass")


def may_contain_finding(data: bytes, config: Optional[Options] = None) -> bool:
    """Whether ``data`` may hold a finding (``False`` only when it surely cannot),
    or is refused by Python before it is parsed (undecodable, or holding a NUL: the
    parser then says where).

    The cheapest test that rejects most files runs first (``non_blocking`` is
    one fast substring search); the origin spellings are looked for only in the
    few files that pass it."""
    if PREFILTER_OFF:
        return True
    if b"\0" in data:
        return True
    read = readable(data)
    if read is None:
        return True
    data = read
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
    if any(name.encode() in data for name in IMPLIED_NON_BLOCKING):
        return True
    if strict and _SINK_OPEN.search(data) is not None:
        return True
    return _maybe_positional_true(data) and _positional_true_in_sink(data)


def _maybe_positional_true(data: bytes) -> bool:
    """Whether some ``True`` may follow a comma (a cheap superset of what
    :func:`_positional_true_in_sink` finds)."""
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


def _positional_true_in_sink(data: bytes) -> bool:
    """Whether a positional ``True`` may lie inside the parentheses of a sink's call.

    Each call is read once: a sink spelt inside a call already read needs no
    reading of its own, since its parentheses lie inside the outer ones."""
    opens = list(_SINK_OPEN.finditer(data))
    sink_at = [mo.start() for mo in opens]
    last_true = data.rfind(b"True")
    read_to = -1
    for mo in opens:
        if mo.start() >= read_to:
            read_to = _read_call(data, mo.end(), sink_at, last_true)
            if read_to < 0:
                return True
    return False


_AFTER_COMMA, _AFTER_COMMA_TRUE = 1, 2


def _read_call(data: bytes, pos: int, sink_at: List[int], last_true: int) -> int:
    """Read the call whose ``(`` ends just before ``pos``: the index after its
    ``)``, or ``-1`` when a positional flag may lie inside it.

    The reading skips string literals and comments; inside it, a ``True``
    token between a comma and a ``,`` or ``)`` (only whitespace, continuations
    and comments between) is a positional flag. A sink spelt inside a skipped
    string or comment may still be code the reading cannot tell (an f-string's
    replacement field): a ``True`` anywhere after it counts then. Where the
    reading loses track (a string that never ends, no ``)``), ``-1``."""
    depth = 1
    state = mark = 0  # after a comma, or a comma and `True`, which ended at `mark`
    while True:
        mo = _EVENT.search(data, pos)
        if mo is None:
            return -1
        at, pos, kind = mo.start(), mo.end(), mo.lastgroup
        if state and _NOT_GAP.search(data, mark, at) is not None:
            state = 0
        if kind == "open":
            depth += 1
            state = 0
        elif kind == "close" or kind == "comma":
            if state == _AFTER_COMMA_TRUE:
                return -1
            state, mark = _AFTER_COMMA, pos
            if kind == "close":
                state = 0
                depth -= 1
                if depth == 0:
                    return pos
        elif kind == "true":
            state = _AFTER_COMMA_TRUE if state == _AFTER_COMMA else 0
            mark = pos
        else:
            if kind == "comment":
                end = _LINE_END.search(data, pos)
                if end is None:
                    return -1
                pos = mark = end.start()  # a comment is a gap
            else:
                end = _STRING_REST[mo.group()].match(data, pos)
                if end is None:
                    return -1
                pos = end.end()
                state = 0
            first = bisect_left(sink_at, at)
            if first < len(sink_at) and sink_at[first] < pos and last_true > sink_at[first]:
                return -1  # a sink spelt in what was skipped


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
