"""``--deep`` verdicts in the check cache, kept with what they read.

A deep verdict depends on other files: the modules its answers read and the
searches of the project's text they made (callers of a function, stores to an
attribute, subclasses). The engine reports both (``FileReport.reads``:
``f:<path>``, ``g:<word>\\0<pattern>``: a word every match holds, then the
pattern; ``t:`` for a search that found too many files to read). An entry keeps,
besides the file's own hash:

- each module read, with its stamp (device, inode, size, modification and
  change times) and hash: still valid when it is unchanged (stat first, then
  the hash if the stamp differs; a stamp taken within :data:`RACY_SECONDS` of
  the file's last change is not kept, as git does for "racily clean" files,
  so an edit in the same timestamp tick is seen by its hash); a module that
  was looked for and was not there is kept as absent, and its appearing is a
  change;
- each search, with the *listing* of the project's files when it was made
  (the stamps of every ``.py`` under the project's root, kept once per
  distinct listing; a file that was racy is kept with the hash of its bytes,
  so a later run finds it unchanged by them, or else compares its text with the
  searches): still valid when no file changed since then, or none of
  the changed files' text now matches the search (a file that matched before
  was read, so it is among the modules above). A valid entry then takes the
  listing of now, and modules read racy then and settled now their stamps, so
  the next run compares nothing (just after a checkout every file is racy: the
  first warm deep run over vLLM 0.34.0 then took as long as the cold one);
- each search that found too many files for pinfix to read them (``t:``): its
  answer (none) holds while it finds as many, so a changed file that it finds,
  read or not, changes nothing, and a module read only needs to be found by it
  still where it was (a comment in one of vLLM's many callers of a common name
  made every verdict that had counted them be checked again, 8 s for one file).
  A file outside those read that stopped being found is not seen (nor was it
  before: pinfix keeps no text of the files it did not read).

The listing also says which modules need no comparison of their own: while the
listing of now is the one an entry keeps, every module under the root is as the
verdict read it (the entry keeps each with the stamp, or the hash, the listing
holds), one looked for there and absent is still absent (its appearing, or a link
to a folder on its way, moves the listing), and no search can find more. Only
the modules the listing does not hold are compared then (outside the root, in a
folder it leaves out), and the rest of what an entry read is kept as text, parsed
only when the listing moved (a warm run over vLLM 0.34.0 parsed 15 MB of entries
and compared 90,000 stamps to learn that nothing changed).

A module whose bytes changed still counts as unchanged when its meaning did not
change: the text it had when the verdict read it is kept (compressed, by hash,
under ``texts/``), and both parse to the same tree once positions and
docstrings are left out (an edit of comments, docstrings or layout), each recorded
search finds the same matches in both texts, and the verdict's findings do not
name the module (whose positions may have moved) unless all that changed was
added after its old text. The same holds for an edit that only adds names
(:func:`added_names`: a constant, a function without decorators, nothing that runs
code on import or changes the whole module) that no module the verdict read says:
no answer the verdict got can have changed (rust-analyzer's early cut-off, by
name); and for an edit of the bodies of module-level functions alone
(:func:`changed_bodies`: their signatures and decorators as they were) that no
module the verdict read says but themselves, in which no search it made finds
anything, before or after: no answer it got looked inside them (a verdict whose
findings name the module needs the lines they name, and all before, unchanged).
The entry is then brought up to date, so the next run compares nothing.

The checked file's own verdict holds the same way for an edit that moves nothing
it says (:meth:`DeepVerdicts.unmoved`): its tree with positions is unchanged (a
comment, blank space within a line, lines after the last statement), as are the
lines its findings and their evidence name, its suppression and directive comments,
its encoding and line ends, and what each recorded search finds in it, line by
line. A one-line comment in a file about to be committed then costs a comparison,
not a deep check of the file against the whole project again. It also holds where
only lines without code were added, removed or changed and the code below moved
(:meth:`DeepVerdicts.recommented`), when every line its findings name lies above
them and each search finds what it found, on the lines it found it.

The index (``deep-index.json``) says, for each file checked with ``--deep``,
what it read, so a check of some files can also recheck the copies elsewhere
whose verdict depends on them (:meth:`DeepVerdicts.dependents`): the
cross-file regression hook. Everything is written atomically; anything
unreadable is a miss.
"""

from __future__ import annotations

import ast
import hashlib
import json
import marshal
import os
import re
import stat
import sys
import time
from pathlib import Path
from typing import AbstractSet, Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple, TypeVar

from .config import NOQA_CODE
from .regular import Stamp, stamp_of

#: A listing: path -> stamp (a racy file's: :data:`RACY_STAMP` and its hash).
Listing = Dict[str, Tuple[Any, ...]]
#: A file changed less than this long before its stamp was taken may change again
#: within the same timestamp tick without its stamp showing it: such a stamp is not
#: relied on later (git's rule for "racily clean" index entries).
RACY_SECONDS = 2.0

INDEX_NAME = "deep-index.json"
#: The index's format: a first line listing the files whose verdicts it holds (a run over
#: every one of them reads no more), then the distinct reads once and each file's by number.
DEEP_INDEX_FORMAT = 2
LISTINGS_DIR = "listings"
#: Texts of the modules verdicts read, compressed, by hash (``<hash>.z``).
TEXTS_DIR = "texts"
#: Texts kept (the newest); larger modules are not kept (a change to one is a change).
KEEP_TEXTS = 20000
#: Beside a kept text ``<hash>.z``, ``<hash>.m``: its :func:`meaning` as this Python worked it out.
MEANING_SUFFIX = ".m"
_PYTHON = "py%d.%d" % sys.version_info[:2]
#: A text asked whether it holds this many words is told apart by the names it says.
NAMES_AFTER = 16
#: A run that kept this many texts prunes them (one that kept fewer, now and then).
PRUNE_AFTER = 16
MAX_KEPT_TEXT = 1 << 21
#: How pinfix names a stored listing (its digest).
LISTING_NAME = re.compile(r"[0-9a-f]{32}")
#: Listings kept (the most recently made or used): an entry whose listing is gone is a miss.
KEEP_LISTINGS = 8
#: Modules an entry keeps brought up to date beside its modules' text, past which the text takes them.
MAX_FRESH = 32
#: Files changed since a deep dependent's listing up to which it may be left as it is when found
#: valid (see :meth:`DeepVerdicts.worth_bringing_up_to_date`).
MAX_BEHIND = 16


#: A link to a folder in a listing (with where it points): equal to no file's stamp.
LINK_STAMP: Stamp = (-2, -2, -2, -2, -2)
#: A racy file's stamp in a stored listing: equal to no file's. Kept with the hash of the
#: file's bytes (a sixth item), so a later run finds it unchanged by its bytes: just after
#: a checkout every file is racy, and each would count as changed in every verdict made then.
RACY_STAMP: Stamp = (-1, -1, -1, -1, -1)


def real_directory(path: Path) -> Optional[bool]:
    """``True``: a directory, not a link; ``None``: nothing there; ``False``: anything else."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return False
    return stat.S_ISDIR(mode)


def make_directory(directory: Path, parents: bool = False) -> None:
    """``directory`` exists, made here if need be, and is no link (a cache committed to a
    repository could hold one pointing anywhere): raises ``OSError`` otherwise."""
    state = real_directory(directory)
    if state is None:
        try:
            directory.mkdir(parents=parents, exist_ok=True)
        except FileExistsError:  # a file or a link made meanwhile: seen below
            pass
        state = real_directory(directory)
    if state is not True:
        raise NotADirectoryError(f"{directory} is not a plain directory")


def _listing_digest(listing: Listing) -> str:
    """A listing's name: the hash of its paths and stamps, in order, as :mod:`marshal`'s
    first version writes them (its later ones write shared or interned objects by
    reference, so equal listings could hash apart; this one writes values only): a third
    of the time of their JSON over a large tree."""
    return hashlib.sha256(marshal.dumps(sorted(listing.items()), 0)).hexdigest()[:32]


_JSON = json.JSONDecoder()


def _key_at(text: str, name: str) -> Optional[int]:
    """Where the value of key ``name`` starts in ``text``, an object as :func:`json.dumps`
    writes it (``None``: no such key). A quote that starts a key follows ``{`` or ``, ``;
    one inside a key or a value is escaped, and no value is followed by ``": "``."""
    if not text.startswith("{"):
        raise ValueError("not an entry's modules")
    needle = json.dumps(name) + ": "
    at = text.find(needle)
    while at >= 0:
        if at == 1 or text[at - 2 : at] == ", ":
            return at + len(needle)
        at = text.find(needle, at + 1)
    return None


def _fresh_of(kept: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """An entry's modules brought up to date since its verdict (see
    :meth:`DeepVerdicts.bring_up_to_date`; ``None``: none). Raises ``ValueError`` where it is
    not a map (not of pinfix's writing)."""
    fresh = kept.get("fresh")
    if not isinstance(fresh, (dict, type(None))):
        raise ValueError("not an entry's modules")
    return fresh


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_hash(digest: str) -> bool:
    """Whether ``digest`` is one :func:`file_hash` could give (the only names of kept texts)."""
    return re.fullmatch(r"[0-9a-f]{64}", digest) is not None


_T = TypeVar("_T")


def _for_text(table: Dict[Any, Tuple[bytes, _T]], key: Any, data: bytes, make: Callable[[], _T]) -> _T:
    """What ``make()`` gives for the text ``data``, kept in ``table`` under ``key`` (which
    holds the text's identity) beside the text itself, so a later text at the same
    address is never taken for it."""
    known = table.get(key)
    if known is None or known[0] is not data:
        known = table[key] = (data, make())
    return known[1]


#: The first and last lines of each string of a text that spans lines (see :func:`same_code`).
Spans = Tuple[Tuple[int, int], ...]


def _bare_tree(data: bytes, spans: Optional[List[Tuple[int, int]]] = None) -> Optional[ast.Module]:
    """A module's tree without its docstrings (``None``: it does not parse); into
    ``spans``, if given, the lines of each string that spans lines, docstrings too."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    for node in ast.walk(tree):  # (a docstring taken out of a body below is still walked)
        if spans is not None and isinstance(node, _STRING_NODES):
            _add_span(node, spans)
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and isinstance(body, list)
            and len(body) > 1
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            del body[0]
    return tree


def same_code(old: bytes, new: bytes, blocks: Optional[List[Block]] = None, spans: Optional[Spans] = None) -> bool:
    """Whether ``new`` is ``old`` with only lines that hold no code added, removed or
    changed (blank lines, comments on their own), proven from the lines and one text's
    strings, without either text's :func:`meaning` (``False`` proves nothing: compare
    the meanings). ``blocks``: :func:`_uncoded_changes` of the two texts' lines, if
    known; ``spans``: :func:`string_spans` of ``old``, if known (else ``new`` is parsed).

    Python's tokenizer drops comments and blank lines before its parser sees them, so
    the two trees differ in positions only, unless a changed line is not what it looks
    like: inside a string that spans lines (part of the string), after a line a
    backslash continues, or among the first two lines (an encoding declaration). Each
    block of changed lines must lie outside every string of one text that spans lines
    (a block not in that text: no such string across the place where it is in it).
    The tokenizer reads what comes before a block alike in both texts, so at a block
    outside one text's strings it is outside the other's too, and reads what follows
    alike again."""
    if old == new:
        return True
    if _line_ends(old)[2] or _line_ends(new)[2]:
        return False
    new_lines = new.splitlines(True)
    if blocks is None:
        blocks = _uncoded_changes(old.splitlines(True), new_lines)
    if not blocks:
        return False
    for a, _, c, _ in blocks:
        if min(a, c) < 2 or new_lines[c - 1].rstrip(b"\r\n").endswith(b"\\"):
            return False
    if spans is not None:
        # Old lines a+1 .. b (1-based; none where a block was inserted: the place below line a).
        return not any(first <= b and last >= a + 1 for a, b, _, _ in blocks for first, last in spans)
    tree = _tree_of(new)
    if tree is None:
        return False
    # New lines c+1 .. d (1-based; none where a block was removed: the place below line c).
    return not any(_string_across(tree, c + 1, d) for _, _, c, d in blocks)


#: A kept meaning (with its strings' lines) larger than this is not read back.
MAX_KEPT_MEANING = 1 << 20
#: What a kept meaning says where only the text's strings are known.
UNKNOWN_MEANING = "?"
#: (At most nine digits a line: Python refuses to read an integer of thousands of digits.)
_SPANS_TEXT = re.compile(r"=|\d{1,9}-\d{1,9}(?:,\d{1,9}-\d{1,9})*")


def _spans_of(said: str) -> Optional[Spans]:
    """The strings' lines a kept meaning says (``=``: none); ``None``: not as pinfix writes them."""
    if not _SPANS_TEXT.fullmatch(said):
        return None
    if said == "=":
        return ()
    spans = tuple((int(a), int(b)) for a, b in (pair.split("-") for pair in said.split(",")))
    return spans if all(0 < a < b for a, b in spans) else None


