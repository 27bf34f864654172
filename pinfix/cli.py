"""``pinfix check | fix | rule``: a thin shell over :mod:`pinfix.engine`.

Exit codes: 0 nothing to report; 1 findings (``check``), findings left or, with
``--diff``, changes to make (``fix``); 2 usage error or an input that could not
be read, parsed or written (the other files are still processed).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, TextIO, Tuple

from . import __version__
from .config import Config, ConfigError, load_config
from .engine import Diagnostic, FileReport, Mode, run
from .output import FORMATS, TolerantStream, render, write_bytes

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
#: Show a progress bar (on a terminal) only for runs this long.
PROGRESS_MIN_FILES = 200


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pinfix", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pinfix {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{check,fix,rule}")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or directories (default: .)")
    common.add_argument("--config", type=Path, help="pyproject.toml to read [tool.pinfix] from")
    common.add_argument("--output-format", choices=FORMATS, default="text")
    common.add_argument("--jobs", "-j", type=int, default=None, help="parallel processes (default: all cores)")
    common.add_argument("--strict", action="store_true", default=None, help="also report non_blocking=<expression>")
    common.add_argument("--helper", default=None, help="module.path.name of the pinned helper")
    common.add_argument("--exclude", action="append", default=[], help="extra gitignore-style pattern to skip")
    common.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    common.add_argument("--no-cache", action="store_true", help="do not read or write .pinfix_cache")
    common.add_argument(
        "--deep", action="store_true", default=None, help="follow tensors across functions, attributes and files"
    )
    common.add_argument(
        "--show-unknown", action="store_true", default=None, help="with --deep: also note copies whose source memory is unknown (PIN004)"
    )
    common.add_argument(
        "--follow-symlinks", action="store_true", help="take linked files in walks, and let fix write through symbolic links"
    )

    sub.add_parser("check", parents=[common], help="report findings")
    fix = sub.add_parser("fix", parents=[common], help="apply fixes in place")
    fix.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    fix.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply unsafe fixes")
    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="rule code, e.g. PIN001 (default: list rules)")
    return parser


def _config(args: argparse.Namespace) -> Config:
    start = Path(args.paths[0]) if args.paths else Path.cwd()
    start = start if start.is_dir() else start.parent
    config = load_config(start if start.exists() else Path.cwd(), explicit=args.config)
    return config.with_overrides(
        strict=args.strict,
        helper=args.helper,
        unsafe_fixes=getattr(args, "unsafe_fixes", None),
        deep=args.deep,
        show_unknown=args.show_unknown,
        exclude=tuple(config.exclude) + tuple(args.exclude) if args.exclude else None,
    )


def _progress(total: int, stream: TextIO):  # type: ignore[no-untyped-def]
    """A progress bar on ``stream`` (a terminal) for long runs; ``None`` otherwise."""
    if total < PROGRESS_MIN_FILES:
        return None
    from rich.console import Console
    from rich.progress import Progress

    return Progress(transient=True, console=Console(file=stream))


def _rule_doc(code: Optional[str], out: TextIO, err: TextIO) -> int:
    from .patterns import RULE_NAMES

    if code is None:
        for c, name in RULE_NAMES.items():
            out.write(f"{c}  {name}\n")
        return EXIT_CLEAN
    name = RULE_NAMES.get(code.upper())
    if name is None:
        err.write(f"pinfix: unknown rule {code!r} (known: {', '.join(RULE_NAMES)})\n")
        return EXIT_ERROR
    import inspect

    import lint_rules

    out.write(inspect.cleandoc(getattr(lint_rules, name).__doc__ or "") + "\n")
    return EXIT_CLEAN


def _summary(command: str, reports: Sequence[FileReport], mode: Mode, err: TextIO) -> None:
    notes = sum(1 for r in reports for d in r.diagnostics if d.severity == "info")
    findings = [d for r in reports for d in r.diagnostics if d.severity != "info"]
    left = [d for d in findings if not d.fixed]
    errors = sum(1 for r in reports if r.error)
    parsed = sum(1 for r in reports if r.parsed)
    head = f"pinfix: {len(reports)} files scanned ({parsed} parsed)"
    if command == "check":
        noted = f", {notes} notes (PIN004)" if notes else ""
        err.write(f"{head}, {len(findings)} findings{noted}" + (f", {errors} errors" if errors else "") + "\n")
        return
    changed = sum(1 for r in reports if r.changed)
    fixed = sum(r.fixes_applied for r in reports)
    verb = "would change" if mode.diff_only else "changed"
    err.write(f"{head}; {verb} {changed} files, {fixed} fixes" + (f", {errors} errors" if errors else "") + "\n")
    if left:
        why = Counter(
            f"write refused ({r.refused})" if i in r.unwritten else _left_because(d)
            for r in reports
            for i, d in enumerate(r.diagnostics)
            if _fails(d)
        )
        err.write(f"pinfix: {len(left)} findings left: " + ", ".join(f"{n} {k}" for k, n in why.items()) + "\n")


def _left_because(d: Diagnostic) -> str:
    return "unsafe fix (use --unsafe-fixes)" if d.fix_safety == "unsafe" else "no fix available"


def main(argv: Optional[List[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    out, err = TolerantStream(out), TolerantStream(err)  # type: ignore[assignment]  # odd file names never crash
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse has printed the usage message
        return EXIT_CLEAN if e.code == 0 else EXIT_ERROR
    if args.command == "rule":
        return _rule_doc(args.code, out, err)
    if args.jobs is not None and args.jobs < 1:
        err.write("pinfix: --jobs must be at least 1\n")
        return EXIT_ERROR
    try:
        config = _config(args)
    except ConfigError as e:
        err.write(f"pinfix: {e}\n")
        return EXIT_ERROR

    from .files import walk

    mode = Mode(
        fix=args.command == "fix", diff_only=bool(getattr(args, "diff", False)), follow_symlinks=args.follow_symlinks
    )
    errors: List[Tuple[Path, str]] = []
    files: Iterable[Path] = walk(
        args.paths, errors, exclude=config.exclude, root=config.root, follow_symlinks=args.follow_symlinks
    )
    progress = None
    if not args.no_progress and err.isatty():
        files = list(files)  # a bar needs its total; otherwise files stream into the pool
        progress = _progress(len(files), err)
    reports: List[FileReport] = []
    cache = None
    from .prefilter import PREFILTER_OFF

    # Shortcuts off means all of them; deep findings depend on other files, which a
    # cache keyed by one file's bytes cannot see change.
    if not (args.no_cache or mode.fix or PREFILTER_OFF or config.deep):
        from .cache import ResultCache

        cache = ResultCache.for_config(config)
    try:
        if progress is None:
            reports += run(files, config, mode, jobs=args.jobs, cache=cache)
        else:
            with progress:
                task = progress.add_task("pinfix", total=len(files))  # type: ignore[arg-type]
                reports += run(
                    files, config, mode, jobs=args.jobs, cache=cache, on_progress=lambda n: progress.advance(task, n)
                )
    except KeyboardInterrupt:
        err.write("pinfix: interrupted; every file is either as it was or fully rewritten\n")
        return 130
    reports += [FileReport(str(p), error=why) for p, why in errors]
    reports.sort(key=lambda r: r.path)
    if mode.diff_only:
        # stdout is the patch; everything else goes to stderr.
        for r in reports:
            if r.diff:
                write_bytes(out, r.diff)
    render(args.output_format, reports, err if mode.diff_only else out, err)
    if args.output_format == "text":
        _summary(args.command, reports, mode, err)

    if any(r.error for r in reports):
        return EXIT_ERROR
    if mode.diff_only:
        return EXIT_FINDINGS if any(r.changed for r in reports) else EXIT_CLEAN
    return EXIT_FINDINGS if any(_fails(d) for r in reports for d in r.diagnostics) else EXIT_CLEAN


def _fails(d: Diagnostic) -> bool:
    """A finding left open fails the run; an informational note (PIN004) never does."""
    return not d.fixed and d.severity != "info"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
