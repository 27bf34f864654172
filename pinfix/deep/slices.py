"""Cheap views of a project module for the resolver: only the bodies it asks for.

LibCST metadata costs in proportion to the code it covers, and deep mode asks
few questions of each module (what ``make()`` returns, what ``__init__``
assigns to ``self.buf``). So the resolver parses a module as a *skeleton*
(every def and class stubbed, module-level statements kept) to find top-level
definitions, and views keeping just the class (its statements and members'
headers) or the bodies a question needs. Stubbing keeps every line and column where it was, so evidence
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
        """The module with the functions defined at the lines in ``keep``
        (and what holds them), the classes there with their statements and
        members' headers, and module-level statements; the rest stubbed."""
        from ..prefilter import slice_source

        keep = set(keep)
        functions = [d for line, d in self.defs.items() if line in keep and not isinstance(d, ast.ClassDef)]
        classes = frozenset(line for line, d in self.defs.items() if line in keep and isinstance(d, ast.ClassDef))
        return slice_source(self.data, self.tree, [self.tree, *functions], classes=classes)


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


def read(path: Path) -> Optional[ModuleText]:
    """``None`` when the file cannot be read or parsed (its answers stay unknown)."""
    try:
        return ModuleText(path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
