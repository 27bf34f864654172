"""The factory fix: ``torch.zeros(n)`` -> ``torch.zeros(n, pin_memory=<expr>)``
(``[tool.pinfix] pin-memory-expr``, its import from ``pin-memory-import``), with the
race a truly asynchronous copy may open."""

from __future__ import annotations

import ast
from typing import Any, List, Optional, Tuple

from ..edits import SAFE, UNSAFE, Fix
from ..effects import PINNABLE_LAYOUTS
from ..rules.pageable import Route
from ..semantic.facts import holds, position
from ..semantic.scope import last_name, other_binding
from ..semantic.source import same_source
from ..semantic.values import Tensor
from .site import FixSite, helper_local_name, unique


def pin_memory_fix(site: FixSite, tensors: List[Tensor], route: Route, kept: bool) -> Any:
    """The ``pin_memory=<expr>`` fix at the factories; a string says why there is none."""
    settings = site.settings
    if any(t.origin is not None and not same_source(t.origin.src, site.src) for t in tensors):
        return "the source is made in another file; fix it there"
    calls = unique([t.origin.node for t in tensors if t.origin is not None])
    if any(isinstance(a, ast.Starred) for c in calls for a in c.args) or any(
        k.arg is None for c in calls for k in c.keywords
    ):
        return "the call passes `*args`/`**kwargs`"
    imports: Tuple[Tuple[str, str], ...] = ()
    expr = settings.pin_memory_expr or "True"
    if settings.pin_memory_import is not None:
        module, _, name = settings.pin_memory_import.rpartition(".")
        existing = helper_local_name(site.module, settings.pin_memory_import)
        if existing is None:
            for c in calls:
                func = site.module.function_at(c)
                line = other_binding(site.module, func, name, settings.pin_memory_import)
                if line is not None:
                    return f"`{name}` is already bound to something else here (line {line}); import `{settings.pin_memory_import}` under another name by hand"
            imports = ((module, name),)
    edits = tuple(site.add_keyword(c, "pin_memory", expr) for c in calls)
    if kept:
        made = calls[0]
        reason = (
            f"the tensor is made at line {made.lineno} in another function and kept; once pinned, the "
            "copy is truly asynchronous, so a host write to it before the copy has finished would race"
        )
        return Fix(UNSAFE, reason, edits, imports)
    reason = race(site, route)
    if reason is None and settings.pin_memory_expr is None:
        reason = (
            "`pin_memory=True` fails where no accelerator is available; set `[tool.pinfix] pin-memory-expr` "
            "(vLLM: `is_pin_memory_available()`) to make this fix safe"
        )
    return Fix(UNSAFE if reason else SAFE, reason, edits, imports)


def unpinnable(site: FixSite, tensors: List[Tensor]) -> Optional[str]:
    """Why the factories that made ``tensors`` cannot allocate pinned memory: torch pins
    only dense tensors (:data:`pinfix.effects.PINNABLE_LAYOUTS`)."""
    for t in tensors:
        call = t.origin.node if t.origin is not None else None
        layout = (
            next((k.value for k in call.keywords if k.arg == "layout"), None) if isinstance(call, ast.Call) else None
        )
        if layout is not None and last_name(layout) not in PINNABLE_LAYOUTS:
            return (
                f"`layout={t.origin.src.short(layout)}` may not be dense: torch refuses to pin a sparse "  # type: ignore[union-attr]
                'tensor (`pin_memory=True` raises "Only dense CPU tensors can be pinned")'
            )
    return None


def race(site: FixSite, route: Route) -> Optional[str]:
    """Once pinned, the copy no longer waits for the host: a later host write would race."""
    copy = site.copy
    end = (copy.call.end_lineno, copy.call.end_col_offset)
    sink_loops = set(map(id, site.ctx.facts.loops(site.func, copy.call)))
    for step in route.bindings:
        name = step.name
        if name is None or "." in name:
            continue
        later = [
            n
            for n in site.ctx.facts.reached_uses(site.func, step.node, name)
            if position(n) > end and not holds(copy.call, n)
        ]
        if later:
            return (
                f"`{name}` is used again at line {later[0].lineno}; once pinned the copy no longer "
                "waits for the host, so a write there would race with it"
            )
        if sink_loops - set(map(id, site.ctx.facts.loops(site.func, step.node))):
            return (
                f"the copy runs in a loop but `{name}` is bound once before it (line {step.node.lineno}); "
                "once pinned, a write to it in the next iteration would race with the copy"
            )
    return None
