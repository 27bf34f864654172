"""Which files under an import root say each word: where deep mode's searches start.

Every search of the project's text deep mode makes (:mod:`.searches`: callers of a
name, stores to an attribute, subclasses of a class) holds its word as a whole
identifier, so a file that does not say the word cannot match. A :class:`WordIndex`
maps each identifier to the files under one import root that say it, and a search
reads and matches only those files: what it finds is what a scan of every file
finds, without reading every file.

An index is kept between runs when the shell gives a :class:`Keeper` (pinfix's
cache directory): one file per root holding the listing it was built from (each
file's stamp: device, inode, size, modification and change times) and the posting
lists. A later run lists the root again and trusts a kept file's postings only
while its stamp is the same (a stamp taken within :data:`UNSETTLED_SECONDS` of the
file's last change is never trusted, as git does for "racily clean" files); every
other file, changed, new or racy, is read and tested for the word itself. Past
:data:`MAX_CHANGED` such files the index is built again (and kept). A pre-commit
call after a one-line edit then reads the index and the files that say each word
asked about, not the whole tree (vLLM 0.34.0: 6,132 files, 85 MB).
"""

from __future__ import annotations

import array
import hashlib
import marshal
import os
import re
import time
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from ...regular import Stamp, read_regular, stamp_of
from ..roots import project_file_names

#: Bumped whenever what a kept index holds changes: a kept index of another format is never read.
INDEX_FORMAT = 1
#: Bytes that may be part of an identifier; every other byte separates words.
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_TO_SPACES = bytes(c if c in _WORD_BYTES else 0x20 for c in range(256))
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*\Z")
#: A stamp taken this close to the file's last change may not see a later edit in the same tick.
UNSETTLED_SECONDS = 2
#: Files a kept index no longer speaks for (changed, new, racy), past which it is built again.
MAX_CHANGED = 256
#: A kept index larger than this is not read back (vLLM 0.34.0's: 9 MB).
MAX_KEPT_INDEX = 1 << 28


def words_of(data: bytes) -> FrozenSet[bytes]:
    """The identifiers ``data`` says (runs of identifier bytes; a non-ASCII byte separates)."""
    return frozenset(data.translate(_TO_SPACES).split())


def read_as_searched(name: str) -> Optional[bytes]:
    """A file's bytes as the searches read them: as Python reads the code
    (:func:`pinfix.prefilter.readable`: a caller spelt ``ｌoad(...)`` calls ``load``);
    ``None``: unreadable, or not a regular file (a FIFO named ``x.py`` is never waited on)."""
    from ...prefilter import readable

    try:
        data = read_regular(name)
    except OSError:
        return None
    return readable(data) or data


class Keeper:
    """Where word indexes are kept between runs: this one keeps none (the shell's
    keeps them in pinfix's cache directory). ``name`` is a plain file name."""

    def load(self, name: str) -> Optional[bytes]:
        return None

    def keep(self, name: str, data: bytes) -> None:
        return None


NO_KEEPER = Keeper()
_keeper: Keeper = NO_KEEPER


def use_keeper(keeper: Optional[Keeper]) -> None:
    """Keep this process's word indexes with ``keeper`` (``None``: nowhere)."""
    global _keeper
    _keeper = keeper if keeper is not None else NO_KEEPER


def current_keeper() -> Keeper:
    return _keeper


def kept_name(root: Path) -> str:
    """The file a root's index is kept in."""
    return "words-" + hashlib.sha256(os.fsencode(str(root))).hexdigest()[:24] + ".marshal"


