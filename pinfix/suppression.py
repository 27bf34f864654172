"""Suppression comments: ``# noqa: PIN001`` (ruff/flake8 style) and Fixit's
``# lint-ignore`` / ``# lint-fixme`` directives, with the rule's name or code.

A directive counts when it sits on a line the finding spans, on any line of
the statement that holds it (its trailing comment included), or in the comment
lines directly above that statement: the places Fixit and ruff look.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional

import libcst as cst
from libcst.metadata import PositionProvider

from .patterns import RULE_NAMES
from .syntax import TreeIndex

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*[,\s]\s*[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_LINT = re.compile(r"#\s*lint-(?:ignore|fixme)\b(?:\s*:\s*(?P<names>[\w\s,]+))?")


def _suppresses(comment: str, code: str) -> bool:
    names = {code.lower(), RULE_NAMES.get(code, code).lower()}
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
            if name in names:
                return True
    return False


class Suppressions:
    def __init__(self, tree: TreeIndex, get_metadata: Callable[..., Any]):
        self.tree = tree
        self.md = get_metadata
        self._by_line: Optional[Dict[int, List[str]]] = None

    def _comments_by_line(self) -> Dict[int, List[str]]:
        if self._by_line is None:
            by_line: Dict[int, List[str]] = {}
            for comment in self.tree.comments():
                position = self.md(PositionProvider, comment, None)
                if position is not None:
                    by_line.setdefault(position.start.line, []).append(comment.value)
            self._by_line = by_line
        return self._by_line

    def _statement(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        current: Optional[cst.CSTNode] = node
        while current is not None and not isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            current = self.tree.parent(current)
        return current

    def suppressed(self, node: Optional[cst.CSTNode], code: str, line: int, end_line: int) -> bool:
        comments: List[str] = []
        by_line = self._comments_by_line()
        first, last = line, end_line
        statement = self._statement(node) if node is not None else None
        if statement is not None:
            position = self.md(PositionProvider, statement)
            # A compound statement's body is not "its line": use only the header.
            if isinstance(statement, cst.BaseCompoundStatement):
                last = max(last, line)
            else:
                first, last = min(first, position.start.line), max(last, position.end.line)
            comments += [ln.comment.value for ln in statement.leading_lines if ln.comment is not None]
            parent = self.tree.parent(statement)
            if isinstance(parent, cst.Module) and parent.body and parent.body[0] is statement:
                comments += [ln.comment.value for ln in parent.header if ln.comment is not None]
        for ln in range(first, last + 1):
            comments += by_line.get(ln, [])
        return any(_suppresses(c, code) for c in comments)
