"""Reading a source file (or a cache entry, or a ``.gitignore``) without ever
waiting on it: a FIFO, socket or device where a regular file was expected is
refused, not opened for a read that would block until a writer comes.

The lowest layer: the analysis (which reads other modules of a project) and the
shell (which reads the files it checks, its cache and its settings) both use it.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Optional, Tuple, Union

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)
#: The most a settings file may hold (real ones hold kilobytes): ``--config
#: /dev/zero`` or an endless pipe is refused at this size, not read without end.
MAX_SETTINGS_BYTES = 1 << 24


#: What identifies a file's bytes without reading them: device, inode, size,
#: modification and change times (ns). A changed link target or an edit that kept
#: the size and the modification time still changes the inode or the change time.
Stamp = Tuple[int, int, int, int, int]


def stamp_of(path: str) -> Optional[Stamp]:
    """The stamp of a regular file, through links (``None``: anything else, or no file)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class NotRegularFile(OSError):
    """A FIFO, socket or device where a source file (or a cache entry, or a
    ``.gitignore``) was expected: never read, so never waited on."""

    def __init__(self, path: "Union[str, os.PathLike[str]]"):
        super().__init__(errno.EINVAL, "not a regular file", os.fspath(path))


def read_regular(
    path: "Union[str, os.PathLike[str]]",
    follow_symlinks: bool = True,
    limit: Optional[int] = None,
    dir_fd: Optional[int] = None,
) -> bytes:
    """The bytes of the regular file at ``path``.

    Opened with ``O_NONBLOCK`` (opening a FIFO for reading would otherwise
    wait for a writer) and checked with ``fstat`` on the open descriptor, so
    a FIFO, socket or device raises :class:`NotRegularFile` and is never read.
    ``follow_symlinks=False`` refuses a link in the last component (``ELOOP``).
    ``limit``: raise ``EFBIG`` rather than read more than this many bytes.
    ``dir_fd``: ``path`` is relative to that open directory (see :func:`os.open`).
    Other failures raise ``OSError``.
    """
    flags = os.O_RDONLY | _BINARY | _NONBLOCK | (0 if follow_symlinks else _NOFOLLOW)
    fd = os.open(path, flags) if dir_fd is None else os.open(path, flags, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
            raise NotRegularFile(path)
        size = info.st_size
        if limit is not None and size > limit:
            raise OSError(errno.EFBIG, "file too large", os.fspath(path))
        data = os.read(fd, size + 1)
        if len(data) > size:  # it grew while we read
            if limit is not None and len(data) > limit:
                raise OSError(errno.EFBIG, "file too large", os.fspath(path))
            return data + _read_to_end(fd, path, None if limit is None else limit - len(data))
        return data
    finally:
        os.close(fd)


def read_bounded(path: "Union[str, os.PathLike[str]]", limit: int) -> bytes:
    """The bytes ``path`` names, whatever it is (a regular file, a pipe such as
    ``<(...)``, a device), but never more than ``limit``: past that ``EFBIG``
    (``/dev/zero`` or an endless pipe ends there, not in memory exhaustion).
    For a file the user named; one found by a walk is read with
    :func:`read_regular`, so a FIFO there is never waited on."""
    fd = os.open(path, os.O_RDONLY | _BINARY)
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
        return _read_to_end(fd, path, limit)
    finally:
        os.close(fd)


def _read_to_end(fd: int, path: "Union[str, os.PathLike[str]]", limit: Optional[int]) -> bytes:
    """What ``fd`` holds up to its end; ``EFBIG`` once more than ``limit`` came."""
    chunks = []
    total = 0
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total > limit:
            raise OSError(errno.EFBIG, "file too large", os.fspath(path))


__all__ = ["MAX_SETTINGS_BYTES", "NotRegularFile", "read_bounded", "read_regular"]
