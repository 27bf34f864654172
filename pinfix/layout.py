"""Lay out the statements a fix changed the way the project's formatter would.

A fix edits text: it renames a call, adds a keyword, or rewrites a call into
another. The edit knows nothing of line length, so a wrapped call may end up on
one 126-character line, or a line that fitted may no longer fit. This module
looks only at the text before and after a fix:

* the statements that changed are found with the stdlib :mod:`ast` (leaf
  statements, aligned between the two texts);
* a changed statement whose *old* text the formatter would leave alone (it was
  "formatter-stable") is laid out again the way ``ruff format`` (black style)
  lays it out: magic trailing commas, the right-hand split, one argument per
  line when the arguments do not fit on one indented line;
* any other changed statement keeps the edit's own layout, except that a line
  the fix pushed past ``line_length`` has its changed call wrapped.

The statement formatter is a small document printer in the style ruff's own
formatter uses (groups that print flat when they fit, soft line breaks,
conditional parentheses). It supports what fixes produce: names, literals,
attribute chains, calls with positional, keyword and star arguments, subscripts
and simple slices, unary and binary operators, comparisons, boolean operators,
lists and parenthesised tuples, in expression, ``return``, assignment and
augmented-assignment statements. For anything else (a comment inside the
statement, a backslash continuation, a string it would have to split or
re-quote, redundant parentheses, fluent method chains, ``fmt: off``...) it
declines, and the statement keeps the edit's layout.

:func:`relayout` is the entry point; it never raises for bad input and returns
``new`` unchanged whenever it cannot do better.
"""

from __future__ import annotations

import ast
import io
import itertools
import re
import tokenize
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .diffs import line_opcodes
from .style import FormatStyle

__all__ = ["FormatStyle", "relayout", "format_statement", "Unsupported"]


class Unsupported(Exception):
    """The statement has something the formatter here does not lay out."""


# --- The document ---------------------------------------------------------------
#
# A small document algebra, as in ruff's formatter (and Wadler's / prettier's):
# text, line breaks that print as nothing or a space when their group is flat,
# groups that are flat when everything up to the next possible line break fits,
# and elements that depend on whether a named group broke.

SOFT, SOFT_OR_SPACE, HARD = "soft", "soft_or_space", "hard"
FLAT, EXPANDED = "flat", "expanded"


class Doc:
    __slots__ = ()


@dataclass(eq=False)
class Line(Doc):
    kind: str


@dataclass(eq=False)
class Group(Doc):
    items: List[object]
    gid: Optional[int] = None
    expand: bool = False


@dataclass(eq=False)
class ConditionalGroup(Doc):
    """A group only while group ``gid`` is expanded; otherwise plain content."""

    items: List[object]
    gid: int
    expand: bool = False


@dataclass(eq=False)
class IfBreaks(Doc):
    items: List[object]
    gid: Optional[int] = None
    #: ``False``: print when the group is flat instead.
    when_broken: bool = True


@dataclass(eq=False)
class Indent(Doc):
    items: List[object]
    #: Indent only when this group is expanded (``None``: always).
    gid: Optional[int] = None


@dataclass(eq=False)
class FitsExpanded(Doc):
    """While group ``gid`` is measured flat, measure this content as expanded
    (its lines may overflow): a call's own brackets can split instead of the
    optional parentheses around the whole expression."""

    items: List[object]
    gid: int
    propagated: bool = False


@dataclass(eq=False)
class BestFitParenthesize(Doc):
    """Flat if it fits (its own brackets may split, see :class:`FitsExpanded`);
    else in added parentheses if every line then fits; else without them."""

    items: List[object]
    gid: int
    expand: bool = False


class ExpandParent(Doc):
    pass


EXPAND_PARENT = ExpandParent()


def _propagate(items: Sequence[object]) -> bool:
    """Mark groups that must expand (they hold a hard line or ``ExpandParent``);
    whether ``items`` hold one."""
    found = False
    for item in items:
        if isinstance(item, ExpandParent) or (isinstance(item, Line) and item.kind == HARD):
            found = True
        elif isinstance(item, (Group, ConditionalGroup, BestFitParenthesize)):
            if _propagate(item.items):
                item.expand = True
                found = True
        elif isinstance(item, FitsExpanded):
            # A boundary: an expanded call inside optional parentheses does not
            # force the parentheses.
            item.propagated = _propagate(item.items)
        elif isinstance(item, (IfBreaks, Indent)):
            found = _propagate(item.items) or found
    return found