class WordIndex:
    """The identifiers each ``.py`` file under ``root`` says (the files as
    :func:`~pinfix.semantic.roots.project_file_names` lists them)."""

    def __init__(self, root: Path, keeper: Keeper = NO_KEEPER):
        self.root = root
        self.names: List[str] = list(project_file_names(str(root)))
        self.code = "I"
        #: word -> the numbers (in :attr:`kept`'s listing) of the files saying it, as array bytes.
        self.postings: Dict[bytes, bytes] = {}
        #: A kept file's number -> its number now (``-1``: the index does not speak for it now).
        self.kept: List[int] = []
        #: Files the postings do not speak for: each is tested for a word itself.
        self.direct: List[int] = []
        self._texts: Dict[int, Optional[bytes]] = {}
        self._words: Dict[int, FrozenSet[bytes]] = {}
        stamps = [stamp_of(n) for n in self.names]
        name = kept_name(root)
        #: Whether this index was read back (not built by this process).
        self.reused = self._reuse(keeper.load(name), stamps, keeper)
        if not self.reused:
            self._build(stamps, keeper, name)

    # --- building, keeping, reading back ----------------------------------------------------

    def _build(self, stamps: Sequence[Optional[Stamp]], keeper: Keeper, name: str) -> None:
        started = time.time_ns()
        stamps = list(stamps)
        found: Dict[bytes, List[int]] = {}
        for i, n in enumerate(self.names):
            data = read_as_searched(n)
            if data is None:
                stamps[i] = None  # unreadable now: read again next time
                continue
            for word in words_of(data):
                numbers = found.get(word)
                if numbers is None:
                    found[word] = [i]
                else:
                    numbers.append(i)
        self.code = "H" if len(self.names) < 1 << 16 else "I"
        self.postings = {word: array.array(self.code, numbers).tobytes() for word, numbers in found.items()}
        self.kept = list(range(len(self.names)))
        self.direct = []
        # Changed within UNSETTLED_SECONDS of this build (or while it went on): an edit in the same
        # tick of the file system's clock may keep the stamp, so the next run reads it. Any
        # later edit moves the change time (which no program sets) past the one kept.
        trusted = started - int(UNSETTLED_SECONDS * 1_000_000_000)
        kept_stamps = [s if s is not None and s[4] < trusted else None for s in stamps]
        try:
            keeper.keep(
                name, marshal.dumps((INDEX_FORMAT, str(self.root), self.names, kept_stamps, self.code, self.postings))
            )
            _keep_list(keeper, self.root, self.names, kept_stamps, found)
        except (OSError, ValueError):
            pass  # a kept index is only ever a shortcut

    def _reuse(self, raw: Optional[bytes], stamps: Sequence[Optional[Stamp]], keeper: Keeper = NO_KEEPER) -> bool:
        if raw is None or len(raw) > MAX_KEPT_INDEX:
            return False
        try:
            fmt, root, names, kept_stamps, code, postings = marshal.loads(raw)
        except (ValueError, EOFError, TypeError):
            return False
        if (
            fmt != INDEX_FORMAT
            or root != str(self.root)
            or code not in ("H", "I")
            or not isinstance(names, list)
            or not isinstance(kept_stamps, list)
            or len(kept_stamps) != len(names)
            or not isinstance(postings, dict)
        ):
            return False
        now = {n: i for i, n in enumerate(self.names)}
        kept = [-1] * len(names)
        spoken = [False] * len(self.names)
        for j, (n, then) in enumerate(zip(names, kept_stamps)):
            i = now.get(n) if isinstance(n, str) else None
            if i is not None and then is not None and then == stamps[i]:
                kept[j] = i
                spoken[i] = True
        direct = [i for i, known in enumerate(spoken) if not known]
        if len(direct) > MAX_CHANGED:
            return False
        self.code, self.postings, self.kept, self.direct = code, postings, kept, direct
        # Its list gone (removed, or its writing failed: an index of an earlier pinfix is never
        # here, the cache's folder is named by pinfix's code): written again from the index.
        if keeper.load(list_name(self.root)) is None:
            try:
                _keep_list(keeper, self.root, names, kept_stamps, postings)
            except (OSError, ValueError):
                pass
        return True

    # --- what it answers --------------------------------------------------------------------

    def text(self, i: int) -> Optional[bytes]:
        """File ``i``'s bytes as searched (read once)."""
        if i not in self._texts:
            self._texts[i] = read_as_searched(self.names[i])
        return self._texts[i]

    def _words_at(self, i: int) -> FrozenSet[bytes]:
        found = self._words.get(i)
        if found is None:
            data = self.text(i)
            found = self._words[i] = words_of(data) if data is not None else frozenset()
        return found

    def files_saying(self, word: bytes) -> List[int]:
        """The files (their numbers, in order) that may say ``word``: for an identifier,
        those saying it as a whole word; for anything else, every file holding its bytes."""
        if not _IDENTIFIER.match(word):
            return [i for i in range(len(self.names)) if word in (self.text(i) or b"")]
        out: List[int] = []
        raw = self.postings.get(word, b"")
        numbers = array.array(self.code)
        if not isinstance(raw, bytes) or len(raw) % numbers.itemsize:
            # Not what this module writes (a cache directory may come from anywhere): this
            # word's files are found by reading every file.
            return [i for i in range(len(self.names)) if word in self._words_at(i)]
        if raw:
            numbers.frombytes(raw)
            kept = self.kept
            out = [kept[j] for j in numbers if 0 <= j < len(kept) and kept[j] >= 0]
        out.extend(i for i in self.direct if word in self._words_at(i))
        out.sort()
        return out


