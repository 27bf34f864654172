"""Function bodies read when first used: the memory of a module deep mode only looks up.

Deep mode loads every module a question leads to (1,597 for a cold run over vLLM
0.34.0) and keeps them for the run, but evaluates few of their functions: 84 % of
those modules' syntax nodes lie in function bodies, and 82 % of those in bodies no
question ever evaluates. :meth:`.scope.ModuleInfo.defer_bodies` drops each such body
once the module is indexed and puts an :class:`UnreadBody` in its place, which parses
the def's own lines of the module's text again the first time anything looks into it
(iterates, indexes, measures, compares), and from then on is the list it stood for.
"""

from __future__ import annotations

import ast
from typing import Any, Callable, List, Optional

from .source import SourceText

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)

#: What a parse of the def's lines is wrapped in when the def is indented (its lines
#: keep their columns: every node's offsets are those of the first parse; the line
#: above the def's is this one).
_INDENTED = "if 1:\n"


class UnreadBody(list):  # type: ignore[type-arg]
    """A def's body, parsed from the module's text when first used (see the module's docs)."""

    __slots__ = ("_node", "_src", "_column")

    def __init__(self, node: ast.AST, src: SourceText, column: int):
        super().__init__()
        self._node: Optional[ast.AST] = node
        self._src = src
        #: Where its first statement starts on its line (a new parse is checked against it).
        self._column = column

    @property
    def read(self) -> bool:
        """Whether the body was parsed (is what it stands for)."""
        return self._node is None

    def peek(self) -> List[ast.stmt]:
        """The statements, parsed for a look and not kept (the body stays unread)."""
        if self._node is None:
            return list(self)
        return reparsed_body(self._node, self._src, self._column)

    def fill(self) -> None:
        node = self._node
        if node is None:
            return
        body = reparsed_body(node, self._src, self._column)
        self._node = None
        list.extend(self, body)
        node.body = body  # type: ignore[attr-defined]  # later readers get a plain list


def _reading(name: str) -> Callable[..., Any]:
    method = getattr(list, name)

    def call(self: UnreadBody, *args: Any) -> Any:
        self.fill()
        return method(self, *args)

    call.__name__ = name
    return call


for _name in (
    "__iter__",
    "__reversed__",
    "__len__",
    "__getitem__",
    "__setitem__",
    "__delitem__",
    "__contains__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__add__",
    "__iadd__",
    "__mul__",
    "__rmul__",
    "__imul__",
    "__repr__",
    "__reduce_ex__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "index",
    "count",
    "copy",
    "sort",
    "reverse",
    "clear",
):
    setattr(UnreadBody, _name, _reading(_name))


def _radd(self: UnreadBody, other: Any) -> Any:
    # ``[x] + body``: filled first, then the list's own concatenation reads it.
    self.fill()
    return NotImplemented


UnreadBody.__radd__ = _radd  # type: ignore[attr-defined]
UnreadBody.__hash__ = None  # type: ignore[assignment]


def reparsed_body(node: Any, src: SourceText, column: int) -> List[ast.stmt]:
    """The body of the def ``node`` of ``src`` (its first statement at ``column``),
    parsed again from the def's lines (the whole text where that fails), with the
    first parse's positions."""
    starts = src.line_starts
    text = src.text
    begin = starts[node.lineno - 1]
    end = starts[node.end_lineno] if node.end_lineno < len(starts) else len(text)
    segment = text[begin:end]
    found: Optional[Any] = None
    head = _INDENTED if node.col_offset else ""
    above = max(0, node.lineno - (2 if head else 1))  # the lines above the def's own
    # Empty lines first, so that the parse numbers the lines as the module does: no walk
    # of the new nodes to shift them (a third of the time). Only as many as the def has
    # characters: a def far down a module is shifted instead, so that reading each def
    # of a long module costs its own length, not the module's.
    pad = above if above <= len(segment) else 0
    try:
        tree = ast.parse("\n" * pad + head + segment)
        found = tree.body[0].body[0] if head else tree.body[0]  # type: ignore[attr-defined]
    except (SyntaxError, ValueError, IndexError, AttributeError):
        found = None
    if found is not None and type(found) is type(node) and found.name == node.name:
        body: List[ast.stmt] = found.body
        if above != pad:
            for stmt in body:
                ast.increment_lineno(stmt, above - pad)
        if body and body[0].col_offset == column and body[-1].end_lineno == node.end_lineno:
            return body
    # A def its own lines do not parse alone as it did in the module (a line end the
    # segment cuts): the whole text, the def found where it stands.
    for candidate in ast.walk(ast.parse(text)):
        if isinstance(candidate, _DEFS) and candidate.lineno == node.lineno and candidate.col_offset == node.col_offset:
            return candidate.body
    raise ValueError(f"the body of `{node.name}` at line {node.lineno} is not where it was read")


__all__ = ["UnreadBody", "reparsed_body"]
