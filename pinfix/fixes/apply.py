"""Apply fixes: the one place every front end (the CLI, the codemod, the Fixit rules) uses.

1. The fixes' text edits are spliced into the file's decoded text (a fix whose
   edits overlap an earlier one's is left out, and said so).
2. Imports: each ``(module, name)`` a fix needs is added where isort puts it
   (:mod:`pinfix.imports`, on a LibCST parse of the edited text), and an import
   the edits left unused is removed; only the import statements' lines may
   change in this step, whatever LibCST would round-trip differently elsewhere.
3. The statements the fixes changed are laid out by the project's formatter
   (:mod:`pinfix.formatter`: ruff or black on those lines only, or the
   built-in layout), before anything is written.
4. The text is encoded back line by line: a line the fix did not change keeps
   its very bytes (its encoding quirks, its line end).
5. The result must parse; otherwise nothing is written.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, AbstractSet, Any, List, Optional, Sequence, Set, Tuple

from ..diffs import line_opcodes
from ..edits import Applicability, Edit, Fix
from ..semantic.source import SourceText
from ..settings import Settings

if TYPE_CHECKING:
    from ..formatter import Layout

_LINE_END = re.compile(r"\r\n|\r|\n")


class FixError(Exception):
    """The fixes could not be applied without breaking the file; the message says why."""


@dataclass
class Applied:
    """What applying some fixes made."""

    text: str
    data: bytes
    #: Indexes (into the fixes given) of the fixes applied.
    applied: List[int] = field(default_factory=list)
    #: ``(index, why)`` of the fixes left out.
    skipped: List[Tuple[int, str]] = field(default_factory=list)
    #: 1-based lines of the original text the result may differ on.
    touched: Set[int] = field(default_factory=set)
    #: What the applied fixes should also say (an isort setting not followed).
    note: Optional[str] = None
    #: Why the project's formatter was not used (the built-in layout was), in one line.
    warning: Optional[str] = None


def chosen_fixes(
    findings: Sequence[Any], required: Applicability, codes: Optional[AbstractSet[str]] = None
) -> List[Optional[Fix]]:
    """Each finding's fix where it applies (:meth:`~pinfix.edits.Applicability.applies`
    ``required``, and the finding's code is one of ``codes`` when given), else ``None``:
    the one choice every front end makes between analysing and applying."""
    return [
        f.fix
        if f.fix is not None and f.fix.applicability.applies(required) and (codes is None or f.code in codes)
        else None
        for f in findings
    ]


def fix_findings(
    src: SourceText,
    findings: Sequence[Any],
    settings: Settings,
    path: Optional[Path],
    required: Applicability,
    codes: Optional[AbstractSet[str]] = None,
) -> Optional[Applied]:
    """Analysed findings -> the fixes that apply (:func:`chosen_fixes`) -> applied:
    ``None`` when no fix applies. Raises :class:`FixError` as :func:`apply_fixes` does."""
    wanted = chosen_fixes(findings, required, codes)
    if not any(wanted):
        return None
    return apply_fixes(src, wanted, settings, path)


def apply_fixes(
    src: SourceText, fixes: Sequence[Optional[Fix]], settings: Settings, path: Optional[Path] = None
) -> Applied:
    chosen: List[int] = []
    edits: List[Edit] = []
    skipped: List[Tuple[int, str]] = []
    taken = TakenEdits()
    for index, fix in enumerate(fixes):
        if fix is None or not fix.edits:
            continue
        if any(taken.overlaps(e) for e in fix.edits):
            skipped.append((index, "it overlaps another fix in the same place; run `pinfix fix` again"))
            continue
        chosen.append(index)
        edits.extend(fix.edits)
        for e in fix.edits:
            taken.add(e)
    if not chosen:
        return Applied(src.text, src.data if src.data is not None else src.text.encode(src.encoding), [], skipped)
    text = splice(src.text, edits)
    touched = {line for e in edits for line in _lines_of(src, e)}
    needed: List[Tuple[str, str]] = []
    drops: List[str] = []
    for index in chosen:
        fix = fixes[index]
        assert fix is not None
        needed += [i for i in fix.imports if i not in needed]
        drops += [d for d in fix.drops if d not in drops]
    note = None
    if needed or drops:
        text, note = _imports(text, needed, drops, settings, path)
    layout = _laid_out(src.text, text, settings, path)
    text = layout.text
    new_src = SourceText(text, src.path, src.encoding)
    try:
        ast.parse(text)
    except SyntaxError as e:  # a bug of ours: never write it
        raise FixError(f"the fixed file would not parse ({e.msg} at line {e.lineno}); file left unchanged") from None
    data = encode_like(src, new_src)
    return Applied(text, data, chosen, skipped, touched | _changed_lines(src.text, text), note, layout.warning)


def splice(text: str, edits: Sequence[Edit]) -> str:
    out = []
    at = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        out.append(text[at : e.start])
        out.append(e.new)
        at = e.end
    out.append(text[at:])
    return "".join(out)


def overlaps(a: Edit, b: Edit) -> bool:
    """Whether two edits touch the same text: ranges that share a character, an
    insertion strictly inside a range, or two insertions at one place."""
    if a.start == a.end or b.start == b.end:
        return b.start < a.start < b.end or a.start < b.start < a.end or (a.start == b.start and a.end == b.end)
    return a.start < b.end and b.start < a.end


class TakenEdits:
    """The edits taken so far, sorted, answering :func:`overlaps` against all of
    them in logarithmic time (each new edit was compared with every earlier one:
    40,000 fixes in one file took 105 s). Taken ranges never share a character,
    so the one that starts last before an edit's end is the only one that may
    reach into it."""

    def __init__(self) -> None:
        self.starts: List[int] = []  # of the ranges (start < end), sorted
        self.ends: List[int] = []  # their ends, in the same order (sorted too: they are disjoint)
        self.points: List[int] = []  # the insertions (start == end), sorted

    def overlaps(self, e: Edit) -> bool:
        import bisect

        if e.start == e.end:
            i = bisect.bisect_left(self.starts, e.start) - 1
            if i >= 0 and self.ends[i] > e.start:
                return True
            j = bisect.bisect_left(self.points, e.start)
            return j < len(self.points) and self.points[j] == e.start
        i = bisect.bisect_left(self.starts, e.end) - 1
        if i >= 0 and self.ends[i] > e.start:
            return True
        j = bisect.bisect_right(self.points, e.start)
        return j < len(self.points) and self.points[j] < e.end

    def add(self, e: Edit) -> None:
        import bisect

        if e.start == e.end:
            bisect.insort(self.points, e.start)
            return
        i = bisect.bisect_left(self.starts, e.start)
        self.starts.insert(i, e.start)
        self.ends.insert(i, e.end)


def _lines_of(src: SourceText, edit: Edit) -> range:
    import bisect

    first = bisect.bisect_right(src.line_starts, edit.start)
    last = bisect.bisect_right(src.line_starts, max(edit.start, edit.end - 1))
    return range(first, last + 1)


def _imports(
    text: str, needed: Sequence[Tuple[str, str]], drops: Sequence[str], settings: Settings, path: Optional[Path]
) -> Tuple[str, Optional[str]]:
    """``text`` with ``needed`` imported where the project's isort settings put it,
    and ``drops`` no longer imported where the text no longer uses them; and a
    note when an isort setting could not be followed."""
    import libcst as cst

    from ..imports import (
        Sections,
        add_from_import,
        first_party_detector,
        imported_local_name,
        remove_unused_imports,
        unused_scoped_imports,
        used_names,
    )
    from ..style import project_style

    # LibCST reads only the head of the file that holds the top-level imports
    # (and the statement after them, for the blank lines between): the cost of
    # a fix stays that of the imports, not of the file. The syntax tree is let go
    # at once: the steps below parse the text too, and two trees of a large
    # module at a time doubled the memory a fix needs.
    cut = _head_end(ast.parse(text), text)
    head, tail = text[:cut], text[cut:]
    try:
        module = cst.parse_module(head)
    except Exception as e:  # LibCST cannot read what CPython can: leave the imports alone
        raise FixError(f"cannot place the import: {type(e).__name__}") from None
    before = module
    # Removed before the new imports are placed, so sections stay apart; only
    # names the whole text no longer uses.
    unused = set(drops) - used_names(text)
    if unused:
        module = remove_unused_imports(module, unused)
    note = None
    style = project_style(settings.style_file, settings.line_length)
    isort = style.isort
    if isort.unsupported:
        # Not followed: each import its own statement, which the project's own
        # `ruff check --fix` can place; the fixes say so.
        isort = replace(isort, force_single_line=True)
        note = f"import added as its own statement (isort settings not followed: {', '.join(isort.unsupported)})"
    sections = None
    for mod, name in needed:
        if imported_local_name(module, mod, name) is None:
            if sections is None:
                sections = Sections(first_party_detector(path, settings.root, settings.known_first_party), isort)
            module = add_from_import(module, mod, name, sections=sections, line_length=style.format.line_length)
    if module is not before and module.body and before.body and module.body[0] is not before.body[0]:
        # A removed first import can leave the next one first in the file, still
        # carrying the blank line that separated its section.
        first = module.body[0]
        if first.leading_lines and not before.body[0].leading_lines:
            kept = list(first.leading_lines)
            while kept and kept[0].comment is None:
                kept.pop(0)
            module = module.with_changes(body=[first.with_changes(leading_lines=kept), *module.body[1:]])
    new = module.code
    if tail and not new.endswith(("\n", "\r")):
        new += module.default_newline
    text = _import_hunks_only(text, new + tail)
    if drops:
        # Imports of the dropped names below the top level (in a function, an `if`,
        # a `TYPE_CHECKING` block): removed where their own scope no longer reads them.
        text = splice(text, [Edit(start, end, new) for start, end, new in unused_scoped_imports(text, drops)])
    return text, note


def _laid_out(old: str, new: str, settings: Settings, path: Optional[Path]) -> "Layout":
    """``new`` with the statements the fixes changed laid out by the project's
    formatter (the ``formatter`` setting), or as it would lay them out."""
    from ..formatter import lay_out
    from ..style import project_style

    style = project_style(settings.style_file, settings.line_length)
    return lay_out(old, new, style, settings.formatter, path, settings.root)


#: A statement after the imports is read with them only when it is this short.
_SHORT_STATEMENT = 40


def _head_end(tree: ast.Module, text: str) -> int:
    """Where the head of the file that holds its top-level imports ends (an index
    into ``text`` at a line start)."""
    body = tree.body
    imports = [i for i, stmt in enumerate(body) if isinstance(stmt, (ast.Import, ast.ImportFrom))]
    last = imports[-1] if imports else (0 if body and _is_docstring(body[0]) else -1)
    end_line = body[last].end_lineno or body[last].lineno if last >= 0 else 0
    following = body[last + 1] if last + 1 < len(body) else None
    if following is not None and (following.end_lineno or following.lineno) - following.lineno < _SHORT_STATEMENT:
        end_line = following.end_lineno or following.lineno
    # Whole lines only, and never half of a line that holds two statements.
    for stmt in body:
        if stmt.lineno <= end_line <= (stmt.end_lineno or stmt.lineno):
            end_line = max(end_line, stmt.end_lineno or stmt.lineno)
    if end_line <= 0:
        return 0
    starts = [0] + [m.end() for m in _LINE_END.finditer(text)]
    return starts[end_line] if end_line < len(starts) else len(text)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _import_hunks_only(old: str, new: str) -> str:
    """``new``, except where it differs from ``old`` outside import statements (and the
    blank lines around them): there ``old`` stays (what LibCST would round-trip
    differently)."""
    if old == new:
        return new
    old_lines = text_lines(old)
    new_lines = text_lines(new)
    old_region = _import_lines(old)
    new_region = _import_lines(new)
    out: List[str] = []
    for tag, i1, i2, j1, j2 in line_opcodes(old_lines, new_lines):
        if tag == "equal":
            out.extend(old_lines[i1:i2])
            continue
        olds_ok = all(i in old_region or not old_lines[i - 1].strip() for i in range(i1 + 1, i2 + 1))
        news_ok = all(j in new_region or not new_lines[j - 1].strip() for j in range(j1 + 1, j2 + 1))
        out.extend(new_lines[j1:j2] if olds_ok and news_ok else old_lines[i1:i2])
    return "".join(out)


def _import_lines(text: str) -> Set[int]:
    """Lines of top-level import statements, and the comment lines right above them."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    lines: Set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    all_lines = text_lines(text)
    for line in sorted(lines):
        above = line - 1
        while above >= 1 and all_lines[above - 1].lstrip().startswith("#"):
            lines.add(above)
            above -= 1
    return lines


