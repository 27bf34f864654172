"""Content-hash cache of ``check`` results, like ruff's.

An entry is keyed by the file's path and bytes, pinfix's own analysis code and
the settings, so any change to one of them misses. Each entry is one small
file written to a temporary name and renamed into place: concurrent runs can
share a cache and a reader never sees half an entry. A cache that cannot be
read or written is simply not used. ``--no-cache`` turns it off.

The cache lives in the project's root (the directory of the ``pyproject.toml``
the settings came from). Without one, files under the working directory's
project use that project's cache, and other files none: pinfix never leaves a
cache directory beside files outside a project. It never reads, creates or
writes anything through a symbolic link there (a committed ``.pinfix_cache``
link could point anywhere), and reads only regular files (an entry that is a
FIFO would block).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import asdict, fields
from pathlib import Path
from typing import Optional

from . import __version__
from .config import Config, find_pyproject

CACHE_DIR_NAME = ".pinfix_cache"
#: What ``.pinfix_cache/.gitignore`` holds: everything in it is ignored.
IGNORE_ALL = b"*\n"
#: An entry larger than this is not ours (ours are a few kB).
MAX_ENTRY = 16 * 1024 * 1024


def _code_fingerprint() -> str:
    """Hash of pinfix's analysis sources: a changed rule never reuses old results."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).resolve().parent
    for directory in (here, here.parent / "codemods"):
        for source in sorted(directory.glob("*.py")):
            try:
                digest.update(source.name.encode() + source.read_bytes())
            except OSError:
                digest.update(source.name.encode())
    return digest.hexdigest()


def _real_directory(path: Path) -> Optional[bool]:
    """``True``: a directory, not a link; ``None``: nothing there; ``False``: anything else."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return False
    return stat.S_ISDIR(mode)


class ResultCache:
    def __init__(self, directory: Path, config: Config, scope: Optional[Path] = None):
        self.directory = directory
        settings = {f.name: str(getattr(config, f.name)) for f in fields(config) if f.name != "source"}
        self.salt = hashlib.sha256((_code_fingerprint() + json.dumps(settings, sort_keys=True)).encode()).digest()
        #: Only files under this directory are cached (``None``: any).
        self.scope = None if scope is None else str(scope) + os.sep
        # A link or a file where the cache should be: not ours to use.
        self.usable = _real_directory(directory) is not False
        self._tagged = False

    @classmethod
    def for_config(cls, config: Config) -> Optional["ResultCache"]:
        """The cache of the project the settings came from; without a
        ``pyproject.toml`` there, the working directory's project's cache for
        the files under it; ``None`` outside any project."""
        if config.source is not None:
            return cls(config.root / CACHE_DIR_NAME, config)
        here = find_pyproject(Path.cwd())
        if here is None:
            return None
        root = here.parent.resolve()
        return cls(root / CACHE_DIR_NAME, config, scope=root)

    def _covers(self, path: str) -> bool:
        return self.scope is None or os.path.abspath(path).startswith(self.scope)

    def _entry(self, path: str, data: bytes) -> Path:
        key = hashlib.sha256(self.salt + path.encode("utf-8", "surrogateescape") + b"\0" + data).hexdigest()
        return self.directory / key[:2] / key

    def get(self, path: str, data: bytes):  # type: ignore[no-untyped-def]
        """The cached report for these bytes at this path, or ``None``."""
        from .engine import Diagnostic, FileReport
        from .writing import read_regular

        if not self.usable or not self._covers(path):
            return None
        try:
            raw = json.loads(read_regular(self._entry(path, data), follow_symlinks=False, limit=MAX_ENTRY).decode("utf-8"))
            return FileReport(path, [Diagnostic(**d) for d in raw["diagnostics"]], parsed=raw["parsed"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
            return None  # absent, not ours, or not a regular file: a miss

    def put(self, path: str, data: bytes, report) -> None:  # type: ignore[no-untyped-def]
        """Remember a clean check (no error, nothing changed) of these bytes."""
        from .writing import atomic_write

        if not self.usable or report.error is not None or report.changed or not self._covers(path):
            return
        entry = self._entry(path, data)
        payload = json.dumps({"parsed": report.parsed, "diagnostics": [asdict(d) for d in report.diagnostics]})
        try:
            self._make_directory(self.directory)
            self._tag()
            self._make_directory(entry.parent)
            atomic_write(entry.parent, entry.name, payload.encode("utf-8"))
        except OSError:
            self.usable = False  # read-only tree, full disk, a link in the way: run without a cache

    @staticmethod
    def _make_directory(directory: Path) -> None:
        state = _real_directory(directory)
        if state is None:
            try:
                directory.mkdir()
            except FileExistsError:
                pass
            state = _real_directory(directory)
        if state is not True:
            raise NotADirectoryError(f"{directory} is not a plain directory")

    def _tag(self) -> None:
        """Like ruff's cache: keep it out of version control and of our own
        walks. Written whole or not at all, and repaired when a full disk (or
        anything else) left it empty or different."""
        if self._tagged:
            return
        from .writing import atomic_write, read_regular

        try:
            current: Optional[bytes] = read_regular(self.directory / ".gitignore", follow_symlinks=False, limit=1024)
        except OSError:
            current = None
        if current != IGNORE_ALL:
            atomic_write(self.directory, ".gitignore", IGNORE_ALL)
        self._tagged = True
