"""Cheap views of a project module for the resolver: only the bodies it asks for.

LibCST metadata costs in proportion to the code it covers, and deep mode asks
few questions of each module (what ``make()`` returns, what ``__init__``
assigns to ``self.buf``). So the resolver parses a module as a *skeleton*
(every function body blanked to ``pass``, classes and module-level statements
kept) to find definitions, and a *slice* keeping just the bodies a question
needs. Blanking keeps every kept line and column where it was, so evidence
points at the real file. The stdlib ``ast`` (ten times cheaper than LibCST)
finds what to keep.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Set

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class ModuleText:
    """One file's bytes and stdlib syntax tree, read once."""

    def __init__(self, path: Path):
        self.data = path.read_bytes()
        self.tree = ast.parse(self.data)
        self.defs: Dict[int, ast.AST] = {
            node.lineno: node for node in ast.walk(self.tree) if isinstance(node, (*_FUNCTIONS, ast.ClassDef))
        }

    def assigning_methods(self, class_line: int, attr: str) -> FrozenSet[int]:
        """Lines of the methods of the class at ``class_line`` that assign
        ``<first parameter>.<attr>`` (anywhere in their bodies)."""
        cls = self.defs.get(class_line)
        if not isinstance(cls, ast.ClassDef):
            return frozenset()
        found: Set[int] = set()
        for method in cls.body:
            if not isinstance(method, _FUNCTIONS) or not method.args.args:
                continue
            me = method.args.args[0].arg
            for node in ast.walk(method):
                targets: List[ast.AST] = []
                if isinstance(node, ast.Assign):
                    targets = list(node.targets)
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                    targets = [node.target]
                if any(_assigns(t, me, attr) for t in targets):
                    found.add(method.lineno)
                    break
        return frozenset(found)

    def source(self, keep: Iterable[int]) -> bytes:
        """The module with every function body blanked except those of the
        functions defined at the lines in ``keep`` (and what they contain)."""
        try:
            self.data.decode("utf-8")
        except UnicodeDecodeError:
            return self.data  # ast columns are UTF-8 offsets: blank only what they describe
        keep = set(keep)
        lines = self.data.splitlines(keepends=True)
        # Functions around a kept one keep their bodies too.
        spans = [(d.lineno, d.end_lineno or d.lineno) for line, d in self.defs.items() if line in keep]
        around = {line for line, d in self.defs.items() if any(d.lineno < a and b <= (d.end_lineno or 0) for a, b in spans)}

        def visit(body: List[ast.stmt]) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    visit(node.body)
                elif isinstance(node, _FUNCTIONS) and node.lineno not in keep:
                    if node.lineno in around or any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(node)):
                        visit(node.body)  # a kept function inside, or names bound outside
                    else:
                        _blank(lines, node.body)

        visit(self.tree.body)
        return b"".join(lines)


def _assigns(target: ast.AST, me: str, attr: str) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_assigns(t, me, attr) for t in target.elts)
    if isinstance(target, ast.Starred):
        return _assigns(target.value, me, attr)
    return (
        isinstance(target, ast.Attribute)
        and target.attr == attr
        and isinstance(target.value, ast.Name)
        and target.value.id == me
    )


def _blank(lines: List[bytes], body: List[ast.stmt]) -> None:
    """``pass`` on the body's first line, its other lines emptied (endings kept)."""
    head = body[0]
    decorators = getattr(head, "decorator_list", [])
    first = decorators[0].lineno if decorators else head.lineno
    start = decorators[0].col_offset - 1 if decorators else head.col_offset
    last = body[-1].end_lineno or body[-1].lineno
    text = lines[first - 1]
    indent = text[:start]
    if indent.strip() or last > len(lines):
        return  # the body shares a line with its header: keep it
    ending = text[len(text.rstrip(b"\r\n")) :] or b"\n"
    lines[first - 1] = indent + b"pass" + ending
    for i in range(first, last):
        line = lines[i]
        lines[i] = line[len(line.rstrip(b"\r\n")) :]


def read(path: Path) -> Optional[ModuleText]:
    """``None`` when the file cannot be read or parsed (its answers stay unknown)."""
    try:
        return ModuleText(path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
