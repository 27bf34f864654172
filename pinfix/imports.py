"""Add ``from <module> import <name>`` where isort (ruff's ``I001``) would put it.

LibCST's ``AddImportsVisitor`` merges names at the end of a statement and puts
new statements after the last import, which breaks isort order in files such as
vLLM's. A file that passed ``ruff check --select I`` before the fix must still
pass after it, so this module follows ruff's default isort settings: sections
future / stdlib / third-party / first-party / local; within a section, plain
``import x`` statements before ``from x import y``, modules compared
case-insensitively in natural order; imported members ordered by type
(CONSTANTS, Classes, functions) then name.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import libcst as cst


FUTURE, STDLIB, THIRD_PARTY, FIRST_PARTY, LOCAL = range(5)


def code_of(node: cst.CSTNode) -> str:
    """The source text of ``node``."""
    return cst.Module([]).code_for_node(node)

if sys.version_info >= (3, 10):
    _STDLIB: FrozenSet[str] = frozenset(sys.stdlib_module_names)
else:  # pragma: no cover - 3.9 has no stdlib_module_names
    import sysconfig

    _stdlib_dir = Path(sysconfig.get_paths()["stdlib"])
    _STDLIB = frozenset(
        {p.stem for p in _stdlib_dir.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
        | set(sys.builtin_module_names)
    )


def _natural(text: str) -> Tuple[object, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def module_key(name: str) -> Tuple[object, ...]:
    return _natural(name.lower())


def member_key(name: str) -> Tuple[object, ...]:
    if name.isupper() and len(name) > 1:
        kind = 0  # CONSTANT
    elif name[:1].isupper():
        kind = 1  # Class
    else:
        kind = 2  # function or variable
    return (kind, _natural(name.lower()), name)


class Sections:
    """Which isort section a module belongs to, as ruff decides it by default."""

    def __init__(self, first_party: Callable[[str], bool]):
        self._first_party = first_party

    def of(self, module: str, relative: bool = False) -> int:
        if relative:
            return LOCAL
        top = module.split(".", 1)[0]
        if top == "__future__":
            return FUTURE
        if self._first_party(top):
            return FIRST_PARTY
        if top in _STDLIB:
            return STDLIB
        return THIRD_PARTY


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
    if isinstance(stmt, cst.SimpleStatementLine) and stmt.body and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    ):
        return stmt.body
    return None


def _statement_module(stmt: cst.SimpleStatementLine) -> Tuple[str, bool, int]:
    """(module name, relative?, kind) of an import line; kind 0 ``import x``, 1 ``from x import``."""
    first = stmt.body[0]
    if isinstance(first, cst.Import):
        return code_of(first.names[0].name), False, 0
    assert isinstance(first, cst.ImportFrom)
    name = code_of(first.module) if first.module is not None else ""
    return name, bool(first.relative), 1


def _statement_key(stmt: cst.SimpleStatementLine, sections: Sections) -> Tuple[int, int, Tuple[object, ...]]:
    name, relative, kind = _statement_module(stmt)
    return (sections.of(name, relative=relative), kind, module_key(name))


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


def _merge_name(node: cst.ImportFrom, name: str, line_length: int, line_prefix: str) -> cst.ImportFrom:
    aliases = list(node.names)  # type: ignore[arg-type]
    if any(code_of(a.name) == name and a.asname is None for a in aliases):
        return node
    index = len(aliases)
    for i, alias in enumerate(aliases):
        if member_key(code_of(alias.name)) > member_key(name):
            index = i
            break
    if node.lpar is not None and len(aliases) > 1:
        separator = aliases[0].comma
    elif node.lpar is not None:
        separator = cst.Comma(whitespace_after=node.lpar.whitespace_after)
    else:
        separator = aliases[0].comma if len(aliases) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if not isinstance(separator, cst.Comma):
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new = cst.ImportAlias(name=cst.Name(name))
    if index == len(aliases):
        new = new.with_changes(comma=aliases[-1].comma)
        aliases[-1] = aliases[-1].with_changes(comma=separator.deep_clone())
    else:
        new = new.with_changes(comma=separator.deep_clone())
    aliases.insert(index, new)
    merged = node.with_changes(names=aliases)
    if node.lpar is None and len(line_prefix + code_of(merged)) > line_length:
        merged = _wrapped(merged)
    return merged


def _wrapped(node: cst.ImportFrom) -> cst.ImportFrom:
    """The vertical, parenthesised layout isort and ruff use past the line length."""
    indent = cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), empty_lines=(), indent=True, last_line=cst.SimpleWhitespace("    ")
    )
    closing = cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), empty_lines=(), indent=True, last_line=cst.SimpleWhitespace("")
    )
    names = [a.with_changes(comma=cst.Comma(whitespace_after=indent)) for a in node.names]  # type: ignore[union-attr]
    names[-1] = names[-1].with_changes(comma=cst.Comma(whitespace_after=closing))
    return node.with_changes(
        names=names, lpar=cst.LeftParen(whitespace_after=indent), rpar=cst.RightParen()
    )


def add_from_import(
    module: cst.Module,
    from_module: str,
    name: str,
    *,
    sections: Sections,
    line_length: int = 88,
) -> cst.Module:
    """``module`` with ``name`` importable from ``from_module``, isort-placed."""
    found = find_from_import(module, from_module)
    if found is not None:
        i, j = found
        stmt = module.body[i]
        assert isinstance(stmt, cst.SimpleStatementLine)
        small = stmt.body[j]
        assert isinstance(small, cst.ImportFrom)
        prefix = "".join(code_of(s) + "; " for s in stmt.body[:j])
        merged = _merge_name(small, name, line_length, prefix)
        body = list(stmt.body)
        body[j] = merged
        return module.with_changes(body=[*module.body[:i], stmt.with_changes(body=body), *module.body[i + 1 :]])

    new = cst.parse_statement(f"from {from_module} import {name}\n")
    assert isinstance(new, cst.SimpleStatementLine)
    if len(code_of(new).rstrip("\n")) > line_length:
        new = new.with_changes(body=[_wrapped(new.body[0])])  # type: ignore[arg-type]
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
            want = 2 if isinstance(nxt, (cst.FunctionDef, cst.ClassDef)) else 1
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


def _binds(alias: cst.ImportAlias, statement: "cst.Import | cst.ImportFrom") -> str:
    """The local name an import alias binds (``import a.b`` binds ``a``)."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = code_of(alias.name)
    return name.split(".", 1)[0] if isinstance(statement, cst.Import) else name


