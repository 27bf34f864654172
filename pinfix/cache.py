"""Content-hash cache of ``check`` results, like ruff's.

An entry is keyed by the file's path and bytes, pinfix's own analysis code and
the settings, so any change to one of them misses. Each entry is one small
file written to a temporary name and renamed into place: concurrent runs can
share a cache and a reader never sees half an entry. A cache that cannot be
read or written is simply not used. ``--no-cache`` turns it off.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from dataclasses import asdict, fields
from pathlib import Path

from . import __version__
from .config import Config

CACHE_DIR_NAME = ".pinfix_cache"


def _code_fingerprint() -> str:
    """Hash of pinfix's analysis sources: a changed rule never reuses old results."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).resolve().parent
    # The codemod ships as pinfix.codemods, from codemods/ at the top of a checkout.
    codemods = importlib.util.find_spec("pinfix.codemods")
    for directory in (here, *(Path(p) for p in (codemods.submodule_search_locations or []) if codemods)):
        for source in sorted(directory.glob("*.py")):
            try:
                digest.update(source.name.encode() + source.read_bytes())
            except OSError:
                digest.update(source.name.encode())
    return digest.hexdigest()


class ResultCache:
    def __init__(self, directory: Path, config: Config):
        self.directory = directory
        settings = {f.name: str(getattr(config, f.name)) for f in fields(config) if f.name != "source"}
        self.salt = hashlib.sha256((_code_fingerprint() + json.dumps(settings, sort_keys=True)).encode()).digest()
        self.usable = True

    @classmethod
    def for_config(cls, config: Config) -> "ResultCache":
        return cls(config.root / CACHE_DIR_NAME, config)

    def _entry(self, path: str, data: bytes) -> Path:
        key = hashlib.sha256(self.salt + path.encode("utf-8", "surrogateescape") + b"\0" + data).hexdigest()
        return self.directory / key[:2] / key

    def get(self, path: str, data: bytes):  # type: ignore[no-untyped-def]
        """The cached report for these bytes at this path, or ``None``."""
        from .engine import Diagnostic, FileReport

        if not self.usable:
            return None
        try:
            raw = json.loads(self._entry(path, data).read_text(encoding="utf-8"))
            return FileReport(path, [Diagnostic(**d) for d in raw["diagnostics"]], parsed=raw["parsed"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, path: str, data: bytes, report) -> None:  # type: ignore[no-untyped-def]
        """Remember a clean check (no error, nothing changed) of these bytes."""
        if not self.usable or report.error is not None or report.changed:
            return
        entry = self._entry(path, data)
        payload = json.dumps({"parsed": report.parsed, "diagnostics": [asdict(d) for d in report.diagnostics]})
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            self._tag()
            fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(payload)
            os.replace(tmp, entry)
        except OSError:
            self.usable = False  # read-only tree, full disk: run without a cache

    def _tag(self) -> None:
        # Like ruff's cache: keep it out of version control and of our own walks.
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n")
