"""Content-hash cache of ``check`` results, like ruff's.

An entry is keyed by the file's path and bytes, pinfix's own analysis code and
the settings, so any change to one of them misses. Each entry is one small
file written to a temporary name and renamed into place: concurrent runs can
share a cache and a reader never sees half an entry. A cache that cannot be
read or written is simply not used. ``--no-cache`` turns it off.

Layout: ``<cache dir>/<version>/<settings>/<2 hex>/<entry>``, with a
``CACHEDIR.TAG`` and a ``.gitignore`` at the top and a :data:`VERSION_MARKER`
in each version directory. An entry is named by the file's resolved path and
holds the hash of the bytes it answers for, so an edited file replaces its
entry. :meth:`ResultCache.prune` removes other versions and all but the most
recently used settings; ``pinfix clean`` removes the lot.

Ownership: a cache directory is pinfix's when it holds pinfix's own
``CACHEDIR.TAG`` (these bytes exactly). One that exists, is not empty and is
not pinfix's is never used, written or pruned (``check`` warns and runs
without a cache, ``clean`` refuses it). Inside pinfix's own directory, only a
version directory holding pinfix's marker and settings directories named as
pinfix names them are ever removed, and a ``.gitignore`` is written only where
there is none (or an empty one): a user's is never replaced.

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
import re
import shutil
import stat
import time
from collections import Counter
from dataclasses import asdict, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from . import __version__
from .config import Config, settings_of
from .deepcache import RACY_SECONDS, DeepVerdicts, Stamp, WordKeeper, make_directory, real_directory, stamp_of
from .findings import Added, Diagnostic, FileReport

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
#: The file pinfix writes in each version directory it makes: only a version
#: directory holding it (these bytes) is ever removed.
VERSION_MARKER = "PINFIX-VERSION"
VERSION_MARKER_TEXT = b"A version directory of pinfix's check cache; pinfix may remove it.\n"
#: How pinfix names a settings directory (the first 16 hex digits of the settings' hash).
SETTINGS_NAME = re.compile(r"[0-9a-f]{16}")
#: An entry larger than this is not ours (ours are a few kB).
MAX_ENTRY = 16 * 1024 * 1024
#: Per settings directory: the files the byte pre-filter ruled out, by their stat.
RULED_OUT_NAME = "ruled-out.json"


@lru_cache(maxsize=None)
def _code_fingerprint() -> str:
    """Hash of pinfix's analysis sources: a changed rule never reuses old results."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).resolve().parent
    # The codemod ships as pinfix.codemods, from codemods/ at the top of a checkout.
    # Not installed (pinfix run from a checkout without `pip install`): pinfix/ alone.
    codemods = importlib.util.find_spec("pinfix.codemods")
    locations = (codemods.submodule_search_locations or []) if codemods is not None else []
    # Every module below pinfix/ (the engine's packages semantic/, rules/, fixes/ too).
    for directory in (here, *(Path(p) for p in locations)):
        for source in sorted(directory.rglob("*.py")):
            try:
                digest.update(source.name.encode() + source.read_bytes())
            except OSError:
                digest.update(source.name.encode())
    return digest.hexdigest()


def _salt(config: Config) -> bytes:
    """Hash of the code and of every setting that changes what is reported
    (not those that only decide how a run prints or where it caches)."""
    settings = {f.name: _canonical(getattr(config, f.name)) for f in fields(config) if f.metadata.get("key", True)}
    return hashlib.sha256((_code_fingerprint() + json.dumps(settings, sort_keys=True)).encode()).digest()


def _canonical(value: object) -> str:
    """A value as text that is the same in every process (sets sorted)."""
    return str(sorted(value)) if isinstance(value, (set, frozenset)) else str(value)


def _holds(path: Path, content: bytes) -> bool:
    """Whether ``path`` is a regular file (no link) holding exactly ``content``."""
    from .regular import read_regular

    try:
        return read_regular(path, follow_symlinks=False, limit=len(content) + 1) == content
    except (OSError, ValueError):
        return False


def ownership(directory: Path) -> Optional[bool]:
    """``True``: pinfix's cache (a real directory with pinfix's ``CACHEDIR.TAG``);
    ``None``: free to become one (nothing there, or an empty real directory);
    ``False``: anything else (a link, a file, someone's directory): never touched."""
    state = real_directory(directory)
    if state is None:
        return None
    if state is False:
        return False
    if _holds(directory / "CACHEDIR.TAG", CACHEDIR_TAG.encode()):
        return True
    try:
        with os.scandir(directory) as entries:
            return None if next(entries, None) is None else False
    except OSError:
        return False