class _Printer:
    def __init__(self, width: int, indent_unit: str, base_indent: str):
        self.width = width
        self.unit = indent_unit
        self.base = base_indent
        self.modes: Dict[int, str] = {}

    def print(self, doc: List[object]) -> str:
        _propagate(doc)
        out: List[str] = [self.base]
        col = len(self.base)
        # The work stack: (indent level, mode, item); the last is printed next.
        stack: List[Tuple[int, str, object]] = [(0, EXPANDED, item) for item in reversed(doc)]
        while stack:
            level, mode, item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                col += len(item)
            elif isinstance(item, Line):
                if mode == FLAT and item.kind != HARD:
                    if item.kind == SOFT_OR_SPACE:
                        out.append(" ")
                        col += 1
                else:
                    prefix = self.base + self.unit * level
                    out.append("\n" + prefix)
                    col = len(prefix)
            elif isinstance(item, Group):
                new_mode = self._group_mode(item.items, item.expand, level, mode, stack, col, item.gid)
                if item.gid is not None:
                    self.modes[item.gid] = new_mode
                stack.extend((level, new_mode, child) for child in reversed(item.items))
            elif isinstance(item, BestFitParenthesize):
                self.modes[item.gid] = FLAT
                parenthesized = ["(", Indent([Line(HARD), *item.items]), Line(HARD), ")"]
                if mode == FLAT or (not item.expand and self._fits(item.items, level, stack, col, item.gid)):
                    new_mode = FLAT
                else:
                    self.modes[item.gid] = EXPANDED
                    fits = self._fits(parenthesized, level, stack, col, None, all_lines=True)
                    new_mode = EXPANDED if fits else FLAT
                self.modes[item.gid] = new_mode
                chosen = parenthesized if new_mode == EXPANDED else item.items
                stack.extend((level, new_mode, child) for child in reversed(chosen))
            elif isinstance(item, ConditionalGroup):
                if self.modes.get(item.gid) == EXPANDED:
                    new_mode = self._group_mode(item.items, item.expand, level, mode, stack, col)
                else:
                    new_mode = mode
                stack.extend((level, new_mode, child) for child in reversed(item.items))
            elif isinstance(item, IfBreaks):
                group_mode = mode if item.gid is None else self.modes.get(item.gid, mode)
                if (group_mode == EXPANDED) == item.when_broken:
                    stack.extend((level, mode, child) for child in reversed(item.items))
            elif isinstance(item, Indent):
                deeper = item.gid is None or self.modes.get(item.gid) == EXPANDED
                stack.extend((level + deeper, mode, child) for child in reversed(item.items))
            elif isinstance(item, FitsExpanded):
                # Inside flat optional parentheses, the brackets are measured again.
                met = mode == FLAT and self.modes.get(item.gid) == FLAT
                stack.extend((level, EXPANDED if met else mode, child) for child in reversed(item.items))
            elif isinstance(item, ExpandParent):
                pass
            else:  # pragma: no cover - a bug in the builder
                raise TypeError(item)
        text = "".join(out)
        return "\n".join(line.rstrip() if not line.strip() else line for line in text.split("\n"))

    def _group_mode(self, items, expand, level, mode, stack, col, gid=None) -> str:  # type: ignore[no-untyped-def]
        if expand:
            return EXPANDED
        if mode == FLAT:
            return FLAT
        return FLAT if self._fits(items, level, stack, col, gid) else EXPANDED

    def _fits(
        self,
        items: Sequence[object],
        level: int,
        rest: List[Tuple[int, str, object]],
        col: int,
        gid: Optional[int],
        all_lines: bool = False,
    ) -> bool:
        """Whether ``items`` printed flat, and what follows up to the next line
        break, fit in the width. ``all_lines``: ``items`` printed expanded (every
        group broken), and every line up to the end must fit."""
        modes = dict(self.modes)
        if gid is not None:
            modes[gid] = FLAT
        remaining = self.width - col
        strict = all_lines
        # (level, mode, item, overflow): overflow (text may pass the width, lines go on)
        # inside FitsExpanded content.
        start_mode = EXPANDED if strict else FLAT
        todo: List[Tuple[int, str, object, bool]] = [(level, start_mode, it, False) for it in reversed(items)]
        rest_index = len(rest)
        while True:
            if not todo:
                if rest_index == 0:
                    return True
                rest_index -= 1
                lvl, md, it = rest[rest_index]
                todo.append((lvl, EXPANDED if strict else md, it, False))
            lvl, md, it, overflow = todo.pop()
            if isinstance(it, str):
                remaining -= len(it)
                if remaining < 0 and not overflow:
                    return False
            elif isinstance(it, Line):
                if md == FLAT and it.kind != HARD:
                    if it.kind == SOFT_OR_SPACE:
                        remaining -= 1
                        if remaining < 0 and not overflow:
                            return False
                elif overflow or strict:
                    remaining = self.width - len(self.base) - len(self.unit) * lvl
                else:
                    return True
            elif isinstance(it, (Group, ConditionalGroup, BestFitParenthesize)):
                if isinstance(it, ConditionalGroup) and modes.get(it.gid) != EXPANDED:
                    child_mode = md
                else:
                    child_mode = EXPANDED if it.expand else md
                    if not isinstance(it, ConditionalGroup) and it.gid is not None:
                        modes[it.gid] = child_mode
                todo.extend((lvl, child_mode, c, overflow) for c in reversed(it.items))
            elif isinstance(it, IfBreaks):
                group_mode = md if it.gid is None else modes.get(it.gid, md)
                if (group_mode == EXPANDED) == it.when_broken:
                    todo.extend((lvl, md, c, overflow) for c in reversed(it.items))
            elif isinstance(it, Indent):
                deeper = it.gid is None or modes.get(it.gid) == EXPANDED
                todo.extend((lvl + deeper, md, c, overflow) for c in reversed(it.items))
            elif isinstance(it, FitsExpanded):
                if md == FLAT and modes.get(it.gid) == FLAT:
                    todo.append((lvl, md, _END_ALL_LINES, overflow))
                    todo.extend((lvl, EXPANDED, c, True) for c in reversed(it.items))
                else:
                    if md == FLAT and it.propagated:
                        return False
                    todo.extend((lvl, md, c, overflow) for c in reversed(it.items))
            elif it is _END_ALL_LINES:
                if remaining < 0:
                    return False


