"""What every rule shares: the finding it makes, its cases, how it names things."""

from __future__ import annotations

import ast
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..edits import Fix
from ..findings import Evidence, FindingFields, named, shown
from ..semantic.facts import Copy, ModuleFacts, SourceText, same_source
from ..semantic.values import Step, steps
from ..settings import Settings


@dataclass
class Finding(FindingFields):
    """One finding, with its fix plan (``None``: report only)."""

    fix: Optional[Fix] = field(default=None, repr=False, compare=False)
    #: The node reported on.
    node: Optional[Any] = field(default=None, repr=False, compare=False)
    #: The first and last line of the statement that holds it (where suppression
    #: comments count; a compound statement's header only).
    statement: Optional[Tuple[int, int]] = field(default=None, repr=False, compare=False)
    #: A pageable copy whose remedy and fix are still to be planned
    #: (:class:`pinfix.rules.pageable.PageableCopy`, read by :mod:`pinfix.fixes.plan`).
    pageable: Optional[Any] = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Case:
    """A rule's example: ``code`` is a finding (INVALID) or is not (VALID); for an
    INVALID case with a safe fix, ``fixed`` is what the fix makes of it."""

    code: str
    fixed: Optional[str] = None
    #: Settings the case runs with (``[tool.pinfix]`` keys, e.g. ``{"h2d-helper": "m.f"}``).
    settings: Tuple[Tuple[str, Any], ...] = ()


class RuleContext:
    """What rules of one module share: the facts, the settings, the file."""

    def __init__(self, facts: ModuleFacts, settings: Settings, path: Optional[Path] = None):
        self.facts = facts
        self.settings = settings
        self.path = path
        self.cache: Dict[str, Any] = {}
        self._statements: Optional[StatementIndex] = None

    @property
    def statements(self) -> "StatementIndex":
        if self._statements is None:
            self._statements = StatementIndex(self.facts.module.tree)
        return self._statements

    @property
    def src(self) -> SourceText:
        return self.facts.src

    def position(self, node: Any) -> Tuple[int, int, int, int]:
        """``(line, column, end line, end column)``, columns 1-based characters."""
        src = self.src
        return (
            node.lineno,
            src.column(node.lineno, node.col_offset) + 1,
            node.end_lineno,
            src.column(node.end_lineno, node.end_col_offset) + 1,
        )

    def finding(
        self,
        code: str,
        node: Any,
        message: str,
        pattern: str,
        fix: Optional[Fix],
        note: Optional[str],
        evidence: Sequence[Step] = (),
        severity: str = "error",
        summary: str = "",
        fix_title: Optional[str] = None,
    ) -> Finding:
        """A finding at ``node``: ``summary`` says what and why in one short
        sentence, ``message`` the whole account, ``fix_title`` what ``fix`` does."""
        line, column, end_line, end_column = self.position(node)
        return Finding(
            code=code,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            message=message,
            pattern=pattern,
            fix_safety=fix.applicability.value if fix is not None else None,
            fix_note=fix.reason if fix is not None and fix.reason else note,
            evidence=tuple(self.evidence(s) for s in evidence),
            severity=severity,
            summary=summary,
            fix_title=fix_title if fix is not None else None,
            fix=fix,
            node=node,
            statement=self.statements.lines(node),
        )

    def evidence(self, step: Step) -> Evidence:
        return Evidence(step.src.path, step.line, step.column, step.message)

    def where(self, step: Any) -> str:
        """``path:line`` of a step (or an origin) for a message: this file as it was
        given, another relative to the working directory."""
        if same_source(step.src, self.src):
            here = shown(self.path.as_posix()) if self.path is not None else "<module>"
            return f"{here}:{step.line}"
        return f"{named(step.src.path)}:{step.line}"


_COMPOUND = (
    ast.If,
    ast.For,
    ast.While,
    ast.With,
    ast.Try,
    ast.FunctionDef,
    ast.ClassDef,
    ast.AsyncFor,
    ast.AsyncWith,
    ast.AsyncFunctionDef,
)


class AtCopy:
    """One copy of one module, with what every question about it reads: the rule's
    verdict (:class:`pinfix.rules.pageable.Judge`) and the fixes planned for it
    (:class:`pinfix.fixes.site.FixSite`) alike."""

    def __init__(self, ctx: RuleContext, copy: Copy):
        self.ctx = ctx
        self.copy = copy
        self.src = ctx.src
        self.settings = ctx.settings
        self.module = ctx.facts.module
        self.func = copy.function


class StatementIndex:
    """The statements of a module, each block's sorted once by where they
    start, so that finding the one that holds a node costs a binary search
    per level of nesting."""

    _BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")

    def __init__(self, tree: ast.Module):
        self.tree = tree
        #: id of a statement (or the module) -> the starts and the statements directly inside it.
        self._inside: Dict[int, Tuple[List[Tuple[int, int]], List[ast.stmt]]] = {}

    def _children(self, owner: Any) -> Tuple[List[Tuple[int, int]], List[ast.stmt]]:
        got = self._inside.get(id(owner))
        if got is None:
            stmts: List[Any] = []
            for name in self._BLOCKS:
                for child in getattr(owner, name, ()) or ():
                    stmts.extend(getattr(child, "body", []) if not isinstance(child, ast.stmt) else [child])
            # Statements do not overlap, so in this order only the last that
            # starts before a node can hold it.
            stmts.sort(key=lambda stmt: (stmt.lineno, stmt.col_offset))
            got = self._inside[id(owner)] = ([(stmt.lineno, stmt.col_offset) for stmt in stmts], stmts)
        return got

    def lines(self, node: Any) -> Optional[Tuple[int, int]]:
        """The lines of the innermost statement holding ``node`` (a compound
        statement's header only: its first line up to where its body starts)."""
        if node is None or not hasattr(node, "lineno"):
            return None
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        found: Optional[ast.stmt] = None
        owner: Any = self.tree
        while True:
            starts, stmts = self._children(owner)
            i = bisect_right(starts, start) - 1
            if i < 0 or (stmts[i].end_lineno, stmts[i].end_col_offset) < end:
                break
            found = owner = stmts[i]
        if found is None:
            return None
        if isinstance(found, _COMPOUND) or type(found).__name__ in ("Match", "TryStar"):
            first_body = getattr(found, "body", None)
            last = first_body[0].lineno - 1 if first_body else found.lineno
            return found.lineno, max(found.lineno, min(last, node.lineno))
        return found.lineno, found.end_lineno or found.lineno


class Rule:
    """A rule: its code, its name, its documentation and cases; ``check`` asks the facts."""

    code = ""
    name = ""
    #: Reported only when the setting is on (PIN004: ``show-unknown``).
    opt_in: Optional[str] = None
    VALID: List[Case] = []
    INVALID: List[Case] = []

    @classmethod
    def doc(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")

    def check(self, ctx: RuleContext) -> Iterable[Finding]:  # pragma: no cover - every rule overrides it
        raise NotImplementedError


def route_steps(route: Any) -> List[Step]:
    return list(steps(route))
