"""Module summaries kept by their file's content hash.

A summary depends only on the file's bytes and on the module's name (relative
imports are resolved from it), so it is kept under the hash of both: an
unchanged file is never parsed again for its summary. Within one process every
summary is memoised; across runs they are kept in pinfix's cache directory when
the run has one (the shell names it with :func:`use_directory`, after making it
inside a cache directory pinfix owns: nothing here creates more than the
two-character folders below it), one :mod:`marshal` file per summary, written
atomically, read back only when it is a regular file holding a summary of this
format.
"""

from __future__ import annotations

import ast
import hashlib
import marshal
import os
import stat
from pathlib import Path
from typing import Callable, Dict, Optional

from ...regular import read_regular
from ..source import SourceError, SourceText
from .summary import FORMAT, ModuleSummary, from_data, summarize, to_data

#: A kept summary's file: its key, then this.
SUFFIX = ".summary"
#: A kept summary larger than this is not read back (no module's comes near).
MAX_KEPT = 1 << 26


def summary_key(data: bytes, name: str, is_package: bool) -> str:
    """The key of the summary of a module with these bytes and this name."""
    digest = hashlib.sha256(b"%d\0%s\0%d\0" % (FORMAT, name.encode("utf-8", "surrogateescape"), is_package))
    digest.update(data)
    return digest.hexdigest()


class SummaryStore:
    """Summaries by key, in memory and (with a directory) on disk."""

    def __init__(self) -> None:
        self.directory: Optional[Path] = None
        #: Writes ``directory/name`` whole or not at all (the shell's; raises ``OSError``).
        self.write: Optional[Callable[[Path, str, bytes], None]] = None
        self._known: Dict[str, Optional[ModuleSummary]] = {}
        #: How many summaries this process made by parsing (the rest came from memory or disk).
        self.parsed = 0
        self.loaded = 0

    def use_directory(
        self, directory: Optional[Path], write: Optional[Callable[[Path, str, bytes], None]] = None
    ) -> None:
        """Keep summaries in ``directory`` (an existing directory of pinfix's cache,
        written with ``write``; ``None``: in memory only)."""
        self.directory = directory if write is not None else None
        self.write = write

    def _path(self, key: str) -> Optional[Path]:
        return None if self.directory is None else self.directory / key[:2] / (key + SUFFIX)

    def get(
        self, data: bytes, name: str, is_package: bool, tree: Optional[ast.Module] = None, memo: bool = True
    ) -> Optional[ModuleSummary]:
        """The summary of a module with these bytes (``tree``: its parse, when the caller
        has one; else it is parsed here, only if no summary is kept). ``None``: Python
        cannot parse it. With ``memo`` false, a summary not in memory is not kept there
        (the project's indexes keep what they need of every module's, not the summaries)."""
        key = summary_key(data, name, is_package)
        if key in self._known:
            return self._known[key]
        found = self._read(key) if tree is None else None
        if found is None:
            if tree is None:
                try:
                    tree = SourceText.from_bytes(data, name or "<module>").parse()
                except (SourceError, MemoryError, RecursionError, ValueError):
                    return None
            try:
                found = summarize(tree, name, is_package)
            except (RecursionError, MemoryError):
                return None
            self.parsed += 1
            self._write(key, found)
        else:
            self.loaded += 1
        if memo:
            self._known[key] = found
        return found

    def _read(self, key: str) -> Optional[ModuleSummary]:
        path = self._path(key)
        if path is None:
            return None
        try:
            raw = read_regular(path, follow_symlinks=False, limit=MAX_KEPT)
            return from_data(marshal.loads(raw))
        except (OSError, ValueError, EOFError, TypeError):
            return None

    def _write(self, key: str, summary: ModuleSummary) -> None:
        path = self._path(key)
        if path is None or self.write is None:
            return
        try:
            try:
                mode: Optional[int] = os.lstat(path.parent).st_mode
            except FileNotFoundError:
                os.mkdir(path.parent)
                mode = os.lstat(path.parent).st_mode
            if mode is None or not stat.S_ISDIR(mode):
                return  # a link (a cache committed to a repository may hold one) or a file: never written through
            self.write(path.parent, path.name, marshal.dumps(to_data(summary)))
        except (OSError, ValueError):
            pass  # a cache is only ever a shortcut

    def forget(self) -> None:
        """Drop the memoised summaries (kept ones stay on disk)."""
        self._known.clear()


#: The process's store.
STORE = SummaryStore()


def use_directory(directory: Optional[Path], write: Optional[Callable[[Path, str, bytes], None]] = None) -> None:
    STORE.use_directory(directory, write)


def summary_of(
    data: bytes, name: str, is_package: bool, tree: Optional[ast.Module] = None, memo: bool = True
) -> Optional[ModuleSummary]:
    return STORE.get(data, name, is_package, tree, memo)


__all__ = ["MAX_KEPT", "STORE", "SUFFIX", "SummaryStore", "summary_key", "summary_of", "use_directory"]