_END_ALL_LINES = object()


# --- Building the document of a statement ------------------------------------------
#
# Node levels, as in ruff: at the top of a statement, inside an expression with no
# enclosing brackets, inside optional parentheses (named by their group), or
# inside real brackets.

TOP = "top"
EXPR = "expr"
PAREN = "paren"

_BINARY_PRIORITY = {
    # Lower binds looser; a chain of one priority is flattened into one group.
    ast.Or: 1,
    ast.And: 2,
    ast.BitOr: 4,
    ast.BitXor: 5,
    ast.BitAnd: 6,
    ast.LShift: 7,
    ast.RShift: 7,
    ast.Add: 8,
    ast.Sub: 8,
    ast.Mult: 9,
    ast.MatMult: 9,
    ast.Div: 9,
    ast.FloorDiv: 9,
    ast.Mod: 9,
}
_COMPARE_PRIORITY = 3
_OPERATOR_TEXT = {
    ast.Or: "or",
    ast.And: "and",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.UAdd: "+",
    ast.USub: "-",
    ast.Invert: "~",
    ast.Not: "not ",
}
#: ruff's precedence for "may the optional parentheses be left out": higher splits first.
_PRECEDENCE_ATTRIBUTE = 1
_OMIT_PRECEDENCE = {1: 20, 2: 19, 3: 18, 4: 14, 5: 13, 6: 12, 7: 11, 8: 10, 9: 9}
_NUMBER = re.compile(r"(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:e[+-]?\d[\d_]*)?j?|0x[0-9a-f_]+|0o[0-7_]+|0b[01_]+")


class _Source:
    """One statement's text, its tokens and its syntax tree (positions are the statement's own)."""

    def __init__(self, text: str):
        if not text.isascii() or "\t" in text or "\f" in text:
            raise Unsupported("non-ASCII text, tabs or form feeds")
        try:
            self.tree = ast.parse(text)
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (SyntaxError, tokenize.TokenError, ValueError, RecursionError) as e:
            raise Unsupported(f"does not parse: {e}") from None
        if len(self.tree.body) != 1:
            raise Unsupported("not one statement")
        self.lines = text.split("\n")
        self.tokens = [
            t
            for t in tokens
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
        ]
        for t in self.tokens:
            if t.type == tokenize.COMMENT:
                raise Unsupported("a comment")
            if t.type == tokenize.STRING and (t.start[0] != t.end[0]):
                raise Unsupported("a multi-line string")
            if t.type == tokenize.ERRORTOKEN:
                raise Unsupported("an error token")
            if getattr(tokenize, "FSTRING_START", None) == t.type:
                raise Unsupported("an f-string")
        # A backslash continuation: a line ends (outside a string) in "\\".
        for row in range(1, len(self.lines)):
            if self.lines[row - 1].rstrip().endswith("\\"):
                raise Unsupported("a backslash continuation")
        self.by_end = {t.end: i for i, t in enumerate(self.tokens)}
        self.by_start = {t.start: i for i, t in enumerate(self.tokens)}

    def segment(self, node: ast.AST) -> str:
        text = ast.get_source_segment("\n".join(self.lines), node)
        if text is None:  # pragma: no cover - every expression has a position
            raise Unsupported("no source position")
        return text

    def token_before_end(self, node: ast.AST) -> tokenize.TokenInfo:
        """The token before the node's last token (its closing bracket)."""
        index = self.by_end.get((node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]
        if index is None or index == 0:
            raise Unsupported("cannot find a closing bracket")
        return self.tokens[index - 1]

    def magic_comma(self, node: ast.AST) -> bool:
        return self.token_before_end(node).string == ","


def _count_brackets(source: _Source) -> None:
    """Parentheses the syntax tree does not explain (``(a + b) * c``, ``(x)``)
    would have to be kept or dropped as ruff does: not supported."""
    opening = {"(": 0, "[": 0, "{": 0}
    for t in source.tokens:
        if t.type == tokenize.OP and t.string in opening:
            opening[t.string] += 1
    expected = {"(": 0, "[": 0, "{": 0}
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Call):
            expected["("] += 1
        elif isinstance(node, ast.Tuple) and source.lines[node.lineno - 1][node.col_offset :].startswith("("):
            expected["("] += 1
        elif isinstance(node, (ast.Subscript, ast.List)):
            expected["["] += 1
    if opening != expected:
        raise Unsupported("parentheses or brackets the formatter would have to keep or remove")


