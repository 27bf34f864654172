"""Suppression comments, read from the source text alone.

``# noqa`` (all rules) and ``# noqa: PIN001, PIN002`` as ruff and flake8 read
them, and Fixit's ``# lint-ignore`` / ``# lint-fixme`` with a rule's name or
code. A directive counts when it is on a line of the statement that holds the
finding (its logical line: every physical line from the statement's first
token to its end, and for a compound statement only its header), or, for any
kind, in the comment lines directly above that statement.

A ``# pinfix: noqa`` (every rule) or ``# pinfix: noqa: PIN001`` comment on a
line of its own suppresses those rules in the whole file, as ruff's
``# ruff: noqa`` does.

As in ruff, ``# noqa:`` must be followed by codes (letters then digits):
``# noqa: PIN`` names no code, is malformed and suppresses nothing. Codes are
matched without regard to case.

The interface needs no syntax tree (an engine that reports from the stdlib
``ast`` uses it as is)::

    directives = SourceDirectives(text)
    directives.suppressing("PIN001", line, end_line)  # the Directive, or None
    directives.unused(enabled_codes)                  # PIN100 findings
    add_noqa(data, [("PIN001", line, end_line)])      # the bytes with `# noqa` added

Inside ``recording(data)`` (the engine wraps each file's analysis in it),
``is_suppressed(code, line, end_line)`` answers for that file and logs what
it suppressed, for PIN100; :class:`Suppressions` adapts it to the LibCST
analysis.
"""

from __future__ import annotations

import io
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from .config import NOQA_CODE, RULES
from .findings import FindingFields

#: ``pinfix rule PIN100``.
NOQA_RULE_DOC = """\
PIN100 (UnusedNoqa, opt-in): a suppression comment that suppresses nothing.

## What it does
Reports, in a `# noqa: ...`, `# lint-ignore: ...` or `# lint-fixme: ...`
comment, each pinfix code or rule name that suppressed no finding on its
statement (or names a rule not enabled for the file), each unknown `PIN` code,
and each malformed `noqa` directive that mentions `PIN` (`# noqa: PIN`, which
names no code and so suppresses nothing). Other tools' codes (`F401`) and
blanket `# noqa` comments are never reported.

## Why is this bad?
A baseline made with `pinfix check --add-noqa` goes stale as code changes: a
comment left after its finding is gone would hide the next finding on that
line without anyone noticing.

## Example
```python
x = torch.zeros(4, pin_memory=True).to(dev, non_blocking=True)  # noqa: PIN002
```

Use instead:
```python
x = torch.zeros(4, pin_memory=True).to(dev, non_blocking=True)
```

## Fix safety
No fix: remove the code (or the comment) by hand. Select it with
`--extend-select PIN100`. Findings that only deep mode (or `--show-unknown`)
reports make their codes unused in a run without it.
"""

_NOQA = re.compile(r"#\s*noqa", re.IGNORECASE)
_FILE_NOQA = re.compile(r"#\s*pinfix\s*:\s*noqa\b", re.IGNORECASE)
_CODE = re.compile(r"[A-Za-z]+[0-9]+")
_LINT = re.compile(r"#\s*lint-(?:ignore|fixme)\b(?:\s*:\s*(?P<names>[\w\s,]+))?")
#: Text that may hold a directive, for a cheap test before tokenizing.
DIRECTIVE_BYTES = re.compile(rb"(?i)noqa|lint-(?:ignore|fixme)")
DIRECTIVE_TEXT = re.compile(r"(?i)noqa|lint-(?:ignore|fixme)")


