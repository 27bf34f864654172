"""Lay out what a fix changed with the project's own formatter, on those lines only.

The ``formatter`` setting chooses (as LibCST's codemod configuration does):

* ``auto`` (the default): the project's formatter when the project configures
  one (``[tool.ruff.format]``, a ``ruff.toml`` / ``.ruff.toml``, or
  ``[tool.black]``; ruff first, as :mod:`pinfix.style` reads them) and it can be
  run (the ``ruff`` / ``black`` package importable, or the command on ``PATH``);
  otherwise the built-in layout (:mod:`pinfix.layout`);
* ``ruff`` / ``black``: that formatter, whatever the project configures;
* ``builtin``: the built-in layout.

The formatter is given the fixed text on stdin and only the lines the fix
changed: ``ruff format --range L1:C1-L2:C2`` once per range (last range first,
so the line numbers of the others stay true), ``black --line-ranges A-B`` with
every range in one call. Its settings are the project's: it runs in the
project's root with ``--stdin-filename`` naming the file. Its result is taken
only if it changes no line outside the statements the fix changed (a
formatter that "also" reformats its neighbours is refused) and means the same
code (the same syntax tree). Otherwise, and when the formatter is missing,
fails, or times out, the built-in layout is used and :attr:`Layout.warning`
says why, in one line.
"""

from __future__ import annotations

import ast
import bisect
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Set, Tuple

from .diffs import line_opcodes
from .layout import relayout
from .settings import FORMATTERS
from .style import ProjectStyle

__all__ = ["FORMATTERS", "Layout", "lay_out", "formatter_command", "statement_ranges"]

#: Seconds one formatter call may take.
TIMEOUT = 60
#: The most changed statements given to a formatter in one file: ruff formats one
#: range per call, each call reads the whole file, so past this the built-in
#: layout (one pass) keeps the cost of a fix linear in the file.
MAX_RANGES = 32


@dataclass(frozen=True)
class Layout:
    """A fixed text laid out, and a warning when the project's formatter could not be used."""

    text: str
    #: Which layout made ``text``: ``ruff``, ``black`` or ``builtin``.
    by: str = "builtin"
    warning: Optional[str] = None


class FormatterFailed(Exception):
    """The formatter could not be run, or its result could not be used; the message says why."""


def lay_out(
    old: str,
    new: str,
    style: ProjectStyle,
    choice: str = "auto",
    path: Optional[Path] = None,
    root: Optional[Path] = None,
) -> Layout:
    """``new`` (``old`` after a fix) with the statements the fix changed laid out by
    the formatter ``choice`` names (see the module docstring)."""
    if old == new:
        return Layout(new)
    tool = chosen_tool(style, choice)
    if tool is None:
        return Layout(_builtin(old, new, style))
    command = formatter_command(tool)
    if command is None:
        if choice == "auto":
            return Layout(_builtin(old, new, style))
        return Layout(
            _builtin(old, new, style),
            warning=f"formatter = {tool!r}: {tool} is neither importable nor on PATH; used the built-in layout",
        )
    ranges = statement_ranges(new, changed_lines(old, new))
    if not ranges:
        return Layout(new, by=tool)
    if len(ranges) > MAX_RANGES:
        return Layout(
            _builtin(old, new, style),
            warning=f"{len(ranges)} changed statements in one file, more than {tool} is run for ({MAX_RANGES}); "
            "used the built-in layout",
        )
    try:
        if tool == "ruff":
            text = new
            for first, last in reversed(ranges):
                text = _run(
                    command + ["format", "--range", f"{first}:1-{last}:{_line_length(text, last) + 1}"],
                    text,
                    path,
                    root,
                )
        else:
            text = _run(command + ["-q", *(f"--line-ranges={first}-{last}" for first, last in ranges)], new, path, root)
        _check(new, text, ranges)
    except FormatterFailed as e:
        return Layout(
            _builtin(old, new, style), warning=f"{tool} could not lay out the fix ({e}); used the built-in layout"
        )
    return Layout(text, by=tool)


def chosen_tool(style: ProjectStyle, choice: str) -> Optional[str]:
    """The formatter ``choice`` names for a project of ``style`` (``None``: the built-in layout)."""
    if choice in ("ruff", "black"):
        return choice
    if choice == "auto" and style.formatter is not None and formatter_command(style.formatter) is not None:
        return style.formatter
    return None