class _Builder:
    def __init__(self, source: _Source, style: FormatStyle):
        self.src = source
        self.style = style
        self.ids = itertools.count(1)

    # -- helpers, after ruff's builders --------------------------------------------

    def parenthesized(self, left: str, content: List[object], right: str, level: object) -> List[object]:
        inner = Group([left, Indent([Line(SOFT), *content]), Line(SOFT), right])
        if isinstance(level, tuple):  # inside optional parentheses
            return [FitsExpanded([inner], level[1])]
        return [inner]

    def comma_separated(self, entries: List[List[object]], magic: bool) -> List[object]:
        items: List[object] = []
        for i, entry in enumerate(entries):
            if i:
                items += [",", Line(SOFT_OR_SPACE)]
            items += entry
        magic = magic and not self.style.skip_magic_trailing_comma
        if magic or len(entries) > 1:
            items.append(IfBreaks([","]))
        if magic:
            items.append(EXPAND_PARENT)
        return items

    @staticmethod
    def only_in_parentheses_group(items: List[object], level: object) -> List[object]:
        if isinstance(level, tuple):
            return [ConditionalGroup(items, level[1])]
        if level == PAREN:
            return [Group(items)]
        return items

    @staticmethod
    def only_in_parentheses_space(level: object) -> List[object]:
        if isinstance(level, tuple):
            return [IfBreaks([Line(SOFT_OR_SPACE)], level[1]), IfBreaks([" "], level[1], when_broken=False)]
        if level == PAREN:
            return [Line(SOFT_OR_SPACE)]
        return [" "]

    # -- expressions ----------------------------------------------------------------

    def expr(self, e: ast.expr, level: object) -> List[object]:
        if level == TOP:
            level = EXPR
        if isinstance(e, ast.Name):
            return [e.id]
        if isinstance(e, ast.Constant):
            return [self.constant(e)]
        if isinstance(e, ast.Attribute):
            if _fluent(e):
                raise Unsupported("a fluent method chain")
            if isinstance(e.value, ast.Constant):
                raise Unsupported("an attribute of a literal")
            return [*self.expr(e.value, level), "." + e.attr]
        if isinstance(e, (ast.Call, ast.Subscript)) and isinstance(
            e.func if isinstance(e, ast.Call) else e.value, (ast.Call, ast.Subscript)
        ):
            raise Unsupported("brackets right after brackets")
        if isinstance(e, ast.Call):
            if _fluent(e):
                raise Unsupported("a fluent method chain")
            return [*self.expr(e.func, level), *self.arguments(e, level)]
        if isinstance(e, ast.Subscript):
            if _fluent(e):
                raise Unsupported("a fluent method chain")
            return [*self.expr(e.value, level), *self.parenthesized("[", self.subscript(e), "]", level)]
        if isinstance(e, (ast.BinOp, ast.BoolOp, ast.Compare)):
            return self.binary(e, level)
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.operand, (ast.BinOp, ast.BoolOp, ast.Compare)) or (
                isinstance(e.op, ast.Not) and isinstance(e.operand, ast.UnaryOp)
            ):
                raise Unsupported("a unary operator on an operation")
            return [_OPERATOR_TEXT[type(e.op)], *self.expr(e.operand, level)]
        if isinstance(e, ast.List) or (isinstance(e, ast.Tuple) and self._parenthesized_tuple(e)):
            left, right = ("[", "]") if isinstance(e, ast.List) else ("(", ")")
            if not e.elts:
                return [left + right]
            if isinstance(e, ast.Tuple) and len(e.elts) == 1:
                raise Unsupported("a one-element tuple")
            entries = [self.expr(x, PAREN) for x in e.elts]
            # Unlike arguments, the items of a display are one group with its brackets.
            return self.parenthesized(left, self.comma_separated(entries, self.src.magic_comma(e)), right, level)
        if isinstance(e, ast.Starred):
            return ["*", *self.expr(e.value, level)]
        raise Unsupported(f"a {type(e).__name__} expression")

    def _parenthesized_tuple(self, e: ast.Tuple) -> bool:
        return self.src.lines[e.lineno - 1][e.col_offset :].startswith("(")

    def constant(self, e: ast.Constant) -> str:
        text = self.src.segment(e)
        if e.value is None or isinstance(e.value, bool) or e.value is Ellipsis:
            return text
        if isinstance(e.value, (int, float, complex)):
            if not _NUMBER.fullmatch(text):
                raise Unsupported("a number literal the formatter would normalise")
            return text
        if isinstance(e.value, (str, bytes)):
            return _normalized_string(text, self.style.quote_style)
        raise Unsupported("a literal")

    def arguments(self, call: ast.Call, level: object) -> List[object]:
        items: List[ast.AST] = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
        if not items:
            return ["()"]
        entries = []
        for item in items:
            if isinstance(item, ast.keyword):
                prefix = "**" if item.arg is None else item.arg + "="
                entries.append([prefix, *self.expr(item.value, PAREN)])
            else:
                if isinstance(item, ast.GeneratorExp):
                    raise Unsupported("a generator argument")
                entries.append(self.expr(item, PAREN))
        content = [Group(self.comma_separated(entries, self.src.magic_comma(call)))]
        return self.parenthesized("(", content, ")", level)

    def subscript(self, e: ast.Subscript) -> List[object]:
        index = e.slice
        if isinstance(index, ast.Tuple) and not self._parenthesized_tuple(index):
            if not index.elts:
                raise Unsupported("an empty tuple index")
            entries = [self.slice_or_expr(x) for x in index.elts]
            magic = self.src.magic_comma(e)
            if len(entries) == 1 and not magic:
                raise Unsupported("a one-element tuple index")
            return [Group(self.comma_separated(entries, magic))]
        return self.slice_or_expr(index)

    def slice_or_expr(self, e: ast.expr) -> List[object]:
        if not isinstance(e, ast.Slice):
            return self.expr(e, PAREN)
        parts = [e.lower, e.upper, e.step]
        text = self.src.segment(e)
        if e.step is None and text.count(":") > 1:
            raise Unsupported("an empty slice step")
        complex_ = any(p is not None and not _simple_slice_part(p) for p in parts)
        out: List[object] = []
        shown = parts if e.step is not None else parts[:2]
        for i, part in enumerate(shown):
            if i:
                before = complex_ and shown[i - 1] is not None
                after = complex_ and part is not None
                out.append((" " if before else "") + ":" + (" " if after else ""))
            if part is not None:
                out += self.expr(part, PAREN)
        return out

    def binary(self, e: ast.expr, level: object) -> List[object]:
        operands, operators = self._flatten(e, _priority(e))
        items: List[object] = []
        for i, operand in enumerate(operands):
            if i:
                items += [*self.only_in_parentheses_space(level), operators[i - 1], " "]
            if _priority(operand) is not None:
                items += self.only_in_parentheses_group(self.binary(operand, level), level)
            else:
                items += self.expr(operand, level)
        return self.only_in_parentheses_group(items, level)

    def _flatten(self, e: ast.expr, priority: Optional[int]) -> Tuple[List[ast.expr], List[str]]:
        """The operands and operators of a chain of one priority (left-associative)."""
        if isinstance(e, ast.BoolOp):
            return list(e.values), [_OPERATOR_TEXT[type(e.op)]] * (len(e.values) - 1)
        if isinstance(e, ast.Compare):
            return [e.left, *e.comparators], [_OPERATOR_TEXT[type(op)] for op in e.ops]
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, ast.Pow):
                raise Unsupported("a power operator")
            if _priority(e.right) == priority:
                raise Unsupported("a right-nested chain")
            if _priority(e.left) == priority:
                operands, operators = self._flatten(e.left, priority)
            else:
                operands, operators = [e.left], []
            return [*operands, e.right], [*operators, _OPERATOR_TEXT[type(e.op)]]
        return [e], []  # pragma: no cover

    # -- statements -------------------------------------------------------------------

    def statement(self, s: ast.stmt) -> List[object]:
        if isinstance(s, ast.Expr):
            if isinstance(s.value, (ast.BinOp, ast.BoolOp, ast.Compare, ast.UnaryOp)):
                return self.maybe_parenthesize(s.value, optional=True)
            return self.expr(s.value, TOP)
        if isinstance(s, ast.Return) and s.value is not None:
            return ["return ", *self.maybe_parenthesize(s.value)]
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and s.type_comment is None:
            return self.assignment(s.targets[0], " = ", s.value)
        if isinstance(s, ast.AugAssign):
            op = _OPERATOR_TEXT.get(type(s.op))
            if op is None or op in ("or", "and"):
                raise Unsupported("an augmented assignment operator")
            return self.assignment(s.target, f" {op}= ", s.value)
        raise Unsupported(f"a {type(s).__name__} statement")

    def best_fit(self, e: ast.expr) -> bool:
        """Whether ruff lays the value out by "best fit" (every name, attribute,
        call and subscript; a literal longer than 5 characters)."""
        if isinstance(e, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.UnaryOp)):
            return True
        if isinstance(e, ast.Constant) and not (e.value is None or isinstance(e.value, bool)):
            return len(self.src.segment(e)) > 5
        return False

    def assignment(self, target: ast.expr, operator: str, value: ast.expr) -> List[object]:
        if not isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
            raise Unsupported("an assignment target")
        doc = [*self.expr(target, TOP), operator, *self.maybe_parenthesize(value)]
        if any(isinstance(n, (ast.Subscript, ast.Call)) for n in ast.walk(target)):
            # ruff then chooses between splitting the target and parenthesising
            # the value (best fit): only the flat form is laid out here.
            return [_MustFit(_strip_must_fit(doc))]
        return doc

    def maybe_parenthesize(self, e: ast.expr, optional: bool = False) -> List[object]:
        if isinstance(e, (ast.BinOp, ast.BoolOp, ast.Compare)):
            gid = next(self.ids)
            if _can_omit_optional_parentheses(e):
                level: object = (EXPR, gid)
            else:
                level = PAREN
            content = self.expr(e, level)
            return [Group([IfBreaks(["("]), Indent([Line(SOFT), *content], gid), Line(SOFT), IfBreaks([")"])], gid)]
        if (
            isinstance(e, (ast.List, ast.Tuple))
            and e.elts
            and (isinstance(e, ast.List) or self._parenthesized_tuple(e))
        ):
            return self.expr(e, TOP)
        if self.best_fit(e):
            # ruff's "best fit": flat when the text up to the call's (or
            # subscript's) own bracket fits; else parenthesised when every line
            # then fits; else without parentheses.
            gid = next(self.ids)
            return [BestFitParenthesize(self.expr(e, (EXPR, gid)), gid)]
        return self.expr(e, TOP)