@dataclass
class Directive:
    """One suppression comment."""

    #: 1-based physical line, and the 0-based column of the comment's ``#``
    #: directive text within it (in characters).
    line: int
    column: int
    #: ``noqa``, ``lint``, or ``file`` (``# pinfix: noqa``: the whole file).
    kind: str
    #: The codes (``PIN001``) or rule names it lists; ``None``: every rule.
    codes: Optional[Tuple[str, ...]]
    #: Columns (characters) of each listed code, for reports and edits.
    code_columns: Tuple[Tuple[int, int], ...] = ()
    #: Why the directive suppresses nothing (malformed); ``None`` when valid.
    problem: Optional[str] = None
    #: The codes it suppressed in this run (``"*"`` for a blanket directive).
    used: Set[str] = field(default_factory=set)

    def covers(self, code: str) -> bool:
        if self.problem is not None:
            return False
        if self.codes is None:
            return True
        names = {code.upper(), RULES.get(code, code).upper()}
        return any(_rule_name(c) in names for c in self.codes)


def _rule_name(listed: str) -> str:
    """``PIN001``, or a rule's name without Fixit's ``Rule`` suffix, in capitals."""
    name = listed.strip().upper()
    return name[:-4] if name.endswith("RULE") and len(name) > 4 else name


def parse_comment(comment: str, line: int, column: int) -> Optional[Directive]:
    """The directive in one comment (``comment`` starts with ``#``), if any:
    a file-wide ``# pinfix: noqa``, else the first valid ``noqa``, else a
    malformed one, else a Fixit directive."""
    file_wide = _FILE_NOQA.match(comment)
    if file_wide is not None:
        directive = _noqa(comment, file_wide.start(), file_wide.end(), line, column)
        directive.kind = "file"
        return directive
    malformed: Optional[Directive] = None
    for match in _NOQA.finditer(comment):
        directive = _noqa(comment, match.start(), match.end(), line, column)
        if directive.problem is None:
            return directive
        malformed = malformed or directive
    if malformed is not None:
        return malformed
    match = _LINT.search(comment)
    if match is None:
        return None
    listed = match.group("names")
    names = tuple(n.strip() for n in listed.split(",") if n.strip()) if listed and listed.strip() else None
    return Directive(line, column + match.start(), "lint", names)


def _noqa(comment: str, start: int, end: int, line: int, column: int) -> Directive:
    rest = comment[end:]
    stripped = rest.lstrip()
    if not rest or rest[0] == "#" or (rest[0].isspace() and not stripped.startswith(":")):
        return Directive(line, column + start, "noqa", None)  # a bare noqa, or one followed by a reason
    if not stripped.startswith(":"):
        return Directive(line, column + start, "noqa", None, problem="expected `:` and codes after `noqa`")
    offset = end + (len(rest) - len(stripped)) + 1
    codes: List[str] = []
    columns: List[Tuple[int, int]] = []
    for token in re.finditer(r"[^\s,]+", comment[offset:]):
        text = token.group()
        if text.startswith("#"):
            break
        match = _CODE.match(text)
        if match is None:
            break  # the reason that follows the codes
        if match.end() != len(text):
            return Directive(
                line, column + start, "noqa", (), problem=f"has `{text}`, which is no code (letters, then digits)"
            )
        codes.append(text)
        columns.append((column + offset + token.start(), column + offset + token.end()))
    if not codes:
        return Directive(line, column + start, "noqa", (), problem="names no rule code (write e.g. `# noqa: PIN001`)")
    return Directive(line, column + start, "noqa", tuple(codes), tuple(columns))


def _lines_of(text: str) -> List[str]:
    """Physical lines as Python counts them (``\\r\\n``, ``\\r``, ``\\n``),
    without their endings."""
    return re.split(r"\r\n|\r|\n", text)


