"""Replace a file whole, or not at all; and tell a rewrite that changed more
than it meant to.

Writes never go through a symbolic link unless asked to, never split a file's
hard links, keep the file's mode bits and (where permitted) its owner and
group, and land by renaming a flushed temporary file, so a reader (or a crash,
or SIGINT) sees the old file or the new one.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import tempfile
from pathlib import Path
from typing import AbstractSet, Iterator, List, Optional, Tuple, Union

from .regular import read_regular

#: How much of a file's name its temporary file's name repeats (in bytes).
TEMPORARY_NAME_BYTES = 100
#: ``allowed_old_lines`` may hold this: text may be inserted before line 1.
START_OF_FILE = 0


class WriteRefused(Exception):
    """The file was left as it was; the message says why.

    ``reason`` is the short form the run's summary counts ("disk full",
    "read-only", ...)."""

    def __init__(self, message: str, reason: str = "cannot write"):
        super().__init__(message)
        self.reason = reason


# --- line-exact comparison ------------------------------------------------------------


def line_offsets(data: bytes) -> List[int]:
    """Where each line starts, plus ``len(data)``: lines end at ``\\r\\n``, ``\\r``
    or ``\\n`` only, as CPython's tokenizer counts them (``bytes.splitlines``
    splits on exactly these; ``str.splitlines`` also on ``\\x0b``, ``\\x0c``,
    ``\\x1c``..., which are no line ends for Python)."""
    return [0, *itertools.accumulate(map(len, data.splitlines(keepends=True)))]


def _starts_line(data: bytes, at: int, text: bytes) -> bool:
    """Whether ``text`` placed at ``at`` in ``data`` would begin a line there
    (not glued to the line before, nor making one ``\\r\\n`` of a ``\\r`` and a ``\\n``)."""
    if at == 0:
        return True
    before = data[at - 1 : at]
    if before == b"\n":
        return True
    return before == b"\r" and not text.startswith(b"\n")


def _keeps_end(data: bytes, end: int, text: bytes) -> bool:
    """Whether ``text``, ending at ``end`` in ``data``, keeps its own line end
    (a lone ``\r`` followed by a ``\n`` would become one ``\r\n``)."""
    return not (text.endswith(b"\r") and data[end : end + 1] == b"\n")


def _show(line: bytes, limit: int = 60) -> str:
    text = repr(line)[1:] if line else "''"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _line_at(data: bytes, line: bytes, start: int) -> int:
    """Where ``line`` first begins a line of ``data`` at or after ``start``
    (-1: nowhere): for messages, where a segment was meant to be."""
    found = data.find(line, start)
    while found >= 0 and not _starts_line(data, found, line):
        found = data.find(line, found + 1)
    return found


def _first_difference(old_lines: List[bytes], new: bytes, at: int) -> Tuple[int, bytes, bytes]:
    """(index in ``old_lines``, old line, new line) of the first line that
    differs when ``old_lines`` are laid over ``new`` from offset ``at``."""
    new_lines = new[at:].splitlines(keepends=True)
    for k, line in enumerate(old_lines):
        other = new_lines[k] if k < len(new_lines) else b""
        if other != line:
            return k, line, other
    return len(old_lines) - 1, old_lines[-1], b""


def _kept_runs(n: int, allowed: AbstractSet[int]) -> Iterator[Tuple[int, int]]:
    """``(i, j)`` for each run of lines ``i+1 .. j`` (1-based) of ``n`` that are not allowed."""
    start = 0
    for line in sorted(k for k in allowed if 1 <= k <= n):
        if line - 1 > start:
            yield start, line - 1
        start = line
    if n > start:
        yield start, n


def unintended_change(old: bytes, new: bytes, allowed_old_lines: AbstractSet[int]) -> Optional[str]:
    """Why ``new`` is not ``old`` with only the allowed lines changed, or ``None``.

    ``allowed_old_lines`` holds 1-based line numbers of ``old`` (line ends as
    in :func:`line_offsets`) that the rewrite may replace, delete or add text
    next to; :data:`START_OF_FILE` allows text before line 1. Every other line
    must appear in ``new`` byte for byte, whole (with its own line end), in
    order, with nothing inserted between two of them. A pure function of bytes
    and line numbers, whatever made the edits.
    """
    offsets = line_offsets(old)
    n = len(offsets) - 1
    pos = 0
    for i, j in _kept_runs(n, allowed_old_lines):
        # Lines i+1 .. j (1-based) must stay exactly as they are.
        segment = old[offsets[i] : offsets[j]]
        anchored_start = i == 0 and START_OF_FILE not in allowed_old_lines
        anchored_end = j == n
        if anchored_start:
            found = 0 if new.startswith(segment) and _keeps_end(new, len(segment), segment) else -1
            if found == 0 and anchored_end and len(new) != len(segment):
                found = -1
        elif anchored_end:
            found = len(new) - len(segment)
            if found < pos or not new.endswith(segment) or not _starts_line(new, found, segment):
                found = -1
        else:
            found = new.find(segment, pos)
            while found >= 0 and not (
                _starts_line(new, found, segment) and _keeps_end(new, found + len(segment), segment)
            ):
                found = new.find(segment, found + 1)
        if found < 0:
            lines = segment.splitlines(keepends=True)
            where = 0 if anchored_start else _line_at(new, lines[0], pos)
            if where < 0 and anchored_end:  # the last lines of each, one for one
                tail = new.splitlines(keepends=True)[-len(lines) :]
                where = len(new) - sum(map(len, tail))
            elif where < 0:
                where = pos
            k, before, after = _first_difference(lines, new, where)
            return f"line {i + 1 + k} would become {_show(after)} (was {_show(before)})"
        pos = found + len(segment)
    ending = _line_end(old)
    if ending != _line_end(new):
        return f"the file's last line end would become {_show(_line_end(new))} (was {_show(ending)})"
    return None


def _line_end(data: bytes) -> bytes:
    for end in (b"\r\n", b"\n", b"\r"):
        if data.endswith(end):
            return end
    return b""


# --- where a write may go --------------------------------------------------------------


def symlink_in_path(path: "Union[str, os.PathLike[str]]") -> Optional[str]:
    """The first symbolic link among ``path``'s components as given, or ``None``.

    The components that lead to the current directory (or to one of its
    ancestors) are trusted: the user stands there. Everything named below
    that, down to the file itself, is checked with ``lstat``.
    """
    given = os.path.abspath(os.fspath(path))
    cwd = os.getcwd()
    parts = Path(given).parts
    current = parts[0]
    trusted = True
    for part in parts[1:]:
        current = os.path.join(current, part)
        if trusted and (cwd == current or cwd.startswith(current.rstrip(os.sep) + os.sep)):
            continue  # an ancestor of the working directory (as the user reached it)
        trusted = False
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return current
        except OSError:
            return None  # gone: the write fails on its own, with its own reason
    return None


def _refusal(e: OSError) -> WriteRefused:
    """A write that failed, with the reason a summary can count."""
    reasons = {
        errno.ENOSPC: "disk full",
        getattr(errno, "EDQUOT", -1): "disk quota exceeded",
        errno.EROFS: "read-only file system",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
    }
    reason = reasons.get(e.errno or 0, "cannot write")
    return WriteRefused(f"cannot write: {e.strerror or e}; not changed", reason)


def replace_file(path: Path, expected: bytes, new: bytes, follow_symlinks: bool = False) -> None:
    """Write ``new`` to ``path`` if it still holds ``expected``.

    The bytes go to a temporary file in the same directory, are flushed to
    disk, get the original's mode bits and (where permitted) its owner, group
    and extended attributes (ACLs included), and are renamed over the original. Refused, with
    :class:`WriteRefused`: a path through a symbolic link (unless
    ``follow_symlinks``: then the link's target is written, the link kept), a
    file that is not regular, read-only, has other hard links (replacing it
    would leave them holding the old text) or no longer holds ``expected``
    (unless it holds ``new`` already: then there is nothing to do), checked
    when the file is read and again after the new bytes are flushed, just
    before the rename (its identity, size, time and bytes). After the rename the
    directory is flushed too.
    """
    if not follow_symlinks:
        link = symlink_in_path(path)
        if link is not None:
            where = (
                "is a symbolic link"
                if os.path.abspath(link) == os.path.abspath(path)
                else f"is reached through the symbolic link {link}"
            )
            raise WriteRefused(f"{where}; not changed (use --follow-symlinks to write through links)", "symbolic link")
    target = Path(os.path.realpath(path))
    try:
        info = os.stat(target)
        if not stat.S_ISREG(info.st_mode):
            raise WriteRefused("not a regular file; not changed", "not a regular file")
        # Root may write anywhere; a file with no write bit is still read-only by intent.
        if not os.access(target, os.W_OK) or not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
            raise WriteRefused("file is read-only; not changed", "read-only")
        if info.st_nlink > 1:
            raise WriteRefused(
                f"file has {info.st_nlink} hard links; replacing it would leave the other names "
                "with the old text, so it is not changed",
                "hard links",
            )
        current = read_regular(target)
        if current == new and current != expected:
            return  # it holds what we would write (a try whose report was lost with its worker wrote it)
        if current != expected:
            raise WriteRefused("file changed while pinfix was working on it; not overwritten", "changed while fixing")
        # The name's first bytes only: a long name (255 bytes is allowed) plus ours would not fit.
        short = os.fsdecode(os.fsencode(target.name)[:TEMPORARY_NAME_BYTES])
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{short}.", suffix=".pinfix-tmp")
    except OSError as e:
        raise _refusal(e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            _keep_owner(f.fileno(), info)
            _keep_extended_attributes(f.fileno(), target)
            f.write(new)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        _still_as_read(target, info, expected)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise _refusal(e) from None
        raise
    _sync_directory(target.parent)


def _sync_directory(directory: Path) -> None:
    """Flush the directory entry the rename changed, so that after a crash the name
    holds the new file, not the old one or nothing. The file is replaced already:
    a file system that cannot sync a directory leaves it as the rename left it."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _identity(info: os.stat_result) -> Tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _still_as_read(target: Path, info: os.stat_result, expected: bytes) -> None:
    """Raise :class:`WriteRefused` unless ``target`` is still the file ``info`` described
    and holds ``expected``: checked again at the last moment, after the new bytes were
    flushed (which takes a while), so an editor's save in the meantime is never replaced.
    The bytes are compared too: a save within one timestamp tick keeps the stat."""
    try:
        now = os.stat(target)
        same = _identity(now) == _identity(info) and read_regular(target) == expected
    except OSError:
        same = False
    if not same:
        raise WriteRefused("file changed while pinfix was fixing it; not overwritten", "changed while fixing")


def _keep_owner(fd: int, info: os.stat_result) -> None:
    """The new file gets the old one's owner and group, or as much of them as
    this user may give (anyone may keep a group they belong to)."""
    if not hasattr(os, "fchown"):
        return
    for uid, gid in ((info.st_uid, info.st_gid), (-1, info.st_gid)):
        try:
            os.fchown(fd, uid, gid)
            return
        except OSError:
            continue


def _keep_extended_attributes(fd: int, source: Path) -> None:
    """The new file gets the old one's extended attributes where this user may set
    them: POSIX ACLs (``system.posix_acl_access``), ``user.*`` notes, labels. A
    rename would otherwise drop them with the old inode."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(source)
    except OSError:
        return  # not supported here
    for name in names:
        try:
            os.setxattr(fd, name, os.getxattr(source, name))
        except OSError:
            continue  # one this user may not set (a ``trusted.*`` one, say)


def atomic_write(directory: Path, name: str, data: bytes) -> None:
    """``directory/name`` holds ``data`` whole or keeps what it held: written to
    a temporary file, then renamed (a link named ``name`` is replaced, never
    written through). Raises ``OSError``."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, directory / name)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