@dataclass(eq=False)
class _MustFit(Doc):
    items: List[object]


def _priority(e: ast.expr) -> Optional[int]:
    if isinstance(e, ast.BinOp):
        return _BINARY_PRIORITY.get(type(e.op), 0)
    if isinstance(e, ast.BoolOp):
        return _BINARY_PRIORITY[type(e.op)]
    if isinstance(e, ast.Compare):
        return _COMPARE_PRIORITY
    return None


def _simple_slice_part(e: ast.expr) -> bool:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        e = e.operand
    return isinstance(e, (ast.Name, ast.Constant))


def _normalized_string(text: str, quote_style: str = "double") -> str:
    """The literal as ruff writes it with ``quote-style = quote_style`` (``double``,
    ``single``, or ``preserve``: the source's quotes); unsupported if that needs
    more than a quote swap."""
    prefix_end = 0
    while prefix_end < len(text) and text[prefix_end] not in "'\"":
        prefix_end += 1
    prefix, body = text[:prefix_end], text[prefix_end:]
    if prefix not in ("", "b", "r", "rb", "br") or body[:3] in ('"""', "'''"):
        raise Unsupported("a string prefix or quoting the formatter would normalise")
    if quote_style == "preserve":
        return text
    preferred, other = ("'", '"') if quote_style == "single" else ('"', "'")
    quote, inner = body[0], body[1:-1]
    if "\\" in inner and quote == other:
        raise Unsupported("an escaped string in the quotes the formatter does not prefer")
    if quote == other and preferred not in inner:
        return prefix + preferred + inner + preferred
    if quote == preferred and preferred in inner.replace(
        "\\" + preferred, ""
    ):  # pragma: no cover - cannot occur unescaped
        raise Unsupported("quotes")
    if quote == preferred and "\\" + preferred in inner and other not in inner:
        raise Unsupported("a string the formatter would re-quote")
    return text


