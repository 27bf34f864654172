"""Check or fix files: read, pre-filter, parse, analyse, rewrite, check, write.

Only files that pass the text pre-filter (:mod:`pinfix.prefilter`)
are parsed, and LibCST is imported only then, so a pre-commit call over files
that cannot hold a finding costs a read and a byte search each.

Files are parsed by CPython's own parser (:meth:`SourceText.parse`): what it
rejects is reported as CPython reports it, at its line and column, and a file
nested more than :data:`MAX_NESTING` levels deep is refused before the
analysis (or LibCST, which places imports) sees it. The analysis and the fix
run on a thread with a large stack and a raised recursion limit, so any
nesting CPython accepts is handled. Before a fix is written, every byte
outside the lines the applier meant to change must be unchanged
(:func:`pinfix.writing.unintended_change`) and the result must compile. A
worker process that dies anyway (a native crash, the kernel's out-of-memory
killer) takes only its own file down: the files it held are retried, the one
that crashed alone in a process of its own, and reported as an error if it
crashes again.
"""

from __future__ import annotations

import ast
import functools
import gc
import itertools
import os
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    AbstractSet,
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Optional,
    Set,
    Tuple,
    TypeVar,
    Union,
)

from .config import NOQA_CODE, Config
from .deepcache import stamp_of
from .findings import FindingFields
from .prefilter import gc_paused, may_contain_finding
from .suppression import DIRECTIVE_BYTES, noqa_report, recording

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .cache import ResultCache

#: Below this many files to parse, a process pool costs more than it saves.
POOL_THRESHOLD = 8
#: After this many files (a tree walk, not a pre-commit call) one file to
#: parse starts the pool (two with a cache): its workers then start while the walk goes on.
POOL_EARLY_AFTER = 100
#: Deeper than this (``ast`` nodes from the module down), a file is refused:
#: the analysis walks and LibCST's parser take time that grows faster than
#: the depth, and real code stays under 100.
MAX_NESTING = 1000
#: The thread that runs the analysis and the fix: their walks (and LibCST's
#: native parser) recurse once or more per level of nesting. Address space
#: only; pages are touched only as deep as the recursion goes.
DEEP_STACK_SIZE = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 100_000


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
    #: ``fix --diff``: a unified diff in the file's own bytes (its encoding, its line ends).
    diff: Optional[bytes] = None
    #: The bytes read, kept when there are findings (for output that shows lines).
    source: Optional[bytes] = None
    #: ``fix --diff`` (and stdin): the fixed bytes.
    fixed_source: Optional[bytes] = None
    #: Why fixes were made but not written, in short ("disk full", "read-only"...),
    #: and which of ``diagnostics`` they were (by index).
    refused: Optional[str] = None
    unwritten: List[int] = field(default_factory=list)
    #: Why the project's formatter could not lay out this file's fixes (the built-in
    #: layout did), in one line; the CLI says it once per run.
    warning: Optional[str] = None
    #: ``--deep``: what the verdict read besides the file (``f:<path>`` of other
    #: modules, ``g:<word>\0<pattern>`` of searches of the project's text); ``None``: nothing
    #: was analysed (the pre-filter answered), so the verdict stands on the file alone.
    reads: Optional[List[str]] = None


@dataclass(frozen=True)
class Mode:
    fix: bool = False
    #: With ``fix``: compute the diff instead of writing.
    diff_only: bool = False
    #: With ``fix``: write through symbolic links (to their targets).
    follow_symlinks: bool = False


def worth_reading(data: bytes, config: Config) -> bool:
    """Whether ``data`` may hold a finding, or (with PIN100 on) a directive to report."""
    return may_contain_finding(data, config) or (NOQA_CODE in config.rules and DIRECTIVE_BYTES.search(data) is not None)


# --- nesting, and a deep stack for the analysis ----------------------------------------