def _add_span(node: ast.AST, spans: List[Tuple[int, int]]) -> None:
    """Add a string node's first and last lines to ``spans`` where it spans lines."""
    first = getattr(node, "lineno", 0)
    last = getattr(node, "end_lineno", None) or first
    if last > first:
        spans.append((first, last))


def _spans_in(tree: ast.AST) -> Spans:
    """The lines of each string of ``tree`` that spans lines, in order."""
    spans: List[Tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, _STRING_NODES):
            _add_span(node, spans)
    return tuple(sorted(spans))


def moved_spans(spans: Spans, blocks: List[Block]) -> Spans:
    """``spans`` of a text (none of them across a block of ``blocks``) where they are in
    the text the blocks make of it: each moved by the lines added and removed above it."""
    out = []
    for first, last in spans:
        shift = sum((d - c) - (b - a) for a, b, c, d in blocks if b <= first - 1)
        out.append((first + shift, last + shift))
    return tuple(out)


#: :func:`_tree_of` the last few texts (by their hash): the text a module has now is compared
#: with the one its own verdict read and with the one its dependents' verdicts read.
_TREES: Dict[str, Optional[ast.Module]] = {}


def _tree_of(data: bytes) -> Optional[ast.Module]:
    """``data``'s whole tree, docstrings kept (``None``: it does not parse); not to be changed."""
    key = file_hash(data)
    if key not in _TREES:
        while len(_TREES) >= 2:
            del _TREES[next(iter(_TREES))]
        try:
            _TREES[key] = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            _TREES[key] = None
    return _TREES[key]


#: The nodes of the tokens that may span lines (``TemplateStr``: Python 3.14's t-strings).
_STRING_NODES = tuple(
    getattr(ast, name) for name in ("Constant", "JoinedStr", "TemplateStr", "Interpolation") if hasattr(ast, name)
)


def _string_across(tree: ast.AST, first: int, last: int) -> bool:
    """Whether a string of ``tree`` on more than one line covers a line from ``first`` to
    ``last`` or, where ``last`` is ``first - 1``, runs across the place between them
    (only the nodes around those lines are visited)."""
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        start = getattr(node, "lineno", None)
        if start is not None:
            end = getattr(node, "end_lineno", None) or start
            if start > last or end < first:
                continue
            if isinstance(node, _STRING_NODES) and start < end:
                return True
        stack.extend(ast.iter_child_nodes(node))
    return False


#: :func:`_statements` of the last few texts (by their hash): a one-file run asks the
#: meaning, the names added and the bodies changed of the same two texts.
_STATEMENTS: Dict[str, Optional[Tuple[ast.Module, List[str], Spans]]] = {}
_KEEP_STATEMENTS = 8


def _statements(data: bytes) -> Optional[Tuple[ast.Module, List[str], Spans]]:
    """A module's tree without its docstrings, each top-level statement of it as
    :func:`ast.dump` writes it without positions, and its strings that span lines
    (``None``: it does not parse). The tree is shared: not to be changed."""
    key = file_hash(data)
    if key not in _STATEMENTS:
        found = None
        spans: List[Tuple[int, int]] = []
        tree = _bare_tree(data, spans)
        if tree is not None:
            try:
                found = (tree, [ast.dump(stmt) for stmt in tree.body], tuple(sorted(spans)))
            except (RecursionError, MemoryError):
                found = None
        while len(_STATEMENTS) >= _KEEP_STATEMENTS:
            del _STATEMENTS[next(iter(_STATEMENTS))]
        _STATEMENTS[key] = found
    return _STATEMENTS[key]


def string_spans(data: bytes) -> Optional[Spans]:
    """The first and last lines of each string of ``data`` that spans lines, in order
    (``None``: it does not parse); found with its :func:`meaning`, at no cost more."""
    found = _statements(data)
    return None if found is None else found[2]


def meaning(data: bytes) -> Optional[str]:
    """A hash of what a module's text says to the analysis: its tree without positions
    and docstrings (``None``: it does not parse). Its statements' dumps, one a line (no
    dump holds a line end: a string's is escaped)."""
    found = _statements(data)
    if found is None:
        return None
    return hashlib.sha256("\n".join(found[1]).encode("utf-8", "surrogatepass")).hexdigest()


def added_names(old: bytes, new: bytes) -> Optional[List[str]]:
    """The names ``new`` binds in statements it adds to ``old``, when that is all that
    changed and the added statements do nothing when the module is imported but bind
    those names: every top-level statement of ``old`` is in ``new``, in order, the same
    once positions and docstrings are left out; each added one is an assignment to plain
    names of a value that calls nothing, or a function without decorators whose
    defaults and annotations call nothing. ``None``: anything else."""
    then, now = _statements(old), _statements(new)
    if then is None or now is None:
        return None
    kept = then[1]
    try:
        names: List[str] = []
        i = 0
        for stmt, said in zip(now[0].body, now[1]):
            if i < len(kept) and said == kept[i]:
                i += 1
                continue
            bound = _inert_binding(stmt)
            if bound is None:
                return None
            names.extend(bound)
    except (RecursionError, MemoryError):
        return None
    return names if i == len(kept) and names else None


def changed_bodies(old: bytes, new: bytes) -> Optional[List[Tuple[str, Tuple[int, int], Tuple[int, int]]]]:
    """The module-level functions whose body alone changed, when that is all that changed
    between two texts of a module once positions and docstrings are left out: each as its
    name and its lines (first, last; decorators included) in each text. A function whose
    body, before or after, changes what pinfix knows of the whole module (a ``global``
    statement, a call that sets the default device or registers host memory) does not
    count. ``None``: anything else."""
    import copy

    then, later = _statements(old), _statements(new)
    if then is None or later is None or len(then[1]) != len(later[1]):
        return None
    out = []
    try:
        for was, now, said_then, said_now in zip(then[0].body, later[0].body, then[1], later[1]):
            if said_then == said_now:
                continue
            if not isinstance(was, (ast.FunctionDef, ast.AsyncFunctionDef)) or type(now) is not type(was):
                return None
            heads = []
            for node in (was, now):
                head = copy.copy(node)
                head.body = []
                heads.append(ast.dump(head))
            if heads[0] != heads[1] or any(_module_wide(n) for n in (*ast.walk(was), *ast.walk(now))):
                return None
            spans = [
                (min([f.lineno, *(d.lineno for d in f.decorator_list)]), f.end_lineno or f.lineno) for f in (was, now)
            ]
            out.append((was.name, spans[0], spans[1]))
    except (RecursionError, MemoryError):
        return None
    return out or None


def _within(line: int, spans: List[Tuple[int, int]]) -> bool:
    """Whether ``line`` lies in one of ``spans`` (first, last; 1-based)."""
    return any(first <= line <= last for first, last in spans)


def _blanked(text: bytes, spans: List[Tuple[int, int]]) -> bytes:
    """``text`` with the lines ``spans`` (first, last; 1-based) left empty."""
    lines = text.splitlines(True)
    for first, last in spans:
        for n in range(first - 1, min(last, len(lines))):
            lines[n] = b"\n"
    return b"".join(lines)


def _inert_binding(stmt: ast.stmt) -> Optional[List[str]]:
    """The names a top-level statement binds when binding them is all it does on import."""

    def calls(node: Optional[ast.AST]) -> bool:
        return node is not None and any(
            isinstance(n, (ast.Call, ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom))
            for n in ast.walk(node)
        )

    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        return None if calls(stmt.value) else [t.id for t in stmt.targets]  # type: ignore[attr-defined]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.simple:
        return None if calls(stmt.value) or calls(stmt.annotation) else [stmt.target.id]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not stmt.decorator_list:
        if calls(stmt.args) or calls(stmt.returns) or any(_module_wide(n) for n in ast.walk(stmt)):
            return None
        return [stmt.name]
    return None


def _module_wide(node: ast.AST) -> bool:
    """Whether ``node``, wherever it lies in a module, changes what pinfix knows of the
    whole module: a ``global``/``nonlocal`` statement (a name some function rebinds), a
    call that sets the default device or registers host memory."""
    from .effects import DEFAULT_DEVICE_SETTERS, HOST_REGISTER_CALLS

    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in DEFAULT_DEVICE_SETTERS or name in HOST_REGISTER_CALLS
    return False


def same_positions(old: bytes, new: bytes) -> bool:
    """Whether two texts of a module parse to the same tree with every node where it
    was (false where either does not parse): equal for two texts that differ only in
    comments, in blank space within lines and in lines after the last statement. The
    trees are compared node by node and the comparison stops at the first difference
    (a comment above the code moves the first statement below it): cheaper than
    dumping both whole."""
    try:
        pairs: List[Tuple[Any, Any]] = [(ast.parse(old), ast.parse(new))]
        while pairs:
            a, b = pairs.pop()
            if type(a) is not type(b):
                return False  # (a constant's type too: 1, 1.0 and True are equal numbers)
            if isinstance(a, ast.AST):
                for attr in a._attributes:
                    if getattr(a, attr, None) != getattr(b, attr, None):
                        return False
                pairs.extend((getattr(a, field, None), getattr(b, field, None)) for field in a._fields)
            elif type(a) is list:
                if len(a) != len(b):
                    return False
                pairs.extend(zip(a, b))
            elif a != b:
                return False
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False