def _marked_version(path: str) -> bool:
    """A version directory pinfix made (it holds :data:`VERSION_MARKER`)."""
    return _holds(Path(path) / VERSION_MARKER, VERSION_MARKER_TEXT)


# --- removing, never through a link ----------------------------------------------------------
#
# A directory checked by its path may be swapped for a link before it is scanned. What `clean`
# and `prune` remove is therefore reached through descriptors: the cache directory is opened
# once, without following a link, its tag checked through that descriptor, and every entry
# below it named relative to the directory it lies in, each level opened without following a
# link. A swap then changes nothing pinfix reaches.

#: Opening a directory, never a link to one.
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
#: Whether this platform names files relative to an open directory (POSIX; not Windows).
RELATIVE_REMOVAL = (
    {os.open, os.unlink, os.rmdir, os.stat} <= os.supports_dir_fd
    and {os.scandir, os.utime} <= os.supports_fd
    and hasattr(os, "O_DIRECTORY")
    and hasattr(os, "O_NOFOLLOW")
)
#: A tree deeper than this under a version directory is not pinfix's layout: left alone.
MAX_REMOVED_DEPTH = 16


def _holds_at(directory: int, name: str, content: bytes) -> bool:
    """Whether ``name`` in the open ``directory`` is a regular file (no link) holding ``content``."""
    from .regular import read_regular

    try:
        return read_regular(name, follow_symlinks=False, limit=len(content) + 1, dir_fd=directory) == content
    except (OSError, ValueError):
        return False


def _open_directory(name: "str | Path", directory: Optional[int] = None) -> Optional[int]:
    """A descriptor of the directory ``name`` (relative to ``directory`` when given), or
    ``None`` where it is a link, no directory, or gone."""
    try:
        return os.open(name, _DIRECTORY_FLAGS, dir_fd=directory)
    except OSError:
        return None


def _open_owned(directory: Path) -> Optional[int]:
    """``directory`` opened, when it is pinfix's cache as opened (not a link swapped in
    after :func:`ownership` looked)."""
    fd = _open_directory(directory)
    if fd is not None and not _holds_at(fd, "CACHEDIR.TAG", CACHEDIR_TAG.encode()):
        os.close(fd)
        return None
    return fd


def _remove_tree_at(directory: int, name: str, depth: int = 0) -> None:
    """Remove the directory ``name`` of the open ``directory`` and what it holds, each
    level opened without following a link; what cannot be removed stays."""
    fd = _open_directory(name, directory)
    if fd is None:
        return
    try:
        with os.scandir(fd) as entries:
            for entry in list(entries):
                if entry.is_dir(follow_symlinks=False):
                    if depth < MAX_REMOVED_DEPTH:
                        _remove_tree_at(fd, entry.name, depth + 1)
                else:
                    try:
                        os.unlink(entry.name, dir_fd=fd)
                    except OSError:
                        pass
    except OSError:
        pass
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=directory)
    except OSError:
        pass


def _is_marked_at(directory: int, name: str) -> bool:
    """Whether ``name`` in the open ``directory`` is a version directory pinfix made."""
    fd = _open_directory(name, directory)
    if fd is None:
        return False
    try:
        return _holds_at(fd, VERSION_MARKER, VERSION_MARKER_TEXT)
    finally:
        os.close(fd)


def _exists_at(directory: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=directory, follow_symlinks=False)
        return True
    except OSError:
        return False


def foreign_message(directory: Path) -> str:
    return f"{directory} exists and is not pinfix's cache (no CACHEDIR.TAG written by pinfix)"


def git_blob(path: "str | Path") -> Optional[str]:
    """git's object name of the file's bytes as they are now (``None``: unreadable)."""
    from .regular import read_regular

    try:
        data = read_regular(Path(path), follow_symlinks=False)
    except OSError:
        return None
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _blame(path: str) -> Optional[Dict[str, str]]:
    """What a dependent's baseline is owned by: ``path`` (resolved) as its bytes are now
    (``None``: unreadable, or no git to name them)."""
    blob = git_blob(path)
    return None if blob is None else {"path": str(Path(path).resolve()), "blob": blob}


