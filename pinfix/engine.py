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
from typing import TYPE_CHECKING, Callable, FrozenSet, Iterable, Iterator, List, Optional, Union

from .config import NOQA_CODE, Config
from .findings import FindingFields
from .prefilter import gc_paused, may_contain_finding
from .suppression import DIRECTIVE_BYTES, noqa_report, recording

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
    #: The bytes read, kept when there are findings (for output that shows lines).
    source: Optional[bytes] = None
    #: ``fix --diff`` (and stdin): the fixed bytes.
    fixed_source: Optional[bytes] = None


@dataclass(frozen=True)
class Mode:
    fix: bool = False
    #: With ``fix``: compute the diff instead of writing.
    diff_only: bool = False


def worth_reading(data: bytes, config: Config) -> bool:
    """Whether ``data`` may hold a finding, or (with PIN100 on) a directive to report."""
    return may_contain_finding(data, config) or (NOQA_CODE in config.rules and DIRECTIVE_BYTES.search(data) is not None)


def process_source(path: str, data: bytes, config: Config, mode: Mode) -> FileReport:
    """Analyse (and maybe fix) one file's bytes; never raises for bad input."""
    codes = config.codes_for(path)
    with recording(data) as state:
        report = _process(path, data, config, mode, codes)
    if NOQA_CODE in codes and report.error is None:
        report.diagnostics += [Diagnostic(**f.shared_fields(), path=path) for f in noqa_report(data, state, codes)]
    if report.diagnostics:
        report.source = data
    return report


def analyse(path: str, data: bytes, config: Config, report: FileReport, codes: Optional[FrozenSet[str]] = None):  # type: ignore[no-untyped-def]
    """``(source, findings)`` of one file's bytes (those of ``codes``, suppression
    comments applied), or ``None`` with ``report.error`` saying why."""
    from .config import settings_of
    from .prefilter import PREFILTER_OFF
    from .rules import check_module
    from .semantic import SourceError, SourceText, analyze_module
    from .suppression import SourceDirectives, is_suppressed

    try:
        src = SourceText.from_bytes(data)
        tree = src.parse()
    except SourceError as e:
        report.error = str(e)
        return None
    report.parsed = True
    settings = settings_of(config)
    project = None
    if settings.deep:
        from .semantic.project import project_for

        project = project_for(settings)
    facts = analyze_module(src, tree, settings, Path(path), project, everything=PREFILTER_OFF)
    findings = [f for f in check_module(facts, settings, Path(path)) if codes is None or f.code in codes]
    directives: Optional[SourceDirectives] = None
    kept = []
    for f in findings:
        suppressed = is_suppressed(f.code, f.line, f.end_line, f.statement)
        if suppressed is None:  # outside a recording: read the text's own directives
            if directives is None:
                directives = SourceDirectives(src.text)
            suppressed = directives.suppressing(f.code, f.line, f.end_line, f.statement) is not None
        if not suppressed:
            kept.append(f)
    return src, kept


def _process(path: str, data: bytes, config: Config, mode: Mode, codes: FrozenSet[str]) -> FileReport:
    report = FileReport(path)
    if not may_contain_finding(data, config):
        return report
    found = analyse(path, data, config, report, codes)
    if found is None:
        return report
    src, findings = found
    allowed = {"safe", "unsafe"} if config.unsafe_fixes else {"safe"}
    wanted = [f.fix if mode.fix and f.fix is not None and f.fix.applicability in allowed else None for f in findings]
    applied: set = set()
    new_bytes = data
    if any(wanted):
        from .config import settings_of
        from .fixes import FixError, apply_fixes

        try:
            result = apply_fixes(src, wanted, settings_of(config), Path(path))
        except FixError as e:
            report.error = str(e)
            result = None
        if result is not None:
            applied = set(result.applied)
            new_bytes = result.data
            if result.note:
                for i in applied:
                    f = findings[i]
                    f.fix_note = f"{f.fix_note}; {result.note}" if f.fix_note else result.note
    for i, f in enumerate(findings):
        report.diagnostics.append(Diagnostic(**f.shared_fields(), path=path, fixed=i in applied))
    if new_bytes == data:
        for d in report.diagnostics:
            d.fixed = False
        return report
    report.changed = True
    report.fixes_applied = len(applied)
    if mode.diff_only:
        report.fixed_source = new_bytes
        label = path.lstrip("/")  # an absolute path: `a/abs/path`, for `patch -p1` from `/`
        new_text = new_bytes.decode(src.encoding, errors="replace")
        if new_text.startswith("\ufeff"):
            new_text = new_text[1:]
        report.diff = "".join(
            difflib.unified_diff(
                src.text.splitlines(keepends=True),
                new_text.splitlines(keepends=True),
                fromfile=f"a/{label}",
                tofile=f"b/{label}",
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
    """Pool initializer: import the engine and the rules while the parent is
    still walking and reading the tree, not when the first file arrives."""
    import pinfix.rules  # noqa: F401


def _guarded(path: str, data: bytes, config: Config, mode: Mode) -> FileReport:
    try:
        return process_source(path, data, config, mode)
    except Exception as e:  # a bug of ours must not stop the other files
        return FileReport(path, error=f"internal error ({type(e).__name__}: {e}); file left unchanged")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), not all the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def run(
    files: Iterable[Path],
    config: Union[Config, Callable[[Path], Config]],
    mode: Mode,
    jobs: Optional[int] = None,
    on_progress: Optional[Callable[[int], None]] = None,
    cache: Optional["ResultCache"] = None,
) -> Iterator[FileReport]:
    """Reports for ``files`` (not in order). Reads and byte-filters here as the
    paths arrive; the files left are analysed in a process pool, started once
    enough of them need it and fed while discovery goes on. ``cache`` (check
    mode only) answers for files analysed before with the same bytes.
    ``config`` may be a function giving each file's settings."""
    jobs = jobs or available_cpus()
    config_for = config if callable(config) else (lambda _path: config)
    if mode.fix:
        cache = None
    known = {}
    backlog: List[tuple] = []
    futures: List[Future] = []
    pool: Optional[ProcessPoolExecutor] = None
    try:
        for seen, path in enumerate(files, 1):
            data = _read(path)
            file_config = config_for(path)
            if isinstance(data, str) or not worth_reading(data, file_config):
                yield FileReport(str(path), error=data if isinstance(data, str) else None)
                if on_progress:
                    on_progress(1)
                continue
            if cache is not None:
                hit = cache.get(str(path), data, file_config)
                if hit is not None:
                    if hit.diagnostics:
                        hit.source = data
                    yield hit
                    if on_progress:
                        on_progress(1)
                    continue
                known[str(path)] = (data, file_config)
            backlog.append((str(path), data, file_config, mode))
            if pool is None and jobs > 1 and (len(backlog) >= POOL_THRESHOLD or seen >= POOL_EARLY_AFTER):
                pool = ProcessPoolExecutor(max_workers=jobs, initializer=_warm_up)
            if pool is not None:
                futures.extend(pool.submit(_worker, item) for item in backlog)
                backlog.clear()
        done = (_worker(item) for item in backlog)  # too few to be worth a pool
        for report in itertools.chain(done, (f.result() for f in as_completed(futures))):
            if cache is not None:
                cache.put(report.path, *known[report.path], report=report)
            yield report
            if on_progress:
                on_progress(1)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
