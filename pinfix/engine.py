"""Check or fix files: read, pre-filter, parse, analyse, rewrite, write.

Only files that pass the text pre-filter (:mod:`pinfix.prefilter`)
are parsed, and LibCST is imported only then, so a pre-commit call over files
that cannot hold a finding costs a read and a byte search each.
"""

from __future__ import annotations

import difflib
import itertools
import os
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, List, Optional

from .config import Config
from .findings import FindingFields
from .prefilter import candidate_source, gc_paused, may_contain_finding

if TYPE_CHECKING:
    from .cache import ResultCache

#: Below this many files to parse, a process pool costs more than it saves.
POOL_THRESHOLD = 8
#: After this many files (a tree walk, not a pre-commit call) one file to
#: parse starts the pool: its workers then import LibCST while the walk goes on.
POOL_EARLY_AFTER = 100


@dataclass
class Diagnostic(FindingFields):
    """A finding, detached from the syntax tree (picklable, serialisable)."""

    path: str = ""
    fixed: bool = False


@dataclass
class FileReport:
    path: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    #: Why the file could not be read, parsed or written; ``None`` when all went well.
    error: Optional[str] = None
    parsed: bool = False
    changed: bool = False
    fixes_applied: int = 0
    diff: Optional[str] = None


@dataclass(frozen=True)
class Mode:
    fix: bool = False
    #: With ``fix``: compute the diff instead of writing.
    diff_only: bool = False


def parse(data: "bytes | str", report: FileReport):  # type: ignore[no-untyped-def]
    """The LibCST module, or ``None`` with ``report.error`` saying why."""
    import libcst as cst

    try:
        return cst.parse_module(data)
    except cst.ParserSyntaxError as e:
        report.error = f"syntax error at {e.raw_line}:{e.raw_column + 1}: {e.message}"
    except (UnicodeDecodeError, LookupError, SyntaxError) as e:
        report.error = f"cannot decode: {e}"
    except RecursionError:
        report.error = "too deeply nested for the parser"
    return None


def process_source(path: str, data: bytes, config: Config, mode: Mode) -> FileReport:
    """Analyse (and maybe fix) one file's bytes; never raises for bad input."""
    report = FileReport(path)
    sliced = candidate_source(data, config) if may_contain_finding(data, config) else None
    if sliced is None:
        return report
    from .analysis import analyze

    module = parse(sliced, report)
    if module is None and sliced is not data:
        # Never report an error the file itself does not have.
        report.error = None
        sliced = data
        module = parse(data, report)
    if module is None:
        return report
    report.parsed = True
    # Checking needs no codemod machinery (nor the cost of importing it).
    findings = analyze(module, None, config, Path(path), source=sliced)
    allowed = {"safe", "unsafe"} if config.unsafe_fixes else {"safe"}
    wants_fix = mode.fix and any(f.fix_safety in allowed for f in findings)
    new_module = module
    applied = set()
    if wants_fix:
        from libcst.codemod import CodemodContext

        from pinfix.codemods.pin_pageable_sources import PinPageableSourcesCommand

        # Fixes are made on the whole file, never on the slice.
        if sliced is not data:
            module = parse(data, report)
            if module is None:
                return report
        command = PinPageableSourcesCommand(CodemodContext(filename=path), config=config)
        new_module = command.transform_module(module)
        findings = command.findings
        applied = {id(f) for f in command.applied}
    for f in findings:
        report.diagnostics.append(Diagnostic(**f.shared_fields(), path=path, fixed=id(f) in applied))
    if not wants_fix or new_module is module:
        return report
    new_bytes = new_module.bytes
    if new_bytes == data:
        return report
    report.changed = True
    report.fixes_applied = len(applied)
    if mode.diff_only:
        report.diff = "".join(
            difflib.unified_diff(
                module.code.splitlines(keepends=True),
                new_module.code.splitlines(keepends=True),
                fromfile=f"a/{path}",
                tofile=f"b/{path}",
            )
        )
        return report
    from .writing import WriteRefused, replace_file

    try:
        replace_file(Path(path), data, new_bytes)
    except WriteRefused as e:
        report.error = str(e)
        report.changed = False
        report.fixes_applied = 0
        for d in report.diagnostics:
            d.fixed = False
    return report


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)


def _read(path: "Path | str") -> "bytes | str":
    """The file's bytes, or why they cannot be had. Plain ``os.read`` (a third
    of ``Path.read_bytes``'s cost, which matters over a whole tree)."""
    try:
        fd = os.open(path, _READ_FLAGS)
        try:
            size = os.fstat(fd).st_size
            data = os.read(fd, size + 1)
            if len(data) > size:  # it grew, or its size is not known (a pipe)
                chunks = [data]
                while chunks[-1]:
                    chunks.append(os.read(fd, 1 << 16))
                data = b"".join(chunks)
            return data
        finally:
            os.close(fd)
    except IsADirectoryError:
        return "is a directory"
    except OSError as e:
        return f"cannot read: {e.strerror or e}"


def _worker(args) -> FileReport:  # type: ignore[no-untyped-def]
    path, data, config, mode = args
    # One file's syntax trees are freed by reference counting; the collector
    # would only walk the growing heap again and again while they are built.
    with gc_paused():
        return _guarded(path, data, config, mode)


def _warm_up() -> None:
    """Pool initializer: import LibCST and the analysis while the parent is
    still walking and reading the tree, not when the first file arrives."""
    import pinfix.analysis  # noqa: F401


def _guarded(path: str, data: bytes, config: Config, mode: Mode) -> FileReport:
    try:
        return process_source(path, data, config, mode)
    except Exception as e:  # a bug of ours must not stop the other files
        return FileReport(path, error=f"internal error ({type(e).__name__}: {e}); file left unchanged")


def run(
    files: Iterable[Path],
    config: Config,
    mode: Mode,
    jobs: Optional[int] = None,
    on_progress: Optional[Callable[[int], None]] = None,
    cache: Optional["ResultCache"] = None,
) -> Iterator[FileReport]:
    """Reports for ``files`` (not in order). Reads and byte-filters here as the
    paths arrive; the files left are analysed in a process pool, started once
    enough of them need it and fed while discovery goes on. ``cache`` (check
    mode only) answers for files analysed before with the same bytes."""
    jobs = jobs or os.cpu_count() or 1
    if mode.fix:
        cache = None
    known = {}
    backlog: List[tuple] = []
    futures: List[Future] = []
    pool: Optional[ProcessPoolExecutor] = None
    try:
        for seen, path in enumerate(files, 1):
            data = _read(path)
            if isinstance(data, str) or not may_contain_finding(data, config):
                yield FileReport(str(path), error=data if isinstance(data, str) else None)
                if on_progress:
                    on_progress(1)
                continue
            if cache is not None:
                hit = cache.get(str(path), data)
                if hit is not None:
                    yield hit
                    if on_progress:
                        on_progress(1)
                    continue
                known[str(path)] = data
            backlog.append((str(path), data, config, mode))
            if pool is None and jobs > 1 and (len(backlog) >= POOL_THRESHOLD or seen >= POOL_EARLY_AFTER):
                pool = ProcessPoolExecutor(max_workers=jobs, initializer=_warm_up)
            if pool is not None:
                futures.extend(pool.submit(_worker, item) for item in backlog)
                backlog.clear()
        done = (_worker(item) for item in backlog)  # too few to be worth a pool
        for report in itertools.chain(done, (f.result() for f in as_completed(futures))):
            if cache is not None:
                cache.put(report.path, known[report.path], report)
            yield report
            if on_progress:
                on_progress(1)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