def _chain_count(e: ast.expr) -> int:
    """ruff's test for a fluent chain: attribute values that are calls or subscripts."""
    count = 0
    while True:
        if isinstance(e, ast.Attribute):
            if isinstance(e.value, (ast.Call, ast.Subscript)):
                count += 1
            e = e.value
        elif isinstance(e, ast.Call):
            e = e.func
        elif isinstance(e, ast.Subscript):
            e = e.value
        else:
            return count


def _fluent(e: ast.expr) -> bool:
    return _chain_count(e) >= 2


def _can_omit_optional_parentheses(e: ast.expr) -> bool:
    """Whether an operation may split in the brackets of its first or last operand
    instead of in added parentheses (ruff's ``can_omit_optional_parentheses``)."""
    state = {"max": 0, "count": 0, "any": False, "first": None, "last": None}

    def update(precedence: int, count: int = 1) -> None:
        if precedence > state["max"]:
            state["max"], state["count"] = precedence, count
        elif precedence == state["max"]:
            state["count"] += count

    def visit(node: ast.expr, top: bool = False) -> None:
        if not top:
            state["last"] = node
        sub(node)
        if not top and state["first"] is None:
            state["first"] = node

    def sub(node: ast.expr) -> None:
        if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp)):
            state["any"] = True
            return
        if isinstance(node, ast.Tuple) and node.elts and False:  # pragma: no cover
            return
        if isinstance(node, ast.BoolOp):
            update(_OMIT_PRECEDENCE[_BINARY_PRIORITY[type(node.op)]], len(node.values) - 1)
            for v in node.values:
                visit(v)
            return
        if isinstance(node, ast.BinOp):
            update(_OMIT_PRECEDENCE[_BINARY_PRIORITY[type(node.op)]])
            visit(node.left)
            visit(node.right)
            return
        if isinstance(node, ast.Compare):
            update(_OMIT_PRECEDENCE[_COMPARE_PRIORITY], len(node.ops))
            visit(node.left)
            for c in node.comparators:
                visit(c)
            return
        if isinstance(node, ast.Call):
            state["any"] = True
            visit(node.func)
            state["last"] = node
            return
        if isinstance(node, ast.Subscript):
            state["any"] = True
            visit(node.value)
            state["last"] = node
            return
        if isinstance(node, ast.Attribute):
            visit(node.value)
            if isinstance(node.value, (ast.Call, ast.Subscript, ast.List)) or (
                isinstance(node.value, ast.Tuple) and node.value.elts
            ):
                update(_PRECEDENCE_ATTRIBUTE)
            state["last"] = node
            return
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Invert):
                update(_OMIT_PRECEDENCE[9] + 1)
            if state["first"] is None:
                state["first"] = "token"
            visit(node.operand)
            return
        if isinstance(node, ast.Starred):
            if state["first"] is None:
                state["first"] = "token"
            visit(node.value)
            return
        # names, literals: terminal

    sub(e)
    if not state["any"] or state["count"] > 1:
        return False
    if state["max"] in (0, _PRECEDENCE_ATTRIBUTE):
        return True

    def bracketed(node: object) -> bool:
        if isinstance(node, ast.Call):
            return bool(node.args or node.keywords)
        if isinstance(node, (ast.List, ast.Tuple)):
            return bool(node.elts)
        return False

    return bracketed(state["last"]) or bracketed(state["first"])


