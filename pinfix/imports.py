"""Add ``from <module> import <name>`` where isort (ruff's ``I001``) would put it,
and remove the imports a fix left unused.

LibCST's ``AddImportsVisitor`` merges names at the end of a statement and puts
new statements after the last import, which breaks isort order in files such as
vLLM's. A file that passed ``ruff check --select I`` before the fix must still
pass after it, with the project's own isort settings (:class:`IsortSettings`,
read by :mod:`pinfix.style`): sections future / standard library / third party /
first party / local folder (``section-order``, ``no-sections``,
``known-first-party``, ``known-third-party``, ``known-local-folder``); within a
section, plain ``import x`` statements before ``from x import y`` (unless
``force-sort-within-sections``), modules compared case-insensitively in natural
order (``case-sensitive``); imported members ordered by type (CONSTANTS,
Classes, functions; ``order-by-type``) then name; ``from M import x as y`` kept
apart from ``from M import a`` unless ``combine-as-imports``; one name per
statement with ``force-single-line``; the layout of a merged statement as ruff
writes it (``split-on-trailing-comma``, ``force-wrap-aliases``).

Every entry point takes and returns a LibCST module; comments on import lines
stay where they are (a ``# noqa`` stays on its own name).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Callable, Collection, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from .semantic.scope import export_value
from .style import DEFAULT_SECTIONS, IsortSettings


def code_of(node: cst.CSTNode) -> str:
    """The source text of ``node``."""
    return cst.Module([]).code_for_node(node)


FUTURE, STDLIB, THIRD_PARTY, FIRST_PARTY, LOCAL = range(5)
_SECTION_NAMES = dict(zip(DEFAULT_SECTIONS, range(5)))

if sys.version_info >= (3, 10):
    _STDLIB: FrozenSet[str] = frozenset(sys.stdlib_module_names)
else:  # pragma: no cover - 3.9 has no stdlib_module_names
    import sysconfig

    _stdlib_dir = Path(sysconfig.get_paths()["stdlib"])
    _STDLIB = frozenset(
        {p.stem for p in _stdlib_dir.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
        | set(sys.builtin_module_names)
    )

_DEFAULT_ISORT = IsortSettings()


def _natural(text: str) -> Tuple[object, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def module_key(name: str, isort: IsortSettings = _DEFAULT_ISORT) -> Tuple[object, ...]:
    return _natural(name if isort.case_sensitive else name.lower())


def member_key(name: str, isort: IsortSettings = _DEFAULT_ISORT) -> Tuple[object, ...]:
    if not isort.order_by_type:
        kind = 0
    elif name.isupper() and len(name) > 1:
        kind = 0  # CONSTANT
    elif name[:1].isupper():
        kind = 1  # Class
    else:
        kind = 2  # function or variable
    return (kind, _natural(name if isort.case_sensitive else name.lower()), name)


def _matches(module: str, known: Collection[str]) -> bool:
    return any(module == k or module.startswith(k + ".") for k in known)


class Sections:
    """Which isort section a module belongs to, as ruff decides it with the project's settings."""

    def __init__(self, first_party: Callable[[str], bool], isort: IsortSettings = _DEFAULT_ISORT):
        self._first_party = first_party
        self.isort = isort
        order = [_SECTION_NAMES[s] for s in isort.section_order if s in _SECTION_NAMES]
        # A built-in section left out of section-order goes last (custom sections are not supported).
        self._rank = {section: i for i, section in enumerate(order + [s for s in range(5) if s not in order])}

    def kind(self, module: str, relative: bool = False) -> int:
        """FUTURE, STDLIB, THIRD_PARTY, FIRST_PARTY or LOCAL."""
        if relative:
            return LOCAL
        top = module.split(".", 1)[0]
        if top == "__future__":
            return FUTURE
        if _matches(module, self.isort.known_local_folder):
            return LOCAL
        if _matches(module, self.isort.known_first_party):
            return FIRST_PARTY
        if _matches(module, self.isort.known_third_party):
            return THIRD_PARTY
        if top in _STDLIB:
            return STDLIB
        if self._first_party(top):
            return FIRST_PARTY
        return THIRD_PARTY

    def of(self, module: str, relative: bool = False) -> int:
        """The rank of the module's section (one section for all with ``no-sections``)."""
        kind = self.kind(module, relative)
        if self.isort.no_sections:
            return 0 if kind == FUTURE else 1
        return self._rank[kind]