def nested_deeper_than(tree: ast.AST, limit: int) -> bool:
    """Whether some node of ``tree`` lies more than ``limit`` levels down.

    A subtree on one line can be no deeper than it has characters (every
    level of nesting costs one at least), so only subtrees longer than the
    room left are walked: real files cost a walk of their statements, not of
    every expression."""
    stack: List[Tuple[ast.AST, int]] = [(tree, 0)]
    pop, push, children = stack.pop, stack.append, ast.iter_child_nodes
    while stack:
        node, depth = pop()
        if depth > limit:
            return True
        line = getattr(node, "lineno", None)
        if line is not None and line == getattr(node, "end_lineno", None):
            room = limit - depth - 3  # the leaves below the last character: a context, an operator
            if getattr(node, "end_col_offset", 0) - getattr(node, "col_offset", 0) <= room:
                continue
        for child in children(node):
            push((child, depth + 1))
    return False


def _position_of(data: bytes, offset: int) -> Tuple[int, int]:
    """1-based line and byte column of ``offset``, lines counted as CPython does."""
    lines = data[:offset].splitlines(keepends=True)
    if not lines or lines[-1].endswith((b"\n", b"\r")):
        return len(lines) + 1, 1
    return len(lines), len(lines[-1]) + 1


def parse_error(message: str, data: bytes) -> str:
    """The parser's ``message``, at the place CPython means where it gives none
    (a NUL byte is refused before any line is read)."""
    if "null bytes" in message and b"\0" in data:
        line, col = _position_of(data, data.index(b"\0"))
        return f"syntax error at {line}:{col}: source code string cannot contain null bytes"
    return message


_T = TypeVar("_T")
_deep = threading.local()