def remove_import(module: cst.Module, local: str) -> cst.Module:
    """``module`` without the top-level import that binds ``local``: the name alone,
    or the whole statement when it binds nothing else. An import line with a
    comment of its own is kept as written (``# noqa: F401`` keeps a name for a
    reason); comment lines above a removed statement stay."""
    body = list(module.body)
    for i, stmt in enumerate(body):
        small_statements = _import_statement(stmt)
        if small_statements is None:
            continue
        assert isinstance(stmt, cst.SimpleStatementLine)
        if stmt.trailing_whitespace.comment is not None:
            continue
        kept: List[cst.BaseSmallStatement] = []
        changed = False
        for small in small_statements:
            assert isinstance(small, (cst.Import, cst.ImportFrom))
            if isinstance(small.names, cst.ImportStar):
                kept.append(small)
                continue
            names = [a for a in small.names if _binds(a, small) != local]
            if len(names) == len(small.names):
                kept.append(small)
                continue
            changed = True
            if any(c for a in small.names for c in _alias_comments(a)):
                return module  # comments among the names: leave the statement as written
            if names:
                names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                kept.append(small.with_changes(names=names))
        if not changed:
            continue
        if kept:
            if len(kept) != len(stmt.body):
                kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            body[i] = stmt.with_changes(body=kept)
            return module.with_changes(body=body)
        comments = [line for line in stmt.leading_lines if line.comment is not None]
        del body[i]
        if comments and i < len(body):
            nxt = body[i]
            body[i] = nxt.with_changes(leading_lines=[*stmt.leading_lines, *nxt.leading_lines])
        elif comments:
            return module  # nothing after it to carry the comment: keep the import
        return module.with_changes(body=body)
    return module


def _alias_comments(alias: cst.ImportAlias) -> List[str]:
    comma = alias.comma
    if isinstance(comma, cst.Comma):
        after = comma.whitespace_after
        if isinstance(after, cst.ParenthesizedWhitespace) and after.first_line.comment is not None:
            return [after.first_line.comment.value]
    return []
