"""The ``pinfix`` command: a thin shell over the engine.

Exit codes: 0 nothing to report; 1 findings (``check``), findings left or, with
``--diff``, changes to make (``fix``); 2 usage or settings error, or an input
that could not be read, parsed or written (the other files are still processed).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO, Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from . import __version__
from .config import (
    DEFAULT_RULES,
    NOQA_CODE,
    OUTPUT_FORMATS,
    RULES,
    SETTINGS,
    Config,
    ConfigError,
    check_value,
    describe,
    parse_override,
)
from .findings import Diagnostic, FileReport, Mode
from .pool import Stopped, default_jobs, stops_as_interrupts

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
#: The reader of the output went away (``pinfix check | head -1``): the shell's
#: status for a process ended by SIGPIPE, as ``yes | head`` gives; nothing is printed.
EXIT_BROKEN_PIPE = 128 + 13
#: The most ``check -`` / ``fix -`` read from stdin (real modules hold kilobytes):
#: an endless stream is refused at this size, not read until memory runs out.
MAX_STDIN_BYTES = 1 << 28
#: Show a progress bar (on a terminal) only for runs this long.
PROGRESS_MIN_FILES = 200

DESCRIPTION = (
    "Find non_blocking host-to-device copies whose CPU source is pageable memory, and rewrite them to pinned sources."
)

RUN = ("check", "fix")
INSPECT = ("show-settings", "show-files", "show-producers")
_CONFIG_HELP = (
    "a settings file (pinfix.toml, or a pyproject.toml's [tool.pinfix]) used for every file, "
    "or one `key = value` setting; may be repeated"
)

#: Options that are no setting: (flags, argparse keywords, the commands that take them).
OPTIONS: Tuple[Tuple[Tuple[str, ...], Dict[str, Any], Tuple[str, ...]], ...] = (
    (("--config",), dict(action="append", default=[], metavar="FILE|KEY=VALUE", help=_CONFIG_HELP), RUN + INSPECT),
    (
        ("--jobs", "-j"),
        dict(
            type=int,
            default=None,
            help="parallel processes (default: the CPUs this process may use; in deep mode, no more than one per 2 GiB of available memory)",
        ),
        RUN,
    ),
    (("--no-cache",), dict(action="store_true", help="neither read nor write the check cache"), RUN),
    (("--no-progress",), dict(action="store_true", help="never show a progress bar"), RUN),
    (
        ("--quiet", "-q"),
        dict(action="store_true", help="print findings and errors only: no summary, no list of fixed files"),
        RUN,
    ),
    (
        ("--verbose", "-v"),
        dict(action="store_true", help="also say how many files were parsed, with how many processes"),
        RUN,
    ),
    (("--exit-zero",), dict(action="store_true", help="exit 0 even when findings are left (errors still exit 2)"), RUN),
    (("--statistics",), dict(action="store_true", help="print a count per rule instead of each finding"), RUN),
    (
        ("--show-fixes",),
        dict(
            action="store_true",
            help="list the fixes applied (fix) or that `pinfix fix` would apply (check), per file and rule",
        ),
        RUN,
    ),
    (
        ("--stdin-filename",),
        dict(metavar="PATH", help="read the source from stdin; PATH names it and picks its settings"),
        RUN,
    ),
    (
        ("--add-noqa",),
        dict(action="store_true", help="write `# noqa: PINxxx` on a line of each finding (a baseline), then exit 0"),
        ("check",),
    ),
    (
        ("--fix",),
        dict(action="store_true", help="apply the fixes, as `pinfix fix` does (ruff's `check --fix`)"),
        ("check",),
    ),
    (("--diff",), dict(action="store_true", help="print a unified diff, write nothing"), ("fix",)),
    (
        ("--follow-symlinks",),
        dict(
            action="store_true",
            help="take linked files inside the tree in walks, and let fix write through symbolic links",
        ),
        RUN,
    ),
)
#: Positional arguments, per command.
ARGUMENTS: Dict[str, Tuple[str, Dict[str, Any]]] = {
    "check": ("paths", dict(nargs="*", metavar="PATH", help="files or directories (default: .); `-` reads stdin")),
    "fix": (
        "paths",
        dict(
            nargs="*",
            metavar="PATH",
            help="files or directories (default: .); `-` reads stdin and writes the fixed source to stdout",
        ),
    ),
    "rule": ("code", dict(nargs="?", help="rule code, e.g. PIN001 (default: list the rules)")),
    "show-settings": ("path", dict(metavar="FILE", help="the file whose settings to print")),
    "show-files": ("paths", dict(nargs="*", metavar="PATH", help="files or directories (default: .)")),
    "show-producers": ("paths", dict(nargs="*", metavar="PATH", help="files or directories (default: .)")),
}
COMMANDS: Dict[str, str] = {
    "check": "report findings",
    "fix": "apply fixes in place",
    "rule": "print a rule's documentation",
    "show-settings": "print the settings that apply to a file",
    "show-files": "list the files check would look at",
    "show-producers": "list the functions deep mode infers to return pinned memory (pinned producers needing no setting)",
    "clean": "remove the check cache here and in every directory below",
}
#: Commands that take the settings' own options (``--select``, ``--strict``, ...).
SETTINGS_COMMANDS = RUN + INSPECT


def _split(values: Optional[List[str]]) -> Optional[List[str]]:
    """``--select A,B --select C`` as ``[A, B, C]``."""
    if values is None:
        return None
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _add_setting_options(parser: argparse.ArgumentParser) -> None:
    for setting in SETTINGS:
        if setting.option is None:
            continue
        dest = "setting_" + setting.attribute
        if setting.kind == "bool":
            parser.add_argument(
                setting.option, dest=dest, action=argparse.BooleanOptionalAction, default=None, help=setting.help
            )
        elif setting.kind in ("rules", "patterns"):
            parser.add_argument(
                setting.option, dest=dest, action="append", default=None, metavar="A,B", help=setting.help
            )
        elif setting.kind == "choice":
            parser.add_argument(setting.option, dest=dest, choices=setting.choices, default=None, help=setting.help)
        else:
            parser.add_argument(setting.option, dest=dest, default=None, metavar="VALUE", help=setting.help)


class CommandParser(argparse.ArgumentParser):
    """The top-level parser: arguments a command does not take are reported with
    that command's usage (``pinfix check: error: ...``), not the top level's."""

    commands: Dict[str, argparse.ArgumentParser]

    def parse_args(  # type: ignore[override]
        self, args: Optional[Sequence[str]] = None, namespace: Optional[argparse.Namespace] = None
    ) -> argparse.Namespace:
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self.commands.get(getattr(parsed, "command", None) or "", self).error(
                "unrecognized arguments: " + " ".join(extra)
            )
        return parsed


def parser() -> argparse.ArgumentParser:
    top = CommandParser(prog="pinfix", description=DESCRIPTION)
    top.commands = {}
    top.add_argument("--version", action="version", version=f"pinfix {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for command, summary in COMMANDS.items():
        one = sub.add_parser(command, help=summary, description=summary[0].upper() + summary[1:] + ".")
        top.commands[command] = one
        if command in ARGUMENTS:
            name, kwargs = ARGUMENTS[command]
            one.add_argument(name, **kwargs)
        for flags, kwargs, commands in OPTIONS:
            if command in commands:
                one.add_argument(*flags, **kwargs)
        if command in SETTINGS_COMMANDS:
            _add_setting_options(one)
        elif command == "clean":
            one.add_argument(
                "--cache-dir",
                dest="setting_cache_dir",
                default=None,
                metavar="VALUE",
                help="also remove this cache directory",
            )
    return top


def options_markdown() -> str:
    """The README's table of command-line options (settings' options link to the settings)."""
    rows = ["| option | commands | what |", "| --- | --- | --- |"]
    for flags, kwargs, commands in OPTIONS:
        rows.append(f"| `{', '.join(flags)}` | {', '.join(commands)} | {kwargs['help']} |")
    for setting in SETTINGS:
        if setting.option is not None:
            flag = f"{setting.option}, --no-{setting.option[2:]}" if setting.kind == "bool" else setting.option
            rows.append(f"| `{flag}` | {', '.join(SETTINGS_COMMANDS)} | the setting `{setting.key}` (below) |")
    return "\n".join(rows) + "\n"


# --- Settings from the command line ----------------------------------------------------


def _overrides(args: argparse.Namespace) -> Tuple[Optional[Path], List[Dict[str, Any]]]:
    """The ``--config`` file, and the command line's settings (``--config
    'key = value'`` first, then the options), each checked."""
    file: Optional[Path] = None
    layers: List[Dict[str, Any]] = []
    for value in getattr(args, "config", []) or []:
        if "=" not in value and not Path(value).exists() and not value.endswith(".toml"):
            raise ConfigError(f"--config {value!r} is neither a settings file nor a `key = value` setting")
        if "=" not in value or Path(value).exists():
            if file is not None:
                raise ConfigError(f"--config {value}: only one settings file may be given (already {file})")
            file = Path(value)
            continue
        layers.append(parse_override(value))
    options: Dict[str, Any] = {}
    for setting in SETTINGS:
        raw = getattr(args, "setting_" + setting.attribute, None)
        if raw is None or setting.option is None:
            continue
        value = _split(raw) if setting.kind in ("rules", "patterns") else raw
        options[setting.key] = check_value(setting, value, setting.option)
    if options:
        layers.append(options)
    return file, layers


def _project(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from .project import Project

    file, layers = _overrides(args)
    return Project(layers, file)


def _output_format(args: argparse.Namespace, base: Config, out: TextIO) -> str:
    chosen = (
        getattr(args, "setting_output_format", None) or os.environ.get("PINFIX_OUTPUT_FORMAT") or base.output_format
    )
    if chosen is None:
        try:
            return "full" if out.isatty() else "concise"
        except (AttributeError, ValueError):
            return "concise"
    if chosen not in OUTPUT_FORMATS:
        raise ConfigError(f"PINFIX_OUTPUT_FORMAT must be one of {', '.join(OUTPUT_FORMATS)}, got {chosen!r}")
    return chosen


def _cache_dir(args: argparse.Namespace, base: Config, err: Optional[TextIO] = None) -> Path:
    """``--cache-dir`` (from the working directory), ``PINFIX_CACHE_DIR``, or
    the working directory's settings (``cache-dir``, else the project root's).

    A ``cache-dir`` read from a settings file (a cloned repository's) stays inside
    that file's project: one that resolves outside it is ignored, with a warning on
    ``err``. Only the command line and the environment may point elsewhere."""
    from .config import CACHE_DIR_NAME

    chosen = getattr(args, "setting_cache_dir", None) or os.environ.get("PINFIX_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser().resolve()
    directory = base.cache_directory()
    if base.cache_dir is None or any("cache-dir" in layer for layer in _overrides(args)[1]):
        return directory
    real, root = Path(os.path.realpath(directory)), Path(os.path.realpath(base.root))
    if real == root or root in real.parents:
        return directory
    if err is not None:
        err.write(
            f"pinfix: warning: cache-dir in {base.source} resolves to {real}, outside the project {root}; "
            f"ignored (only --cache-dir or PINFIX_CACHE_DIR may point outside)\n"
        )
    return base.root / CACHE_DIR_NAME


# --- Commands ------------------------------------------------------------------------


def _rule_text(code: str) -> str:
    if code == NOQA_CODE:
        from .suppression import NOQA_RULE_DOC

        return NOQA_RULE_DOC
    from .rules import RULES_BY_CODE

    return RULES_BY_CODE[code].doc() + "\n"


def rules_markdown() -> str:
    """The README's table of rules: each one's code, name, whether it is on by
    default, and the first line of its documentation."""
    rows = ["| code | name | on by default | what |", "| --- | --- | --- | --- |"]
    for code, name in RULES.items():
        summary = _rule_text(code).split("\n", 1)[0].split(": ", 1)[1].replace("``", "`")
        rows.append(f"| `{code}` | {name} | {'yes' if code in DEFAULT_RULES else 'no'} | {summary} |")
    return "\n".join(rows) + "\n"


def _rule_doc(code: Optional[str], out: TextIO, err: TextIO) -> int:
    if code is None:
        for c, name in RULES.items():
            out.write(f"{c}  {name}{'' if c in DEFAULT_RULES else '  (opt-in)'}\n")
        return EXIT_CLEAN
    code = code.upper()
    if code not in RULES:
        err.write(f"pinfix: unknown rule {code!r} (known: {', '.join(RULES)})\n")
        return EXIT_ERROR
    out.write(_rule_text(code))
    return EXIT_CLEAN


#: What the inspecting commands print: text (``full``, ``concise`` and ``text``
#: all mean it) or ``json``.
INSPECT_FORMATS = {"full": "text", "concise": "text", "text": "text", "json": "json"}


def _inspect_format(args: argparse.Namespace) -> str:
    """``--output-format`` for ``show-*``: honoured (text or json) or refused."""
    chosen = getattr(args, "setting_output_format", None) or "text"
    if chosen not in INSPECT_FORMATS:
        raise ConfigError(
            f"{args.command}: --output-format {chosen} is not supported here (text, concise, full or json)"
        )
    return INSPECT_FORMATS[chosen]


def _json_out(out: TextIO, payload: Dict[str, Any]) -> None:
    import json

    json.dump(payload, out, indent=2)
    out.write("\n")


def _show_settings(args: argparse.Namespace, out: TextIO) -> int:
    fmt = _inspect_format(args)
    project = _project(args)
    path = args.path
    config = project.config_for(path)
    if fmt == "json":
        _json_out(
            out,
            {
                "path": str(path),
                "settings_file": str(config.source) if config.source else None,
                "project_root": str(config.root),
                "cache": str(_cache_dir(args, project.base)),
                "rules": sorted(config.codes_for(path)),
                "excluded": project.explicitly_excluded(path),
                "settings": dict(describe(config)),
            },
        )
        return EXIT_CLEAN
    out.write(f"Settings for {path}\n")
    out.write(f"  settings file: {config.source or '(none: the defaults)'}\n")
    out.write(f"  project root:  {config.root}\n")
    out.write(f"  cache:         {_cache_dir(args, project.base)} (the working directory's)\n")
    codes = config.codes_for(path)
    out.write(f"  rules here:    {', '.join(sorted(codes)) or '(none)'}\n")
    out.write(f"  excluded:      {'yes' if project.explicitly_excluded(path) else 'no'}\n")
    for key, value in describe(config):
        out.write(f"{key} = {value}\n")
    return EXIT_CLEAN


def _files(args: argparse.Namespace, project, errors: List[Tuple[Path, str]]) -> Iterable[Path]:  # type: ignore[no-untyped-def]
    from .files import walk

    paths = list(args.paths or ["."])
    force = project.base.force_exclude
    if force:
        paths = [p for p in paths if not project.explicitly_excluded(p, is_dir=os.path.isdir(p))]
    follow = bool(getattr(args, "follow_symlinks", False))
    return walk(paths, errors, root=project.base.root, excluded_in=project.excluded_in, follow_symlinks=follow)


def _show_files(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    fmt = _inspect_format(args)
    project = _project(args)
    errors: List[Tuple[Path, str]] = []
    files = sorted(str(p) for p in _files(args, project, errors))
    if fmt == "json":
        _json_out(out, {"files": files, "errors": [{"path": str(p), "message": why} for p, why in errors]})
        return EXIT_ERROR if errors else EXIT_CLEAN
    for path in files:
        out.write(path + "\n")
    for path, why in errors:
        err.write(f"{path}: error: {why}\n")
    return EXIT_ERROR if errors else EXIT_CLEAN


def _show_producers(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``path:line: module.function`` for each function whose every return is pinned."""
    from dataclasses import replace

    from .config import settings_of
    from .engine import on_deep_stack
    from .findings import display
    from .semantic.deep.project import project_for

    fmt = _inspect_format(args)
    project = _project(args)
    errors: List[Tuple[Path, str]] = []
    rows: List[Tuple[str, int, str]] = []
    for path in sorted(_files(args, project, errors), key=str):
        settings = replace(settings_of(project.config_for(Path(path))), deep=True)
        deep = project_for(settings)
        module = deep.load(Path(path))
        if module is None:
            errors.append((Path(path), "cannot be read or parsed"))
            continue
        for func, _ in on_deep_stack(deep.pinned_producers, module):
            name = f"{module.name}.{func.qualname}" if module.name else func.qualname
            rows.append((display(str(path)), getattr(func.node, "lineno", 0), name))
    if fmt == "json":
        producers = [{"path": where, "line": line, "name": name} for where, line, name in sorted(rows)]
        _json_out(out, {"producers": producers, "errors": [{"path": str(p), "message": why} for p, why in errors]})
        return EXIT_ERROR if errors else EXIT_CLEAN
    for where, line, name in sorted(rows):
        out.write(f"{where}:{line}: {name}\n")
    for path, why in errors:
        err.write(f"{path}: error: {why}\n")
    return EXIT_ERROR if errors else EXIT_CLEAN


def _clean(args: argparse.Namespace, err: TextIO) -> int:
    from .cache import clean
    from .config import CACHE_DIR_NAME

    targets: List[Path] = []
    if args.setting_cache_dir:
        targets.append(Path(args.setting_cache_dir))
    if os.environ.get("PINFIX_CACHE_DIR"):
        targets.append(Path(os.environ["PINFIX_CACHE_DIR"]))
    for directory, subdirs, _ in os.walk("."):
        if CACHE_DIR_NAME in subdirs:
            targets.append(Path(directory) / CACHE_DIR_NAME)
        subdirs[:] = [d for d in subdirs if d not in (CACHE_DIR_NAME, ".git")]
    refused = False
    for target in targets:
        removed, why = clean(target)
        if why is not None:
            err.write(f"pinfix: {why}\n")
            refused = refused or not removed
        elif removed:
            err.write(f"pinfix: removed {target}\n")
    return EXIT_ERROR if refused else EXIT_CLEAN


def _progress(total: int, stream: TextIO):  # type: ignore[no-untyped-def]
    """A progress bar on ``stream`` (a terminal) for long runs; ``None`` otherwise."""
    if total < PROGRESS_MIN_FILES:
        return None
    from rich.console import Console
    from rich.progress import Progress

    return Progress(transient=True, console=Console(file=stream))


def _summary(  # type: ignore[no-untyped-def]
    command: str, reports: Sequence[FileReport], args: argparse.Namespace, mode: Mode, style, err: TextIO
) -> None:
    from .output import fixable, plural

    notes = sum(1 for r in reports for d in r.diagnostics if d.severity == "info" and not d.fixed)
    findings = [d for r in reports for d in r.diagnostics if d.severity != "info"]
    left = [d for d in findings if not d.fixed]
    errors = sum(1 for r in reports if r.error)
    jobs = plural(getattr(args, "jobs_used", 1), "job")
    parsed = f" ({sum(1 for r in reports if r.parsed)} parsed; {jobs})" if args.verbose else ""
    head = f"pinfix: {plural(len(reports), 'file')} scanned{parsed}"
    tail = f", {plural(errors, 'error')}" if errors else ""
    if command == "check":
        noted = f", {plural(notes, 'note')} (PIN004)" if notes else ""
        can = sum(1 for d in left if fixable(d, style.unsafe_fixes))
        more = sum(1 for d in left if d.fix_safety == "unsafe") if not style.unsafe_fixes else 0
        hint = ""
        if can or more:
            hint = f" ({can} fixable with `pinfix fix`" + (f", {more} more with --unsafe-fixes" if more else "") + ")"
        err.write(f"{head}, {plural(len(findings), 'finding')}{hint}{noted}{tail}\n")
        return
    changed = sum(1 for r in reports if r.changed)
    fixed = sum(r.fixes_applied for r in reports)
    verb = "would change" if mode.diff_only else "changed"
    err.write(f"{head}; {verb} {plural(changed, 'file')}, {plural(fixed, 'fix')}{tail}\n")
    if left:
        from collections import Counter

        why = Counter(
            f"write refused ({r.refused})" if i in r.unwritten else _left_because(d)
            for r in reports
            for i, d in enumerate(r.diagnostics)
            if _fails(d)
        )
        err.write(
            f"pinfix: {plural(len(left), 'finding')} left: " + ", ".join(f"{n} {k}" for k, n in why.items()) + "\n"
        )


def _left_because(d: Diagnostic) -> str:
    return "unsafe fix (use --unsafe-fixes)" if d.fix_safety == "unsafe" else "no fix available"


def _stdin(  # type: ignore[no-untyped-def]
    args: argparse.Namespace, project, mode: Mode, style, fmt: str, out: TextIO, err: TextIO, stdin: BinaryIO
) -> int:
    """``check -`` / ``fix -``: one source from stdin, with the settings of
    ``--stdin-filename`` (the working directory's without it). ``fix -``
    writes the fixed source (``--diff``: the patch) to stdout, and findings
    to stderr."""
    from .engine import process_source
    from .output import render, write_bytes

    label = args.stdin_filename or "-"
    try:
        data = stdin.read(MAX_STDIN_BYTES + 1)  # bounded: `check - < /dev/zero` ends
    except (OSError, ValueError) as e:  # a closed descriptor 0, a stream already closed
        err.write(f"pinfix: cannot read the source from stdin: {getattr(e, 'strerror', None) or e}\n")
        return EXIT_ERROR
    if len(data) > MAX_STDIN_BYTES:
        err.write(f"pinfix: stdin holds more than {MAX_STDIN_BYTES >> 20} MiB; not a source file\n")
        return EXIT_ERROR
    config = project.config_for(label) if args.stdin_filename else project.base
    if args.stdin_filename and project.base.force_exclude and project.explicitly_excluded(label):
        if mode.fix and not mode.diff_only:
            write_bytes(out, data)
        return EXIT_CLEAN
    report = process_source(label, data, config, Mode(fix=True, diff_only=True) if mode.fix else Mode())
    if mode.fix and mode.diff_only:
        write_bytes(out, report.diff or b"")
    elif mode.fix:
        write_bytes(out, report.fixed_source if report.fixed_source is not None else data)
    _formatter_warning([report], err)
    render(fmt, [report], err if mode.fix else out, err, style)
    if not args.quiet and fmt in ("full", "concise", "text"):
        _summary(args.command, [report], args, mode, style, err)
    return _exit_code([report], args, mode.diff_only)


def _formatter_warning(reports: Sequence[FileReport], err: TextIO) -> None:
    """One line, however many files, when the project's formatter could not lay
    out fixes and the built-in layout did."""
    said = [r for r in reports if r.warning]
    if said:
        more = f" (and in {len(said) - 1} more files)" if len(said) > 1 else ""
        err.write(f"pinfix: warning: {said[0].warning}{more}\n")


def _exit_code(reports: Sequence[FileReport], args: argparse.Namespace, diff_only: bool) -> int:
    if any(r.error for r in reports):
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    if diff_only:
        return EXIT_FINDINGS if any(r.changed for r in reports) else EXIT_CLEAN
    return EXIT_FINDINGS if any(_fails(d) for r in reports for d in r.diagnostics) else EXIT_CLEAN


def _fails(d: Diagnostic) -> bool:
    """A finding left open fails the run; an informational note (PIN004) never does."""
    return not d.fixed and d.severity != "info"


def _add_noqa(reports: Sequence[FileReport], err: TextIO, quiet: bool) -> int:
    """Write ``# noqa`` for every open finding; the exit code."""
    from .output import plural, shown
    from .suppression import NoqaRefused, add_noqa
    from .writing import WriteRefused, replace_file

    added = files = 0
    failed = False
    for r in reports:
        findings = [(d.code, d.line, d.end_line) for d in r.diagnostics if not d.fixed]
        if not findings or r.error is not None or r.source is None:
            continue
        try:
            new, count = add_noqa(r.source, findings)
            if count:
                replace_file(Path(r.path), r.source, new)
        except (NoqaRefused, WriteRefused) as e:
            err.write(f"{shown(r.path)}: error: {e}\n")
            failed = True
            continue
        added += count
        files += bool(count)
    if not quiet:
        err.write(f"pinfix: added {plural(added, 'noqa code')} to {plural(files, 'file')}\n")
    return EXIT_ERROR if failed or any(r.error for r in reports) else EXIT_CLEAN


def _plan(config_for):  # type: ignore[no-untyped-def]
    """SARIF ``fixes``: fix a report's file in memory."""
    from .engine import process_source

    def plan(report: FileReport) -> Optional[FileReport]:
        if report.source is None:
            return None
        return process_source(report.path, report.source, config_for(report.path), Mode(fix=True, diff_only=True))

    return plan


def main(
    argv: Optional[List[str]] = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    stdin: Optional[BinaryIO] = None,
) -> int:
    from .output import TolerantStream

    out, err = TolerantStream(out), TolerantStream(err)  # type: ignore[assignment]  # odd file names never crash
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:  # argparse has printed the usage message
        return EXIT_CLEAN if e.code == 0 else EXIT_ERROR
    if getattr(args, "fix", False):  # `check --fix` is `fix`
        if args.add_noqa:
            err.write("pinfix check: error: --fix and --add-noqa cannot be used together\n")
            return EXIT_ERROR
        args.command = "fix"
    with stops_as_interrupts():  # SIGTERM and SIGHUP end a run as Ctrl-C does
        return _command(args, out, err, stdin)


def _command(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: Optional[BinaryIO]) -> int:
    try:
        if args.command == "rule":
            return _rule_doc(args.code, out, err)
        if args.command == "clean":
            return _clean(args, err)
        if args.command == "show-settings":
            return _show_settings(args, out)
        if args.command == "show-files":
            return _show_files(args, out, err)
        if args.command == "show-producers":
            return _show_producers(args, out, err)
        return _run(args, out, err, stdin)
    except ConfigError as e:
        err.write(f"pinfix: {e}\n")
        return EXIT_ERROR
    except KeyboardInterrupt as e:  # before the files were reached (while importing, say)
        err.write(f"pinfix: {_interrupted(e)}\n")
        return _interrupted_code(e)
    except BrokenPipeError:  # the reader of the output is gone: stop quietly, as other tools do
        return EXIT_BROKEN_PIPE


def _interrupted(e: KeyboardInterrupt) -> str:
    """ "interrupted", naming the signal when it was not Ctrl-C."""
    if isinstance(e, Stopped):
        import signal

        return f"interrupted ({signal.Signals(e.signum).name})"
    return "interrupted"


def _interrupted_code(e: KeyboardInterrupt) -> int:
    """The shell's convention: 128 + the signal's number (130 for Ctrl-C)."""
    return 128 + (e.signum if isinstance(e, Stopped) else 2)


def command() -> int:
    """The console script (and ``python -m pinfix``): :func:`main`, then a way out
    that does not walk the heap once more. What the run leaves (a deep run's
    project: gigabytes on a large tree) dies with the process, and the collector's
    last pass over it took 27 s of a 62 s single-process run on vLLM 0.34.0.

    A closed standard stream is the null device (its output is dropped, the exit
    status still tells); a reader that goes away mid-run ends it quietly
    (:data:`EXIT_BROKEN_PIPE`), without the interpreter's complaint when it
    flushes the rest at exit."""
    out = sys.stdout if sys.stdout is not None else open(os.devnull, "w")
    err = sys.stderr if sys.stderr is not None else open(os.devnull, "w")
    code = main(sys.argv[1:], out, err)
    if code == EXIT_BROKEN_PIPE:
        for stream in (sys.stdout, sys.stderr):
            _drop_output(stream)
    gc.freeze()
    return code


def _drop_output(stream: Optional[TextIO]) -> None:
    """Point ``stream``'s descriptor at the null device when its reader is gone,
    so what is still buffered is dropped at exit rather than complained about."""
    try:
        if stream is None:
            return
        try:
            stream.flush()
            return
        except BrokenPipeError:
            pass
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _run(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: Optional[BinaryIO]) -> int:
    from .output import Style, fix_listing, render, shown, statistics, use_color, write_bytes

    if args.jobs is not None and args.jobs < 1:
        err.write("pinfix: --jobs must be at least 1\n")
        return EXIT_ERROR
    project = _project(args)
    base = project.base
    fmt = _output_format(args, base, out)
    fixing = args.command == "fix"
    diff = bool(getattr(args, "diff", False))
    style = Style(
        color=use_color(out),
        width=_width(out),
        root=base.root,
        unsafe_fixes=base.unsafe_fixes,
        plan_fixes=_plan(project.config_for),
    )
    if args.paths == ["-"] or (args.stdin_filename and not args.paths):
        if stdin is None and sys.stdin is None:  # started with descriptor 0 closed
            err.write("pinfix: cannot read the source from stdin: it is closed\n")
            return EXIT_ERROR
        return _stdin(args, project, Mode(fix=fixing, diff_only=diff), style, fmt, out, err, stdin or sys.stdin.buffer)
    if "-" in args.paths:
        err.write("pinfix: `-` (stdin) cannot be mixed with paths\n")
        return EXIT_ERROR

    mode = Mode(fix=fixing, diff_only=diff, follow_symlinks=args.follow_symlinks)
    errors: List[Tuple[Path, str]] = []
    files: Iterable[Path] = _files(args, project, errors)
    progress = None
    if not args.no_progress and err.isatty():
        files = list(files)  # a bar needs its total; otherwise files stream into the pool
        progress = _progress(len(files), err)
    from .pool import run
    from .prefilter import PREFILTER_OFF

    cache = None
    # Shortcuts off means all of them. A deep verdict is kept with what it read
    # (pinfix/deepcache.py), so it is reused only while none of that changed.
    if not (args.no_cache or mode.fix or PREFILTER_OFF):
        from .cache import ResultCache
        from .config import CACHE_DIR_NAME

        chosen = _cache_dir(args, base, err)
        # The project's own cache holds its own files only: a file checked from
        # outside leaves nothing there. A cache directory given explicitly takes all.
        cache = ResultCache(chosen, base, scope=base.root if chosen == base.root / CACHE_DIR_NAME else None)
        if cache.foreign:
            from .cache import foreign_message

            err.write(f"pinfix: warning: {foreign_message(chosen)}; running without a cache\n")
    jobs = args.jobs_used = args.jobs or default_jobs(base.deep)
    reports: List[FileReport] = []
    try:
        if progress is None:
            reports += run(files, project.config_for, mode, jobs=jobs, cache=cache)
        else:
            with progress:
                task = progress.add_task("pinfix", total=len(files))  # type: ignore[arg-type]
                reports += run(
                    files,
                    project.config_for,
                    mode,
                    jobs=jobs,
                    cache=cache,
                    on_progress=lambda n: progress.advance(task, n),
                )
    except KeyboardInterrupt as e:
        if mode.fix and not mode.diff_only:
            err.write(f"pinfix: {_interrupted(e)}; every file is either as it was or fully rewritten\n")
        else:
            err.write(f"pinfix: {_interrupted(e)}\n")
        return _interrupted_code(e)
    if cache is not None:
        cache.finish()
        if cache.unrechecked:
            from .output import plural

            left = cache.unrechecked
            named = " ".join(left[:3]) + (" ..." if len(left) > 3 else "")
            err.write(
                f"pinfix: {plural(len(left), 'more file')} whose deep verdict read the checked files "
                f"{'was' if len(left) == 1 else 'were'} not rechecked (max-dependents = {base.max_dependents}): "
                f"{named}; `pinfix check --deep` on them, or on the tree, rechecks them\n"
            )
    reports += [FileReport(str(p), error=why) for p, why in errors]
    reports.sort(key=lambda r: r.path)
    _formatter_warning(reports, err)

    if getattr(args, "add_noqa", False):
        for r in reports:
            if r.error is not None:
                err.write(f"{shown(r.path)}: error: {r.error}\n")
        return _add_noqa(reports, err, args.quiet)
    if mode.diff_only:
        # stdout is the patch; everything else goes to stderr.
        for r in reports:
            if r.diff:
                write_bytes(out, r.diff)
    stream = err if mode.diff_only else out
    if args.statistics:
        statistics(reports, stream, "json" if fmt == "json" else "text", style)
    else:
        render(fmt, reports, stream, err, style)
    if not args.quiet:
        if mode.fix and not mode.diff_only:
            from .output import plural

            for r in reports:
                if r.changed:
                    err.write(f"pinfix: fixed {shown(r.path)} ({plural(r.fixes_applied, 'fix')})\n")
        if args.show_fixes:
            fix_listing(reports, err, applied=mode.fix and not mode.diff_only, style=style)
        if fmt in ("full", "concise", "text") or args.statistics:
            _summary(args.command, reports, args, mode, style, err)
    return _exit_code(reports, args, mode.diff_only)


def _width(stream: TextIO) -> int:
    import shutil

    try:
        if stream.isatty():
            return max(60, shutil.get_terminal_size((100, 24)).columns)
    except (AttributeError, ValueError):
        pass
    return 100


if __name__ == "__main__":  # pragma: no cover
    sys.exit(command())
