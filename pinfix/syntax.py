"""One fast pass over a LibCST tree: each node's parent, its place in the
text, and every call, in the order they are written.

LibCST's ``ParentNodeProvider`` and ``matchers.findall`` run its visitor
machinery, which rebuilds every node it passes; on vLLM's files that cost
three times the parse itself, and importing ``libcst.matchers`` alone costs
more than analysing a file. This walk reads the nodes' fields directly and
skips the whitespace and punctuation nodes, which hold no expression.

Also here: the lines of defs from the stdlib's parse of the same bytes, and
the small syntactic helpers every module shares (a call's arguments, a
node's code).
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Dict, Iterator, List, Optional, Tuple, Type

import libcst as cst

from .prefilter import STATEMENT_LISTS

#: Nodes that never hold an expression or a statement: never walked.
_LEAVES: Tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace,
    cst.EmptyLine,
    cst.TrailingWhitespace,
    cst.Newline,
    cst.Comment,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.Comma,
    cst.Dot,
    cst.Colon,
    cst.AssignEqual,
    cst.Semicolon,
    cst.BaseBinaryOp,
    cst.BaseBooleanOp,
    cst.BaseCompOp,
    cst.BaseUnaryOp,
    cst.BaseAugOp,
    cst.Asynchronous,
)

#: Node types whose fields are declared in another order than they are
#: written (``a if t else b`` declares ``test`` first); every other type's
#: fields follow the text. ``tests/test_syntax.py`` checks this against
#: LibCST's own visiting order.
_WRITTEN_ORDER: Dict[str, Tuple[str, ...]] = {
    "FunctionDef": ("decorators", "name", "type_parameters", "params", "returns", "body"),
    "ClassDef": ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    "IfExp": ("body", "test", "orelse"),
    "Arg": ("keyword", "value"),
    "ExceptHandler": ("type", "name", "body"),
    "ExceptStarHandler": ("type", "name", "body"),
    "Parameters": ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
    "MatchCase": ("pattern", "guard", "body"),
    "TypeAlias": ("name", "type_parameters", "value"),
}

_fields_of: Dict[type, Tuple[str, ...]] = {}


def _fields(kind: Type[cst.CSTNode]) -> Tuple[str, ...]:
    names = _fields_of.get(kind)
    if names is None:
        declared = tuple(f.name for f in dataclasses.fields(kind))
        written = tuple(n for n in _WRITTEN_ORDER.get(kind.__name__, ()) if n in declared)
        names = _fields_of[kind] = written + tuple(n for n in declared if n not in written)
    return names


_holds_code: Dict[type, bool] = {}


def _is_code(kind: type) -> bool:
    """Whether values of ``kind`` are nodes worth walking (cached per type:
    ``isinstance`` against LibCST's abstract bases is slow)."""
    found = _holds_code.get(kind)
    if found is None:
        found = _holds_code[kind] = issubclass(kind, cst.CSTNode) and not issubclass(kind, _LEAVES)
    return found


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node``'s children that can hold code, in the order they are written."""
    for name in _fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:
                if _is_code(type(item)):
                    yield item
        elif _is_code(kind):
            yield value


def walk(node: cst.CSTNode, prune: Tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
    """``node`` and what it holds, in the order written (whitespace left out);
    nodes of a ``prune`` type below ``node`` are yielded but not entered."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is node or not isinstance(current, prune):
            stack.extend(reversed(list(children(current))))


class TreeIndex:
    """Parents, written order, calls and defs of one module, from one walk."""

    def __init__(self, module: cst.Module):
        self.module = module
        self._parent: Dict[int, cst.CSTNode] = {}
        #: id -> the node's place in the written order
        self._order: Dict[int, int] = {}
        self.calls: List[cst.Call] = []
        #: Every ``def`` and ``class``, in the order written.
        self.definitions: List["cst.FunctionDef | cst.ClassDef"] = []
        parent, order, calls, definitions = self._parent, self._order, self.calls, self.definitions
        stack: List[Tuple[cst.CSTNode, Optional[cst.CSTNode]]] = [(module, None)]  # (node, its parent)
        while stack:
            node, up = stack.pop()
            order[id(node)] = len(order)
            if up is not None:
                parent[id(node)] = up
            kind = type(node)
            if kind is cst.Call:
                calls.append(node)  # type: ignore[arg-type]
            elif kind is cst.FunctionDef or kind is cst.ClassDef:
                definitions.append(node)  # type: ignore[arg-type]
            stack.extend((child, node) for child in reversed(list(children(node))))
        self._comments: Optional[List[cst.Comment]] = None

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parent.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent = self._parent.get(id(node))
        while parent is not None:
            yield parent
            parent = self._parent.get(id(parent))

    def start(self, node: cst.CSTNode) -> int:
        """``node``'s place in the written order."""
        return self._order[id(node)]

    def before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """Whether ``a`` starts before ``b`` in the text (an enclosing node
        starts before what it holds)."""
        return self._order[id(a)] < self._order[id(b)]

    def comments(self) -> List[cst.Comment]:
        """Every comment of the module (made only when a finding needs its
        suppressions read)."""
        if self._comments is None:
            self._comments = comments(self.module)
        return self._comments


def comments(node: cst.CSTNode) -> List[cst.Comment]:
    """The comments in ``node`` (in no particular order): a slower walk,
    through the whitespace too."""
    found: List[cst.Comment] = []
    stack: List[object] = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, cst.Comment):
            found.append(value)
        elif isinstance(value, cst.CSTNode):
            stack.extend(getattr(value, name) for name in _fields(type(value)))
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return found


def definition_lines(definitions: List["cst.FunctionDef | cst.ClassDef"], source: bytes) -> Dict[int, int]:
    """``id`` of each of ``definitions`` (a :class:`TreeIndex`'s, of a module
    parsed from ``source``) -> the line of its ``def``/``class``, read from the
    stdlib's parse of the same bytes: LibCST's positions would generate the
    code of the whole module. Empty when the two parses do not pair up."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: List[ast.AST] = []
    stack: List[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node)
        held = [st for name in STATEMENT_LISTS for st in getattr(node, name, ())]
        stack.extend(reversed(held))
    if len(found) != len(definitions) or any(a.name != d.name.value for a, d in zip(found, definitions)):  # type: ignore[attr-defined]
        return {}
    return {id(d): a.lineno for d, a in zip(definitions, found)}  # type: ignore[attr-defined]


def is_name(node: Optional[cst.CSTNode], *values: str) -> bool:
    """Whether ``node`` is a bare name, one of ``values`` if any are given."""
    return isinstance(node, cst.Name) and (not values or node.value in values)


def code_of(node: cst.CSTNode) -> str:
    """The source text of ``node``."""
    return cst.Module([]).code_for_node(node)


def short(node: cst.CSTNode, limit: int = 60) -> str:
    """The node's code on one line, cut to ``limit`` characters (for messages)."""
    text = " ".join(code_of(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def positional_args(call: cst.Call) -> List[cst.Arg]:
    """The call's positional arguments (``*args`` left out)."""
    return [a for a in call.args if a.keyword is None and not a.star]


def single_positional(call: cst.Call) -> Optional[cst.Arg]:
    """The one argument of ``f(x)`` (no keyword, no star, nothing else)."""
    if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0]
    return None


def keyword_arg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    """The call's ``name=`` argument."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a
    return None


def literal_bool(expr: cst.BaseExpression) -> Optional[bool]:
    """``True`` / ``False`` written out; ``None`` for anything else."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def string_value(expr: cst.BaseExpression) -> Optional[str]:
    """The value of a plain string literal."""
    if isinstance(expr, cst.SimpleString):
        try:
            value = expr.evaluated_value
        except Exception:  # a malformed literal is simply not a device string
            return None
        return value if isinstance(value, str) else None
    return None
