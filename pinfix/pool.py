"""Run the per-file pipeline (:mod:`pinfix.engine`) over many files: read and
byte-filter them as discovery yields them, answer from the check cache, and
analyse the rest in a process pool started once enough of them need it.

A worker process that dies (a native crash, the kernel's out-of-memory killer)
takes only its own file down: the files it held are retried, the one that
crashed alone in a process of its own, and reported as an error if it crashes
again. Signals that stop a run (SIGINT, SIGTERM, SIGHUP) stop the workers too.
"""

from __future__ import annotations

import functools
import gc
import itertools
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Set,
    Tuple,
    Union,
)

from .config import Config
from .engine import process_source, worth_reading
from .findings import Added, FileReport, Mode
from .prefilter import gc_paused

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .cache import ResultCache

#: Below this many files to parse, a process pool costs more than it saves.
POOL_THRESHOLD = 8
#: After this many files (a tree walk, not a pre-commit call) one file to
#: parse starts the pool (two with a cache): its workers then start while the walk goes on.
POOL_EARLY_AFTER = 100

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
    path, data, config, mode, added = args
    # One file's syntax trees are freed by reference counting; the collector
    # would only walk the growing heap again and again while they are built.
    with gc_paused():
        report = _guarded(path, data, config, mode, added)
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


def _guarded(path: str, data: bytes, config: Config, mode: Mode, added: Optional[Added] = None) -> FileReport:
    try:
        return process_source(path, data, config, mode, added)
    except Exception as e:  # a bug of ours must not stop the other files
        return FileReport(path, error=f"internal error ({type(e).__name__}: {e}); file left unchanged")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), not all the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


#: What one ``--deep`` worker may come to hold: the project's text, its word index and
#: the parsed modules its questions reach (vLLM 0.34.0: 1.1 GB at the peak alone, 0.9 GB
#: each of two; kept at 2 GiB for projects larger than any measured).
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


def _init_worker(parent: int, slots: Any, counter: Any, keeper: Any = None) -> None:
    """Pool initializer: die with the parent, claim a slot to say which file
    it works on, keep deep mode's word indexes with ``keeper`` (see
    :func:`_word_keeper`), and import the engine and the rules while the parent
    is still walking and reading the tree, not when the first file arrives."""
    global _SLOT, _freezing
    die_with_parent(parent)
    _freezing = True
    with counter.get_lock():
        _SLOT = (slots, counter.value % len(slots))
        counter.value += 1
    if keeper is not None:
        from .semantic.deep.words import use_keeper

        use_keeper(keeper)
    import pinfix.rules  # noqa: F401


#: This run's keeper of deep mode's word indexes, by the cache it is in (see :func:`_word_keeper`).
_KEEPER: Optional[Tuple[Any, Any]] = None


def _word_keeper(cache: "ResultCache", config: Config) -> Any:
    """Where the first deep file this run analyses with ``cache`` has its word indexes
    kept (the cache's; made once a run), set for this process: a pre-commit call after
    a one-line edit reads each root's index back instead of every file under it."""
    global _KEEPER
    if _KEEPER is None or _KEEPER[0] is not cache:
        from .semantic.deep.words import use_keeper

        keeper = cache.word_keeper(config)
        use_keeper(keeper)
        _KEEPER = (cache, keeper)
    return _KEEPER[1]


def _forget_word_keeper() -> None:
    global _KEEPER
    if _KEEPER is not None:
        from .semantic.deep.words import use_keeper

        use_keeper(None)
        _KEEPER = None


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

    def __init__(self, jobs: int, keeper: Any = None):
        # Imported only when a pool is needed: a pre-commit call over a few files starts none.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context()
        self.slots = context.Array("q", [-1] * jobs, lock=False)
        counter = context.Value("i", 0)
        self.executor = ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=context,
            initializer=_init_worker,
            initargs=(os.getpid(), self.slots, counter, keeper),
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
    deep_project = sys.modules.get("pinfix.semantic.deep.project")
    if deep_project is not None:
        deep_project.forget_projects()
    config_for = config if callable(config) else (lambda _path: config)
    if mode.fix:
        cache = None
    known = {}
    #: Paths analysed or answered by the cache (deep mode rechecks what depends on them).
    checked: List[str] = []
    keeper: Any = None
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
                stamp = cache.stamp(str(path))
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
            added = cache.added.pop(str(path), None) if cache is not None else None
            backlog.append((str(path), data, file_config, mode, added))
            if cache is not None and file_config.deep:
                keeper = _word_keeper(cache, file_config)
            # With a cache, a lone miss (the file just edited) is parsed here, not worth a pool.
            early = seen >= POOL_EARLY_AFTER and (cache is None or len(backlog) >= 2)
            if pool is None and jobs > 1 and (len(backlog) >= POOL_THRESHOLD or early):
                pool = _Pool(jobs, keeper)
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
        _forget_word_keeper()


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
    # Each is asked of the cache (its verdict may hold: an edit that changed nothing it
    # read); of those that must be checked again, the first `limit` are, and the rest are
    # left as they are: the front end says how many (the run's note).
    cache.unrechecked = []
    edited = {os.path.realpath(p) for p in checked} if found_all else set()
    for found, origin in found_all:
        path = _relative(found)
        file_config = config_for(Path(path))
        data = _read(path)
        if isinstance(data, str) or not file_config.deep or not worth_reading(data, file_config):
            continue
        report = cache.get(path, data, file_config, dependent_of=edited)
        if report is not None:
            answered.append(report)
        elif len(waiting) - len(answered) >= limit:
            cache.unrechecked.append(path)
            cache.added.pop(path, None)
            continue
        # What it said before the files it depends on changed (kept until it is checked itself).
        before = set(cache.previous(path, file_config) or [])
        waiting[path] = (data, file_config, origin, before)
    cache.settle()
    served = {r.path for r in answered}
    items = [
        (path, data, file_config, mode, cache.added.pop(path, None))
        for path, (data, file_config, _, _) in waiting.items()
        if path not in served
    ]
    keeper = _word_keeper(cache, run_config) if items else None
    if len(items) >= 2 and jobs > 1:
        pool = _Pool(min(jobs, len(items)), keeper)
        rechecked: Iterator[FileReport] = _collect(
            pool, {pool.submit(i, item): i for i, item in enumerate(items)}, items, jobs
        )
    else:
        rechecked = (_worker(item) for item in items)
    for report in itertools.chain(answered, rechecked):
        data, file_config, origin, before = waiting[report.path]
        # Rechecked, or still valid for the file it depends on as that file is now (an edit
        # that changed nothing it says): either way its baseline holds until HEAD holds
        # that file as it is now.
        if report.path in served:
            cache.reblame(report.path, data, file_config, origin)
        else:
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