class SourceDirectives:
    """Every suppression comment of one source text, and its statements' lines."""

    def __init__(self, text: str):
        self.lines = _lines_of(text)
        #: physical line -> the directive on it
        self.by_line: Dict[int, Directive] = {}
        #: ``# pinfix: noqa`` directives, each on a line of its own: the whole file
        self.file_wide: List[Directive] = []
        #: physical line -> (first, last) line of its logical line
        self._logical: Dict[int, Tuple[int, int]] = {}
        #: lines a comment may be appended to (not inside a string, no ``\\`` continuation)
        self.commentable: Set[int] = set()
        self._comment_only: Set[int] = set()
        self._scan(text)

    @classmethod
    def from_bytes(cls, data: bytes) -> "SourceDirectives":
        return cls(decode(data)[0])

    def _scan(self, text: str) -> None:
        import tokenize

        start: Optional[int] = None
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text, newline=None).readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            self._scan_naively()
            return
        for tok in tokens:
            kind, row = tok.type, tok.start[0]
            if kind == tokenize.COMMENT:
                directive = parse_comment(tok.string, row, tok.start[1])
                if directive is not None and directive.kind == "file":
                    if start is None:  # on a line of its own, as ruff requires
                        self.file_wide.append(directive)
                elif directive is not None:
                    self.by_line.setdefault(row, directive)
                if start is None:
                    self._comment_only.add(row)
            elif kind in (tokenize.NL, tokenize.NEWLINE):
                self.commentable.add(row)
                if kind == tokenize.NEWLINE and start is not None:
                    for line in range(start, tok.end[0] + 1):
                        self._logical[line] = (start, tok.end[0])
                    start = None
            elif kind not in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER) and start is None:
                start = row
        if start is not None:  # the last statement has no NEWLINE token
            last = len(self.lines)
            for line in range(start, last + 1):
                self._logical[line] = (start, last)

    def _scan_naively(self) -> None:
        """Text the tokenizer refuses: each line on its own, its first ``#`` a comment."""
        for row, line in enumerate(self.lines, 1):
            self.commentable.add(row)
            at = line.find("#")
            if at >= 0:
                directive = parse_comment(line[at:], row, at)
                if directive is not None and directive.kind == "file":
                    if not line[:at].strip():
                        self.file_wide.append(directive)
                elif directive is not None:
                    self.by_line[row] = directive
                if not line[:at].strip():
                    self._comment_only.add(row)

    def statement(self, line: int, end_line: Optional[int] = None) -> Tuple[int, int]:
        """The lines of the logical lines that hold ``line`` .. ``end_line``."""
        first, last = self._logical.get(line, (line, line))
        if end_line is not None and end_line > last:
            last = max(last, self._logical.get(end_line, (end_line, end_line))[1])
        return first, last

    def _above(self, first: int) -> Iterator[int]:
        """Comment-only lines directly above line ``first`` (blank lines
        between them too, none deeper indented than the statement)."""
        indent = _indent(self.lines[first - 1]) if 0 < first <= len(self.lines) else 0
        row = first - 1
        while row >= 1:
            text = self.lines[row - 1]
            if not text.strip():
                row -= 1
                continue
            if row not in self._comment_only or _indent(text) > indent:
                return
            yield row
            row -= 1

    def suppressing(
        self, code: str, line: int, end_line: int, statement: Optional[Tuple[int, int]] = None
    ) -> Optional[Directive]:
        """The directive that suppresses a ``code`` finding on ``line`` ..
        ``end_line`` (``statement``: its statement's lines, when the caller
        knows them better), marked used; ``None`` when none does.

        A directive anywhere on the logical lines that hold the statement counts:
        in ``a; b = '''...'''  # noqa``, the string over several lines, it covers
        ``a``, whose own line cannot take a comment (:func:`add_noqa` writes it there)."""
        first, last = self.statement(line, end_line)
        if statement is not None:
            around = self.statement(*statement)
            first, last = min(first, statement[0], around[0]), max(last, statement[1], around[1])
        first, last = min(first, line), max(last, end_line)
        rows = (*range(first, last + 1), *self._above(first))
        for directive in (*(self.by_line.get(row) for row in rows), *self.file_wide):
            if directive is not None and directive.covers(code):
                directive.used.add(code.upper() if directive.codes is not None else "*")
                return directive
        return None

    def unused(self, enabled: FrozenSet[str], path: str = "") -> List[FindingFields]:
        """PIN100 findings: pinfix codes or rule names listed in a directive
        that suppressed nothing here, unknown ``PIN`` codes, and malformed
        ``noqa`` directives that mention ``PIN``. Other tools' codes and blanket
        directives are never reported."""
        out: List[FindingFields] = []
        every = sorted([*self.by_line.values(), *self.file_wide], key=lambda d: d.line)
        for d in every:
            row = d.line
            text = self.lines[row - 1]
            if d.problem is not None:
                if "PIN" in text[d.column :].upper():
                    out.append(
                        _unused(
                            row,
                            d.column,
                            len(text),
                            f"`noqa` directive {d.problem}; it suppresses nothing",
                            "malformed",
                        )
                    )
                continue
            if d.codes is None:
                continue
            columns = d.code_columns or tuple((d.column, len(text)) for _ in d.codes)
            for listed, (start, end) in zip(d.codes, columns):
                name = _rule_name(listed)
                code = name if name in RULES else next((c for c, n in RULES.items() if n.upper() == name), None)
                if code is None:
                    if name.startswith("PIN"):
                        out.append(
                            _unused(
                                row, start, end, f"unknown rule code `{listed}` in a suppression comment", "unknown"
                            )
                        )
                    continue
                if code in enabled and code in d.used:
                    continue
                where = "in this file" if d.kind == "file" else "on this statement"
                why = "is not enabled here" if code not in enabled else f"suppresses no finding {where}"
                out.append(_unused(row, start, end, f"unused suppression: `{listed}` {why}", "unused"))
        return out


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def _unused(line: int, start: int, end: int, message: str, kind: str) -> FindingFields:
    return FindingFields(
        code=NOQA_CODE,
        line=line,
        column=start + 1,
        end_line=line,
        end_column=end + 1,
        message=message,
        pattern=f"noqa/{kind}",
        fix_safety=None,
        fix_note="remove it, or the code, from the comment",
    )