def format_statement(text: str, style: FormatStyle = FormatStyle()) -> str:
    """``text`` (one whole statement, with its indentation, no trailing newline)
    laid out as ``ruff format`` would; :class:`Unsupported` if it cannot tell."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    if not text.strip() or "\n" in text and any(line and not line.startswith(indent) for line in text.split("\n")):
        raise Unsupported("not one indented statement")
    source = _Source(_dedent(text, indent))
    _count_brackets(source)
    doc = _Builder(source, style).statement(source.tree.body[0])
    printer = _Printer(style.line_length, " " * style.indent_width, indent)
    flat_checks = _must_fit(doc)
    out = printer.print(_strip_must_fit(doc))
    for _ in flat_checks:
        if "\n" in out or len(out) > style.line_length:
            raise Unsupported("a value ruff would parenthesise by best fit")
    return out


def _dedent(text: str, indent: str) -> str:
    return "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in text.split("\n"))


def _must_fit(items: Sequence[object]) -> List[object]:
    return [i for i in items if isinstance(i, _MustFit)]


def _strip_must_fit(items: Sequence[object]) -> List[object]:
    out: List[object] = []
    for i in items:
        out.extend(i.items if isinstance(i, _MustFit) else [i])
    return out


# --- Applying it to a fix ---------------------------------------------------------


@dataclass(frozen=True)
class _Stmt:
    first: int  # 0-based first line
    last: int  # 0-based last line (inclusive)
    text: str
    is_import: bool = False


def _leaf_statements(text: str) -> Optional[List[_Stmt]]:
    """Every simple statement that has its lines to itself, in written order."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.split("\n")
    out: List[_Stmt] = []

    def walk(body: Sequence[ast.stmt]) -> None:
        for i, s in enumerate(body):
            inner = [getattr(s, f, None) for f in ("body", "orelse", "finalbody", "handlers", "cases")]
            if any(isinstance(b, list) and b for b in inner):
                for b in inner:
                    if isinstance(b, list):
                        walk(
                            [x for x in b if isinstance(x, ast.stmt)]
                            + [
                                y
                                for h in b
                                if isinstance(h, (ast.ExceptHandler,)) or type(h).__name__ == "match_case"
                                for y in h.body
                            ]
                        )
                continue
            first, last = s.lineno - 1, (s.end_lineno or s.lineno) - 1
            head = lines[first][: s.col_offset]
            tail = lines[last][s.end_col_offset :]
            if head.strip() or tail.strip():
                continue  # shares a line (``a; b``) or has a trailing comment
            out.append(
                _Stmt(first, last, "\n".join(lines[first : last + 1]), isinstance(s, (ast.Import, ast.ImportFrom)))
            )

    walk(tree.body)
    out.sort(key=lambda st: st.first)
    return out