#: A line whose comment may change what a check says (a suppression, a malformed one it
#: reports, a directive to pinfix or to the tools whose layout its fixes follow).
DIRECTIVE_LINE = re.compile(rb"(?i)noqa|lint-(?:ignore|fixme)|pinfix\s*:|fmt\s*:|isort\s*:")

#: An encoding declaration (read on the first two lines).
CODING_LINE = re.compile(rb"[ \t\f]*#.*?coding[:=]")


def _made_by_pinfix(search: str) -> bool:
    """Whether ``search`` is one pinfix makes (:mod:`pinfix.semantic.deep.searches`; imported
    only when a deep entry is read: the pre-commit path over ruled-out files never is)."""
    from .semantic.deep.searches import is_recorded_search as recorded

    return recorded(search)


def _lines_named(findings: Any, path: str) -> List[int]:
    """The lines of ``path`` that ``findings`` (as stored) span or point to as evidence."""
    out: List[int] = []
    for finding in findings:
        out.extend(range(int(finding["line"]), int(finding["end_line"]) + 1))
    return out + _evidence_lines(findings, path)


def _evidence_lines(findings: Any, path: str) -> List[int]:
    """The lines of ``path`` that ``findings`` (as stored) point to as evidence."""
    out: List[int] = []
    for finding in findings:
        for step in finding.get("evidence") or ():
            where = step.get("path")
            # Paths as shown (relative to where that run was): any of the same name counts.
            if where and os.path.basename(where) == os.path.basename(path):
                out.append(int(step["line"]))
    return out


def _module_lines_named(findings: Any, said: str, path: str) -> List[int]:
    """The lines of module ``path`` that ``findings`` (as stored; ``said``: as JSON) name
    as evidence or in words (``a.py:12``), whatever file they are in."""
    base = os.path.basename(path)
    return [int(n) for n in re.findall(re.escape(base) + r":(\d+)", said)] + _evidence_lines(findings, path)


def _directed_alike(old: bytes, old_lines: List[bytes], new: bytes, new_lines: List[bytes]) -> bool:
    """Whether two texts of a file hold the same comments that may suppress or direct
    (:data:`DIRECTIVE_LINE`, an encoding declaration), on the same lines, and the same
    encoding mark and line ends."""

    def said(lines: List[bytes]) -> List[Tuple[int, bytes]]:
        return _declared(lines) + [(n, line) for n, line in enumerate(lines) if DIRECTIVE_LINE.search(line)]

    return said(old_lines) == said(new_lines) and _line_ends(old) == _line_ends(new)


def _line_ends(text: bytes) -> Tuple[bool, bool, bool]:
    """Whether ``text`` starts with a UTF-8 mark, holds CRLF ends, holds lone CRs."""
    return text.startswith(b"\xef\xbb\xbf"), b"\r\n" in text, b"\r" in text.replace(b"\r\n", b"")


#: A block of lines changed between two texts: ``old[a:b]`` became ``new[c:d]``.
Block = Tuple[int, int, int, int]


def _changes(old: List[bytes], new: List[bytes]) -> List[Block]:
    """Each block of lines changed between two texts, in order."""
    from difflib import SequenceMatcher

    matcher = SequenceMatcher(None, old, new, autojunk=False)
    return [(a, b, c, d) for tag, a, b, c, d in matcher.get_opcodes() if tag != "equal"]


def _inserted(old: List[bytes], new: List[bytes]) -> Optional[List[Block]]:
    """The blocks of lines (``new[c:d]``, inserted at ``old[a]``) that make ``new`` of
    ``old`` when only lines were inserted (``None``: anything else changed)."""
    blocks = _changes(old, new)
    return None if any(a != b for a, b, _, _ in blocks) else blocks


def _declared(lines: List[bytes]) -> List[Tuple[int, bytes]]:
    """The encoding declaration among the first two lines, with its place."""
    return [(n, line) for n, line in enumerate(lines[:2]) if CODING_LINE.match(line)]


def _uncoded_changes(old: List[bytes], new: List[bytes]) -> Optional[List[Block]]:
    """Each block of lines changed between two texts, when every line in them is blank
    or a comment on its own that may not suppress or direct (:data:`DIRECTIVE_LINE`);
    ``None``: anything else changed."""
    blocks = _changes(old, new)
    for a, b, c, d in blocks:
        for line in (*old[a:b], *new[c:d]):
            bare = line.strip()
            if (bare and not bare.startswith(b"#")) or DIRECTIVE_LINE.search(line):
                return None
    return blocks


#: A number a finding's words may give as a line (``line 3``, ``lines 3, 5``, ``a.py:3``).
_SAID_NUMBER = re.compile(r"(?:\blines? |:|, )(\d+)")


def _words_of(findings: Any) -> Set[str]:
    """The names ``findings`` (as stored) say, in any field."""
    return set(re.findall(r"[^\W\d]\w*", json.dumps(findings, ensure_ascii=False)))


def _named_below(findings: Any, path: str, first: int, words: bool = True) -> bool:
    """Whether ``findings`` (as stored) name a line of ``path`` from ``first`` on, by
    position or as evidence, or (with ``words``) say any number from ``first`` on
    (their messages hold line numbers)."""
    if any(line >= first for line in _lines_named(findings, path)):
        return True
    said = json.dumps(findings, ensure_ascii=False)
    return words and any(int(n) >= first for n in _SAID_NUMBER.findall(said))


