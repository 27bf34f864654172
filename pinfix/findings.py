"""What every finding says, in one shape for the analysis and the reports: a
:class:`Diagnostic` (a finding detached from the syntax tree), the
:class:`FileReport` of one file, and the :class:`Mode` a run checks or fixes in.

Kept free of LibCST so the engine and the output formats can use it on the
pre-commit fast path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple


def file_identity(path: str) -> str:
    """How pinfix knows a file inside: its absolute path, symbolic links resolved
    (the same file reached two ways is one file)."""
    return os.path.realpath(path)


def same_file(a: str, b: str) -> bool:
    """Whether two file identities (:func:`file_identity`) are one file: the one
    place pinfix decides it."""
    return a == b


def display(path: str) -> str:
    """``path`` as output names it: relative to the working directory when it lies
    below it, else whole (``../../x`` would say less than ``/tmp/x``)."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


#: Control characters: in a file name shown as text, a line end would start a line of
#: its own (``x\\n::warning::...`` a CI workflow command), an escape sequence would
#: drive the terminal.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def shown(path: str) -> str:
    """A path for text output: bytes that are not UTF-8 in a file name (which
    Python holds as lone surrogates) and control characters as ``\\xNN``
    escapes; JSON and SARIF escape them on their own."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        path = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if _CONTROL.search(path) is None:
        return path
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", path)


def named(path: str) -> str:
    """Another file as a message names it: as output names it (:func:`display`), in
    characters that cannot end the message's line or drive a terminal (:func:`shown`)."""
    return shown(display(path))


@dataclass(frozen=True)
class Evidence:
    """One step of a finding's evidence chain: where the tensor was made, or a
    step that kept or lost pinnedness on its way to the copy."""

    #: The file's identity (:func:`file_identity`), the finding's own file included:
    #: only output names it relative to anything.
    path: str
    line: int
    column: int  # 1-based
    message: str


@dataclass
class FindingFields:
    code: str
    line: int
    column: int  # 1-based, like ruff and flake8
    end_line: int
    end_column: int
    message: str
    #: ``<sink>/<how the source reaches it>``, e.g. ``copy_/inline``, ``to/bound``.
    pattern: str
    #: ``"safe"``, ``"unsafe"`` or ``None`` (no fix offered).
    fix_safety: Optional[str]
    #: Why the fix is unsafe, or why there is none.
    fix_note: Optional[str]
    #: Origin first, then each step to the copy (deep mode fills in the other files).
    evidence: Tuple[Evidence, ...] = field(default=())
    #: ``"error"``, or ``"info"`` for notes that never fail a run (PIN004).
    severity: str = "error"
    #: What and why in one short sentence (``concise`` prints it); ``message``
    #: is the whole account (``full`` prints it under the source). Empty: the message.
    summary: str = ""
    #: What the fix does, when there is one (``Make the source pinned with ...``).
    fix_title: Optional[str] = None

    def __post_init__(self) -> None:
        if not self.summary:
            self.summary = self.message
        # Read back from JSON (the check cache), the steps are plain mappings.
        self.evidence = tuple(e if isinstance(e, Evidence) else Evidence(**e) for e in self.evidence)

    def shared_fields(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(FindingFields)}


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
    #: modules, ``g:<word>\0<pattern>`` of searches of the project's text, ``t:`` of one
    #: that found too many files to read them); ``None``: nothing
    #: was analysed (the pre-filter answered), so the verdict stands on the file alone.
    reads: Optional[List[str]] = None


@dataclass(frozen=True)
class Added:
    """``--deep`` with a cache: a file whose earlier text's verdict still holds but for
    statements added to it since (:meth:`pinfix.deepcache.DeepVerdicts.added`) or function
    bodies rewritten that nothing else in it looked into (``rewritten``). Only the copies
    on the lines :attr:`spans` (first, last) are checked; the earlier findings outside
    them and what the verdict read join what that check finds."""

    spans: Tuple[Tuple[int, int], ...]
    diagnostics: Tuple[Diagnostic, ...]
    reads: Tuple[str, ...]

    def holds(self, line: int) -> bool:
        """Whether ``line`` is among the lines added."""
        return any(first <= line <= last for first, last in self.spans)


@dataclass(frozen=True)
class Mode:
    fix: bool = False
    #: With ``fix``: compute the diff instead of writing.
    diff_only: bool = False
    #: With ``fix``: write through symbolic links (to their targets).
    follow_symlinks: bool = False
