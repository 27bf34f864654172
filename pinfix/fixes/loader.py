"""The loader fix: a ``DataLoader`` built without ``pin_memory=True`` gets it, so
that it hands out pinned batches."""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from ..edits import SAFE, Fix
from ..semantic.values import Tensor, steps
from .site import FixSite


def loader_fix(site: FixSite, tensors: List[Tensor]) -> Tuple[str, Optional[Fix], Optional[str]]:
    """Batches of a ``DataLoader`` built without ``pin_memory=True``: ``pin_memory=True`` where it is
    built. Safe: the loader pins each fresh batch in its own thread, and where no accelerator
    exists torch warns and skips pinning."""
    origin = tensors[0].origin
    assert origin is not None
    call = origin.node
    at = (
        site.ctx.where(next(s for s in steps(tensors[0].route) if s.node is call))
        if tensors[0].via is not None
        else f"line {call.lineno}"
    )
    remedy = f"build the loader ({at}) with `pin_memory=True`, so that it hands out pinned batches"
    if any(t.origin is None or t.origin.node is not call for t in tensors):
        return remedy, None, "the copy is fed pageable memory made in several ways"
    if tensors[0].explicit:
        return remedy, None, "`pin_memory=` is written out; change it by hand if pageable batches were not intended"
    if origin.src is not site.src:
        return remedy, None, "the loader is built in another file; fix it there"
    assert isinstance(call, ast.Call)
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return remedy, None, "the call passes `*args`/`**kwargs`"
    return remedy, Fix(SAFE, None, (site.add_keyword(call, "pin_memory", "True"),)), None