class DeepVerdicts:
    """Deep entries' validity and the index of what each deep verdict read, for
    one cache settings directory."""

    def __init__(
        self,
        directory: Path,
        prepare: Optional[Callable[[], None]] = None,
        stamps: Optional[Dict[str, Stamp]] = None,
    ):
        #: ``<cache>/<version>/<settings>``.
        self.directory = directory
        #: Makes :attr:`directory` (in a cache directory that is pinfix's); raises ``OSError``.
        self.prepare = prepare or (lambda: directory.mkdir(parents=True, exist_ok=True))
        #: root -> (the digest entries keep, the listing now, the digest of the listing now).
        self._listings: Dict[str, Tuple[str, Listing, str]] = {}
        #: Listings read back (as JSON gives them: each stamp a list).
        self._stored: Dict[str, Optional[Dict[str, Any]]] = {}
        self._stats: Dict[str, Optional[Stamp]] = {}
        #: Stamps this run took already (the walk's and this one's, by absolute path): not taken again.
        self._taken = stamps if stamps is not None else {}
        #: Stamps as entries keep them (lists), to compare with those without converting.
        self._stat_lists: Dict[str, Optional[List[int]]] = {}
        #: Stamps changed after this are racy (see :data:`RACY_SECONDS`).
        self._settled_before = time.time_ns() - int(RACY_SECONDS * 1e9)
        self._hashes: Dict[str, Optional[str]] = {}
        self._texts: Dict[str, Optional[bytes]] = {}
        self._changed: Dict[Tuple[str, str], Optional[List[str]]] = {}
        self._patterns: Dict[str, "re.Pattern[bytes]"] = {}
        #: The index's files, and the rest of its text (its reads, decoded when asked for), or
        #: an index of the first format as read.
        self._index_files: Optional[List[str]] = None
        self._index_rest = b""
        self._index_first: Optional[Dict[str, Any]] = None
        self._index_numbered: Optional[Tuple[List[str], List[Any], List[Any]]] = None
        self._index_updates: Dict[str, List[str]] = {}
        self._meanings: Dict[str, Optional[str]] = {}
        #: Each text's strings that span lines, where known (by its hash: see :func:`string_spans`).
        self._spans: Dict[str, Optional[Spans]] = {}
        #: The texts whose kept meaning has been read (see :meth:`_read_kept_meaning`).
        self._read_meanings: Set[str] = set()
        #: Whether two texts say the same to the analysis (by their hashes: see :meth:`_same_code`).
        self._same: Dict[Tuple[str, str], bool] = {}
        self._kept_texts: Dict[str, bool] = {}
        #: Each listed root's kept word list (see :meth:`word_list`).
        self._word_lists: Dict[str, Any] = {}
        self._unsaid_by: Dict[Tuple[Any, ...], Dict[str, Any]] = {}
        #: Whether a module says any of some names (see :meth:`_said`).
        self._says: Dict[Tuple[str, Tuple[str, ...]], bool] = {}
        #: What :func:`changed_bodies` found (by the hashes of the two texts).
        self._changed_bodies: Dict[Tuple[str, str], Any] = {}
        #: What :func:`added_names` found (by the hashes of the two texts, in the order asked).
        self._added: Dict[Tuple[str, str], Optional[List[str]]] = {}
        #: The texts this run kept (by hash).
        self._texts_written: List[str] = []
        #: Modules :meth:`still_valid` last found changed in bytes only: path -> [stat, hash].
        self.refreshed: Dict[str, List[Any]] = {}
        #: The listing of now, when :meth:`still_valid` last found files changed since the
        #: entry's, but none that its verdict read or its searches would now find: the entry
        #: may keep it instead (``None``: nothing to bring up to date), so a later run does
        #: not compare them again.
        self.relisted: Optional[str] = None
        #: The files :meth:`still_valid` last found changed since the entry's listing (none:
        #: the same listing; ``None``: not known, that listing is gone).
        self.behind: Optional[List[str]] = []
        #: Each entry's modules parsed (by the entry's identity, with the text parsed).
        self._modules: Dict[int, Tuple[str, Optional[Dict[str, Any]], Dict[str, Any]]] = {}
        #: What the searches read of each text (see :meth:`matches`), by the text's identity.
        self._readable: Dict[int, Tuple[bytes, bytes]] = {}
        #: The whole names of each text asked about many words (see :meth:`_names_in`), by its identity.
        self._names: Dict[int, Tuple[bytes, int, Optional[FrozenSet[bytes]]]] = {}
        #: The kept texts read back (by hash).
        self._earlier: Dict[str, bytes] = {}
        #: What each recorded search found in each text (see :meth:`matched`), by the search,
        #: the text's identity (with the text) and whether lines were asked for.
        self._matched: Dict[Tuple[str, int, bool], Tuple[bytes, Optional[List[Any]]]] = {}

    # --- the project's files -----------------------------------------------------------------

    def listing(self, path: str) -> Tuple[str, str, Listing]:
        """The root of ``path``'s project, the hash of its listing, the listing."""
        from .semantic.roots import import_root, project_file_names

        root = str(import_root(Path(path).resolve()))
        known = self._listings.get(root)
        if known is None:
            found: Listing = {}
            links: List[str] = []
            racy: List[str] = []
            for file in project_file_names(root, links):
                stamp = self._stat(file)
                if stamp is not None:
                    found[file] = stamp
                    if self._racy(stamp):
                        racy.append(file)
            kept: Listing = found
            if racy:
                # A racy file may still change unseen: kept by its bytes' hash, so a later
                # run compares that (and its text with the searches if it changed).
                kept = dict(found)
                for file in racy:
                    kept[file] = (*RACY_STAMP, self._bytes_hash(file))
            for link in links:
                # Not walked through, but a module looked for and absent may appear behind it.
                try:
                    found[link + os.sep] = kept[link + os.sep] = (*LINK_STAMP, os.readlink(link))
                except (OSError, ValueError):
                    pass
            digest = _listing_digest(kept)
            known = self._listings[root] = (digest, found, _listing_digest(found) if racy else digest)
            self._store_listing(digest, kept)
        return root, known[0], known[1]

    def _store_listing(self, digest: str, listing: Listing) -> None:
        from .writing import atomic_write

        directory = self.directory / LISTINGS_DIR
        try:
            if real_directory(directory) is True and stat.S_ISREG(os.lstat(directory / digest).st_mode):
                os.utime(directory / digest, follow_symlinks=False)
                return
        except OSError:
            pass
        try:
            self.prepare()
            make_directory(directory)
            atomic_write(directory, digest, json.dumps(listing).encode())
            # Only listings (regular files named as pinfix names them), never through a link.
            with os.scandir(directory) as entries:
                kept = [e for e in entries if LISTING_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False)]
            kept.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns, reverse=True)
            for stale in kept[KEEP_LISTINGS:]:
                os.unlink(stale.path)
        except OSError:
            pass  # a cache is only ever a shortcut

    def _stored_listing(self, digest: str) -> Optional[Dict[str, Any]]:
        """The listing ``digest`` (an entry's), marked as used: listings are pruned by their
        last use, so the one a tree run's verdicts keep stays while they are asked (pruned by
        when it was made, it went after 8 one-file runs, and every verdict of that run that
        made a search was checked again whenever asked)."""
        if digest not in self._stored:
            from .regular import read_regular

            self._stored[digest] = None
            if not LISTING_NAME.fullmatch(digest):
                return None  # not a name pinfix gives a listing: none is read
            path = self.directory / LISTINGS_DIR / digest
            try:
                raw = json.loads(read_regular(path, follow_symlinks=False, limit=1 << 26))
                if not isinstance(raw, dict):
                    raise ValueError("not a listing")
                # As JSON gives it: each stamp a list, compared with the lists of now (see
                # :meth:`changed_since`); one of another shape is a file changed.
                self._stored[digest] = raw
                if real_directory(path.parent) is True:  # pinfix's own folder, not one a link leads to
                    os.utime(path, follow_symlinks=False)
            except (OSError, ValueError, TypeError, IndexError, AttributeError, RecursionError):
                pass
        return self._stored[digest]

    def _stat(self, path: str) -> Optional[Stamp]:
        if path not in self._stats:
            taken = self._taken.get(path)
            if taken is None:
                taken = stamp_of(path)
                if taken is not None:
                    self._taken[path] = taken  # the walk, coming later to it, takes it from here
            self._stats[path] = taken
        return self._stats[path]

    def _stat_list(self, path: str) -> Optional[List[int]]:
        if path not in self._stat_lists:
            stamp = self._stat(path)
            self._stat_lists[path] = None if stamp is None else list(stamp)
        return self._stat_lists[path]

    def _racy(self, stamp: Stamp) -> bool:
        return stamp[3] >= self._settled_before or stamp[4] >= self._settled_before

    def _kept_stamp(self, path: str) -> Optional[Stamp]:
        """The stamp an entry keeps for ``path`` (``None``: racy, compare the hash)."""
        stamp = self._stat(path)
        return None if stamp is None or self._racy(stamp) else stamp

    def _text(self, path: str) -> Optional[bytes]:
        if path not in self._texts:
            from .regular import read_regular

            try:
                self._texts[path] = read_regular(path)  # a FIFO named `x.py` is refused, not waited on
            except OSError:
                self._texts[path] = None
        return self._texts[path]

    def _bytes_hash(self, path: str) -> Optional[str]:
        """:meth:`_hash` without keeping the text (a listing hashes many files it never reads again)."""
        if path not in self._hashes and path not in self._texts:
            from .regular import read_regular

            try:
                self._hashes[path] = file_hash(read_regular(path))
            except OSError:
                self._hashes[path] = None
        return self._hash(path)

    def _hash(self, path: str) -> Optional[str]:
        if path not in self._hashes:
            data = self._text(path)
            self._hashes[path] = None if data is None else file_hash(data)
        return self._hashes[path]

    def changed_since(self, root: str, digest: str) -> Optional[List[str]]:
        """Files under ``root`` added, removed or changed since the listing
        ``digest`` (``None``: that listing is no longer known)."""
        key = (root, digest)
        if key not in self._changed:
            current = self._listings.get(root)
            if current is None:
                self._changed[key] = None
                return None
            _, now, now_digest = current
            if now_digest == digest:
                self._changed[key] = []
            else:
                then = self._stored_listing(digest)
                if then is None:
                    self._changed[key] = None
                else:
                    # A stored listing's stamps are JSON lists (one of another kind is a change).
                    differ = [p for p, stamp in then.items() if type(stamp) is not list or now.get(p) != tuple(stamp)]
                    differ.extend(p for p in now if p not in then)
                    self._changed[key] = sorted(p for p in differ if not self._same_bytes(p, then.get(p)))
        return self._changed[key]

    def _same_bytes(self, path: str, then: Any) -> bool:
        """Whether ``path`` kept racy in a listing (``then``, with its hash) has those bytes still."""
        return isinstance(then, (list, tuple)) and len(then) > 5 and self._bytes_hash(path) == then[5]

    # --- entries -----------------------------------------------------------------------------

    def record(self, path: str, reads: Optional[List[str]]) -> Dict[str, Any]:
        """What an entry keeps so it can be checked later (see :meth:`still_valid`): the
        modules read, as JSON text (parsed only when the listing moved: a warm run over
        vLLM 0.34.0 parsed 15 MB of entries for nothing), and apart, those the listing
        does not hold (outside the root, in a folder it leaves out, or absent)."""
        from .semantic.roots import listable

        root, digest, listed = self.listing(path)
        modules: Dict[str, Any] = {}
        searches: List[str] = []
        many: List[str] = []
        for what in reads or ():
            kind, _, name = what.partition(":")
            if kind == "f":
                # Absent: looked for (a module an import may name) and not there.
                modules[name] = None if self._stat(name) is None else [self._kept_stamp(name), self._hash(name)]
                self._keep_text(name)
            elif kind == "g":
                searches.append(name)
            elif kind == "t":
                many.append(name)
        # (A search that found too many files to read makes no file a dependent: not indexed.)
        self._index_updates[os.path.realpath(path)] = [r for r in reads or () if not r.startswith("t:")]
        # An absent module the listing would hold were it there: its appearing moves the listing.
        outside = {
            name: then
            for name, then in modules.items()
            if name not in listed and not (then is None and listable(root, name))
        }
        return {
            "root": root,
            "listing": digest,
            "modules": json.dumps(modules),
            "outside": outside,
            "searches": searches,
            "many": many,
        }

    def modules_of(self, kept: Dict[str, Any]) -> Dict[str, Any]:
        """The modules an entry's verdict read (``kept["modules"]`` parsed, once per text),
        with those brought up to date since (``kept["fresh"]``, see :meth:`bring_up_to_date`)."""
        modules = self._parsed_modules(kept)
        if modules is None:
            modules = json.loads(kept["modules"])
            if not isinstance(modules, dict):
                raise ValueError("not an entry's modules")
            modules.update(_fresh_of(kept) or ())
            self._remember_modules(kept, modules)
        return modules

    def _parsed_modules(self, kept: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """What :meth:`modules_of` gave for ``kept`` as it is now (``None``: not asked yet)."""
        known = self._modules.get(id(kept))
        if known is not None and known[0] is kept["modules"] and known[1] is kept.get("fresh"):
            return known[2]
        return None

    def _remember_modules(self, kept: Dict[str, Any], modules: Dict[str, Any]) -> None:
        self._modules[id(kept)] = (kept["modules"], kept.get("fresh"), modules)

    def read_of(self, kept: Dict[str, Any], names: Iterable[str]) -> Dict[str, Any]:
        """Those of ``names`` an entry's verdict read, as it keeps them (see :meth:`modules_of`):
        looked up in the modules' text without parsing it whole where it was not parsed yet."""
        modules = self._parsed_modules(kept)
        if modules is not None:
            return {name: modules[name] for name in names if name in modules}
        fresh = _fresh_of(kept) or {}
        text: str = kept["modules"]
        found: Dict[str, Any] = {}
        for name in names:
            if name in fresh:
                found[name] = fresh[name]
                continue
            at = _key_at(text, name)
            if at is not None:
                found[name] = _JSON.raw_decode(text, at)[0]
        return found

    def reads_of(self, kept: Dict[str, Any]) -> List[str]:
        """What an entry's verdict read, as the engine reports it (``FileReport.reads``)."""
        found = ["f:" + name for name in self.modules_of(kept)] + ["g:" + s for s in kept["searches"]]
        return sorted(found + ["t:" + s for s in kept.get("many", ())])

    def found(self) -> Tuple[Dict[str, Any], Optional[str]]:
        """What :meth:`still_valid` last found an entry should take in: :attr:`refreshed`
        and :attr:`relisted` (for :meth:`bring_up_to_date`, later)."""
        return dict(self.refreshed), self.relisted

    def bring_up_to_date(
        self, kept: Dict[str, Any], found: Optional[Tuple[Dict[str, Any], Optional[str]]] = None
    ) -> None:
        """Give ``kept`` (an entry :meth:`still_valid` just found valid) what that found (or
        ``found``, what :meth:`found` said then): the modules changed in their bytes only, as
        they are now, and the listing of now. Those modules go to a small map beside the
        modules' text (``kept["fresh"]``), not into it: a comment in a module 57 verdicts read
        re-encoded their 2,000-module maps, 17 ms of a one-file run's 360. Past
        :data:`MAX_FRESH` of them, the text takes them in."""
        refreshed, relisted = found if found is not None else (self.refreshed, self.relisted)
        if refreshed:
            modules = self.modules_of(kept)
            modules.update(refreshed)
            fresh = {**(kept.get("fresh") or {}), **refreshed}
            if len(fresh) > MAX_FRESH:
                kept["modules"], fresh = json.dumps(modules), {}
            if fresh:
                kept["fresh"] = fresh
            else:
                kept.pop("fresh", None)
            self._remember_modules(kept, modules)
            kept["outside"].update((k, v) for k, v in refreshed.items() if k in kept["outside"])
        kept["listing"] = relisted or kept["listing"]

    def worth_bringing_up_to_date(self, kept: Dict[str, Any], edited: AbstractSet[str]) -> bool:
        """Whether ``kept``, a dependent of the files a run checked (``edited``, resolved) just
        found valid, should be brought up to date: it took in a module other than those (one
        not being edited: compared once more, it may cost as much as a body changed, 33 ms),
        or one outside the listing (compared on every run), or more than :data:`MAX_BEHIND`
        files changed since its listing (or that listing is gone). Otherwise a later run finds
        the same few files changed and compares them again, memoised across the entries that
        share a listing and a text: after a comment in a module 57 verdicts read, rewriting
        them all was 60 ms of the one-file run's 360, and the next edit of that module made
        them all behind again. (Those whose listing most of the others do not share are
        brought up to date too: see :meth:`pinfix.cache.ResultCache.settle`.)"""
        return (
            self.behind is None
            or len(self.behind) > MAX_BEHIND
            or any(name in kept["outside"] or name not in edited for name in self.refreshed)
        )

    def still_valid(self, path: str, kept: Dict[str, Any], findings: Any = (), itself: Optional[str] = None) -> bool:
        """Whether nothing an entry's verdict read has changed since (``findings``: the
        verdict's, as stored: a module they name must not change at all; ``itself``:
        the checked file, found :meth:`unmoved` already).
        Modules changed in their bytes only are left in :attr:`refreshed`.
        When the project's listing is the one the entry keeps, every module under its
        root is as it was (each kept with the stamp, or the hash, the listing holds), and
        no search could find more: only the modules outside the listing are compared.
        When it moved, so are only those of the files changed since (a one-file run
        after an edit compared the 2,000 modules a verdict read to find one changed)."""
        self.refreshed = {}
        self.relisted = None
        self.behind = []
        own = os.path.realpath(path)
        try:
            root, digest_now, _ = self.listing(path)
            if itself is None and root == kept["root"] and digest_now == kept["listing"]:
                return all(
                    self._module_holds(name, then, kept, findings, None, own) for name, then in kept["outside"].items()
                )
            changed = self.changed_since(kept["root"], kept["listing"])
            self.behind = changed
            if changed is None or root != kept["root"]:
                compared = self.modules_of(kept)  # every module read
            else:
                # Only the files changed since (the modules' text is not parsed whole: 57
                # verdicts read a module a comment was added to, 2,000 modules each); where a
                # link to a folder appeared or changed (the listing does not walk through it),
                # every module behind it too.
                links = tuple(name for name in changed if name.endswith(os.sep))
                behind_links = self.modules_of(kept).items() if links else ()
                compared = {name: then for name, then in behind_links if name.startswith(links)}
                compared.update(self.read_of(kept, [*changed, itself] if itself else changed))
                compared.update(kept["outside"])
            if not all(self._module_holds(name, then, kept, findings, itself, own) for name, then in compared.items()):
                return False
            searches = kept["searches"]
            if searches:
                if changed is None:
                    return False
                for file in changed:
                    if file in compared:
                        continue  # read by the verdict, and its text is as it was (checked above)
                    data = self._text(file)
                    if data is not None and any(self.matches(s, data) for s in searches):
                        return False
            if root == kept["root"] and digest_now != kept["listing"]:
                # Files changed, or were racy then, since the listing the entry keeps, and
                # none of them matters: the entry may keep the listing of now (with the
                # modules refreshed), and a later run compares nothing (just after a
                # checkout every file is racy).
                self.relisted = digest_now
            return True
        except (KeyError, TypeError, ValueError, AttributeError, re.error):
            return False

    def _module_holds(
        self,
        name: str,
        then: Any,
        kept: Dict[str, Any],
        findings: Any,
        itself: Optional[str],
        own: Optional[str] = None,
    ) -> bool:
        """Whether module ``name``, kept as ``then`` (``[stamp, hash]``, and the hash of the text
        the verdict was made from where that differs; ``None``: absent),
        says to the verdict what it said (one changed in its bytes only goes to :attr:`refreshed`)."""
        if name == itself:
            self.refreshed[name] = [self._kept_stamp(name), self._hash(name)]
            self._keep_text(name)
            return True
        now = self._stat_list(name)
        if then is None or now is None:
            return then is None and now is None  # absent then and now; else created, or gone
        stamp, digest = then[0], then[1]
        # The text the verdict was made from, where it was brought up to date since (an edit
        # that changed nothing it says): the text of now is compared with that first, so an
        # edit undone, or a second edit after the first, is what it is to the verdict (compared
        # only with the text of the first edit, undoing it looked like a change).
        base = then[2] if len(then) > 2 and isinstance(then[2], str) else digest
        if stamp != now:  # (a racy stamp was kept as None: its hash is compared)
            current = self._hash(name)
            if current != digest:
                if current != base:
                    many = kept.get("many", ())
                    searches, bodies = kept["searches"], name != own
                    texts = [base, digest] if base != digest else [base]
                    # The same meaning first, which asks nothing of the other modules read (their
                    # text is then not parsed: a comment added to a module 57 verdicts read).
                    if not any(self._same_meaning(name, t, searches, findings, None, many, bodies) for t in texts):
                        read = self.modules_of(kept)
                        if not any(self._same_meaning(name, t, searches, findings, read, many, bodies) for t in texts):
                            return False
                self.refreshed[name] = _kept_as(self._kept_stamp(name), current, base)
                self._keep_text(name)
            elif self._kept_stamp(name) is not None:
                # The same bytes, racy then and settled now: kept by its stamp from now on.
                self.refreshed[name] = _kept_as(self._kept_stamp(name), digest, base)
        return True

    def _same_meaning(
        self,
        name: str,
        digest: str,
        searches: List[str],
        findings: Any,
        read: Optional[Dict[str, Any]] = None,
        many: Iterable[str] = (),
        bodies: bool = True,
    ) -> bool:
        """Whether module ``name``, whose text was ``digest`` when the verdict read it,
        says the same to the verdict now (see the module's docstring; ``read``: every
        module the verdict read; ``bodies``: whether a change of function bodies alone may
        leave it, not for the verdict's own file, whose copies they may hold)."""
        old = self._kept_text(digest)
        new = self._text(name)
        if old is None or new is None:
            return False
        # Findings naming the module hold its positions and quote its text: only what is
        # added after all of it leaves them as they were (or a body changed below them).
        said = json.dumps(findings)
        moved = os.path.basename(name) in said and not new.startswith(old)
        if not self._finds_the_same(searches, old, new) or not self._still_found(many, old, new):
            return False
        if not moved and self._same_code(digest, old, self._hash(name) or "", new):
            return True
        if read is None:
            return False
        # Names added that nothing the verdict read says: no answer it got can have changed.
        added = None if moved else self._added_names(digest, old, new)
        if added is not None:
            return not self._said(added, old, name, read)
        # Names removed (their statements bound them and did nothing else) that nothing the
        # verdict read says now, the module's text of now included: no answer it got used them.
        removed = None if moved else self._removed_names(digest, old, new)
        if removed is not None:
            return not self._said(removed, new, name, read)
        # Bodies of functions changed that nothing the verdict read says but themselves, in
        # which no search it made finds anything: it never looked inside them.
        changed = self._changed_bodies_of(digest, old, new) if bodies else None
        if changed is None:
            return False
        if moved:
            first = min(span[0] for _, span, _ in changed)
            if old.splitlines()[: first - 1] != new.splitlines()[: first - 1]:
                return False
            if any(line >= first for line in _module_lines_named(findings, said, name)):
                return False
        return not self._looked_into(changed, old, new, name, read, [*searches, *many])

    def _looked_into(
        self, changed: Any, old: bytes, new: bytes, module: str, read: Dict[str, Any], searches: List[str]
    ) -> bool:
        """Whether a verdict may have looked inside the functions whose bodies ``changed``
        (:func:`changed_bodies` of ``module``'s texts ``old`` and ``new``): a module it
        read (``read``) says one of their names outside them, or one of its ``searches``
        finds anything inside them, before or after (what it found there may have
        changed), or is not one pinfix makes."""
        then = [span for _, span, _ in changed]
        if self._said([n for n, _, _ in changed], _blanked(old, then), module, read):
            return True
        for search in searches:
            for text, spans in ((old, then), (new, [span for _, _, span in changed])):
                found = self.matched(search, text, lines=True)
                if found is None or any(_within(line + 1, spans) for line, _ in found):
                    return True
        return False

    def _said(self, names: List[str], old: bytes, module: str, read: Dict[str, Any]) -> bool:
        """Whether any of ``names`` is a dunder name or a word of ``old`` (the text
        ``module`` had) or of any other module in ``read``, as the searches read texts."""
        if any(n.startswith("__") and n.endswith("__") for n in names):
            return True
        said = [n.encode() for n in names]
        words = re.compile(rb"(?<![\w\x80-\xff])(?:" + b"|".join(re.escape(n) for n in said) + rb")(?![\w\x80-\xff])")

        def says(data: Optional[bytes]) -> bool:
            if data is None:
                return False
            text = self._read_as_searched(data)
            # The bytes first (a text without them cannot match): most texts are ruled out so.
            return any(n in text for n in said) and words.search(text) is not None

        if says(old):
            return True
        key = tuple(names)
        unsaid = self._unsaid(said)
        for path in read:
            if path == module:
                continue
            stamp = self._stat(path)
            if stamp is None or (path in unsaid and unsaid[path].speaks_for(path, stamp)):
                continue  # no file there now (a module looked for), or one the word list says is silent
            # Once a run for each module (the verdicts depending on an edited file share most).
            known = self._says.get((path, key))
            if known is None:
                known = self._says[(path, key)] = says(self._text(path))
            if known:
                return True
        return False

    def word_list(self, root: str) -> Any:
        """The :class:`~pinfix.semantic.deep.words.WordList` deep mode keeps beside ``root``'s
        word index in this directory (``None``: none kept)."""
        if root not in self._word_lists:
            from .semantic.deep.words import WordList

            self._word_lists[root] = WordList.kept(Path(root), WordKeeper(self.directory))
        return self._word_lists[root]

    def _unsaid(self, said: List[bytes]) -> Dict[str, Any]:
        """The files the kept word lists of the roots listed this run speak for, each with
        its list, where none of those files says any of ``said``: those need not be read
        (a file its list no longer speaks for, changed since, is; so is every file when one
        says any of them)."""
        key = (*said, "", *self._listings)  # the roots listed so far: one more may be listed later
        out = self._unsaid_by.get(key)
        if out is None:
            out = self._unsaid_by[key] = {}
            for root in self._listings:
                words = self.word_list(root)
                if words is None:
                    continue
                if any(words.may_say(n) for n in said):
                    out.clear()
                    break
                out.update(dict.fromkeys(words.stamps, words))
        return out

    def unmoved(self, path: str, digest: str, data: bytes, kept: Dict[str, Any], findings: Any) -> bool:
        """Whether the checked file ``path`` (resolved), whose text was ``digest`` when its
        verdict was made and is ``data`` now, says the same to it with every finding where
        it stood: the same tree, positions and docstrings included (an edit of comments,
        of blank space within lines or after the last statement); the same text on every
        line a finding spans or its evidence names; no comment that may suppress or
        direct changed; the same encoding and line ends; and each search the verdict made
        of the project's text finds the same lines of it (a comment saying ``f(`` inside
        another function would make that function a caller)."""
        old = self._earlier_text(path, digest, kept, data)
        if old is None:
            return False
        old_lines, new_lines = old.splitlines(True), data.splitlines(True)
        if not _directed_alike(old, old_lines, data, new_lines):
            return False
        for line in _lines_named(findings, path):
            if not (
                0 < line <= len(old_lines) and line <= len(new_lines) and old_lines[line - 1] == new_lines[line - 1]
            ):
                return False
        if not self._finds_the_same(kept["searches"], old, data, lines=True):
            return False
        if not self._still_found(kept.get("many", ()), old, data):
            return False
        return same_positions(old, data)

    def recommented(self, path: str, digest: str, data: bytes, kept: Dict[str, Any], findings: Any) -> bool:
        """Whether the checked file ``path`` (resolved), whose text was ``digest`` when its
        verdict was made and is ``data`` now, still gets that verdict when lines that hold
        no code were added, removed or changed (comments, blank lines) and the code below
        them moved: the same tree once positions and docstrings are left out; no line of
        code among those changed (nor a line that may suppress or direct), an encoding
        declaration where it was, the same line ends; each search the verdict
        made of the project's text finds in the lines kept what it found there, and
        nothing in the lines changed; and every line and number its findings name lies
        above the first line changed (below it they would have moved). A comment in a
        module much of the project imports then costs a comparison, not a deep check of
        the module against the whole project again."""
        old = self._earlier_text(path, digest, kept, data)
        if old is None or _line_ends(old) != _line_ends(data) or _line_ends(data)[2]:
            return False  # (lone carriage returns: the searches count lines by line feeds)
        old_lines, new_lines = old.splitlines(True), data.splitlines(True)
        moved = _uncoded_changes(old_lines, new_lines)
        if not moved or _declared(old_lines) != _declared(new_lines):
            return False
        if not self._same_code(digest, old, file_hash(data), data, moved):
            return False  # (code changed; a comment-like line inside a string changes the string)
        first = min(a for a, _, _, _ in moved) + 1
        try:
            if _named_below(findings, path, first):
                return False
            return self._finds_the_same_moved(kept["searches"], old, data, moved) and self._still_found(
                kept.get("many", ()), old, data
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return False

    def _finds_the_same_moved(self, searches: List[str], old: bytes, new: bytes, moved: List[Block]) -> bool:
        """Whether every search finds in ``new`` what it finds in ``old`` on the lines both
        keep, each on the line it was (as moved by the changes ``moved``: old lines
        ``[a, b)`` became new lines ``[c, d)``), and nothing in the lines changed (or
        inserted: :meth:`added`)."""
        for search in searches:
            found = []
            for text, side in ((old, 0), (new, 1)):
                matches = self.matched(search, text, True)
                if matches is None:
                    return False
                kept = []
                for line, what in matches:
                    shift = 0  # (a line of the new text as the old text numbered it)
                    for a, b, c, d in moved:
                        if line < (a, c)[side]:
                            break
                        if line < (b, d)[side]:
                            return False  # in a line changed
                        shift += side and (d - c) - (b - a)
                    kept.append((line - shift, what))
                found.append(kept)
            if found[0] != found[1]:
                return False
        return True

    def added(
        self, path: str, digest: str, data: bytes, kept: Dict[str, Any], findings: Any, bound: Iterable[str] = ()
    ) -> Optional[Tuple[Tuple[int, int], ...]]:
        """The lines (first, last) of each block of statements added to the checked file
        ``path`` (resolved), whose text was ``digest`` when its verdict was made and is
        ``data`` now, when the verdict holds for the rest of it and only what was added
        needs a check (``None``: check it all). ``data`` is the old text with whole lines
        inserted, holding statements that only bind names on import (:func:`added_names`)
        which neither its old text nor any module the verdict read says, nor the findings
        (``bound``: names a fix may import); no comment that may suppress or direct among
        them, nor other line ends; each search the verdict made of the project's text
        finds what it found, on the same lines of the old text (a call of a function of
        this file in what was added would make it a caller); and what the findings say
        of this file stands where it stood: every line they name, and (for lines added
        before the end) every number they say, lies before the first line added. Every
        answer the verdict got is then the same, every finding where it was: an early
        cut-off by name, as :meth:`_same_meaning` makes for the other modules a verdict
        read. (A verdict reporting an unused suppression is not kept so: code added may
        use it.)"""
        old = self._earlier_text(path, digest, kept, data)
        if old is None or _line_ends(old) != _line_ends(data) or _line_ends(data)[2]:
            return None  # (lone carriage returns: the searches count lines by line feeds)
        old_lines, new_lines = old.splitlines(True), data.splitlines(True)
        blocks = _inserted(old_lines, new_lines)
        if not blocks or new_lines[:2] != old_lines[:2]:
            return None  # nothing inserted, or an encoding declaration may move
        if any(DIRECTIVE_LINE.search(line) for _, _, c, d in blocks for line in new_lines[c:d]):
            return None
        added = self._added_names(digest, old, data)
        if added is None:
            return None
        first = blocks[0][2] + 1
        try:
            # (Lines added at the end leave every number the findings say as it was.)
            if _named_below(findings, path, first, words=first <= len(old_lines)):
                return None
            if any(f.get("code") == NOQA_CODE for f in findings):
                return None
            read = self.modules_of(kept)
            if not self._finds_the_same_moved(kept["searches"], old, data, blocks):
                return None
            if not self._still_found(kept.get("many", ()), old, data):
                return None
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        said = _words_of(findings) | set(bound)
        if said.intersection(added) or self._said(added, old, path, read):
            return None
        return tuple((c + 1, d) for _, _, c, d in blocks)

    def rewritten(
        self, path: str, digest: str, data: bytes, kept: Dict[str, Any], findings: Any
    ) -> Optional[Tuple[Tuple[Tuple[int, int], ...], List[Any]]]:
        """For the checked file ``path`` (resolved), whose text was ``digest`` when its
        verdict was made and is ``data`` now: the lines (first, last) of each module-level
        function whose body alone changed (:func:`changed_bodies`), and the findings the
        verdict keeps (those outside them), when only those functions need a check
        (``None``: check it all). That is when nothing the verdict read says their names
        but themselves (no other function of the file calls them), no search it made finds
        anything inside them, before or after, nor anything else than it found; no comment
        that may suppress or direct is inside them, the others and the line ends are as
        they were; no kept finding names them; and, where a function's length changed,
        every line and number the kept findings name lies above the first one changed.
        No answer the verdict got for the rest of the file looked inside them."""
        old = self._earlier_text(path, digest, kept, data)
        if old is None or _line_ends(old) != _line_ends(data) or _line_ends(data)[2]:
            return None
        changed = self._changed_bodies_of(digest, old, data)
        if not changed:
            return None
        old_lines, new_lines = old.splitlines(True), data.splitlines(True)

        def outside(lines: List[bytes], spans: List[Tuple[int, int]]) -> List[bytes]:
            return [line for n, line in enumerate(lines, 1) if not _within(n, spans)]

        def inside(lines: List[bytes], spans: List[Tuple[int, int]]) -> List[bytes]:
            return [line for n, line in enumerate(lines, 1) if _within(n, spans)]

        then, now = [s for _, s, _ in changed], [s for _, _, s in changed]
        if old_lines[:2] != new_lines[:2] or outside(old_lines, then) != outside(new_lines, now):
            return None  # (the text around them as it was, comments included)
        if any(DIRECTIVE_LINE.search(line) for line in (*inside(old_lines, then), *inside(new_lines, now))):
            return None
        first = min(a for a, _ in then)
        moved = any(b - a != d - c for (a, b), (c, d) in zip(then, now))
        kept_findings = []
        try:
            if _words_of(findings).intersection(n for n, _, _ in changed):
                return None
            if any(f.get("code") == NOQA_CODE for f in findings):
                return None
            for finding in findings:
                lines = _lines_named([finding], path)
                if all(_within(n, then) for n in range(int(finding["line"]), int(finding["end_line"]) + 1)):
                    continue  # inside a changed function: found again
                if any(_within(n, then) for n in lines):
                    return None  # names a line inside one
                kept_findings.append(finding)
            if moved and _named_below(kept_findings, path, first):
                return None
            searches = [*kept["searches"], *kept.get("many", ())]
            if self._looked_into(changed, old, data, path, self.modules_of(kept), searches):
                return None
            if not self._finds_the_same(kept["searches"], old, data):
                return None
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return tuple(now), kept_findings

    def _changed_bodies_of(self, digest: str, old: bytes, new: bytes) -> Any:
        """:func:`changed_bodies` of a module's text ``digest`` and its text now (once a run:
        the checked file's own verdict and those of the files depending on it ask the same)."""
        key = (digest, file_hash(new))
        if key not in self._changed_bodies:
            self._changed_bodies[key] = changed_bodies(old, new)
        return self._changed_bodies[key]

    def _added_names(self, digest: str, old: bytes, new: bytes) -> Optional[List[str]]:
        """:func:`added_names` of a module's text ``digest`` and its text now (once a run:
        the checked file's own verdict and those of the files depending on it ask the same)."""
        return self._added_between((digest, old), (file_hash(new), new))

    def _removed_names(self, digest: str, old: bytes, new: bytes) -> Optional[List[str]]:
        """The names a module's text ``digest`` bound in statements its text now no longer
        has, where that is all that changed: :func:`added_names` the other way round."""
        return self._added_between((file_hash(new), new), (digest, old))

    def _added_between(self, then: Tuple[str, bytes], now: Tuple[str, bytes]) -> Optional[List[str]]:
        """:func:`added_names` from the text ``then`` to ``now`` (each with its hash), once a run."""
        key = (then[0], now[0])
        if key not in self._added:
            self._added[key] = added_names(then[1], now[1])
        return self._added[key]

    def _earlier_text(self, path: str, digest: str, kept: Dict[str, Any], data: bytes) -> Optional[bytes]:
        """The checked file's text when its verdict was made (``None``: not kept, or
        ``data`` is that text)."""
        try:
            if path not in self.modules_of(kept):
                return None  # its text was not kept with the verdict
        except (KeyError, TypeError, ValueError):
            return None
        old = self._kept_text(digest)
        return None if old is None or old == data else old

    def _same_code(self, digest: str, old: bytes, now: str, new: bytes, blocks: Optional[List[Block]] = None) -> bool:
        """Whether the texts ``old`` (hash ``digest``) and ``new`` (hash ``now``) say the
        same to the analysis: proven from their lines where only comments and blank lines
        changed (:func:`same_code`: a comment in a module fifty verdicts read worked out the
        meaning of both texts, 28 ms each, for a first edit), else their meanings compared;
        once a pair. The proof reads ``old``'s strings where they are kept (nothing parsed),
        else ``new``'s tree; proven so, ``new`` has ``old``'s meaning where it is known and
        its own strings are known (``old``'s moved, or from its tree), kept beside it."""
        key = (digest, now)
        found = self._same.get(key)
        if found is None:
            self._read_kept_meaning(digest)
            spans = self._spans.get(digest)
            if blocks is None:
                blocks = _uncoded_changes(old.splitlines(True), new.splitlines(True))
            if blocks is not None and same_code(old, new, blocks, spans):
                found = True
                self._read_kept_meaning(now)
                if digest in self._meanings and now not in self._meanings:
                    self._meanings[now] = self._meanings[digest]
                if spans is None:
                    # Parsed for the proof: its strings, and the old text's (where they were before
                    # the lines moved), so the next comparison with either parses nothing.
                    tree = _tree_of(new)
                    spans = _spans_in(tree) if tree is not None else None
                    self._spans.setdefault(now, spans)
                    if spans is not None:
                        self._spans[digest] = moved_spans(spans, [(c, d, a, b) for a, b, c, d in blocks])
                        self._keep_meaning(digest)
                elif now not in self._spans:
                    self._spans[now] = moved_spans(spans, blocks)
                self._keep_meaning(now)
            else:
                then = self._meaning(digest, old)
                found = then is not None and then == self._meaning(now, new)
            self._same[key] = found
        return found

    def _read_kept_meaning(self, digest: str) -> None:
        """Take what is kept beside text ``digest`` (its meaning, its strings' lines) into
        :attr:`_meanings` and :attr:`_spans`, once; what is known already stays."""
        if digest in self._read_meanings:
            return
        self._read_meanings.add(digest)
        kept = self._kept_meaning(digest)
        if kept is not None:
            if kept[0] != UNKNOWN_MEANING:
                self._meanings.setdefault(digest, kept[0])
            if kept[1] is not None:
                self._spans.setdefault(digest, kept[1])

    def _meaning(self, digest: str, data: bytes) -> Optional[str]:
        """:func:`meaning` of ``data`` (whose hash is ``digest``): worked out once for each
        text, and kept beside a kept text (a comment in a module fifty verdicts read had
        the meaning of its text before, its text now and the text the dependents read made
        again by every run: a third of the one-file run), with its strings' lines."""
        self._read_kept_meaning(digest)
        if digest not in self._meanings:
            self._meanings[digest] = meaning(data)
            self._spans.setdefault(digest, string_spans(data))
            self._keep_meaning(digest)
        return self._meanings[digest]

    def _meaning_path(self, digest: str) -> Path:
        return self.directory / TEXTS_DIR / digest[:2] / (digest + MEANING_SUFFIX)

    def _kept_meaning(self, digest: str) -> Optional[Tuple[Optional[str], Optional[Spans]]]:
        """What is kept beside text ``digest`` by this Python: its meaning (``None``: the
        text does not parse; :data:`UNKNOWN_MEANING`: not worked out) and the lines of its
        strings that span lines (``None``: not kept, as by pinfix before 2026-12-08);
        ``None`` where nothing is kept (or it is not as pinfix writes it)."""
        if not _is_hash(digest):
            return None
        from .regular import read_regular

        try:
            said = read_regular(self._meaning_path(digest), follow_symlinks=False, limit=MAX_KEPT_MEANING)
            parts = said.decode("ascii").split()
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if len(parts) not in (3, 4) or parts[0] != digest or parts[1] != _PYTHON:
            return None  # (another Python's trees may dump otherwise)
        said_meaning: Optional[str] = parts[2]
        if said_meaning == "-":
            said_meaning = None
        elif said_meaning != UNKNOWN_MEANING and not _is_hash(parts[2]):
            return None
        if len(parts) == 3:
            return None if said_meaning == UNKNOWN_MEANING else (said_meaning, None)
        spans = _spans_of(parts[3])
        return None if spans is None or said_meaning is None else (said_meaning, spans)

    def _keep_meaning(self, digest: str) -> None:
        """Keep what is known of text ``digest`` beside its kept text, where that text is
        kept: its meaning (or that it is not worked out) and its strings' lines where they
        are known."""
        from .writing import atomic_write

        if not _is_hash(digest) or not self._text_path(digest).is_file():
            return
        spans = self._spans.get(digest)
        if digest in self._meanings:
            said = self._meanings[digest] or "-"
            if self._meanings[digest] is None:
                spans = None  # (a text that does not parse has no strings to say)
        elif spans is not None:
            said = UNKNOWN_MEANING
        else:
            return
        line = f"{digest} {_PYTHON} {said}"
        if spans is not None:
            line += " " + (",".join(f"{first}-{last}" for first, last in spans) or "=")
        target = self._meaning_path(digest)
        try:
            make_directory(target.parent.parent)  # (folders of a cache from elsewhere may be links)
            make_directory(target.parent)
            atomic_write(target.parent, target.name, (line + "\n").encode("ascii"))
        except OSError:
            pass  # a cache is only ever a shortcut

    def _text_path(self, digest: str) -> Path:
        return self.directory / TEXTS_DIR / digest[:2] / (digest + ".z")

    def _keep_text(self, name: str) -> None:
        """Keep module ``name``'s text as read now, by its hash (once)."""
        digest = self._hash(name)
        if digest is None or digest in self._kept_texts:
            return
        data = self._text(name)
        self._kept_texts[digest] = False
        if data is None or len(data) > MAX_KEPT_TEXT:
            return
        target = self._text_path(digest)
        if target.is_file():
            self._kept_texts[digest] = True
            return
        import zlib

        from .writing import atomic_write

        try:
            self.prepare()
            make_directory(target.parent.parent)
            make_directory(target.parent)
            atomic_write(target.parent, target.name, zlib.compress(data, 1))
            self._kept_texts[digest] = True
            self._texts_written.append(digest)
            if digest in self._meanings or self._spans.get(digest) is not None:
                self._keep_meaning(digest)
        except OSError:
            pass  # a cache is only ever a shortcut

    def _kept_text(self, digest: str) -> Optional[bytes]:
        """The text kept under ``digest``, if it is there and still hashes to it (read once
        a run: the verdicts of a module's dependents all ask for its earlier text)."""
        found = self._earlier.get(digest)
        if found is None:
            found = self._read_kept_text(digest)
            if found is not None:  # (one not kept yet may be kept later in the run)
                self._earlier[digest] = found
        return found

    def _read_kept_text(self, digest: str) -> Optional[bytes]:
        if not _is_hash(digest):
            return None
        import zlib

        from .regular import read_regular

        try:
            data = zlib.decompress(read_regular(self._text_path(digest), follow_symlinks=False, limit=MAX_KEPT_TEXT))
        except (OSError, zlib.error, ValueError, MemoryError):
            return None
        return data if file_hash(data) == digest else None

    def _prune_texts(self) -> None:
        """Keep the :data:`KEEP_TEXTS` newest texts, after a run wrote some: one that wrote
        few (a one-file run after an edit writes the file's new text) only when one of them
        starts with ``0``, one in 16, so the folder's 20,000 files are not listed each time
        (15 ms of a 0.3 s run) and grow past the limit by a few dozen at most."""
        written = self._texts_written
        if not written or (len(written) < PRUNE_AFTER and not any(d.startswith("0") for d in written)):
            return
        found = []
        if real_directory(self.directory / TEXTS_DIR) is not True:
            return  # a link: never pruned through
        try:
            for folder in os.scandir(self.directory / TEXTS_DIR):
                if folder.is_dir(follow_symlinks=False):
                    for entry in os.scandir(folder.path):
                        if entry.name.endswith(".z") and entry.is_file(follow_symlinks=False):
                            found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
            if len(found) > KEEP_TEXTS:
                for _, stale in sorted(found, reverse=True)[KEEP_TEXTS:]:
                    os.unlink(stale)
                    try:
                        os.unlink(stale[: -len(".z")] + MEANING_SUFFIX)
                    except FileNotFoundError:
                        pass
        except OSError:
            pass

    def _finds_the_same(self, searches: List[str], old: bytes, new: bytes, lines: bool = False) -> bool:
        """Whether every search finds the same in both texts (with ``lines``, on the same
        lines); a search pinfix does not make finds nothing the same."""
        for search in searches:
            then = self.matched(search, old, lines)
            if then is None or then != self.matched(search, new, lines):
                return False
        return True

    def _still_found(self, many: Iterable[str], old: bytes, new: bytes) -> bool:
        """Whether every search that found too many files to read them (``many``) finds
        something in ``new`` where it found something in ``old``: the files it finds are
        then no fewer for this one (more cannot change its answer); a search pinfix does
        not make, nothing."""
        for search in many:
            then = self.matched(search, old)
            if then is None or (then and not self.matched(search, new)):
                return False
        return True

    def _search(self, search: str) -> Optional[Tuple[bytes, str]]:
        """A recorded search (``word\\0pattern``, each its UTF-8 bytes one character a
        byte) as its word and its pattern (see :meth:`_compiled`); ``None`` where it is
        not one pinfix makes (never run: see :mod:`pinfix.semantic.deep.searches`)."""
        if not _made_by_pinfix(search):
            return None
        word, _, pattern = search.partition("\0")
        return word.encode("latin-1"), pattern

    def _compiled(self, pattern: str) -> "re.Pattern[bytes]":
        """A recorded search's pattern compiled (once a run)."""
        compiled = self._patterns.get(pattern)
        if compiled is None:
            compiled = self._patterns[pattern] = re.compile(pattern.encode("latin-1"))
        return compiled

    def matches(self, search: str, data: bytes) -> bool:
        """Whether a recorded search matches ``data`` (the word tested first, which rules
        most out, and the pattern compiled only where the word is: a one-file run after an
        edit tested 4,500 searches, 2,000 of them distinct, and compiling each took longer
        than the rest of the test), read as the project's searches read it
        (:func:`pinfix.prefilter.readable`); one pinfix does not make counts as matching
        (a change) in a text that holds its word."""
        data = self._read_as_searched(data)
        if not self._may_find(search, data):
            return False
        found = self._search(search)
        if found is None:
            return True
        return self._compiled(found[1]).search(data) is not None

    def _may_find(self, search: str, data: bytes) -> bool:
        """Whether ``search`` may find anything in ``data`` (as the searches read it):
        every match holds the search's word, so a text without it is ruled out before the
        search is checked to be one pinfix makes (most are ruled out so: a one-file run
        tested 2,000 distinct searches, and checking each took longer than the test). A
        text asked about many words is told apart by the names it says: each match of a
        search pinfix makes holds its word as a whole name (a comment in a module fifty
        verdicts read had 5,500 words looked for in two texts, 11 us each)."""
        word, sep, _ = search.partition("\0")
        if not (sep and word):
            return True
        try:
            raw = word.encode("latin-1")
        except UnicodeEncodeError:
            return True
        names = self._names_in(data)
        if names is None:
            return raw in data
        # A search of pinfix's making finds nothing in a text that does not say its word as a
        # name; any other counts as finding something where its bytes are (asked in that
        # order: whether pinfix makes a search is kept once known, 46 ns asked again, while
        # looking through a text for a word it lacks is 13 us each time for 40 KB).
        return raw in names or (not _made_by_pinfix(search) and raw in data)

    def _names_in(self, data: bytes) -> Optional[FrozenSet[bytes]]:
        """The whole names ``data`` says (runs of :data:`NAME_BYTE`), once it has been asked
        about :data:`NAMES_AFTER` words (``None`` before: a text asked about a few words is
        searched for them)."""
        known = self._names.get(id(data))
        if known is None or known[0] is not data:
            known = self._names[id(data)] = (data, 0, None)
        _, asked, names = known
        if names is None:
            if asked < NAMES_AFTER:
                self._names[id(data)] = (data, asked + 1, None)
                return None
            from .semantic.deep.searches import NAME_BYTE

            names = frozenset(re.findall(NAME_BYTE + b"+", data))
            self._names[id(data)] = (data, asked, names)
        return names

    def matched(self, search: str, data: bytes, lines: bool = False) -> Optional[List[Any]]:
        """What a recorded search finds in ``data``: each match's text (with ``lines``,
        with the line it starts on), in order; ``None`` where it is not a search pinfix
        makes (never run) and ``data`` holds its word. Once a run for each search and
        text: the verdicts of a module's dependents made many of the same searches (a
        comment in a module fifty verdicts read had 7,600 searches run, 1,900 distinct)."""
        return _for_text(self._matched, (search, id(data), lines), data, lambda: self._matched_in(search, data, lines))

    def _matched_in(self, search: str, data: bytes, lines: bool) -> Optional[List[Any]]:
        data = self._read_as_searched(data)
        if not self._may_find(search, data):
            return []  # every match holds the word: nothing to check or compile
        found = self._search(search)
        if found is None:
            return None
        compiled = self._compiled(found[1])
        if not lines:
            return [m.group() for m in compiled.finditer(data)]
        out: List[Any] = []
        line = done = 0
        for m in compiled.finditer(data):
            line += data.count(b"\n", done, m.start())
            done = m.start()
            out.append((line, m.group()))
        return out

    def _read_as_searched(self, data: bytes) -> bytes:
        """``data`` as the project's searches read it (:func:`pinfix.prefilter.readable`),
        worked out once for each text (a text is tested against every recorded search)."""
        from .prefilter import readable

        return _for_text(self._readable, id(data), data, lambda: readable(data) or data)

    def _matches_file(self, search: str, path: str) -> bool:
        data = self._text(path)
        return data is not None and self.matches(search, data)

    # --- the index: who read what ------------------------------------------------------------

    def index_files(self) -> List[str]:
        """The files whose verdicts the index holds: its first line (an index of the first
        format, one document, is read whole)."""
        if self._index_files is None:
            from .regular import read_regular

            try:
                data = read_regular(self.directory / INDEX_NAME, follow_symlinks=False, limit=1 << 28)
            except OSError:
                data = b""
            head, _, self._index_rest = data.partition(b"\n")
            try:
                first = json.loads(head) if head else {}
            except (ValueError, RecursionError):
                first = {}
            if not isinstance(first, dict):
                first = {}
            files = first.get("files")
            self._index_files = []
            if first.get("format") == DEEP_INDEX_FORMAT and isinstance(files, list):
                if all(type(f) is str for f in files):
                    self._index_files = files
            elif "format" not in first:  # the first format: each file's reads
                self._index_files = list(first)
                self._index_first = first
        return self._index_files

    def _numbered(self) -> Tuple[List[str], List[Any], List[Any]]:
        """The index as written: its files, the distinct reads, and each file's reads by
        number. What is not of pinfix's writing stays as it is: a number that is no place
        in the reads names none, and a file whose reads are no list reads nothing."""
        files = self.index_files()
        if self._index_numbered is None:
            reads: List[Any] = []
            of: List[Any] = []
            if self._index_first is not None:
                reads, of = _numbered_reads(self._index_first, files)
            else:
                try:
                    rest = json.loads(self._index_rest)
                except (ValueError, RecursionError):
                    rest = None
                if isinstance(rest, dict) and isinstance(rest.get("reads"), list) and isinstance(rest.get("of"), list):
                    reads, of = rest["reads"], rest["of"]
                if len(of) != len(files):
                    reads, of = [], [[] for _ in files]
                of = [numbers if isinstance(numbers, list) else [] for numbers in of]
            self._index_numbered = (files, reads, of)
            self._index_rest, self._index_first = b"", None
        return self._index_numbered

    def index(self) -> Dict[str, List[str]]:
        """Each file's reads (of its verdict, when written), as :meth:`record` found them."""
        files, reads, of = self._numbered()
        return {name: _reads_at(reads, numbers) for name, numbers in zip(files, of)}

    def dependents(self, paths: Iterable[str]) -> List[Tuple[str, str]]:
        """Files checked with ``--deep`` before (not among ``paths``) whose verdict
        read one of ``paths``: ``(dependent, the path it read)``, those whose verdict
        read the fewest modules first (the most closely tied, and the cheapest to
        recheck), then by path."""
        paths = list(paths)
        # A whole tree checked: every file with a verdict is among the paths (its indexed
        # name is a real path, so a path spelling it is that file), so none is a dependent,
        # and no path's real path need be found.
        cwd = os.getcwd()
        spelled = {os.path.normpath(os.path.join(cwd, p)) for p in paths}
        if all(other in spelled for other in self.index_files()):
            return []
        files, reads, of = self._numbered()
        folders: Dict[str, str] = {}
        given = {_real_path(p, folders): p for p in paths}
        #: The reads naming a given path, as the index writes them.
        read = {"f:" + name: p for name, p in given.items()}
        # The reads that make a verdict a dependent (by number), with the given path each
        # names: a read of one, or a search that finds something in one. Each distinct read is
        # tested once (each given file read the first time a search needs it); then most
        # verdicts are ruled out at once (one set test, not a loop over their reads).
        hits: Dict[int, str] = {}
        for number, what in enumerate(reads):
            if type(what) is not str:
                continue
            origin = read.get(what)
            if origin is None and what.startswith("g:"):
                try:
                    origin = next((given[p] for p in given if self._matches_file(what[2:], p)), None)
                except re.error:
                    origin = None
            if origin is not None:
                hits[number] = origin
        out = []
        for other, numbers in zip(files, of):
            try:
                apart = other in given or hits.keys().isdisjoint(numbers)
            except TypeError:  # an unhashable number: not of pinfix's writing
                apart = hits.keys().isdisjoint(n for n in numbers if type(n) is int)
            if apart or not os.path.isfile(other):
                continue
            origin = next(hits[n] for n in numbers if type(n) is int and n in hits)
            modules = sum(1 for what in _reads_at(reads, numbers) if what.startswith("f:"))
            out.append((modules, other, origin))
        return [(other, origin) for _, other, origin in sorted(out)]

    def save(self) -> None:
        """Write the index with this run's deep verdicts (atomically)."""
        self._prune_texts()
        if not self._index_updates:
            return
        files, reads, of = self._numbered()
        where = {name: place for place, name in enumerate(files)}

        def says(path: str, now: List[str]) -> bool:
            place = where.get(path)
            # (Each number a read: one that is none makes the file's reads differ.)
            return place is not None and len(of[place]) == len(now) and _reads_at(reads, of[place]) == now

        if all(says(path, now) for path, now in self._index_updates.items()):
            # Nothing new (a verdict kept, or found again reading what it read): the file
            # on disk says it already, and writing it is most of a one-file run's save.
            self._index_updates.clear()
            return
        from .writing import atomic_write

        merged: Dict[str, Any] = self.index()
        merged.update(self._index_updates)
        names = sorted(merged)
        distinct, numbered = _numbered_reads(merged, names)
        head = json.dumps({"format": DEEP_INDEX_FORMAT, "files": names})
        try:
            self.prepare()
            text = head + "\n" + json.dumps({"reads": distinct, "of": numbered})
            atomic_write(self.directory, INDEX_NAME, text.encode())
        except OSError:
            pass  # a cache is only ever a shortcut
        self._index_updates.clear()


class WordKeeper:
    """Keeps deep mode's word indexes in a settings directory of pinfix's cache, made
    and claimed before this is handed out: read back only as regular files (never
    through a link), written whole or not at all. It answers the engine's
    :class:`pinfix.semantic.deep.words.Keeper` (not derived from it: a run whose files
    the pre-filter rules out imports no analysis)."""

    def __init__(self, directory: Path):
        self.directory = directory

    def load(self, name: str) -> Optional[bytes]:
        from .regular import read_regular
        from .semantic.deep.words import MAX_KEPT_INDEX

        if real_directory(self.directory) is not True:
            return None
        try:
            return read_regular(self.directory / name, follow_symlinks=False, limit=MAX_KEPT_INDEX)
        except OSError:
            return None

    def keep(self, name: str, data: bytes) -> None:
        from .writing import atomic_write

        if real_directory(self.directory) is True:
            atomic_write(self.directory, name, data)


def _numbered_reads(by_file: Dict[str, Any], names: List[str]) -> Tuple[List[str], List[List[int]]]:
    """Each distinct read of the files ``names`` (``by_file``: each one's reads) once, and each
    file's reads by number: the index's second line. What is not a read (the index of the
    first format may not be of pinfix's writing) is left out; a file whose reads are no list
    reads nothing."""
    numbers: Dict[str, int] = {}
    of = [
        [numbers.setdefault(r, len(numbers)) for r in by_file[name] if type(r) is str]
        if isinstance(by_file[name], list)
        else []
        for name in names
    ]
    return list(numbers), of


def _reads_at(reads: List[Any], numbers: List[Any]) -> List[str]:
    """The reads an index's ``numbers`` (one file's) name: a number that is no place in
    ``reads``, or names no string, names none (the index may not be of pinfix's writing)."""
    count = len(reads)
    return [reads[i] for i in numbers if type(i) is int and 0 <= i < count and type(reads[i]) is str]


def _kept_as(stamp: Any, digest: str, base: str) -> List[Any]:
    """How an entry keeps a module read: its stamp and hash, and the hash of the text the
    verdict was made from where that differs."""
    return [stamp, digest, *([base] if base != digest else [])]


def _real_path(path: str, folders: Dict[str, str]) -> str:
    """``os.path.realpath(path)``, resolving each folder once (a tree's files share them)."""
    folder, name = os.path.split(os.path.abspath(path))
    joined = os.path.join(_real_folder(folder, folders), name)
    return os.path.realpath(joined) if os.path.islink(joined) else joined


def _real_folder(folder: str, folders: Dict[str, str]) -> str:
    """``os.path.realpath(folder)`` (absolute), from its parent's: one ``lstat`` a folder."""
    real = folders.get(folder)
    if real is None:
        parent, name = os.path.split(folder)
        if parent == folder or not name:
            real = folder
        else:
            joined = os.path.join(_real_folder(parent, folders), name)
            real = os.path.realpath(joined) if os.path.islink(joined) else joined
        folders[folder] = real
    return real


__all__ = ["DeepVerdicts", "WordKeeper", "file_hash", "meaning", "moved_spans", "same_code", "string_spans"]
