"""The searches of the project's text deep mode makes, one builder each: what the
deep cache records of a verdict, and the only searches it runs again on a later run.

A cache directory may come from anywhere (a repository can commit one of pinfix's
shape), so a recorded search is run again only when it is one of these, rebuilt
from its word: any other pattern (one that backtracks without end, say) is never
compiled, and the verdict that recorded it is redone.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Tuple

#: A byte of an identifier's UTF-8 (``\\b`` and ``\\w`` on bytes know ASCII only: a name
#: with a non-ASCII letter first or last never matched) and the edges of a whole name.
NAME_BYTE = rb"[\w\x80-\xff]"
NOT_AFTER_NAME = rb"(?<!" + NAME_BYTE + rb")"
NOT_BEFORE_NAME = rb"(?!" + NAME_BYTE + rb")"


def _calls(name: str) -> bytes:
    # The word first, then what may not stand before it (a look-behind over the byte
    # before and the word): a pattern that starts with a literal is searched for as one,
    # 24x faster over vLLM's text than one that tries a look-behind at every byte.
    word = re.escape(name.encode())
    return word + rb"(?<!" + NAME_BYTE + word + rb")\s*\("


def _subclasses(name: str) -> bytes:
    return rb"class\s+" + NAME_BYTE + rb"+\s*\([^)]*" + NOT_AFTER_NAME + re.escape(name.encode()) + NOT_BEFORE_NAME


def _stores(attr: str) -> bytes:
    return rb"\.\s*" + re.escape(attr.encode()) + rb"\s*(?:\[[^\]\n]*\]\s*)?=(?!=)"


def calls_of(name: str) -> "re.Pattern[bytes]":
    """``name(`` (a call of a function or a class of that name), after no name byte."""
    return re.compile(_calls(name))


def subclasses_of(name: str) -> "re.Pattern[bytes]":
    """``class X(..., name, ...)``: a class naming ``name`` among its bases."""
    return re.compile(_subclasses(name))


def stores_to(attr: str) -> "re.Pattern[bytes]":
    """``.attr = ...`` or ``.attr[...] = ...`` (not ``==``)."""
    return re.compile(_stores(attr))


#: Every search deep mode makes, as the text of its pattern for the word each match holds
#: (told apart without compiling anything).
SEARCHES: Tuple[Callable[[str], bytes], ...] = (_calls, _subclasses, _stores)


def record(pattern: "re.Pattern[bytes]", word: str) -> str:
    """A search as the deep cache records it: ``word\\0pattern``, each its UTF-8 bytes
    one character a byte."""
    return word.encode().decode("latin-1") + "\0" + pattern.pattern.decode("latin-1")


@lru_cache(maxsize=4096)
def is_recorded_search(search: str) -> bool:
    """Whether ``search`` (as :func:`record` writes it) is one pinfix makes."""
    word, sep, pattern = search.partition("\0")
    if not sep:
        return False
    try:
        text = word.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return False
    return text.isidentifier() and any(make(text).decode("latin-1") == pattern for make in SEARCHES)


__all__ = [
    "NAME_BYTE",
    "NOT_AFTER_NAME",
    "NOT_BEFORE_NAME",
    "calls_of",
    "subclasses_of",
    "stores_to",
    "SEARCHES",
    "record",
    "is_recorded_search",
]
