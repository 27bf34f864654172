"""Suppression comments: ``# noqa: PIN001`` (ruff/flake8 style) and Fixit's
``# lint-ignore`` / ``# lint-fixme`` directives, with the rule's name or code.

A directive counts when it sits on a line the finding spans, on any line of
the statement that holds it (its trailing comment included), or in the comment
lines directly above that statement: the places Fixit and ruff look.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Any, Dict, List, Optional

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*[,\s]\s*[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_LINT = re.compile(r"#\s*lint-(?:ignore|fixme)\b(?:\s*:\s*(?P<names>[\w\s,]+))?")
_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef, ast.AsyncFor, ast.AsyncWith, ast.AsyncFunctionDef)


class Suppressions:
    """Suppression comments of a module read from its text and stdlib tree (no LibCST).

    A directive counts on a line the finding spans, on any line of the simple
    statement that holds it (for a compound statement, its header), or in the
    comment lines directly above that statement."""

    def __init__(self, src: Any, tree: Any, names: Optional[Dict[str, str]] = None):
        self.src = src
        self.tree = tree
        self.names = names
        self._by_line: Optional[Dict[Any, Dict[int, List[str]]]] = None

    def _comments(self, first: int, last: int) -> Dict[int, List[str]]:
        """The comments on lines ``first..last``, found by tokenizing those lines
        only (a whole long file's tokens would cost more than its analysis)."""
        key = (first, last)
        if self._by_line is None:
            self._by_line = {}
        found = self._by_line.get(key)  # type: ignore[call-overload]
        if found is not None:
            return found  # type: ignore[no-any-return]
        chunk = "".join(self.src.line_text(n) + "\n" for n in range(first, last + 1))
        by_line: Dict[int, List[str]] = {}
        try:
            for tok in tokenize.generate_tokens(io.StringIO(chunk).readline):
                if tok.type == tokenize.COMMENT:
                    by_line.setdefault(first + tok.start[0] - 1, []).append(tok.string)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            for number in range(first, last + 1):
                line = self.src.line_text(number)
                if "#" in line:
                    by_line.setdefault(number, []).append(line[line.index("#") :])
        self._by_line[key] = by_line  # type: ignore[index]
        return by_line

    def _statement(self, node: Any) -> Any:
        if node is None or not hasattr(node, "lineno"):
            return None
        key = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        found = None
        body: List[Any] = list(self.tree.body)
        while body:
            nxt: List[Any] = []
            for stmt in body:
                if (stmt.lineno, stmt.col_offset) <= key[:2] and (stmt.end_lineno, stmt.end_col_offset) >= key[2:]:
                    found = stmt
                    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                        for child in getattr(stmt, name, ()) or ():
                            if isinstance(child, (ast.stmt, ast.excepthandler)) or type(child).__name__ == "match_case":
                                nxt.extend(getattr(child, "body", [child]) if not isinstance(child, ast.stmt) else [child])
                    break
            body = nxt
        return found

    def suppressed(self, node: Any, code: str, line: int, end_line: int) -> bool:
        names = self.names or {}
        first, last = line, end_line
        comments: List[str] = []
        statement = self._statement(node)
        if statement is not None:
            compound = isinstance(statement, _COMPOUND) or type(statement).__name__ in ("Match", "TryStar")
            if compound:
                last = max(last, line)
                first = min(first, statement.lineno)
            else:
                first, last = min(first, statement.lineno), max(last, statement.end_lineno)
            above = statement.lineno - 1
            while above >= 1:
                text = self.src.line_text(above).strip()
                if text and not text.startswith("#"):
                    break
                if text:
                    comments.append(text)
                above -= 1
        by_line = self._comments(first, last)
        for ln in range(first, last + 1):
            comments += by_line.get(ln, [])
        return any(suppresses(c, code, names) for c in comments)


def suppresses(comment: str, code: str, names: Dict[str, str]) -> bool:
    wanted = {code.lower(), names.get(code, code).lower()}
    match = _NOQA.search(comment)
    if match:
        codes = match.group("codes")
        if codes is None or code.lower() in {c.lower() for c in re.split(r"[,\s]+", codes) if c}:
            return True
    match = _LINT.search(comment)
    if match:
        listed = match.group("names")
        if listed is None or not listed.strip():
            return True
        for name in (n.strip().lower() for n in listed.split(",")):
            if name.endswith("rule"):
                name = name[:-4]
            if name in wanted:
                return True
    return False