def committed_blob(path: "str | Path") -> Optional[str]:
    """git's object name of ``path`` in ``HEAD`` (``None``: not in a git
    repository, not committed, or git is not at hand)."""
    import subprocess

    where = Path(path)
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"HEAD:./{where.name}"],
            cwd=where.parent,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
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
        # A link, a file or someone else's directory where the cache should be: not ours to use.
        self.foreign = ownership(directory) is False
        self.usable = not self.foreign
        self._tagged = False
        self._marked: Dict[Path, bool] = {}
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
        #: ``--deep``: files whose earlier verdict holds but for statements added since, by
        #: the path :meth:`get` was given (see :class:`pinfix.findings.Added`).
        self.added: Dict[str, Added] = {}
        #: The stamp of each file this run took (by absolute path), for the deep verdicts.
        self.stamps: Dict[str, Stamp] = {}
        #: Absolute paths of the paths the walk gave, by the path (see :meth:`_absolute`).
        self._absolutes: Dict[str, str] = {}
        #: Entries :meth:`get` answered from, as they now are on disk (by the entry's path):
        #: a deep dependent's is then asked what it said before and rewritten with who it
        #: blames without being read and decoded twice more (150 KB each, 57 of them after
        #: a comment in ``torch_utils.py``).
        self._answered: Dict[Path, Dict[str, Any]] = {}
        #: Deep dependents :meth:`get` found valid and left as they are (see :meth:`settle`).
        self._unsettled: Dict[Path, Tuple[Dict[str, Any], DeepVerdicts, Any]] = {}

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
        # By the resolved path: one name typed in two working directories is two files.
        real = os.path.realpath(path) if path else path
        key = hashlib.sha256(salt + real.encode("utf-8", "surrogateescape")).hexdigest()
        settings = salt.hex()[:16]
        self.used[settings] = None
        return self.directory / __version__ / settings / key[:2] / key

    def _load(self, entry: Path) -> Dict[str, Any]:
        """The entry as kept (raises ``OSError`` where it is absent, not a regular file, or
        a link lies on the way: not ours; ``ValueError`` where it is no JSON)."""
        from .regular import read_regular

        if any(real_directory(d) is False for d in (entry.parent.parent.parent, entry.parent.parent, entry.parent)):
            raise NotADirectoryError(f"{entry}: a link on the way")
        raw = json.loads(read_regular(entry, follow_symlinks=False, limit=MAX_ENTRY).decode("utf-8"))
        if not isinstance(raw, dict):
            raise ValueError(f"{entry}: not an entry")
        return raw

    def get(  # type: ignore[no-untyped-def]
        self, path: str, data: bytes, config: Optional[Config] = None, dependent_of: Optional[Set[str]] = None
    ):
        """The cached report for these bytes at this path, or ``None`` (``dependent_of``: the
        files a run checked, resolved, when ``path`` is asked as a deep dependent of them)."""
        deep = (config or self.config).deep
        if not self.usable or not self._covers(path):
            return None
        try:
            entry = self._entry(path, data, config)
            raw = self._load(entry)
            digest = hashlib.sha256(data).hexdigest()
            verdicts = self.verdicts(entry) if deep else None
            kept = raw.get("deep")
            if verdicts is not None and not isinstance(kept, dict):
                return None
            itself = None
            spans = None
            if raw["sha256"] != digest:
                # A deep verdict holds for an edit that moved nothing it says (a comment):
                # rechecking would ask the whole project again for the same answer. For
                # statements added that nothing it read says, it holds for the rest.
                itself = os.path.realpath(path)
                if verdicts is None:
                    return None
                if not verdicts.unmoved(itself, raw["sha256"], data, kept, raw["diagnostics"]) and not (
                    verdicts.recommented(itself, raw["sha256"], data, kept, raw["diagnostics"])
                ):
                    bound = settings_of(config or self.config).fix_imports
                    spans = verdicts.added(itself, raw["sha256"], data, kept, raw["diagnostics"], bound)
                    if spans is None:
                        # Bodies changed that nothing else in it looked into: those checked again.
                        rewritten = verdicts.rewritten(itself, raw["sha256"], data, kept, raw["diagnostics"])
                        if rewritten is None:
                            return None
                        spans, raw["diagnostics"] = rewritten
            if verdicts is not None:
                if not verdicts.still_valid(path, kept, raw["diagnostics"], itself=itself):
                    return None  # something its verdict read has changed
                if spans is not None:
                    diagnostics = tuple(Diagnostic(**d) for d in raw["diagnostics"])
                    self.added[path] = Added(spans, diagnostics, tuple(verdicts.reads_of(kept)))
                    return None  # only what was added is checked; what it finds joins these
                if verdicts.refreshed or verdicts.relisted:
                    # Modules changed in their bytes only, files changed that no search of
                    # its finds: the entry takes them as they are now (a dependent, maybe later:
                    # see settle()).
                    if itself is None and dependent_of and not verdicts.worth_bringing_up_to_date(kept, dependent_of):
                        self._unsettled[entry] = (raw, verdicts, verdicts.found())
                    else:
                        verdicts.bring_up_to_date(kept)
                        raw["sha256"] = digest
                        self._rewrite(entry, raw)
            report = FileReport(path, [Diagnostic(**d) for d in raw["diagnostics"]], parsed=raw["parsed"])
            # (Its findings only, unless it keeps a baseline: its modules' text is 100 KB.)
            self._answered[entry] = raw if "baseline" in raw else {"diagnostics": raw["diagnostics"]}
            return report
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
            return None  # absent, not ours, or not a regular file: a miss

    def settle(self) -> None:
        """Bring up to date, of the deep dependents :meth:`get` left as they were, those whose
        listing most of them do not share: each listing a run compares with costs it a read
        and a comparison of the whole tree's stamps (10 ms on vLLM), and a verdict brought up
        to date in another run than the rest kept its own (three of the 57 that read
        ``torch_utils.py``, every run after)."""
        unsettled, self._unsettled = self._unsettled, {}
        if not unsettled:
            return
        listings = Counter(str(raw["deep"]["listing"]) for raw, _, _ in unsettled.values())
        shared = listings.most_common(1)[0][0]
        for entry, (raw, verdicts, found) in unsettled.items():
            if str(raw["deep"]["listing"]) != shared:
                try:
                    verdicts.bring_up_to_date(raw["deep"], found)
                except (ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
                    continue  # its modules' text is none of pinfix's writing: left as it is
                self._rewrite(entry, raw)

    def _rewrite(self, entry: Path, raw: Dict[str, Any]) -> None:
        from .writing import atomic_write

        self._answered.pop(entry, None)
        try:
            atomic_write(entry.parent, entry.name, json.dumps(raw).encode("utf-8"))
        except OSError:
            self.usable = False

    def put(  # type: ignore[no-untyped-def]
        self, path: str, data: bytes, config: Optional[Config] = None, report=None, baseline=None, blamed=None
    ) -> None:
        """Remember a clean check (no error, nothing changed) of these bytes
        (``baseline``: a deep dependent's findings before what it read changed;
        ``blamed``: the path of the file whose change it was rechecked for)."""
        from .writing import atomic_write

        if not self.usable or report is None or report.error is not None or report.changed or not self._covers(path):
            return
        entry = self._entry(path, data, config)
        kept = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "parsed": report.parsed,
            "diagnostics": [asdict(d) for d in report.diagnostics],
        }
        if baseline is not None:
            kept["baseline"] = [list(b) for b in baseline]
            owner = _blame(blamed) if blamed is not None else None
            if owner is not None:
                kept["blamed"] = owner
        if (config or self.config).deep:
            kept["deep"] = self.verdicts(entry).record(path, report.reads)
        payload = json.dumps(kept)
        self._answered.pop(entry, None)
        try:
            self.prepare(entry.parent.parent)
            make_directory(entry.parent)
            atomic_write(entry.parent, entry.name, payload.encode("utf-8"))
        except OSError:
            self.usable = False  # read-only tree, full disk, a link in the way: run without a cache

    def reblame(self, path: str, data: bytes, config: Optional[Config], blamed: str) -> None:
        """A deep dependent answered from the cache after ``blamed`` changed (an edit that
        changed nothing its verdict read): a baseline it keeps now holds until ``HEAD`` holds
        ``blamed`` as it is now, not as it was when the dependent was last checked."""
        if not self.usable or not self._covers(path):
            return
        try:
            entry = self._entry(path, data, config)
            raw = self._answered.get(entry) or self._load(entry)
            owner = _blame(blamed)
            if "baseline" not in raw or owner is None:
                return  # no baseline: what it said before is what it says
            if raw.get("blamed") != owner:
                raw["blamed"] = owner
                self._rewrite(entry, raw)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
            pass

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

    def _absolute(self, path: str) -> str:
        """``os.path.abspath(path)``, worked out once a run (the walk asks twice a file)."""
        known = self._absolutes.get(path)
        if known is None:
            known = self._absolutes[path] = os.path.abspath(path)
        return known

    def stamp(self, path: str) -> Optional[Stamp]:
        """``path``'s stamp, taken once a run (a deep verdict's listing may have taken it)."""
        found = self.stamps.get(self._absolute(path))
        return found if found is not None else stamp_of(path)

    def ruled_out(self, path: str, stamp: Stamp, config: Optional[Config] = None) -> bool:
        """Whether the pre-filter ruled ``path`` out last time with these settings and
        the file is unchanged since (the same stamp), so it need not be read."""
        absolute = self._absolute(path)
        self.stamps[absolute] = stamp
        if not self.usable or not self._covers(path, absolute):
            return False
        kept = self._ruled_out_before(self._settings_directory(config)).get(absolute)
        return isinstance(kept, list) and tuple(kept) == stamp

    def remember_read(
        self, path: str, stamp: Optional[Stamp], worth_reading: bool, config: Optional[Config] = None
    ) -> None:
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
                self.prepare(directory)
                atomic_write(directory, RULED_OUT_NAME, json.dumps(merged).encode())
            except OSError:
                self.usable = False
        self._ruled_out_now.clear()

    def verdicts(self, entry: Path) -> DeepVerdicts:
        """The deep verdicts of the settings directory ``entry`` lies in."""
        directory = entry.parent.parent
        found = self._verdicts.get(directory)
        if found is None:
            found = self._verdicts[directory] = DeepVerdicts(
                directory, prepare=lambda: self.prepare(directory), stamps=self.stamps
            )
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
        try:
            entry = self._entry(path, b"", config)
            raw = self._answered.get(entry) or self._load(entry)
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

    def word_keeper(self, config: Config) -> Optional[WordKeeper]:
        """``--deep``: where this run's word indexes are kept (the settings directory of
        ``config``, made now in a cache directory that is pinfix's); ``None``: nowhere."""
        if not self.usable:
            return None
        directory = self._settings_directory(config)
        try:
            self.prepare(directory)
        except OSError:
            return None
        return WordKeeper(directory)

    def finish(self) -> None:
        """Keep the index of what this run's deep verdicts read and the files the
        pre-filter ruled out, then prune."""
        for verdicts in self._verdicts.values():
            verdicts.save()
        self._save_ruled_out()
        self.prune()

    def prepare(self, settings: Path) -> None:
        """The settings directory ``settings`` exists, in a cache directory that is
        pinfix's (claimed here if it is free: tagged before anything else goes in) and
        a version directory holding pinfix's marker. Raises ``OSError``."""
        from .writing import atomic_write

        if self.foreign or ownership(self.directory) is False:
            self.foreign = True
            raise PermissionError(foreign_message(self.directory))
        make_directory(self.directory, parents=True)
        self._tag()
        version = settings.parent
        make_directory(version)
        if not self._marked.get(version) and not _marked_version(str(version)):
            atomic_write(version, VERSION_MARKER, VERSION_MARKER_TEXT)
        self._marked[version] = True
        make_directory(settings)

    def _tag(self) -> None:
        """Like ruff's cache: keep it out of version control and of our own
        walks. The tag first (it makes the directory pinfix's), then the
        ``.gitignore`` where there is none or an empty one (a user's is never
        replaced); each written whole or not at all."""
        if self._tagged:
            return
        from .writing import atomic_write

        if not _holds(self.directory / "CACHEDIR.TAG", CACHEDIR_TAG.encode()):
            atomic_write(self.directory, "CACHEDIR.TAG", CACHEDIR_TAG.encode())
        ignore = self.directory / ".gitignore"
        try:
            info: Optional[os.stat_result] = os.lstat(ignore)
        except FileNotFoundError:
            info = None
        if info is None or (stat.S_ISREG(info.st_mode) and info.st_size == 0):
            atomic_write(self.directory, ".gitignore", IGNORE_ALL)
        self._tagged = True

    def prune(self) -> None:
        """Remove other versions' entries, and those of settings this run did
        not use but the :data:`KEEP_OTHER_SETTINGS` most recently used; never
        through a symbolic link."""
        if not self.usable or not self.used or ownership(self.directory) is not True:
            return
        if RELATIVE_REMOVAL:
            self._prune_at()
            return
        try:
            for version in os.scandir(self.directory):
                if (
                    version.is_dir(follow_symlinks=False)
                    and version.name != __version__
                    and _marked_version(version.path)
                ):
                    shutil.rmtree(version.path, ignore_errors=True)
            here = self.directory / __version__
            if real_directory(here) is not True or not _marked_version(str(here)):
                return
            for name in self.used:
                if real_directory(here / name) is True:
                    os.utime(here / name)
            others = [
                e
                for e in os.scandir(here)
                if e.is_dir(follow_symlinks=False) and e.name not in self.used and SETTINGS_NAME.fullmatch(e.name)
            ]
            others.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime, reverse=True)
            for stale in others[KEEP_OTHER_SETTINGS:]:
                shutil.rmtree(stale.path, ignore_errors=True)
        except OSError:
            pass  # a cache is only ever a shortcut

    def _prune_at(self) -> None:
        """:meth:`prune` through descriptors (see :func:`_remove_tree_at`)."""
        top = _open_owned(self.directory)
        if top is None:
            return
        try:
            with os.scandir(top) as entries:
                versions = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
            for name in versions:
                if name != __version__ and _is_marked_at(top, name):
                    _remove_tree_at(top, name)
            if not _is_marked_at(top, __version__):
                return
            here = _open_directory(__version__, top)
            if here is None:
                return
            try:
                for name in self.used:
                    used = _open_directory(name, here)
                    if used is not None:
                        try:
                            os.utime(used)
                        finally:
                            os.close(used)
                with os.scandir(here) as entries:
                    others = [
                        (e.stat(follow_symlinks=False).st_mtime, e.name)
                        for e in entries
                        if e.is_dir(follow_symlinks=False)
                        and e.name not in self.used
                        and SETTINGS_NAME.fullmatch(e.name)
                    ]
                others.sort(reverse=True)
                for _, name in others[KEEP_OTHER_SETTINGS:]:
                    _remove_tree_at(here, name)
            finally:
                os.close(here)
        except OSError:
            pass  # a cache is only ever a shortcut
        finally:
            os.close(top)