def first_party_detector(file_path: Optional[Path], root: Path, known: Sequence[str]) -> Callable[[str], bool]:
    """Ruff treats a top-level name as first-party if it is configured so, or
    found as a package or module under the project root (its ``src``). The
    package that holds the file itself is first-party too."""
    own: Optional[str] = None
    if file_path is not None:
        directory = file_path.resolve().parent
        while (directory / "__init__.py").exists():
            own = directory.name
            directory = directory.parent
    known_set = set(known)

    def is_first_party(top: str) -> bool:
        if top in known_set or top == own:
            return True
        for base in (root, root / "src"):
            if (base / top).is_dir() or (base / f"{top}.py").is_file():
                return True
        return False

    return is_first_party


def _import_statement(stmt: cst.BaseStatement) -> Optional[Sequence[cst.BaseSmallStatement]]:
    if (
        isinstance(stmt, cst.SimpleStatementLine)
        and stmt.body
        and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
    ):
        return stmt.body
    return None


def _alias_name(alias: cst.ImportAlias) -> str:
    return code_of(alias.name)


def _statement_module(stmt: cst.SimpleStatementLine) -> Tuple[str, bool, int, str]:
    """(module name, relative?, kind, first member) of an import line; kind 0 ``import x``, 1 ``from x import``."""
    first = stmt.body[0]
    if isinstance(first, cst.Import):
        return code_of(first.names[0].name), False, 0, ""
    assert isinstance(first, cst.ImportFrom)
    name = code_of(first.module) if first.module is not None else ""
    member = "*" if isinstance(first.names, cst.ImportStar) else _alias_name(first.names[0])
    return name, bool(first.relative), 1, member


def _statement_key(stmt: cst.SimpleStatementLine, sections: Sections) -> Tuple[object, ...]:
    name, relative, kind, member = _statement_module(stmt)
    isort = sections.isort
    members = member_key(member, isort) if member else ()
    if isort.force_sort_within_sections:
        return (sections.of(name, relative=relative), module_key(name, isort), kind, members)
    return (sections.of(name, relative=relative), kind, module_key(name, isort), members)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _from_imports(module: cst.Module, from_module: str) -> Iterator[Tuple[int, int, cst.ImportFrom]]:
    """Top-level ``from from_module import a, b`` statements (no star, not relative)."""
    for i, stmt in enumerate(module.body):
        for j, small in enumerate(_import_statement(stmt) or ()):
            if (
                isinstance(small, cst.ImportFrom)
                and not small.relative
                and small.module is not None
                and code_of(small.module) == from_module
                and not isinstance(small.names, cst.ImportStar)
            ):
                yield i, j, small


def find_from_import(module: cst.Module, from_module: str) -> Optional[Tuple[int, int]]:
    """(statement index, small-statement index) of the first such import."""
    for i, j, _ in _from_imports(module, from_module):
        return i, j
    return None


def imported_local_name(module: cst.Module, from_module: str, name: str) -> Optional[str]:
    """Local name under which ``name`` is already imported from ``from_module``."""
    for _, _, node in _from_imports(module, from_module):
        for alias in node.names:  # type: ignore[union-attr]
            if code_of(alias.name) == name:
                return alias.evaluated_alias or name
    return None


# --- Merging a name into an existing statement ---------------------------------------


def _has_comment(node: cst.CSTNode) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Comment(self, _node: cst.Comment) -> None:
            found.append(True)

    node.visit(_Find())
    return bool(found)


def _without_comment(ws: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    return ws


def _alias_text(alias: cst.ImportAlias) -> str:
    return code_of(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))


def _magic_trailing_comma(node: cst.ImportFrom) -> bool:
    names = node.names
    return node.lpar is not None and isinstance(names, Sequence) and isinstance(names[-1].comma, cst.Comma)


