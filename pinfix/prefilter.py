"""Sound shortcuts: tell, without LibCST, that a file cannot hold a finding.

Two stages, each a superset of what :mod:`pinfix.analysis` reports, both
derived from the tables in :mod:`pinfix.patterns`:

1. bytes (:func:`may_contain_finding`): the text must name a source and say
   non_blocking;
2. syntax (:func:`has_candidate_sink`, stdlib ``ast``): some sink call whose
   non_blocking may be true must be fed by a call spelled like a source (its
   own name, or a local alias from ``from torch import from_numpy as X``) or by
   a name assigned such a call somewhere in the file.

Only files that pass both are parsed with LibCST and get scope metadata,
the expensive part. ``PINFIX_NO_PREFILTER=1`` turns both off, to prove them
sound: findings must be identical either way (``tests/test_prefilter.py``).
"""

from __future__ import annotations

import ast
import os
import re
from typing import List, Set

from .patterns import COPY_SINKS, NON_BLOCKING_KEYWORD, PAGEABLE_SOURCES

PREFILTER_OFF = os.environ.get("PINFIX_NO_PREFILTER", "") not in ("", "0")

#: Last components of the sources' qualified names: every spelling that
#: resolves to ``torch.from_numpy`` contains one (``torch.from_numpy``,
#: ``th.from_numpy``, or the name in ``from torch import from_numpy [as x]``).
SOURCE_NAMES = frozenset(s.qualified_name.rsplit(".", 1)[-1] for s in PAGEABLE_SOURCES)
SOURCE_SPELLINGS = tuple(sorted(n.encode() for n in SOURCE_NAMES))

# A positional non_blocking slot is never the first (``copy_(src, True)``,
# ``cuda(dev, True)``, ``to(dev, dtype, True)``), so its ``True`` follows a
# comma and precedes a comma or ``)``, with only whitespace, continuations or
# comments between.
_GAP = rb"(?:\s|\\(?:\r\n|\r|\n)|#[^\r\n]*(?:\r\n|\r|\n))*"
POSITIONAL_TRUE = re.compile(rb"," + _GAP + rb"True" + _GAP + rb"[,)]")


def may_contain_finding(data: bytes) -> bool:
    """Byte stage. Python source encodings are ASCII-compatible, so an
    identifier's bytes appear verbatim whatever the declared encoding."""
    if PREFILTER_OFF:
        return True
    if not any(s in data for s in SOURCE_SPELLINGS):
        return False
    return NON_BLOCKING_KEYWORD.encode() in data or POSITIONAL_TRUE.search(data) is not None


def _may_be_non_blocking(call: ast.Call) -> bool:
    if any(isinstance(a, ast.Starred) for a in call.args):
        return True
    for kw in call.keywords:
        if kw.arg is None:
            return True  # **kwargs
        if kw.arg == NON_BLOCKING_KEYWORD and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
            return True
    return any(isinstance(a, ast.Constant) and a.value is True for a in call.args)


def _source_spelled(expr: ast.AST, names: Set[str]) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Attribute):
        return func.attr in SOURCE_NAMES
    return isinstance(func, ast.Name) and func.id in names


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _evaluated_outside(node: ast.AST) -> List[ast.AST]:
    """Parts of a def, lambda or class that run in the enclosing scope."""
    parts: List[ast.AST] = list(getattr(node, "decorator_list", []))
    if isinstance(node, ast.ClassDef):
        return parts + list(node.bases) + [k.value for k in node.keywords]
    args = node.args  # type: ignore[attr-defined]
    parts += list(args.defaults) + [d for d in args.kw_defaults if d is not None]
    if not isinstance(node, ast.Lambda):
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        parts += [a.annotation for a in every if a is not None and a.annotation is not None]
        parts += [node.returns] if node.returns is not None else []  # type: ignore[attr-defined]
    return parts


def _evaluated_inside(node: ast.AST) -> List[ast.AST]:
    if isinstance(node, ast.Lambda):
        return [node.body]
    return list(node.body)  # type: ignore[attr-defined]


def _scope_nodes(scope: ast.AST) -> List[ast.AST]:
    """Nodes that run in ``scope``'s namespace (comprehensions included, as the
    analysis looks through them), not in nested functions or classes."""
    out: List[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope)) if isinstance(scope, ast.Module) else _evaluated_inside(scope)
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(_evaluated_outside(node) if isinstance(node, _SCOPES) else ast.iter_child_nodes(node))
    return out


def _is_sink(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in COPY_SINKS
        and _may_be_non_blocking(node)
    )


def has_candidate_sink(data: bytes) -> bool:
    """Syntax stage; ``True`` also when ``ast`` cannot parse the file (LibCST
    then decides, and reports the error)."""
    if PREFILTER_OFF:
        return True
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError):
        return True
    spelled = set(SOURCE_NAMES)
    scopes: List[ast.AST] = [tree]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            spelled.update(a.asname for a in node.names if a.name in SOURCE_NAMES and a.asname)
        elif isinstance(node, _SCOPES):
            scopes.append(node)
    for scope in scopes:
        nodes = _scope_nodes(scope)
        sinks = [n for n in nodes if _is_sink(n)]
        if not sinks:
            continue
        # Names this scope binds to a source-spelled call (the analysis follows
        # a name only to assignments in the same function).
        bound: Set[str] = set()
        for node in nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                if _source_spelled(node.value, spelled):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    bound.update(t.id for t in targets if isinstance(t, ast.Name))
        for sink in sinks:
            assert isinstance(sink, ast.Call) and isinstance(sink.func, ast.Attribute)
            # The source: the receiver, a positional argument, or a keyword's value.
            exprs = [sink.func.value, *sink.args[:2], *(kw.value for kw in sink.keywords)]
            if any(_source_spelled(e, spelled) or (isinstance(e, ast.Name) and e.id in bound) for e in exprs):
                return True
    return False
