"""Replace a file whole, or not at all."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


class WriteRefused(Exception):
    """The file was left as it was; the message says why."""


def replace_file(path: Path, expected: bytes, new: bytes) -> None:
    """Write ``new`` to ``path`` if it still holds ``expected``.

    The bytes go to a temporary file in the same directory, are flushed to
    disk, get the original's mode bits, and are renamed over the original, so a
    reader (or a crash, or SIGINT) sees either the old file or the new one.
    A symlink is written through to its target, never replaced by a file.
    """
    target = Path(os.path.realpath(path))
    try:
        info = target.stat()
        # Root may write anywhere; a file with no write bit is still read-only by intent.
        if not os.access(target, os.W_OK) or not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
            raise WriteRefused("file is read-only; not changed")
        if target.read_bytes() != expected:
            raise WriteRefused("file changed while pinfix was working on it; not overwritten")
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".pinfix-tmp")
    except OSError as e:
        raise WriteRefused(f"cannot write: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(new)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise WriteRefused(f"cannot write: {e.strerror or e}") from None
        raise