def on_deep_stack(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` on a thread with a :data:`DEEP_STACK_SIZE` stack (the
    calling thread when it is one already); exceptions come back as raised."""
    if getattr(_deep, "active", False):
        return fn(*args)
    outcome: Dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        _deep.active = True
        try:
            outcome["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001  # handed back to the caller, raised there
            outcome["error"] = e
        finally:
            done.set()

    previous = threading.stack_size()
    try:
        threading.stack_size(DEEP_STACK_SIZE)
    except (ValueError, RuntimeError):  # a platform that cannot: the default stack
        return fn(*args)
    thread = threading.Thread(target=target, name="pinfix-deep")
    try:
        try:
            thread.start()
        except RuntimeError:  # no room for such a stack: the default one
            return fn(*args)
        finally:
            threading.stack_size(previous)
        thread.join()
    except BaseException:
        # Ctrl-C reaches this (the main) thread only, while the thread starts or
        # works: let the file's work end (a write lands whole, or its temporary
        # file is removed), then pass the interrupt on.
        if thread.ident is not None or thread.is_alive():
            done.wait()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@contextmanager
def deep_recursion() -> Iterator[None]:
    """A raised recursion limit, on a :func:`on_deep_stack` thread only."""
    previous = sys.getrecursionlimit()
    if getattr(_deep, "active", False):
        sys.setrecursionlimit(max(previous, DEEP_RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


# --- one file ---------------------------------------------------------------------------


def process_source(path: str, data: bytes, config: Config, mode: Mode) -> FileReport:
    """Analyse (and maybe fix) one file's bytes; never raises for bad input."""
    return on_deep_stack(_process_source, path, data, config, mode)


def _process_source(path: str, data: bytes, config: Config, mode: Mode) -> FileReport:
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
    comments applied), or ``None`` with ``report.error`` saying why: what
    CPython's parser rejects, or nesting deeper than :data:`MAX_NESTING`."""
    from .config import settings_of
    from .prefilter import PREFILTER_OFF
    from .rules import check_module
    from .semantic import SourceError, SourceText, analyze_module
    from .suppression import SourceDirectives, is_suppressed

    try:
        # With the interpreter's own recursion limit: what CPython cannot parse
        # then, it cannot import either.
        src = SourceText.from_bytes(data, path)
        with gc_paused():
            tree = src.parse()
    except SourceError as e:
        report.error = parse_error(str(e), data)
        return None
    if nested_deeper_than(tree, MAX_NESTING):
        report.error = f"nested more than {MAX_NESTING} levels deep; pinfix does not analyse such files"
        return None
    report.parsed = True
    settings = settings_of(config)
    project = None
    if settings.deep:
        from .semantic.project import project_for

        project = project_for(settings)
    with deep_recursion():
        if project is not None:
            with project.recording() as reads:
                facts = analyze_module(src, tree, settings, Path(path), project, everything=PREFILTER_OFF)
            report.reads = sorted(reads)
        else:
            facts = analyze_module(src, tree, settings, Path(path), project, everything=PREFILTER_OFF)
        findings = [f for f in check_module(facts, settings, Path(path)) if codes is None or f.code in codes]
    if facts.problems:
        report.error = contained_errors(facts.problems)
    if findings:
        refused = compile_error(data)
        if refused is not None:
            # What CPython parses but will not compile (`return` outside a function): no
            # finding there, in `check` as in `fix` (which could never write it).
            report.error = refused
            report.parsed = False
            return None
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


def compile_error(data: bytes) -> Optional[str]:
    """Why CPython will not compile ``data`` that its parser accepts (``'return'
    outside function``, a ``nonlocal`` at module level...), as a syntax error is
    reported; ``None`` when it compiles."""
    try:
        compile(data, "<source>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return f"syntax error at {e.lineno or 0}:{e.offset or 0}: {e.msg} (Python will not compile the file)"
    except (ValueError, RecursionError, MemoryError, OverflowError) as e:
        return f"Python will not compile the file ({type(e).__name__}: {e})"
    return None


def contained_errors(problems: Iterable[Tuple[int, str, Exception]]) -> str:
    """One error line for the internal errors the analysis contained, each at its site."""
    said = []
    for line, lost, e in problems:
        where = f" at line {line}" if line else ""
        said.append(f"internal error{where} ({type(e).__name__}: {e}): {lost}")
    return "; ".join(said)


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
    touched: Set[int] = set()
    if any(wanted):
        from .config import settings_of
        from .fixes import FixError, apply_fixes

        # What the analysis left is garbage now, much of it in cycles that the paused
        # collector (:func:`gc_paused`) would keep while the applier parses the file
        # again: on a large module the two together were twice the memory of either.
        # Only this file's objects are young, so the youngest generation is enough.
        gc.collect(0)

        try:
            with deep_recursion():
                result = apply_fixes(src, wanted, settings_of(config), Path(path))
        except FixError as e:
            report.error = str(e) if report.error is None else f"{report.error}; {e}"
            result = None
        except Exception as e:  # noqa: BLE001  # a bug of ours in the applier: the findings stand, unfixed
            said = f"internal error while fixing ({type(e).__name__}: {e}); file left unchanged"
            report.error = said if report.error is None else f"{report.error}; {said}"
            result = None
        if result is not None:
            applied = set(result.applied)
            new_bytes = result.data
            touched = result.touched
            report.warning = result.warning
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
    report.fixes_applied = len(applied)
    unwritable = _unwritable(data, new_bytes, touched)
    if unwritable is not None:
        report.error = (
            f"{unwritable[0]}; file left unchanged"
            if report.error is None
            else f"{report.error}; {unwritable[0]}; file left unchanged"
        )
        report.refused = unwritable[1]
        _unfix(report)
        return report
    report.changed = True
    if mode.diff_only:
        from .diffs import unified_diff

        report.fixed_source = new_bytes
        # An absolute path: `a/abs/path`, for `patch -p1` from `/`.
        report.diff = unified_diff(data, new_bytes, path.lstrip("/"))
        return report
    from .writing import WriteRefused, replace_file

    try:
        replace_file(Path(path), data, new_bytes, follow_symlinks=mode.follow_symlinks)
    except WriteRefused as e:
        report.error = str(e) if report.error is None else f"{report.error}; {e}"
        report.refused = e.reason
        report.changed = False
        _unfix(report)
    return report


def _unfix(report: FileReport) -> None:
    report.fixes_applied = 0
    report.unwritten = [i for i, d in enumerate(report.diagnostics) if d.fixed]
    for d in report.diagnostics:
        d.fixed = False


def _unwritable(old: bytes, new: bytes, touched: AbstractSet[int]) -> Optional[Tuple[str, str]]:
    """Why the rewrite of ``old`` into ``new`` must not be written, and that in
    short: bytes changed outside the lines the applier meant to change
    (``touched``, :attr:`pinfix.fixes.Applied.touched`), or a result Python
    cannot compile."""
    from .writing import unintended_change

    problem = unintended_change(old, new, touched)
    if problem is not None:
        return f"the fix would also change bytes it does not mean to: {problem}", "unintended change"
    try:
        compile(new, "<fixed>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        try:
            compile(old, "<original>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as original:
            return f"Python cannot compile it ({type(original).__name__}: {original})", "does not compile"
        return f"the fixed file would not compile ({type(e).__name__}: {e})", "would not compile"
    return None


# --- reading ----------------------------------------------------------------------------


def _read(path: "Path | str") -> "bytes | str":
    """The file's bytes, or why they cannot be had. Plain ``os.read`` (a third
    of ``Path.read_bytes``'s cost, which matters over a whole tree); only a
    regular file is read (a FIFO would wait for a writer forever)."""
    from .regular import NotRegularFile, read_regular

    try:
        return read_regular(path)
    except IsADirectoryError:
        return "is a directory"
    except NotRegularFile:
        return "not a regular file"
    except OSError as e:
        return f"cannot read: {e.strerror or e}"


# --- worker processes -------------------------------------------------------------------


#: Whether :func:`_worker` may freeze the collector's heap after a deep file: always
#: in a worker process (its heap is ours), in the main process while :func:`run` holds it.
_freezing = False


def _worker(args) -> FileReport:  # type: ignore[no-untyped-def]
    path, data, config, mode = args
    # One file's syntax trees are freed by reference counting; the collector
    # would only walk the growing heap again and again while they are built.
    with gc_paused():
        report = _guarded(path, data, config, mode)
        if _freezing and config.deep:
            # What a deep file leaves (the project's modules, their answers) lives for the
            # run. Out of the collector's sight, the next file's collections do not walk it
            # again: on vLLM 0.34.0 one process spent 30 of 66 s in those walks.
            gc.freeze()
        return report


@contextmanager
def heap_frozen_between_files() -> Iterator[None]:
    """Let :func:`_worker` freeze the heap in this process for the block, and
    thaw it after. A host that freezes its own heap is left to do so."""
    global _freezing
    if _freezing or gc.get_freeze_count():
        yield
        return
    _freezing = True
    try:
        yield
    finally:
        _freezing = False
        gc.unfreeze()


def _frozen_between_files(generator: Callable[..., Iterator[FileReport]]) -> Callable[..., Iterator[FileReport]]:
    """``generator`` run under :func:`heap_frozen_between_files` while it yields."""

    @functools.wraps(generator)
    def frozen(*args: Any, **kwargs: Any) -> Iterator[FileReport]:
        with heap_frozen_between_files():
            yield from generator(*args, **kwargs)

    return frozen


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


#: What one ``--deep`` worker may come to hold: the project's text, its word index and
#: the parsed modules its questions reach (vLLM 0.34.0: 1.7 GB at the peak).
DEEP_WORKER_MEMORY = 2 << 30


def available_memory() -> Optional[int]:
    """Bytes this process could still use: the system's available memory, or less
    where a cgroup (a container, a CI job) limits it; ``None``: no telling."""
    found: List[int] = []
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (AttributeError, OSError, ValueError):
            pass
    try:
        with open("/sys/fs/cgroup/memory.max", "rb") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current", "rb") as f:
            used = int(f.read().strip())
        if limit != b"max":
            found.append(max(int(limit) - used, 0))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def default_jobs(deep: bool) -> int:
    """Worker processes when ``--jobs`` is not given: one a CPU, and in deep mode no
    more than the available memory holds (:data:`DEEP_WORKER_MEMORY` each)."""
    cpus = available_cpus()
    if not deep:
        return cpus
    memory = available_memory()
    if memory is None:
        return cpus
    return max(1, min(cpus, memory // DEEP_WORKER_MEMORY))


#: The signals that stop a run as Ctrl-C does: the pool's workers leave them to the main
#: process, which stops handing out files and waits for those in hand (each written whole
#: or not at all). SIGTERM (``kill``, a service manager) and SIGHUP (a closed terminal)
#: reach the whole process group too.
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def stop_signals() -> Set[int]:
    import signal

    return {int(getattr(signal, name)) for name in STOP_SIGNALS if hasattr(signal, name)}


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread and handled where Ctrl-C is."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def stops_as_interrupts() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Stopped` in the main
    thread, as SIGINT raises KeyboardInterrupt (a signal this process ignores, as
    under ``nohup``, stays ignored). The handlers before are restored after."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise Stopped(signum)

    before = {}
    for signum in stop_signals() - {int(signal.SIGINT)}:
        if signal.getsignal(signum) == signal.SIG_DFL:
            before[signum] = signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


@contextmanager
def interrupts_held() -> Iterator[None]:
    """SIGINT (and the other :data:`STOP_SIGNALS`) blocked in this thread while it starts worker processes: a forked
    child keeps the mask, so a Ctrl-C in the moment before it ignores SIGINT
    (:func:`die_with_parent`) waits instead of killing it mid-start. The
    parent loses nothing: another thread takes the signal, or this one does
    when the mask is restored, and the main thread raises KeyboardInterrupt."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def die_with_parent(parent: int) -> None:
    """Make this (worker) process exit when ``parent`` does, however it ends
    (SIGKILL included): Linux's parent-death signal, and on every platform a
    watchdog thread that notices being handed to another parent.

    It also leaves Ctrl-C to the parent. A terminal's SIGINT reaches the whole
    process group; a worker that took it would die wherever it happened to be
    (inside a weakref callback it prints "Exception ignored" and a traceback,
    between tasks it breaks the pool). The parent stops handing out files and
    waits for the ones in hand, each of which is written whole or not at all.
    (Until here SIGINT is blocked: the parent forks with it held, see
    :func:`interrupts_held`.)"""
    import signal

    for signum in stop_signals():
        signal.signal(signum, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stop_signals())
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # it died before the signal was armed
        os._exit(1)

    def watch() -> None:
        import time

        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="pinfix-parent-watch", daemon=True).start()


#: In a pool worker: the shared slots and this worker's own slot (see :class:`_Pool`).
_SLOT: Optional[Tuple[Any, int]] = None


def _init_worker(parent: int, slots: Any, counter: Any) -> None:
    """Pool initializer: die with the parent, claim a slot to say which file
    it works on, and import the engine and the rules while the parent is still
    walking and reading the tree, not when the first file arrives."""
    global _SLOT, _freezing
    die_with_parent(parent)
    _freezing = True
    with counter.get_lock():
        _SLOT = (slots, counter.value % len(slots))
        counter.value += 1
    import pinfix.rules  # noqa: F401


def _pool_task(index: int, item: tuple) -> FileReport:
    assert _SLOT is not None
    slots, mine = _SLOT
    slots[mine] = index
    try:
        return _worker(item)
    finally:
        slots[mine] = -1


class _Pool:
    """A process pool whose workers each note, in shared memory, which item
    they are working on: when one dies, those are the suspects."""

    def __init__(self, jobs: int):
        # Imported only when a pool is needed: a pre-commit call over a few files starts none.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context()
        self.slots = context.Array("q", [-1] * jobs, lock=False)
        counter = context.Value("i", 0)
        self.executor = ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_init_worker, initargs=(os.getpid(), self.slots, counter)
        )

    def submit(self, index: int, item: tuple) -> Future:
        with interrupts_held():  # a submit may start a worker
            return self.executor.submit(_pool_task, index, item)

    def busy(self) -> Set[int]:
        return {i for i in self.slots if i >= 0}

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def _alone(item: tuple, conn: Any, parent: int) -> None:
    global _freezing
    die_with_parent(parent)
    _freezing = True
    conn.send(_worker(item))
    conn.close()


def _isolated(items: List[tuple], jobs: int) -> Iterator[FileReport]:
    """Each item in a process of its own, ``jobs`` at a time; one whose
    process dies is reported as an error."""
    import multiprocessing

    context = multiprocessing.get_context()
    for start in range(0, len(items), jobs):
        running = []
        for item in items[start : start + jobs]:
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=_alone, args=(item, send, os.getpid()), daemon=True)
            with interrupts_held():
                process.start()
            send.close()
            running.append((item, receive, process))
        for item, receive, process in running:
            try:
                report = receive.recv()
            except (EOFError, OSError):
                report = None
            receive.close()
            process.join()
            if report is None:
                why = _death(process.exitcode)
                report = FileReport(item[0], error=f"the process analysing it crashed ({why}); file left unchanged")
            yield report


def _death(code: Optional[int]) -> str:
    if code is not None and code < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _collect(pool: _Pool, futures: Dict[Future, int], items: List[tuple], jobs: int) -> Iterator[FileReport]:
    """The pool's reports; when a worker dies, its suspects are retried alone
    and the rest in a fresh pool, until every item has its report."""
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool

    pending = dict(futures)
    try:
        while pending:
            try:
                for future in as_completed(list(pending)):
                    report = future.result()
                    del pending[future]
                    yield report
                return
            except BrokenProcessPool:
                pass
            left = {i for f, i in pending.items() if not (f.done() and f.exception() is None)}
            for f in [f for f, i in pending.items() if i not in left]:  # finished before the crash
                yield f.result()
            suspects = pool.busy() & left
            pool.shutdown()
            if not suspects:  # it died outside any file: no telling which, so each alone
                suspects = set(left)
            yield from _isolated([items[i] for i in sorted(suspects)], jobs)
            rest = sorted(left - suspects)
            pending = {}
            if rest:
                pool = _Pool(jobs)
                pending = {pool.submit(i, items[i]): i for i in rest}
    finally:
        pool.shutdown()


@_frozen_between_files
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
    ``config`` may be a function giving each file's settings. A worker that
    dies takes only its own file down (see :func:`_collect`)."""
    jobs = jobs or available_cpus()
    # Answers of an earlier run in this process may be stale (its files since edited); the
    # analysis is imported only if it ran (a pre-commit call over ruled-out files never does).
    deep_project = sys.modules.get("pinfix.semantic.project")
    if deep_project is not None:
        deep_project.forget_projects()
    config_for = config if callable(config) else (lambda _path: config)
    if mode.fix:
        cache = None
    known = {}
    #: Paths analysed or answered by the cache (deep mode rechecks what depends on them).
    checked: List[str] = []
    backlog: List[tuple] = []
    items: List[tuple] = []
    futures: Dict[Future, int] = {}
    pool: Optional[_Pool] = None
    try:
        for seen, path in enumerate(files, 1):
            file_config = config_for(path)
            stamp = None
            if cache is not None:
                # Stat first: a file unchanged since the pre-filter ruled it out is not read.
                stamp = stamp_of(str(path))
                if stamp is not None and cache.ruled_out(str(path), stamp, file_config):
                    if file_config.deep:
                        checked.append(str(path))
                    yield FileReport(str(path))
                    if on_progress:
                        on_progress(1)
                    continue
            data = _read(path)
            if cache is not None and not isinstance(data, str) and file_config.deep:
                checked.append(str(path))
            worth = not isinstance(data, str) and worth_reading(data, file_config)
            if cache is not None and not isinstance(data, str):
                cache.remember_read(str(path), stamp, worth, file_config)
            if not worth:
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
            # With a cache, a lone miss (the file just edited) is parsed here, not worth a pool.
            early = seen >= POOL_EARLY_AFTER and (cache is None or len(backlog) >= 2)
            if pool is None and jobs > 1 and (len(backlog) >= POOL_THRESHOLD or early):
                pool = _Pool(jobs)
            if pool is not None:
                for item in backlog:
                    items.append(item)
                    futures[pool.submit(len(items) - 1, item)] = len(items) - 1
                backlog.clear()
        done = (_worker(item) for item in backlog)  # too few to be worth a pool
        pooled = _collect(pool, futures, items, jobs) if pool is not None else iter(())
        for report in itertools.chain(done, pooled):
            if cache is not None:
                cache.put(report.path, *known[report.path], report=report)
            yield report
            if on_progress:
                on_progress(1)
        if cache is not None and checked:
            yield from _dependents(checked, config_for, mode, cache, jobs)
    finally:
        if pool is not None:
            pool.shutdown()


def _relative(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


def _dependents(
    checked: List[str], config_for: Callable[[Path], Config], mode: Mode, cache: "ResultCache", jobs: int = 1
) -> Iterator[FileReport]:
    """``--deep`` with a cache: recheck the files checked before whose verdict read
    one of ``checked`` (a copy in ``b.py`` of what ``a.py`` makes), and report what
    is new there, naming the file it depends on. A pre-commit call on ``a.py``
    then sees that removing ``pin_memory`` in ``a.py`` made ``b.py``'s copy block.
    Two or more to recheck go to a process pool of ``jobs`` workers."""
    waiting: Dict[str, Tuple[bytes, Config, str, Set[Tuple[str, int, int, str]]]] = {}
    answered: List[FileReport] = []
    run_config = config_for(Path(checked[0]))
    found_all = cache.dependents(checked, run_config)
    limit = cache.config.max_dependents or len(found_all)  # a run's setting: the base settings
    # The rest are left as they are; the front end says how many (the run's note).
    cache.unrechecked = [_relative(found) for found, _ in found_all[limit:]]
    for found, origin in found_all[:limit]:
        path = _relative(found)
        file_config = config_for(Path(path))
        data = _read(path)
        if isinstance(data, str) or not file_config.deep or not worth_reading(data, file_config):
            continue
        # What it said before the files it depends on changed (kept until it is checked itself).
        before = set(cache.previous(path, file_config) or [])
        waiting[path] = (data, file_config, origin, before)
        report = cache.get(path, data, file_config)
        if report is not None:
            answered.append(report)
    served = {r.path for r in answered}
    items = [
        (path, data, file_config, mode) for path, (data, file_config, _, _) in waiting.items() if path not in served
    ]
    if len(items) >= 2 and jobs > 1:
        pool = _Pool(min(jobs, len(items)))
        rechecked: Iterator[FileReport] = _collect(
            pool, {pool.submit(i, item): i for i, item in enumerate(items)}, items, jobs
        )
    else:
        rechecked = (_worker(item) for item in items)
    for report in itertools.chain(answered, rechecked):
        data, file_config, origin, before = waiting[report.path]
        if report.path not in served:
            cache.put(report.path, data, file_config, report=report, baseline=sorted(before), blamed=origin)
        # A finding is new where its rule and place are: not where only its words differ
        # (a whole-project run and a recheck may word the same chain differently).
        said = {(code, line, column) for code, line, column, _ in before}
        new = [d for d in report.diagnostics if (d.code, d.line, d.column) not in said]
        if new or report.error is not None:
            for d in new:
                d.message += f" (`{report.path}` rechecked: its verdict depends on `{origin}`)"
                d.summary += f" (depends on `{origin}`)"
            report.diagnostics = new
            report.source = data if new else None
            yield report