def _laid_out(
    from_module: str,
    aliases: Sequence[cst.ImportAlias],
    isort: IsortSettings,
    line_length: int,
    prefix: str,
    keep_vertical: bool,
) -> cst.ImportFrom:
    """The statement as ruff writes it: on one line when it fits, else one name
    per line in parentheses with a trailing comma."""
    names = [_alias_text(a) for a in aliases]
    flat = f"from {from_module} import {', '.join(names)}"
    wrap_aliases = (
        isort.force_wrap_aliases
        and isort.combine_as_imports
        and len(names) > 1
        and any(a.asname is not None for a in aliases)
    )
    vertical = wrap_aliases or len(prefix + flat) > line_length or (keep_vertical and isort.split_on_trailing_comma)
    text = f"from {from_module} import (\n" + "".join(f"    {n},\n" for n in names) + ")" if vertical else flat
    node = cst.parse_statement(text + "\n")
    assert isinstance(node, cst.SimpleStatementLine)
    return node.body[0]  # type: ignore[return-value]


def _merge_name(
    node: cst.ImportFrom, name: str, isort: IsortSettings, line_length: int, line_prefix: str
) -> cst.ImportFrom:
    aliases = list(node.names)  # type: ignore[arg-type]
    if any(code_of(a.name) == name and a.asname is None for a in aliases):
        return node
    index = len(aliases)
    for i, alias in enumerate(aliases):
        if member_key(code_of(alias.name), isort) > member_key(name, isort):
            index = i
            break
    new = cst.ImportAlias(name=cst.Name(name))
    if not _has_comment(node):
        # No comment to keep: write the statement as ruff would.
        merged_aliases = [*aliases[:index], new, *aliases[index:]]
        module_name = code_of(node.module) if node.module is not None else ""
        return _laid_out(module_name, merged_aliases, isort, line_length, line_prefix, _magic_trailing_comma(node))
    # Comments stay on the names they follow: the new name gets a separator
    # like its neighbours' (without their comments).
    if len(aliases) > 1:
        separator = aliases[0].comma
    elif node.lpar is not None:
        separator = cst.Comma(whitespace_after=node.lpar.whitespace_after)
    else:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if not isinstance(separator, cst.Comma):
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    separator = separator.with_changes(whitespace_after=_without_comment(separator.whitespace_after))
    if index == len(aliases):
        last = aliases[-1]
        last_comma = last.comma
        if isinstance(last_comma, cst.Comma):
            # `b,  # comment` then `)`: b keeps its comma and comment and gets the
            # separator's line break; the new name takes over the closing layout.
            closing = last_comma.whitespace_after
            kept = separator.whitespace_after
            if isinstance(closing, cst.ParenthesizedWhitespace) and isinstance(kept, cst.ParenthesizedWhitespace):
                kept = kept.with_changes(first_line=closing.first_line, empty_lines=closing.empty_lines)
            aliases[-1] = last.with_changes(comma=last_comma.with_changes(whitespace_after=kept))
            new = new.with_changes(comma=cst.Comma(whitespace_after=_without_comment(closing)))
        else:
            aliases[-1] = last.with_changes(comma=separator)
    else:
        new = new.with_changes(comma=separator)
    aliases.insert(index, new)
    return node.with_changes(names=aliases)


def add_from_import(
    module: cst.Module,
    from_module: str,
    name: str,
    *,
    sections: Sections,
    line_length: int = 88,
) -> cst.Module:
    """``module`` with ``name`` importable from ``from_module``, isort-placed."""
    isort = sections.isort
    if not isort.force_single_line:
        for i, j, small in _from_imports(module, from_module):
            aliases = list(small.names)  # type: ignore[arg-type]
            if not isort.combine_as_imports and any(a.asname is not None for a in aliases):
                continue  # ruff keeps `from M import x as y` a statement of its own
            stmt = module.body[i]
            assert isinstance(stmt, cst.SimpleStatementLine)
            prefix = "".join(code_of(s) + "; " for s in stmt.body[:j])
            body = list(stmt.body)
            body[j] = _merge_name(small, name, isort, line_length, prefix)
            new_stmt = stmt.with_changes(body=body)
            return module.with_changes(body=[*module.body[:i], new_stmt, *module.body[i + 1 :]])
    new = cst.parse_statement(f"from {from_module} import {name}\n")
    assert isinstance(new, cst.SimpleStatementLine)
    if len(code_of(new).rstrip("\n")) > line_length:
        laid = _laid_out(from_module, list(new.body[0].names), isort, line_length, "", False)  # type: ignore[union-attr]
        new = new.with_changes(body=[laid])
    return _insert_statement(module, new, sections)