def _keep_list(
    keeper: Keeper, root: Path, names: List[str], stamps: List[Optional[Stamp]], words: Iterable[bytes]
) -> None:
    """Keep the :class:`WordList` of an index (its files, their stamps, its words): the one
    question the deep cache asks of a whole tree, whether any file says a name, is then
    answered without reading the postings (or every file)."""
    said = b"\n".join(w for w in words if isinstance(w, bytes))
    spoken = {n: s for n, s in zip(names, stamps) if s is not None}
    keeper.keep(list_name(root), marshal.dumps((INDEX_FORMAT, str(root), spoken, b"\n" + said + b"\n")))


def list_name(root: Path) -> str:
    """The file a root's :class:`WordList` is kept in (beside its index: :func:`kept_name`)."""
    return kept_name(root)[: -len(".marshal")] + ".list"


class WordList:
    """The identifiers the ``.py`` files under a root said when its :class:`WordIndex` was
    last built, without which file says each: what tells a pre-commit call, after a
    function is added, that no module of the project says its name, at the cost of one
    read (vLLM 0.34.0: 184,000 words, 3.3 MB) and not the read of every module a verdict
    read (2,000 files). It speaks for a file only while the file's stamp is the one kept."""

    def __init__(self, stamps: Dict[str, Stamp], words: bytes):
        #: Each file it speaks for, with the stamp it had (a racy one is not here).
        self.stamps = stamps
        self._words = words

    @classmethod
    def kept(cls, root: Path, keeper: Keeper) -> Optional["WordList"]:
        """The list kept for ``root`` (``None``: none, or not one of this format)."""
        raw = keeper.load(list_name(root))
        if raw is None or len(raw) > MAX_KEPT_INDEX:
            return None
        try:
            fmt, kept_root, stamps, words = marshal.loads(raw)
        except (ValueError, EOFError, TypeError, MemoryError):
            return None
        if (
            fmt != INDEX_FORMAT
            or kept_root != str(root)
            or not isinstance(stamps, dict)
            or not isinstance(words, bytes)
            or not words.startswith(b"\n")
            or not words.endswith(b"\n")
        ):
            return None
        # (A stamp of another shape is equal to none taken: its file is read.)
        return cls(stamps, words)

    def may_say(self, word: bytes) -> bool:
        """Whether some file it speaks for may say ``word`` (anything not an identifier: yes)."""
        return not _IDENTIFIER.match(word) or b"\n" + word + b"\n" in self._words

    def speaks_for(self, name: str, stamp: Optional[Stamp]) -> bool:
        """Whether the list speaks for the file ``name`` whose stamp is now ``stamp``."""
        return stamp is not None and type(stamp) is tuple and self.stamps.get(name) == stamp


class Searcher:
    """The searches of the project's text over one or more import roots (a file under
    two of them is searched once, as part of the first)."""

    def __init__(self, indexes: Sequence[WordIndex]):
        self.indexes = list(indexes)

    def matching(self, pattern: "re.Pattern[bytes]", word: bytes) -> Iterator[Tuple[Path, bytes]]:
        """``(path, text)`` of each file that says ``word`` and matches ``pattern``, in order."""
        earlier: Set[str] = set()
        for index in self.indexes:
            for i in index.files_saying(word):
                name = index.names[i]
                if name in earlier:
                    continue
                data = index.text(i)
                if data is not None and pattern.search(data):
                    yield Path(name), data
            earlier.update(index.names)

    @staticmethod
    def lines_matching(pattern: "re.Pattern[bytes]", data: bytes) -> List[int]:
        """The lines (1-based) on which ``pattern`` matches in ``data``."""
        return sorted({data.count(b"\n", 0, m.start()) + 1 for m in pattern.finditer(data)})


__all__ = [
    "INDEX_FORMAT",
    "Keeper",
    "MAX_CHANGED",
    "NO_KEEPER",
    "UNSETTLED_SECONDS",
    "Searcher",
    "WordIndex",
    "WordList",
    "current_keeper",
    "kept_name",
    "list_name",
    "read_as_searched",
    "use_keeper",
    "words_of",
]
