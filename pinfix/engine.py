"""Check or fix files: read, pre-filter, parse, analyse, rewrite, check, write.

The per-file pipeline; :mod:`pinfix.pool` runs it over many files in worker
processes. Only files that pass the text pre-filter (:mod:`pinfix.prefilter`)
are parsed, and LibCST is imported only then, so a pre-commit call over files
that cannot hold a finding costs a read and a byte search each.

Files are parsed by CPython's own parser (:meth:`SourceText.parse`): what it
rejects is reported as CPython reports it, at its line and column, and a file
nested more than :data:`MAX_SYNTAX_DEPTH` levels deep is refused before the
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
import gc
import sys
import threading
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import (
    AbstractSet,
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypeVar,
)

from .config import NOQA_CODE, Config
from .findings import Added, Diagnostic, FileReport, Mode
from .prefilter import gc_paused, may_contain_finding
from .suppression import DIRECTIVE_BYTES, noqa_report, recording

#: Deeper than this (``ast`` nodes from the module down), a file is refused:
#: the analysis walks and LibCST's parser take time that grows faster than
#: the depth, and real code stays under 100.
MAX_SYNTAX_DEPTH = 1000
#: The thread that runs the analysis and the fix: their walks (and LibCST's
#: native parser) recurse once or more per level of nesting. Address space
#: only; pages are touched only as deep as the recursion goes.
DEEP_STACK_SIZE = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 100_000


def worth_reading(data: bytes, config: Config) -> bool:
    """Whether ``data`` may hold a finding, or (with PIN100 on) a directive to report."""
    return may_contain_finding(data, config) or (NOQA_CODE in config.rules and DIRECTIVE_BYTES.search(data) is not None)


# --- nesting, and a deep stack for the analysis ----------------------------------------


def nested_deeper_than(tree: ast.AST, limit: int, line_starts: Optional[Sequence[int]] = None, size: int = 0) -> bool:
    """Whether some node of ``tree`` lies more than ``limit`` levels down.

    A subtree can be no deeper than it has characters (every level of nesting
    costs one at least), so only subtrees longer than the room left are walked:
    real files cost a walk of their long statements, not of every expression. A
    subtree on one line is measured by its columns; one over several lines by the
    lines it spans, where ``line_starts`` (the offset of each line's first
    character; ``size``: the text's length) are given. A def's or a class's
    decorators stand above its first line: they are measured apart."""
    from .semantic.scope import child_nodes

    stack: List[Tuple[ast.AST, int]] = [(tree, 0)]
    pop, push = stack.pop, stack.append
    lines = len(line_starts) if line_starts is not None else 0
    while stack:
        node, depth = pop()
        if depth > limit:
            return True
        first = getattr(node, "lineno", None)
        if first is not None:
            decorators = getattr(node, "decorator_list", None) or ()
            room = limit - depth - 3  # the leaves below the last character: a context, an operator
            last = getattr(node, "end_lineno", None)
            if first == last:
                short = getattr(node, "end_col_offset", 0) - getattr(node, "col_offset", 0) <= room
            else:
                short = (
                    line_starts is not None
                    and last is not None
                    and 0 < first <= last
                    and (line_starts[last] if last < lines else size) - line_starts[first - 1] <= room
                )
            if short:
                for decorator in decorators:
                    push((decorator, depth + 1))
                continue
        for child in child_nodes(node):
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


def process_source(path: str, data: bytes, config: Config, mode: Mode, added: Optional[Added] = None) -> FileReport:
    """Analyse (and maybe fix) one file's bytes; never raises for bad input
    (``added``: check only the statements added to a text whose verdict holds)."""
    return on_deep_stack(_process_source, path, data, config, mode, added)


def _process_source(path: str, data: bytes, config: Config, mode: Mode, added: Optional[Added]) -> FileReport:
    codes = config.codes_for(path)
    with recording(data) as state:
        report = _process(path, data, config, mode, codes, added)
    if added is not None:
        # The earlier findings lie outside what was added or rewritten, which holds no
        # suppression comment (nor did the earlier text hold one unused): in source order,
        # as the rules give them.
        found = [replace(d, path=path) for d in added.diagnostics] + report.diagnostics
        report.diagnostics = sorted(found, key=lambda d: (d.line, d.column, d.code))
        report.reads = sorted(set(added.reads).union(report.reads or ()))
    elif NOQA_CODE in codes and report.error is None:
        report.diagnostics += [Diagnostic(**f.shared_fields(), path=path) for f in noqa_report(data, state, codes)]
    if report.diagnostics:
        report.source = data
    return report


def analyse(  # type: ignore[no-untyped-def]
    path: str,
    data: bytes,
    config: Config,
    report: FileReport,
    codes: Optional[FrozenSet[str]] = None,
    added: Optional[Added] = None,
):
    """``(source, findings)`` of one file's bytes (those of ``codes``, suppression
    comments applied), or ``None`` with ``report.error`` saying why: what
    CPython's parser rejects, or nesting deeper than :data:`MAX_SYNTAX_DEPTH`
    (``added``: only the copies on the lines added, and their findings)."""
    from .config import settings_of
    from .fixes.plan import planned_findings
    from .prefilter import PREFILTER_OFF
    from .semantic import SourceError, SourceText, analyze_module, hot_lines
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
    if nested_deeper_than(tree, MAX_SYNTAX_DEPTH, src.line_starts, len(src.text)):
        report.error = f"nested more than {MAX_SYNTAX_DEPTH} levels deep; pinfix does not analyse such files"
        return None
    report.parsed = True
    settings = settings_of(config)
    project = None
    if settings.deep:
        from .semantic.deep.project import project_for

        project = project_for(settings)
    lines = None if added is None else [n for n in hot_lines(data, settings.strict) if added.holds(n)]
    with deep_recursion():
        if project is not None:
            with project.recording() as reads:
                facts = analyze_module(src, tree, settings, Path(path), project, lines, PREFILTER_OFF)
            report.reads = sorted(reads)
        else:
            facts = analyze_module(src, tree, settings, Path(path), project, lines, PREFILTER_OFF)
        findings = [
            f
            for f in planned_findings(facts, settings, Path(path))
            if (codes is None or f.code in codes) and (added is None or added.holds(f.line))
        ]
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


def _process(
    path: str, data: bytes, config: Config, mode: Mode, codes: FrozenSet[str], added: Optional[Added] = None
) -> FileReport:
    report = FileReport(path)
    if not may_contain_finding(data, config):
        return report
    found = analyse(path, data, config, report, codes, added)
    if found is None:
        return report
    src, findings = found
    applied: set = set()
    new_bytes = data
    touched: Set[int] = set()
    if mode.fix and any(f.fix is not None for f in findings):
        from .config import settings_of
        from .edits import Applicability
        from .fixes import FixError, fix_findings

        # What the analysis left is garbage now, much of it in cycles that the paused
        # collector (:func:`gc_paused`) would keep while the applier parses the file
        # again: on a large module the two together were twice the memory of either.
        # Only this file's objects are young, so the youngest generation is enough.
        gc.collect(0)

        try:
            with deep_recursion():
                result = fix_findings(
                    src, findings, settings_of(config), Path(path), Applicability.required(config.unsafe_fixes)
                )
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