def _blocks(body: Sequence[cst.BaseStatement], start: int) -> List[Tuple[int, int]]:
    """Top-level runs of import-only statement lines, as (first, end) indexes."""
    blocks: List[Tuple[int, int]] = []
    i = start
    while i < len(body):
        if _import_statement(body[i]) is not None:
            j = i
            while j < len(body) and _import_statement(body[j]) is not None:
                j += 1
            blocks.append((i, j))
            i = j
        else:
            i += 1
    return blocks


def _blank_lines(n: int) -> List[cst.EmptyLine]:
    return [cst.EmptyLine() for _ in range(n)]


def _strip_leading_blanks(lines: Sequence[cst.EmptyLine]) -> List[cst.EmptyLine]:
    out = list(lines)
    while out and out[0].comment is None:
        out.pop(0)
    return out


def _insert_statement(module: cst.Module, new: cst.SimpleStatementLine, sections: Sections) -> cst.Module:
    body = list(module.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    target = _statement_key(new, sections)
    blocks = _blocks(body, start)
    # Prefer the block that already imports the same top-level package, then
    # the first block that starts before any code.
    top = _statement_module(new)[0].split(".", 1)[0]
    chosen: Optional[Tuple[int, int]] = None
    for first, end in blocks:
        tops = {_statement_module(body[k])[0].split(".", 1)[0] for k in range(first, end)}  # type: ignore[arg-type]
        if top in tops:
            chosen = (first, end)
            break
    if chosen is None and blocks and blocks[0][0] == start:
        chosen = blocks[0]

    if chosen is None:
        # No import block: the new line starts one, after the docstring.
        nxt = body[start] if start < len(body) else None
        new = new.with_changes(leading_lines=_blank_lines(1) if start > 0 else [])
        if nxt is not None:
            after = sections.isort.lines_after_imports
            want = after if after >= 0 else (2 if isinstance(nxt, (cst.FunctionDef, cst.ClassDef)) else 1)
            kept = _strip_leading_blanks(nxt.leading_lines)
            body[start] = nxt.with_changes(leading_lines=_blank_lines(want) + kept)
        body.insert(start, new)
        return module.with_changes(body=body)

    first, end = chosen
    keys = [_statement_key(body[k], sections) for k in range(first, end)]  # type: ignore[arg-type]
    index = next((first + n for n, key in enumerate(keys) if key > target), end)
    prev_key = keys[index - first - 1] if index > first else None
    next_key = keys[index - first] if index < end else None

    if prev_key is None:
        # New first import of the block: take over the block's leading lines.
        nxt = body[index]
        new = new.with_changes(leading_lines=nxt.leading_lines)
        gap = 1 if next_key is not None and next_key[0] != target[0] else 0
        body[index] = nxt.with_changes(leading_lines=_blank_lines(gap))
    else:
        gap = 0 if prev_key[0] == target[0] else 1
        new = new.with_changes(leading_lines=_blank_lines(gap))
        if next_key is not None and next_key[0] == target[0] and gap:
            # We open the section: the blank line that opened it moves above us.
            nxt = body[index]
            body[index] = nxt.with_changes(leading_lines=_strip_leading_blanks(nxt.leading_lines))
    body.insert(index, new)
    return module.with_changes(body=body)


# --- Removing what a fix left unused -------------------------------------------------------


def used_names(code: str) -> Set[str]:
    """Names the module reads outside its import statements (also inside string
    annotations and ``__all__``, as pyflakes counts them)."""
    return names_read(ast.parse(code))


def names_read(tree: ast.AST) -> Set[str]:
    """Names read within ``tree`` (also inside string annotations and what is
    added to ``__all__``)."""
    used: Set[str] = set()

    def strings(node: Optional[ast.AST]) -> None:
        if node is None:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                try:
                    used.update(n.id for n in ast.walk(ast.parse(sub.value, mode="eval")) if isinstance(n, ast.Name))
                except (SyntaxError, ValueError, RecursionError):
                    pass

    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None:
                    strings(arg.annotation)
            strings(node.returns)
        elif isinstance(node, ast.AnnAssign):
            strings(node.annotation)
        exported = export_value(node)
        if exported is not None:
            strings(exported)
    return used


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def unused_scoped_imports(text: str, names: Collection[str]) -> List[Tuple[int, int, str]]:
    """Edits ``(start, end, new)`` (offsets into ``text``) that remove the imports of
    ``names`` that are not top-level statements of the module (in a function, a class,
    an ``if`` or ``TYPE_CHECKING`` block, joined by ``;`` under one) where their own
    scope no longer reads the name, as pyflakes would report them. Imports in a
    ``try`` (an optional dependency) and statements with a comment stay. A block left
    empty gets ``pass``."""
    wanted = set(names)
    if not wanted:
        return []
    tree = ast.parse(text)
    line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def offset(line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets
        start = line_starts[line - 1]
        end = line_starts[line] if line < len(line_starts) else len(text)
        return start + len(text[start:end].encode("utf-8")[:col].decode("utf-8", "replace"))

    reads: dict = {}

    def read_in(scope: ast.AST) -> Set[str]:
        got = reads.get(id(scope))
        if got is None:
            if isinstance(scope, ast.Module):
                got = used_names(text)
            else:  # its body: a function's signature and decorators are read in the scope around it
                body = scope.body if isinstance(scope.body, list) else [scope.body]  # type: ignore[attr-defined]
                got = set().union(*(names_read(stmt) for stmt in body))
            reads[id(scope)] = got
        return got

    edits: List[Tuple[int, int, str]] = []
    # (statement list, its owner, the scope it runs in, inside a try)
    stack: List[Tuple[Sequence[ast.stmt], ast.AST, ast.AST, bool]] = [(tree.body, tree, tree, False)]
    while stack:
        block, owner, scope, guarded = stack.pop()
        for index, stmt in enumerate(block):
            inner_scope = stmt if isinstance(stmt, _SCOPES) else scope
            inner_guard = guarded or isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar"
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(stmt, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    stack.append((sub, stmt, inner_scope, inner_guard))
            for part in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]:
                stack.append((part.body, part, inner_scope, inner_guard))
            if owner is tree or guarded or not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                continue  # top-level imports: the head's own clean-up
            bound = [
                a.asname or (a.name if isinstance(stmt, ast.ImportFrom) else a.name.split(".", 1)[0])
                for a in stmt.names
            ]
            gone = {b for b in bound if b in wanted and b not in read_in(scope)}
            if not gone or "*" in bound:
                continue
            edit = _removal(text, block, index, gone, offset)
            if edit is not None:
                edits.append(edit)
    return sorted(edits)


def _removal(
    text: str, block: Sequence[ast.stmt], index: int, gone: Set[str], offset: Callable[[int, int], int]
) -> Optional[Tuple[int, int, str]]:
    """The edit that drops the aliases binding ``gone`` from ``block[index]``."""
    stmt = block[index]
    start = offset(stmt.lineno, stmt.col_offset)
    end = offset(stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
    line_start = text.rfind("\n", 0, start) + 1
    line_end = len(text)
    for m in re.finditer(r"\r\n|\r|\n", text[end:]):
        line_end = end + m.end()
        break
    rest_of_line = text[end:line_end]
    if "#" in text[line_start:line_end] or "#" in text[start:end]:
        return None  # a comment (a noqa for F401, a "keep"): the statement stays whole
    try:
        small = cst.parse_statement(text[start:end] + "\n")
    except Exception:
        return None
    if not isinstance(small, cst.SimpleStatementLine) or len(small.body) != 1:
        return None
    kept = _RemoveImports(gone)._keep(small.body[0])
    if kept is not None:
        return (start, end, cst.Module(body=[]).code_for_node(kept.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)))
    before = text[line_start:start]
    after = rest_of_line.strip()
    if after.startswith(";"):
        # `import torch; x = 1`: up to the next statement on the line
        nxt = block[index + 1] if index + 1 < len(block) else None
        if nxt is None:
            return (start, end + (len(rest_of_line) - len(rest_of_line.lstrip())) + 1, "")
        return (start, offset(nxt.lineno, nxt.col_offset), "")
    if before.strip():
        # `x = 1; import torch`: from the end of the one before
        prev = block[index - 1]
        return (offset(prev.end_lineno or prev.lineno, prev.end_col_offset or 0), end, "")
    if len(block) == 1:
        return (start, end, "pass")
    stop = line_end
    if index == 0:
        # the first statement of its block: the blank lines after it go too
        while True:
            m = re.match(r"[ \t]*(\r\n|\r|\n)", text[stop:])
            if m is None or stop >= len(text):
                break
            stop += m.end()
    return (line_start, stop, "")


def _binding(alias: cst.ImportAlias, is_from: bool) -> str:
    if alias.asname is not None:
        return code_of(alias.asname.name)
    name = code_of(alias.name)
    return name if is_from else name.split(".", 1)[0]


class _RemoveImports(cst.CSTTransformer):
    """Drop the aliases that bind one of ``names``; a statement with a comment is kept whole,
    and the comment lines above a statement that goes move to the next statement."""

    def __init__(self, names: Collection[str]):
        super().__init__()
        self.names = set(names)

    def _keep(self, small: cst.BaseSmallStatement) -> Optional[cst.BaseSmallStatement]:
        if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
            is_from = isinstance(small, cst.ImportFrom)
            names = list(small.names)  # type: ignore[arg-type]
            aliases = [a for a in names if _binding(a, is_from) not in self.names]
            if not aliases:
                return None
            if len(aliases) < len(names):
                last_comma = names[-1].comma
                if isinstance(small, cst.ImportFrom) and small.lpar is not None:
                    aliases[-1] = aliases[-1].with_changes(comma=last_comma)
                else:
                    aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                return small.with_changes(names=aliases)
        return small

    def _body(self, body: Sequence[cst.BaseStatement]) -> Tuple[List[cst.BaseStatement], List[cst.EmptyLine]]:
        out: List[cst.BaseStatement] = []
        pending: List[cst.EmptyLine] = []
        for stmt in body:
            if pending:
                stmt = stmt.with_changes(leading_lines=[*pending, *stmt.leading_lines])
                pending = []
            if (
                isinstance(stmt, cst.SimpleStatementLine)
                and _import_statement(stmt) is not None
                and not _has_comment(stmt.with_changes(leading_lines=()))
            ):
                smalls = [kept for kept in (self._keep(s) for s in stmt.body) if kept is not None]
                if not smalls:
                    if any(line.comment is not None for line in stmt.leading_lines):
                        pending = list(stmt.leading_lines)
                    continue
                if smalls != list(stmt.body):
                    smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
                    stmt = stmt.with_changes(body=smalls)
            out.append(stmt)
        return out, pending

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        body, pending = self._body(updated.body)
        return updated.with_changes(body=body, footer=[*pending, *updated.footer])

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body, pending = self._body(updated.body)
        if not body:
            body = [cst.SimpleStatementLine(body=[cst.Pass()])]
        return updated.with_changes(body=body, footer=[*pending, *updated.footer])


def remove_unused_imports(module: cst.Module, names: Collection[str]) -> cst.Module:
    """``module`` without the import aliases that bind one of ``names`` when the
    module no longer uses that name (``import torch``, ``import torch.nn``,
    ``from torch import from_numpy``). An import line with a comment (``# noqa:
    F401 keep for side effects``) is never removed; comment lines above a
    removed import stay, above the next statement."""
    try:
        unused = set(names) - used_names(module.code)
    except (SyntaxError, ValueError, RecursionError):
        return module
    if not unused:
        return module
    return module.visit(_RemoveImports(unused))
