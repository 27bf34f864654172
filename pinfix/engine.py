"""Check or fix files: read, pre-filter, screen, parse, analyse, rewrite, write.

Only files that pass the text pre-filter (:mod:`pinfix.prefilter`)
are parsed, and LibCST is imported only then, so a pre-commit call over files
that cannot hold a finding costs a read and a byte search each.

Before LibCST sees a file, CPython's own parser screens it (:func:`screen`):
what CPython rejects is reported as CPython reports it, and nothing that
would crash or stall LibCST's native parser reaches it. LibCST then runs on
a thread with a large stack and a raised recursion limit, so any nesting
CPython accepts is handled. A worker process that dies anyway (a native
crash, the kernel's out-of-memory killer) takes only its own file down:
the files it held are retried, the one that crashed alone in a process of
its own, and reported as an error if it crashes again.
"""

from __future__ import annotations

import ast
import itertools
import multiprocessing
import os
import sys
import threading
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
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
    TypeVar,
)

from .config import Config
from .findings import FindingFields
from .prefilter import STATEMENT_LISTS, candidate_source, gc_paused, may_contain_finding

if TYPE_CHECKING:
    from .cache import ResultCache

#: Below this many files to parse, a process pool costs more than it saves.
POOL_THRESHOLD = 8
#: After this many files (a tree walk, not a pre-commit call) one file to
#: parse starts the pool: its workers then import LibCST while the walk goes on.
POOL_EARLY_AFTER = 100
#: Deeper than this (``ast`` nodes from the module down), a file is refused:
#: LibCST's parser and scope analysis take time that grows faster than the
#: square of the depth (a chain of 500 method calls, depth 1,000, takes
#: seconds; 1,500 takes minutes). Real code stays under 100.
MAX_NESTING = 1000
#: The thread that runs LibCST: its native parser and its visitors recurse
#: once or more per level of nesting. Address space only; pages are touched
#: only as deep as the recursion goes.
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
    #: Why fixes were made but not written, in short ("disk full", "read-only"...),
    #: and which of ``diagnostics`` they were (by index).
    refused: Optional[str] = None
    unwritten: List[int] = field(default_factory=list)


@dataclass(frozen=True)
class Mode:
    fix: bool = False
    #: With ``fix``: compute the diff instead of writing.
    diff_only: bool = False
    #: With ``fix``: write through symbolic links (to their targets).
    follow_symlinks: bool = False


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


# --- screening with CPython's parser ---------------------------------------------------


def _position_of(data: bytes, offset: int) -> Tuple[int, int]:
    """1-based line and byte column of ``offset``, lines counted as CPython does."""
    head = data[:offset]
    lines = head.splitlines(keepends=True)
    if not lines or lines[-1].endswith((b"\n", b"\r")):
        return len(lines) + 1, 1
    return len(lines), len(lines[-1]) + 1


def _syntax_message(e: SyntaxError, data: bytes) -> str:
    msg = e.msg or str(e)
    if msg.startswith(("(unicode error)", "unknown encoding")):
        return f"cannot decode: {msg.replace('(unicode error) ', '')}"
    if "null bytes" in msg and b"\0" in data:
        line, col = _position_of(data, data.index(b"\0"))
        return f"syntax error at {line}:{col}: {msg}"
    if e.lineno:
        return f"syntax error at {e.lineno}:{max(e.offset or 1, 1)}: {msg}"
    return f"syntax error: {msg}"


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


def screen(data: bytes) -> Optional[str]:
    """Why CPython's parser rejects ``data`` (as CPython says it, at its line
    and column), or why pinfix will not analyse it; ``None`` when it may go on.

    Run it with the interpreter's normal recursion limit: what CPython cannot
    parse then, it cannot import either."""
    try:
        with gc_paused():
            tree = ast.parse(data)
    except SyntaxError as e:
        return _syntax_message(e, data)
    except ValueError as e:  # NUL bytes, before Python 3.12
        return _syntax_message(SyntaxError(str(e)), data)
    except RecursionError:
        return "too deeply nested: Python's own parser gives up on it (RecursionError)"
    except MemoryError:
        return "too large for Python's own parser (MemoryError)"
    if nested_deeper_than(tree, MAX_NESTING):
        return f"nested more than {MAX_NESTING} levels deep; pinfix does not analyse such files"
    return None


# --- a deep stack for LibCST ------------------------------------------------------------


_T = TypeVar("_T")
_deep = threading.local()