def formatter_command(tool: str) -> Optional[List[str]]:
    """How to run ``tool`` (``ruff`` or ``black``): the package installed beside
    pinfix first, else the command on ``PATH``; ``None`` when neither exists."""
    if tool == "ruff":
        if importlib.util.find_spec("ruff") is not None:
            try:
                from ruff.__main__ import find_ruff_bin

                return [os.fsdecode(find_ruff_bin())]
            except (ImportError, FileNotFoundError):
                pass
    elif tool == "black":
        if importlib.util.find_spec("black") is not None:
            return [sys.executable, "-m", "black"]
    else:
        return None
    found = shutil.which(tool)
    return [found] if found else None


def _builtin(old: str, new: str, style: ProjectStyle) -> str:
    fmt = style.format
    return relayout(
        old,
        new,
        fmt.line_length,
        indent_width=fmt.indent_width,
        skip_magic_trailing_comma=fmt.skip_magic_trailing_comma,
        quote_style=fmt.quote_style,
    )


def _run(command: Sequence[str], text: str, path: Optional[Path], root: Optional[Path]) -> str:
    # Absolute: the formatter runs in the project root, and finds its settings
    # from the file's own directory up (a relative path would be read from there).
    name = os.path.abspath(path if path is not None else os.path.join(root or ".", "fixed.py"))
    argv = [*command, "--stdin-filename", name, "-"]
    try:
        done = subprocess.run(
            argv,
            input=text.encode("utf-8", "surrogateescape"),
            capture_output=True,
            cwd=str(root) if root is not None and root.is_dir() else None,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise FormatterFailed(f"no answer in {TIMEOUT} s") from None
    except OSError as e:
        raise FormatterFailed(f"cannot run it: {e.strerror or e}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise FormatterFailed(f"exit {done.returncode}" + (f": {said[-1][:200]}" if said else ""))
    try:
        return done.stdout.decode("utf-8", "surrogateescape")
    except UnicodeDecodeError:  # pragma: no cover - surrogateescape decodes any bytes
        raise FormatterFailed("its output is not UTF-8") from None


def _line_length(text: str, line: int) -> int:
    lines = text.split("\n")
    return len(lines[line - 1].rstrip("\r")) if 0 < line <= len(lines) else 0


def changed_lines(old: str, new: str) -> List[int]:
    """The 1-based lines of ``new`` that differ from ``old``, sorted."""
    out: List[int] = []
    for tag, _, _, j1, j2 in line_opcodes(old.split("\n"), new.split("\n")):
        if tag != "equal":
            out.extend(range(j1 + 1, j2 + 1))
    return out


def statement_ranges(text: str, lines: Sequence[int]) -> List[Tuple[int, int]]:
    """``(first, last)`` line spans of ``text``: each statement holding one of
    ``lines`` (a compound statement's header only), merged where they touch."""
    if not lines:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    wanted = sorted(set(lines))
    spans: List[Tuple[int, int]] = [(line, line) for line in wanted]
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(node.lineno, body[0].lineno - 1)
        else:
            last = node.end_lineno or node.lineno
        i = bisect.bisect_left(wanted, first)
        if i < len(wanted) and wanted[i] <= last:
            spans.append((first, last))
    spans.sort()
    merged: List[Tuple[int, int]] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _check(before: str, after: str, ranges: Sequence[Tuple[int, int]]) -> None:
    """Refuse a formatter's result that changed a line outside ``ranges`` (of
    ``before``) or what the code means."""
    allowed: Set[int] = {line for first, last in ranges for line in range(first, last + 1)}
    for tag, i1, i2, _, _ in line_opcodes(before.split("\n"), after.split("\n")):
        if tag == "equal":
            continue
        outside = [line for line in range(i1 + 1, i2 + 1) if line not in allowed]
        if i1 == i2 and not ({i1, i1 + 1} & allowed):
            outside = [i1 + 1]
        if outside:
            raise FormatterFailed(f"it also changed line {outside[0]}, which the fix did not touch")
    try:
        same = ast.dump(ast.parse(after)) == ast.dump(ast.parse(before))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        same = False
    if not same:
        raise FormatterFailed("its result is not the same code")