def _changed_lines(old: str, new: str) -> Set[int]:
    old_lines = text_lines(old)
    new_lines = text_lines(new)
    changed: Set[int] = set()
    for tag, i1, i2, _, _ in line_opcodes(old_lines, new_lines):
        if tag != "equal":
            changed.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return changed


def text_lines(text: str) -> List[str]:
    """``text`` split after its real line ends (``\\r\\n``, ``\\r``, ``\\n``), ends kept."""
    out = []
    at = 0
    for m in _LINE_END.finditer(text):
        out.append(text[at : m.end()])
        at = m.end()
    if at < len(text):
        out.append(text[at:])
    return out


def encode_like(old: SourceText, new: SourceText) -> bytes:
    """``new``'s text in ``old``'s encoding, keeping the very bytes of every line
    the text did not change (a cp932 or UTF-7 quirk, a BOM, a line end)."""
    data = old.data
    encoding = old.encoding
    if data is None:
        return new.text.encode(encoding)
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    old_lines = text_lines(old.text)
    raw_lines = _byte_lines(data[len(bom) :])
    if len(raw_lines) != len(old_lines):
        return bom + new.text.encode(encoding)
    new_lines = text_lines(new.text)
    out = [bom]
    for tag, i1, i2, j1, j2 in line_opcodes(old_lines, new_lines):
        if tag == "equal":
            out.extend(raw_lines[i1:i2])
        else:
            out.extend(line.encode(encoding) for line in new_lines[j1:j2])
    return b"".join(out)


def _byte_lines(data: bytes) -> List[bytes]:
    """``data`` split after its real line ends, as :func:`text_lines` splits the text."""
    out = []
    at = 0
    for m in re.finditer(rb"\r\n|\r|\n", data):
        out.append(data[at : m.end()])
        at = m.end()
    if at < len(data):
        out.append(data[at:])
    return out