def decode(data: bytes) -> Tuple[str, str]:
    """``data`` as text, and the encoding its coding line or BOM names."""
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), encoding
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", "replace"), "utf-8"


# --- The LibCST analysis's view ------------------------------------------------------


@dataclass
class Recording:
    """One file's analysis: its bytes (when the caller has them) and every
    finding a directive suppressed in it, as ``(code, line, end_line)``.
    Every module analysed for findings in the block is that file, whole or
    sliced (lines kept); deep mode's views of other files never ask."""

    data: Optional[bytes] = None
    suppressed: List[Tuple[str, int, int]] = field(default_factory=list)
    directives: Optional[SourceDirectives] = None
    #: The bytes hold no directive at all (searched once, not once per finding).
    no_directives: bool = False


_RECORDING: ContextVar[Optional[Recording]] = ContextVar("pinfix_recording", default=None)


@contextmanager
def recording(data: Optional[bytes] = None) -> Iterator[Recording]:
    """While the block runs, :class:`Suppressions` reads the directives from
    ``data`` (not from the syntax tree's code, which costs a pass over it) and
    logs what it suppresses."""
    state = Recording(data)
    token = _RECORDING.set(state)
    try:
        yield state
    finally:
        _RECORDING.reset(token)


def is_suppressed(code: str, line: int, end_line: int, statement: Optional[Tuple[int, int]] = None) -> Optional[bool]:
    """For an engine without LibCST: whether a directive in the file being
    analysed (the bytes given to :func:`recording`) suppresses this finding,
    logged for PIN100; ``None`` outside :func:`recording`."""
    state = _RECORDING.get()
    if state is None or state.data is None:
        return None
    if state.directives is None:
        if state.no_directives or DIRECTIVE_BYTES.search(state.data) is None:
            state.no_directives = True
            return False
        state.directives = SourceDirectives.from_bytes(state.data)
    if state.directives.suppressing(code, line, end_line, statement) is None:
        return False
    state.suppressed.append((code, line, end_line))
    return True