def clean(directory: Path) -> Tuple[bool, Optional[str]]:
    """Remove a cache directory pinfix made: whether anything was removed, and
    why not all of it (``None``: all of it, or nothing was there). Refused
    whole: a link, a file, or a directory without pinfix's tag. Inside it, only
    what pinfix provably wrote goes (marked version directories, its tag and
    ignore file, its temporary files); the tag last, so an interrupted clean
    leaves a directory still known as pinfix's."""
    state = ownership(directory)
    if state is None:
        return False, None
    if state is False:
        return False, foreign_message(directory) + "; not removed"
    if RELATIVE_REMOVAL:
        return _clean_at(directory)
    kept = []
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.name in ("CACHEDIR.TAG",):
            continue
        if entry.is_dir(follow_symlinks=False) and _marked_version(entry.path):
            shutil.rmtree(entry.path, ignore_errors=True)
        elif entry.name == ".gitignore" and _holds(Path(entry.path), IGNORE_ALL):
            os.unlink(entry.path)
        elif entry.name.startswith(".tmp-") and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)  # what an interrupted atomic write left
        if os.path.lexists(entry.path):
            kept.append(entry.name)
    if kept:
        return True, f"{directory}: kept {', '.join(kept)} (not pinfix's)"
    os.unlink(directory / "CACHEDIR.TAG")
    try:
        os.rmdir(directory)
    except OSError:
        pass
    return True, None


def _clean_at(directory: Path) -> Tuple[bool, Optional[str]]:
    """:func:`clean` through descriptors (see :func:`_remove_tree_at`)."""
    top = _open_owned(directory)
    if top is None:
        return False, f"{directory} changed while pinfix looked at it (no longer its cache); not removed"
    kept = []
    try:
        with os.scandir(top) as found:
            entries = sorted(
                ((e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)) for e in found)
            )
        for name, is_dir, is_file in entries:
            if name == "CACHEDIR.TAG":
                continue
            if is_dir and _is_marked_at(top, name):
                _remove_tree_at(top, name)
            elif (name == ".gitignore" and _holds_at(top, name, IGNORE_ALL)) or (name.startswith(".tmp-") and is_file):
                try:
                    os.unlink(name, dir_fd=top)  # (a temporary file: what an interrupted atomic write left)
                except OSError:
                    pass
            if _exists_at(top, name):
                kept.append(name)
        if kept:
            return True, f"{directory}: kept {', '.join(kept)} (not pinfix's)"
        os.unlink("CACHEDIR.TAG", dir_fd=top)
    finally:
        os.close(top)
    try:
        os.rmdir(directory)  # a link swapped in meanwhile is no directory: refused
    except OSError:
        pass
    return True, None