def on_deep_stack(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` on a thread with a :data:`DEEP_STACK_SIZE` stack (the
    calling thread when it is one already); exceptions come back as raised."""
    if getattr(_deep, "active", False):
        return fn(*args)
    outcome: Dict[str, Any] = {}

    def target() -> None:
        _deep.active = True
        try:
            outcome["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001  # handed back to the caller, raised there
            outcome["error"] = e

    previous = threading.stack_size()
    try:
        threading.stack_size(DEEP_STACK_SIZE)
    except (ValueError, RuntimeError):  # a platform that cannot: the default stack
        return fn(*args)
    try:
        thread = threading.Thread(target=target, name="pinfix-deep")
        thread.start()
    except RuntimeError:  # no room for such a stack: the default one
        return fn(*args)
    finally:
        threading.stack_size(previous)
    thread.join()
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
    report = FileReport(path)
    if not may_contain_finding(data, config):
        return report
    try:
        sliced = candidate_source(data, config)
    except RecursionError:  # valid, but too deep for the pre-filter's walk: analyse it all
        sliced = data
    if sliced is None:
        return report
    problem = screen(data)
    if problem is not None:
        report.error = problem
        return report
    with deep_recursion():
        fixed = _analyse(path, data, sliced, config, mode, report)
    if fixed is None:
        return report
    new_bytes, allowed = fixed
    unwritable = _unwritable(data, new_bytes, allowed)
    if unwritable is not None:
        report.error = f"{unwritable[0]}; file left unchanged"
        report.refused = unwritable[1]
        _unfix(report)
        return report
    report.changed = True
    if mode.diff_only:
        from .diffs import unified_diff

        report.diff = unified_diff(data, new_bytes, path)
        return report
    from .writing import WriteRefused, replace_file

    try:
        replace_file(Path(path), data, new_bytes, follow_symlinks=mode.follow_symlinks)
    except WriteRefused as e:
        report.error = str(e)
        report.refused = e.reason
        report.changed = False
        _unfix(report)
    return report


def _unfix(report: FileReport) -> None:
    report.fixes_applied = 0
    report.unwritten = [i for i, d in enumerate(report.diagnostics) if d.fixed]
    for d in report.diagnostics:
        d.fixed = False


def _analyse(
    path: str, data: bytes, sliced: bytes, config: Config, mode: Mode, report: FileReport
) -> Optional[Tuple[bytes, Set[int]]]:
    """Findings into ``report``; with ``mode.fix`` and fixes to make, the new
    bytes and the lines of ``data`` the fixes may change."""
    from .analysis import analyze

    module = parse(sliced, report)
    if module is None and sliced is not data:
        # Never report an error the file itself does not have.
        report.error = None
        sliced = data
        module = parse(data, report)
    if module is None:
        return None
    report.parsed = True
    # Checking needs no codemod machinery (nor the cost of importing it).
    findings = analyze(module, None, config, Path(path), source=sliced)
    allowed = {"safe", "unsafe"} if config.unsafe_fixes else {"safe"}
    wants_fix = mode.fix and any(f.fix_safety in allowed for f in findings)
    if not wants_fix:
        report.diagnostics.extend(Diagnostic(**f.shared_fields(), path=path) for f in findings)
        return None
    # Fixes are made on the whole file, never on the slice.
    if sliced is not data:
        module = parse(data, report)
        if module is None:
            return None
    command = _recording_command(path, config)
    new_module = command.transform_module(module)
    applied = {id(f) for f in command.applied}
    for f in command.findings:
        report.diagnostics.append(Diagnostic(**f.shared_fields(), path=path, fixed=id(f) in applied))
    if new_module is module:
        return None
    new_bytes = new_module.bytes
    if new_bytes == data:
        return None
    report.fixes_applied = len(applied)
    return new_bytes, fix_lines(data, command.edited_lines)


def _recording_command(path: str, config: Config):  # type: ignore[no-untyped-def]
    """The codemod, also noting the lines each applied fix edits."""
    from libcst.codemod import CodemodContext
    from libcst.metadata import PositionProvider

    from codemods.pin_pageable_sources import PinPageableSourcesCommand

    class Recording(PinPageableSourcesCommand):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw)
            self.edited_lines: List[Tuple[int, int]] = []

        def transform_module_impl(self, tree):  # type: ignore[no-untyped-def]
            out = super().transform_module_impl(tree)
            spans = []
            for f in self.applied:
                for node in f.edits:
                    where = self.get_metadata(PositionProvider, node)
                    spans.append((where.start.line, where.end.line))
            self.edited_lines = spans
            return out

    return Recording(CodemodContext(filename=path), config=config)


def _is_blank(line: bytes) -> bool:
    # A form feed is no blank: LibCST drops some, and that must show.
    return not line.strip(b" \t\r\n")


def _import_lines(tree: ast.Module) -> Set[int]:
    """The lines of every ``import`` statement, at any depth: only statements
    are walked, never into expressions (a huge literal costs nothing)."""
    lines: Set[int] = set()
    stack: List[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        else:
            for name in STATEMENT_LISTS:
                stack.extend(getattr(node, name, ()))
    return lines


def fix_lines(data: bytes, edited: Iterable[Tuple[int, int]]) -> Set[int]:
    """The lines of ``data`` a fix may change: those of the edited calls
    (first and last line, inclusive), every import statement (an import is
    added, merged or removed), the blank lines around imports (isort's section
    breaks), and, in a module without imports before its code, the place after
    the docstring (or before the first statement) where the first goes."""
    from .writing import START_OF_FILE

    allowed: Set[int] = set()
    for first, last in edited:
        allowed.update(range(first, last + 1))
    tree = ast.parse(data)
    imports = _import_lines(tree)
    body = tree.body
    start = 1 if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) else 0
    if start < len(body) and not isinstance(body[start], (ast.Import, ast.ImportFrom)):
        first = body[start]
        decorators = getattr(first, "decorator_list", None) or []
        line = min([first.lineno, *(d.lineno for d in decorators)])
        imports.add(line - 1 if line > 1 else START_OF_FILE)
    allowed |= imports
    # Blank lines next to an import line, and next to those (1-based; line 0 is the start).
    lines = data.splitlines()
    for k in sorted(imports):
        for step in (-1, 1):
            j = k + step
            while 1 <= j <= len(lines) and j not in allowed and _is_blank(lines[j - 1]):
                allowed.add(j)
                j += step
    return allowed


def _unwritable(old: bytes, new: bytes, allowed: Set[int]) -> Optional[Tuple[str, str]]:
    """Why the rewrite of ``old`` into ``new`` must not be written, and that in
    short: bytes changed outside the fix, or a result Python cannot compile."""
    from .writing import unintended_change

    problem = unintended_change(old, new, allowed)
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
    from .writing import NotRegularFile, read_regular

    try:
        return read_regular(path)
    except IsADirectoryError:
        return "is a directory"
    except NotRegularFile:
        return "not a regular file"
    except OSError as e:
        return f"cannot read: {e.strerror or e}"


# --- worker processes -------------------------------------------------------------------


def _worker(args) -> FileReport:  # type: ignore[no-untyped-def]
    path, data, config, mode = args
    # One file's syntax trees are freed by reference counting; the collector
    # would only walk the growing heap again and again while they are built.
    with gc_paused():
        return _guarded(path, data, config, mode)


def _guarded(path: str, data: bytes, config: Config, mode: Mode) -> FileReport:
    try:
        return process_source(path, data, config, mode)
    except Exception as e:  # a bug of ours must not stop the other files
        return FileReport(path, error=f"internal error ({type(e).__name__}: {e}); file left unchanged")


def die_with_parent(parent: int) -> None:
    """Make this (worker) process exit when ``parent`` does, however it ends
    (SIGKILL included): Linux's parent-death signal, and on every platform a
    watchdog thread that notices being handed to another parent."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

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
    it works on, and import LibCST and the analysis while the parent is still
    walking and reading the tree, not when the first file arrives."""
    global _SLOT
    die_with_parent(parent)
    with counter.get_lock():
        _SLOT = (slots, counter.value % len(slots))
        counter.value += 1
    import pinfix.analysis  # noqa: F401


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
        context = multiprocessing.get_context()
        self.slots = context.Array("q", [-1] * jobs, lock=False)
        counter = context.Value("i", 0)
        self.executor = ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_init_worker, initargs=(os.getpid(), self.slots, counter)
        )

    def submit(self, index: int, item: tuple) -> Future:
        return self.executor.submit(_pool_task, index, item)

    def busy(self) -> Set[int]:
        return {i for i in self.slots if i >= 0}

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def _alone(item: tuple, conn: Any, parent: int) -> None:
    die_with_parent(parent)
    conn.send(_worker(item))
    conn.close()


def _isolated(items: List[tuple], jobs: int) -> Iterator[FileReport]:
    """Each item in a process of its own, ``jobs`` at a time; one whose
    process dies is reported as an error."""
    context = multiprocessing.get_context()
    for start in range(0, len(items), jobs):
        running = []
        for item in items[start : start + jobs]:
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=_alone, args=(item, send, os.getpid()), daemon=True)
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
    items: List[tuple] = []
    futures: Dict[Future, int] = {}
    pool: Optional[_Pool] = None
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
                cache.put(report.path, known[report.path], report)
            yield report
            if on_progress:
                on_progress(1)
    finally:
        if pool is not None:
            pool.shutdown()
