"""Content-hash cache of ``check`` results, like ruff's.

An entry is keyed by the file's path and bytes, pinfix's own analysis code and
the settings, so any change to one of them misses. Each entry is one small
file written to a temporary name and renamed into place: concurrent runs can
share a cache and a reader never sees half an entry. A cache that cannot be
read or written is simply not used. ``--no-cache`` turns it off.

Layout: ``<cache dir>/<version>/<settings>/<2 hex>/<entry>``, with a
``CACHEDIR.TAG`` and a ``.gitignore`` at the top. An entry is named by the
file's path and holds the hash of the bytes it answers for, so an edited file
replaces its entry. :meth:`ResultCache.prune` removes other versions and all
but the most recently used settings; ``pinfix clean`` removes the lot.

Safety: only files under the cache's project (``scope``) are cached, so a file
checked from outside leaves nothing in it. The cache never reads, creates,
writes or prunes anything through a symbolic link (a committed
``.pinfix_cache`` link could point anywhere), reads only regular files (an
entry that is a FIFO would block) of a bounded size, and its ``.gitignore`` is
written whole and repaired when a full disk (or anything else) left it wrong.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import stat
import time
from dataclasses import asdict, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from . import __version__
from .config import Config
from .deepcache import DeepVerdicts

#: Settings directories kept besides those of the current run. A tree with several settings
#: files has one directory per file and mode (plain, deep): vLLM's uses three in each, so a
#: smaller number let a one-file deep check evict the plain run's cache.
KEEP_OTHER_SETTINGS = 8
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by pinfix.\n"
    "# For information about cache directory tags see the CACHEDIR.TAG specification.\n"
)
#: What ``.gitignore`` at the cache's top holds: everything in it is ignored.
IGNORE_ALL = b"*\n"
#: An entry larger than this is not ours (ours are a few kB).
MAX_ENTRY = 16 * 1024 * 1024
#: Per settings directory: the files the byte pre-filter ruled out, by their stat.
RULED_OUT_NAME = "ruled-out.json"
#: A file modified less than this long before the run began may change again within
#: the same timestamp tick without its stat showing it: it is not remembered (git's
#: rule for "racily clean" index entries).
RACY_SECONDS = 2.0
#: What identifies a file's bytes without reading them: device, inode, size,
#: modification and change times (ns).
Stamp = Tuple[int, int, int, int, int]


def stamp_of(path: str) -> Optional[Stamp]:
    """The stat stamp of a regular file (``None``: anything else, or no file)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@lru_cache(maxsize=None)
def _code_fingerprint() -> str:
    """Hash of pinfix's analysis sources: a changed rule never reuses old results."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).resolve().parent
    # The codemod ships as pinfix.codemods, from codemods/ at the top of a checkout.
    codemods = importlib.util.find_spec("pinfix.codemods")
    # Every module below pinfix/ (the engine's packages semantic/, rules/, fixes/ too).
    for directory in (here, *(Path(p) for p in (codemods.submodule_search_locations or []) if codemods)):
        for source in sorted(directory.rglob("*.py")):
            try:
                digest.update(source.name.encode() + source.read_bytes())
            except OSError:
                digest.update(source.name.encode())
    return digest.hexdigest()


def _salt(config: Config) -> bytes:
    """Hash of the code and of every setting that changes what is reported
    (not those that only decide how a run prints or where it caches)."""
    settings = {
        f.name: _canonical(getattr(config, f.name)) for f in fields(config) if f.metadata.get("key", True)
    }
    return hashlib.sha256((_code_fingerprint() + json.dumps(settings, sort_keys=True)).encode()).digest()


def _canonical(value: object) -> str:
    """A value as text that is the same in every process (sets sorted)."""
    return str(sorted(value)) if isinstance(value, (set, frozenset)) else str(value)


def _real_directory(path: Path) -> Optional[bool]:
    """``True``: a directory, not a link; ``None``: nothing there; ``False``: anything else."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return False
    return stat.S_ISDIR(mode)


