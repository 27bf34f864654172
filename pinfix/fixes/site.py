"""Where a fix is planned: one copy of one module, and the questions every kind of
fix asks of it (what a swap of a bound ``from_numpy`` for a pinned copy could change,
what ``.to`` does on the CPU, how a keyword is added to a call).

The kinds of fix are modules beside this one (:mod:`.h2d`, :mod:`.helper`,
:mod:`.pin_method`, :mod:`.factory`, :mod:`.loader`); :mod:`.plan` chooses among them.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, List, Optional, Sequence

from ..edits import Edit
from ..rules.base import AtCopy
from ..rules.pageable import Route
from ..semantic.facts import holds
from ..semantic.scope import ModuleInfo
from ..semantic.values import ACCEL, Tensor


class FixSite(AtCopy):
    """One copy the rules judged pageable, with what its fixes read: the module's
    facts, the settings, the function the copy is in."""

    def add_keyword(self, call: ast.Call, keyword: str, value: str) -> Edit:
        """``f(a, b)`` -> ``f(a, b, keyword=value)``: inserted after the last argument,
        so a trailing comma (and a line break) stays last."""
        parts: List[ast.AST] = [*call.args, *(k.value for k in call.keywords)]
        text = f"{keyword}={value}"
        if parts:
            last = max(parts, key=lambda n: (n.end_lineno, n.end_col_offset))  # type: ignore[attr-defined]
            end = self.src.offset(last.end_lineno, last.end_col_offset)  # type: ignore[attr-defined]
            # A parenthesised last argument ends at its closing parenthesis.
            body = self.src.text
            close = self.src.span(call)[1] - 1
            while end < close and body[end] == ")":
                end += 1
            return Edit(end, end, ", " + text)
        close = self.src.span(call)[1] - 1
        return Edit(close, close, text)

    def exported_by_call(self, drops: Sequence[str]) -> Optional[str]:
        """A name the fix may leave unused that the module exports with ``__all__.append``
        / ``.extend``: its import stays (the export needs it), but ruff reports it unused."""
        exported = [d for d in drops if d in self.module.exported_by_calls]
        if not exported:
            return None
        return (
            f"`{exported[0]}` is exported with `__all__.append`/`.extend`, which ruff does not count as a use: "
            "its import must stay, and ruff would call it unused"
        )

    def to_itself(self) -> Optional[str]:
        """``.to(dev)`` returns its receiver itself when ``dev`` is the CPU: a tensor on the
        array's memory, where the pinned helper's result is a copy (only an accelerator
        target, as far as the engine can tell, makes both a fresh device tensor)."""
        copy = self.copy
        if copy.method != "to" or copy.target == ACCEL:
            return None
        if any(k.arg == "copy" and literal_bool(k.value) is True for k in copy.call.keywords):
            return None  # `.to(..., copy=True)` copies on the CPU too
        device = self.src.short(copy.device_node) if copy.device_node is not None else "the device"
        return (
            f"`{device}` may be the CPU, where `.to` returns the tensor itself (sharing the array's memory) "
            "and the fixed code a copy"
        )

    def bound_hazard(
        self, tensors: List[Tensor], route: Route, calls: Sequence[ast.Call], helper: str
    ) -> Optional[str]:
        """Why swapping the bound ``from_numpy`` for a pinned copy could change behaviour:
        ``from_numpy`` shares the array's memory, ``helper`` (as a message names it) copies it."""
        names = route.names
        copy = self.copy
        if len(names) > 1:
            return "the tensor reaches the copy through several names (" + ", ".join(f"`{n}`" for n in names) + ")"
        carrier = copy.source_node.target if isinstance(copy.source_node, ast.NamedExpr) else copy.source_node
        if not (isinstance(carrier, ast.Name) and names and carrier.id == names[0]):
            if names:
                return f"`{names[0]}` reaches the copy through a view; check that nothing else uses it"
        name = names[0] if names else None
        if name is None:
            return None
        binding = route.bindings[0].node
        others = [
            n
            for n in self.ctx.facts.reached_uses(self.func, binding, name)
            if n is not copy.source_node
            and n is not binding
            and isinstance(n.ctx, ast.Load)
            and not holds(copy.call, n)
        ]
        if others:
            return (
                f"`{name}` is also used at line {others[0].lineno}; "
                f"{helper} returns a copy, so that use would no longer share memory with the array"
            )
        sink_loops = set(map(id, self.ctx.facts.loops(self.func, copy.call)))
        if sink_loops - set(map(id, self.ctx.facts.loops(self.func, binding))):
            return (
                f"the copy runs in a loop but `{name}` is bound once before it (line {binding.lineno}); "
                "a pinned copy would not follow later writes to the array"
            )
        for call in calls:
            roots = sorted({n.id for a in call.args for n in ast.walk(a) if isinstance(n, ast.Name)})
            hazard = self.ctx.facts.may_change(self.func, roots, call, copy.call)
            if hazard is not None:
                return f"{hazard.reason}, between the binding and the copy; {helper} would snapshot the array at the binding"
        return None


def helper_local_name(module: ModuleInfo, qualified: str) -> Optional[str]:
    """The local name of an existing top-level ``from M import name [as alias]``."""
    return module.top_from_imports.get(qualified)


def defines(path: Optional[Path], module: str) -> bool:
    """Whether ``path`` is ``module``'s own file."""
    if path is None or not module:
        return False
    expected = module.replace(".", "/")
    stem = path.as_posix()
    stem = stem[:-3] if stem.endswith(".py") else stem
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    return stem == expected or stem.endswith("/" + expected)


def unique(items: Sequence[Any]) -> List[Any]:
    out: List[Any] = []
    for i in items:
        if not any(i is o for o in out):
            out.append(i)
    return out


def root_name(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def literal_bool(node: ast.AST) -> Optional[bool]:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    return None


def literal_false(call: ast.AST) -> bool:
    """Whether a factory call says ``pin_memory=False`` in so many words."""
    return any(k.arg == "pin_memory" and literal_bool(k.value) is False for k in getattr(call, "keywords", ()))