def relayout(old: str, new: str, line_length: int = 88, **style: object) -> str:
    """``new`` (the module after a fix) with each statement the fix changed laid
    out as the project's formatter would lay it out (see the module docstring).

    ``style``: ``indent_width`` (4), ``skip_magic_trailing_comma`` (False) and
    ``quote_style`` (``double``), as in :class:`FormatStyle`. Never raises for bad input; returns ``new``
    unchanged when there is nothing it can improve.
    """
    fmt = FormatStyle(line_length=line_length, **style)  # type: ignore[arg-type]
    if old == new or "\r" in old or "fmt: off" in old or "fmt:off" in old or "yapf: disable" in old:
        return new
    before, after = _leaf_statements(old), _leaf_statements(new)
    if before is None or after is None:
        return new
    replacements: List[Tuple[_Stmt, str]] = []
    for tag, i1, i2, j1, j2 in line_opcodes([s.text for s in before], [s.text for s in after]):
        if tag != "replace":
            continue
        olds, news = before[i1:i2], after[j1:j2]
        if len(olds) != len(news):
            # The fix adds and removes imports next to the statements it changes.
            olds, news = [o for o in olds if not o.is_import], [n for n in news if not n.is_import]
            if len(olds) != len(news):
                continue
        for o, n in zip(olds, news):
            laid = _relayout_statement(o.text, n.text, fmt)
            if laid is not None and laid != n.text:
                replacements.append((n, laid))
    if not replacements:
        return new
    lines = new.split("\n")
    out: List[str] = []  # built in one pass: a slice assignment per statement moved every line after it
    at = 0
    for stmt, laid in sorted(replacements, key=lambda r: r[0].first):
        out += lines[at : stmt.first]
        out.append(laid)
        at = stmt.last + 1
    out += lines[at:]
    result = "\n".join(out)
    try:
        if ast.dump(ast.parse(result)) != ast.dump(ast.parse(new)):
            return new  # never change what the code means
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return new
    return result


def _relayout_statement(old: str, new: str, fmt: FormatStyle) -> Optional[str]:
    try:
        stable = format_statement(old, fmt) == old
    except Unsupported:
        stable = False
    if stable:
        try:
            return format_statement(new, fmt)
        except Unsupported:
            pass
    return _wrap_long_lines(old, new, fmt)


def _wrap_long_lines(old: str, new: str, fmt: FormatStyle) -> Optional[str]:
    """Keep the edit's layout, but wrap a call on a line the fix pushed past the
    line length: the changed call's arguments go on their own indented line(s)."""
    old_lines = set(old.split("\n"))
    text = new
    for _ in range(8):
        lines = text.split("\n")
        bad = [i for i, line in enumerate(lines) if len(line) > fmt.line_length and line not in old_lines]
        if not bad:
            return text
        wrapped = _wrap_line(text, bad[0], fmt)
        if wrapped is None:
            return text if text != new else None
        text = wrapped
    return text


def _wrap_line(text: str, row: int, fmt: FormatStyle) -> Optional[str]:
    """Lay out, as the formatter would, the outermost call that starts and ends on
    line ``row`` of the statement ``text``, with what surrounds it kept as is."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    try:
        tree = ast.parse(_dedent(text, indent))
    except SyntaxError:
        return None
    lines = text.split("\n")
    shift = len(indent)
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and n.lineno - 1 == row and n.end_lineno == n.lineno and (n.args or n.keywords)
    ]
    if not calls:
        return None
    call = min(calls, key=lambda n: n.col_offset)
    line = lines[row]
    start, end = call.col_offset + (shift if row == 0 or line.startswith(indent) else 0), call.end_col_offset
    end += shift if row == 0 or line.startswith(indent) else 0
    prefix, call_text, suffix = line[:start], line[start:end], line[end:]
    line_indent = line[: len(line) - len(line.lstrip(" "))]
    try:
        source = _Source(call_text)
        _count_brackets(source)
        expr = source.tree.body[0]
        if not isinstance(expr, ast.Expr):
            return None
        builder = _Builder(source, fmt)
        doc = [prefix[len(line_indent) :], *builder.expr(expr.value, TOP), suffix]
    except Unsupported:
        return None
    printer = _Printer(fmt.line_length, " " * fmt.indent_width, line_indent)
    laid = printer.print(doc)
    if laid == line:
        return None
    lines[row : row + 1] = laid.split("\n")
    return "\n".join(lines)