def git_blob(path: "str | Path") -> Optional[str]:
    """git's object name of the file's bytes as they are now (``None``: unreadable)."""
    from .regular import read_regular

    try:
        data = read_regular(Path(path), follow_symlinks=False)
    except OSError:
        return None
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def committed_blob(path: "str | Path") -> Optional[str]:
    """git's object name of ``path`` in ``HEAD`` (``None``: not in a git
    repository, not committed, or git is not at hand)."""
    import subprocess

    where = Path(path)
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"HEAD:./{where.name}"],
            cwd=where.parent, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


class ResultCache:
    def __init__(self, directory: Path, config: Config, scope: Optional[Path] = None):
        self.directory = directory
        self.config = config
        self.salt = _salt(config)
        self._salts: Dict[Config, bytes] = {config: self.salt}
        #: Settings directories this run read or wrote.
        self.used: Dict[str, None] = {}
        #: Only files under this directory are cached (``None``: any).
        self.scope = None if scope is None else str(scope).rstrip(os.sep) + os.sep
        # A link or a file where the cache should be: not ours to use.
        self.usable = _real_directory(directory) is not False
        self._tagged = False
        self._verdicts: Dict[Path, DeepVerdicts] = {}
        #: Stamps older than this are not racy (see :data:`RACY_SECONDS`).
        self._settled_before = time.time_ns() - int(RACY_SECONDS * 1e9)
        #: Settings directory -> path -> stamp: files ruled out last time (read lazily), and
        #: what this run learnt (a ``None`` stamp: read and worth reading now, forget it).
        self._ruled_out: Dict[Path, Dict[str, List[int]]] = {}
        self._ruled_out_now: Dict[Path, Dict[str, Optional[Stamp]]] = {}
        self._directories: Dict[bytes, Path] = {}
        #: ``--deep``: files whose verdict read a checked file, past ``max-dependents``: not rechecked.
        self.unrechecked: List[str] = []

    def _covers(self, path: str, absolute: Optional[str] = None) -> bool:
        if self.scope is None or (absolute or os.path.abspath(path)).startswith(self.scope):
            return True
        return os.path.realpath(path).startswith(self.scope)

    def _salt_for(self, config: Optional[Config]) -> bytes:
        if config is None:
            return self.salt
        salt = self._salts.get(config)
        if salt is None:
            salt = self._salts[config] = _salt(config)
        return salt

    def _entry(self, path: str, data: bytes, config: Optional[Config] = None) -> Path:
        salt = self._salt_for(config)
        key = hashlib.sha256(salt + path.encode("utf-8", "surrogateescape")).hexdigest()
        settings = salt.hex()[:16]
        self.used[settings] = None
        return self.directory / __version__ / settings / key[:2] / key

    def get(self, path: str, data: bytes, config: Optional[Config] = None):  # type: ignore[no-untyped-def]
        """The cached report for these bytes at this path, or ``None``."""
        from .engine import Diagnostic, FileReport
        from .regular import read_regular

        deep = (config or self.config).deep
        if not self.usable or not self._covers(path):
            return None
        try:
            entry = self._entry(path, data, config)
            if any(_real_directory(d) is False for d in (entry.parent.parent.parent, entry.parent.parent, entry.parent)):
                return None  # a link on the way: not ours
            raw = json.loads(read_regular(entry, follow_symlinks=False, limit=MAX_ENTRY).decode("utf-8"))
            if raw["sha256"] != hashlib.sha256(data).hexdigest():
                return None
            if deep:
                verdicts = self.verdicts(entry)
                if not (isinstance(raw.get("deep"), dict) and verdicts.still_valid(path, raw["deep"], raw["diagnostics"])):
                    return None  # something its verdict read has changed
                if verdicts.refreshed:
                    # Modules changed in their bytes only: the entry takes them as they are now.
                    raw["deep"]["modules"].update(verdicts.refreshed)
                    self._rewrite(entry, raw)
            return FileReport(path, [Diagnostic(**d) for d in raw["diagnostics"]], parsed=raw["parsed"], reads=raw.get("reads"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
            return None  # absent, not ours, or not a regular file: a miss

    def _rewrite(self, entry: Path, raw: Dict[str, Any]) -> None:
        from .writing import atomic_write

        try:
            atomic_write(entry.parent, entry.name, json.dumps(raw).encode("utf-8"))
        except OSError:
            self.usable = False

    def put(self, path: str, data: bytes, config: Optional[Config] = None, report=None, baseline=None, blamed=None) -> None:  # type: ignore[no-untyped-def]
        """Remember a clean check (no error, nothing changed) of these bytes
        (``baseline``: a deep dependent's findings before what it read changed;
        ``blamed``: the path of the file whose change it was rechecked for)."""
        from .writing import atomic_write

        if (
            not self.usable
            or report is None
            or report.error is not None
            or report.changed
            or not self._covers(path)
        ):
            return
        entry = self._entry(path, data, config)
        kept = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "parsed": report.parsed,
            "diagnostics": [asdict(d) for d in report.diagnostics],
        }
        if baseline is not None:
            kept["baseline"] = [list(b) for b in baseline]
            blob = git_blob(blamed) if blamed is not None else None
            if blob is not None:
                kept["blamed"] = {"path": str(Path(blamed).resolve()), "blob": blob}
        if (config or self.config).deep:
            kept["reads"] = report.reads
            kept["deep"] = self.verdicts(entry).record(path, report.reads)
        payload = json.dumps(kept)
        try:
            self._make_directory(self.directory)
            self._tag()
            for directory in (entry.parent.parent.parent, entry.parent.parent, entry.parent):
                self._make_directory(directory)
            atomic_write(entry.parent, entry.name, payload.encode("utf-8"))
        except OSError:
            self.usable = False  # read-only tree, full disk, a link in the way: run without a cache

    # --- files the byte pre-filter ruled out -------------------------------------------------

    def _settings_directory(self, config: Optional[Config]) -> Path:
        salt = self._salt_for(config)
        found = self._directories.get(salt)
        if found is None:
            found = self._directories[salt] = self._entry("", b"", config).parent.parent
        return found

    def _ruled_out_before(self, directory: Path) -> Dict[str, List[int]]:
        known = self._ruled_out.get(directory)
        if known is None:
            from .regular import read_regular

            try:
                raw = json.loads(read_regular(directory / RULED_OUT_NAME, follow_symlinks=False, limit=1 << 28))
                known = raw if isinstance(raw, dict) else {}
            except (OSError, ValueError, RecursionError):
                known = {}
            self._ruled_out[directory] = known
        return known

    def ruled_out(self, path: str, stamp: Stamp, config: Optional[Config] = None) -> bool:
        """Whether the pre-filter ruled ``path`` out last time with these settings and
        the file is unchanged since (the same stamp), so it need not be read."""
        absolute = os.path.abspath(path)
        if not self.usable or not self._covers(path, absolute):
            return False
        kept = self._ruled_out_before(self._settings_directory(config)).get(absolute)
        return isinstance(kept, list) and tuple(kept) == stamp

    def remember_read(self, path: str, stamp: Optional[Stamp], worth_reading: bool, config: Optional[Config] = None) -> None:
        """What reading ``path`` (its stamp taken *before* the read) showed: ruled out
        by the pre-filter (remembered unless the stamp is racy), or worth reading."""
        absolute = os.path.abspath(path)
        if not self.usable or stamp is None or not self._covers(path, absolute):
            return
        keep = not worth_reading and stamp[3] < self._settled_before and stamp[4] < self._settled_before
        directory = self._settings_directory(config)
        self._ruled_out_now.setdefault(directory, {})[absolute] = stamp if keep else None

    def _save_ruled_out(self) -> None:
        from .writing import atomic_write

        for directory, now in self._ruled_out_now.items():
            before = self._ruled_out_before(directory)
            merged = dict(before)
            for path, stamp in now.items():
                if stamp is None:
                    merged.pop(path, None)
                else:
                    merged[path] = list(stamp)
            if merged == before:
                continue
            # Written only when something changed: then also forget the files that are
            # gone (renamed or deleted), so the list does not grow with every rename.
            merged = {path: stamp for path, stamp in merged.items() if path in now or os.path.isfile(path)}
            try:
                for d in (self.directory, directory.parent, directory):
                    self._make_directory(d)
                self._tag()
                atomic_write(directory, RULED_OUT_NAME, json.dumps(merged).encode())
            except OSError:
                self.usable = False
        self._ruled_out_now.clear()

    def verdicts(self, entry: Path) -> DeepVerdicts:
        """The deep verdicts of the settings directory ``entry`` lies in."""
        directory = entry.parent.parent
        found = self._verdicts.get(directory)
        if found is None:
            found = self._verdicts[directory] = DeepVerdicts(directory)
        return found

    def previous(self, path: str, config: Optional[Config] = None) -> Optional[List[Tuple[str, int, int, str]]]:
        """The findings the cache last held for ``path`` (whatever its bytes were then;
        a dependent's baseline where it has one), as (code, line, column, message);
        ``None``: none kept.

        A dependent's baseline holds until the dependent is checked itself, so
        checking the changed file again (retrying a commit) still reports what
        its change made new; but once git's ``HEAD`` holds the very bytes of the
        file it was rechecked for, that change is committed and what the
        dependent said then is what it said before the next change."""
        from .regular import read_regular

        try:
            raw = json.loads(read_regular(self._entry(path, b"", config), follow_symlinks=False, limit=MAX_ENTRY).decode("utf-8"))
            blamed = raw.get("blamed")
            if "baseline" in raw and not (blamed and committed_blob(blamed["path"]) == blamed["blob"]):
                return [(str(c), int(li), int(co), str(m)) for c, li, co, m in raw["baseline"]]
            return [(d["code"], d["line"], d["column"], d["message"]) for d in raw["diagnostics"]]
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
            return None

    def dependents(self, paths: Iterable[str], config: Config) -> List[Tuple[str, str]]:
        """``--deep``: files checked before whose verdict read one of ``paths``."""
        if not self.usable:
            return []
        return self.verdicts(self._entry("", b"", config)).dependents(paths)

    def finish(self) -> None:
        """Keep the index of what this run's deep verdicts read and the files the
        pre-filter ruled out, then prune."""
        for verdicts in self._verdicts.values():
            verdicts.save()
        self._save_ruled_out()
        self.prune()

    @staticmethod
    def _make_directory(directory: Path) -> None:
        """``directory`` exists, made here if need be, and is no link."""
        state = _real_directory(directory)
        if state is None:
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except FileExistsError:  # a file or a link made meanwhile: seen below
                pass
            state = _real_directory(directory)
        if state is not True:
            raise NotADirectoryError(f"{directory} is not a plain directory")

    def _tag(self) -> None:
        """Like ruff's cache: keep it out of version control and of our own
        walks. Each file written whole or not at all; the ``.gitignore``
        repaired when a full disk (or anything else) left it empty or different."""
        if self._tagged:
            return
        from .regular import read_regular
        from .writing import atomic_write

        for name, content, limit in ((".gitignore", IGNORE_ALL, 1024), ("CACHEDIR.TAG", CACHEDIR_TAG.encode(), 4096)):
            try:
                current: Optional[bytes] = read_regular(self.directory / name, follow_symlinks=False, limit=limit)
            except OSError:
                current = None
            if current != content:
                atomic_write(self.directory, name, content)
        self._tagged = True

    def prune(self) -> None:
        """Remove other versions' entries, and those of settings this run did
        not use but the :data:`KEEP_OTHER_SETTINGS` most recently used; never
        through a symbolic link."""
        if not self.usable or not self.used or _real_directory(self.directory) is not True:
            return
        try:
            for version in os.scandir(self.directory):
                if version.is_dir(follow_symlinks=False) and version.name != __version__:
                    shutil.rmtree(version.path, ignore_errors=True)
            here = self.directory / __version__
            if _real_directory(here) is not True:
                return
            for name in self.used:
                if _real_directory(here / name) is True:
                    os.utime(here / name)
            others = [
                e for e in os.scandir(here) if e.is_dir(follow_symlinks=False) and e.name not in self.used
            ]
            others.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime, reverse=True)
            for stale in others[KEEP_OTHER_SETTINGS:]:
                shutil.rmtree(stale.path, ignore_errors=True)
        except OSError:
            pass  # a cache is only ever a shortcut


def clean(directory: Path) -> bool:
    """Remove a cache directory pinfix made (one with its tag or ignore
    file), never through a symlink; whether one was removed."""
    if directory.is_symlink() or not directory.is_dir():
        return False
    if not ((directory / "CACHEDIR.TAG").is_file() or (directory / ".gitignore").is_file()):
        return False
    shutil.rmtree(directory, ignore_errors=True)
    return not directory.exists()