class Suppressions:
    """:class:`SourceDirectives` for a LibCST module: read from the bytes of
    the file being analysed (see :func:`recording`), or else from the module's
    code; made only when a finding asks and the text holds a directive."""

    def __init__(self, tree: Any, get_metadata: Optional[Callable[..., Any]] = None):
        self.tree = tree
        self._directives: Optional[SourceDirectives] = None
        self._none = False

    def suppressed(self, node: Any, code: str, line: int, end_line: int) -> bool:
        recorded = is_suppressed(code, line, end_line)
        if recorded is not None:
            return recorded
        if self._directives is None and not self._none:
            text = self.tree.module.code
            self._directives = SourceDirectives(text) if DIRECTIVE_TEXT.search(text) is not None else None
            self._none = self._directives is None
        return self._directives is not None and self._directives.suppressing(code, line, end_line) is not None


def noqa_report(data: bytes, state: Optional[Recording], enabled: FrozenSet[str]) -> List[FindingFields]:
    """PIN100 findings for one file's bytes, given what was suppressed in it."""
    if DIRECTIVE_BYTES.search(data) is None:
        return []
    directives = state.directives if state is not None and state.directives is not None else None
    if directives is None:
        directives = SourceDirectives.from_bytes(data)
        for code, line, end_line in state.suppressed if state is not None else ():
            directives.suppressing(code, line, end_line)
    return directives.unused(enabled)


# --- Adding directives ---------------------------------------------------------


class NoqaRefused(Exception):
    """``# noqa`` could not be added to the file; the message says why."""


_LINE_END = re.compile(rb"\r\n|\r|\n")


def add_noqa(data: bytes, findings: Sequence[Tuple[str, int, int]]) -> Tuple[bytes, int]:
    """``data`` with ``# noqa: CODE`` on a line of each finding's statement
    (merged into a ``noqa`` comment already there), and how many codes were
    added. Only comments change: every other byte stays as it was."""
    text, encoding = decode(data)
    directives = SourceDirectives(text)
    wanted: Dict[int, Set[str]] = {}
    for code, line, end_line in findings:
        if directives.suppressing(code, line, end_line) is not None:
            continue
        first, last = directives.statement(line, end_line)
        target = next((row for row in range(line, last + 1) if row in directives.commentable), None)
        if target is None:
            target = next((row for row in range(first, line) if row in directives.commentable), None)
        if target is None:
            raise NoqaRefused(f"no line of the statement at line {line} can take a comment")
        wanted.setdefault(target, set()).add(code.upper())
    if not wanted:
        return data, 0
    starts = [0] + [m.end() for m in _LINE_END.finditer(data)]
    pieces: List[bytes] = []
    done = 0
    added = 0
    for row in sorted(wanted):
        begin = starts[row - 1]
        ending = _LINE_END.search(data, begin)
        end = ending.start() if ending is not None else len(data)
        raw = data[begin:end]
        directive = directives.by_line.get(row)
        codes = wanted[row]
        if directive is not None and directive.kind == "noqa" and directive.problem is None and directive.codes:
            (lo, _), (_, hi) = directive.code_columns[0], directive.code_columns[-1]
            old = {c.upper(): c for c in directive.codes}
            merged = ", ".join(old.get(c, c) for c in sorted(set(old) | codes))
            a, b = (
                _byte_offset(raw, directives.lines[row - 1], lo, encoding),
                _byte_offset(raw, directives.lines[row - 1], hi, encoding),
            )
            new = raw[:a] + merged.encode("ascii") + raw[b:]
            added += len(codes - set(old))
        else:
            new = raw.rstrip(b" \t") + b"  # noqa: " + ", ".join(sorted(codes)).encode("ascii")
            added += len(codes)
        pieces += [data[done:begin], new]
        done = end
    pieces.append(data[done:])
    return b"".join(pieces), added


def _byte_offset(raw: bytes, line: str, column: int, encoding: str) -> int:
    """Where character ``column`` of decoded ``line`` falls in its bytes ``raw``."""
    bom = b""
    if encoding.replace("_", "-").lower() == "utf-8-sig":
        encoding = "utf-8"
        bom = b"\xef\xbb\xbf" if raw.startswith(b"\xef\xbb\xbf") else b""
    prefix = bom + line[:column].encode(encoding)
    if not raw.startswith(prefix):
        raise NoqaRefused(f"the file's encoding ({encoding}) does not give back its own bytes; not edited")
    return len(prefix)
