"""The helper fix: ``torch.from_numpy(a)`` -> ``helper(a)`` (``[tool.pinfix] helper``,
vLLM's ``np_to_pinned_tensor``), which makes the source pinned, with the helper's import."""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from ..edits import SAFE, UNSAFE, Edit, Fix
from ..rules.pageable import Route
from ..semantic.scope import other_binding
from ..semantic.source import same_source
from ..semantic.values import Tensor
from .site import FixSite, defines, helper_local_name, root_name, unique


def helper_fix(
    site: FixSite, tensors: List[Tensor], route: Route, inline: bool, local: str
) -> Tuple[Optional[Fix], Optional[str]]:
    settings = site.settings
    calls = unique([t.origin.node for t in tensors if t.origin is not None])
    if any(t.origin is not None and not same_source(t.origin.src, site.src) for t in tensors):
        return None, "the source is made in another file; fix it there"
    if any(len(c.args) != 1 or c.keywords or isinstance(c.args[0], ast.Starred) for c in calls):
        return None, "the call's arguments are not the plain `(array)` form the helper takes"
    if defines(site.ctx.path, settings.helper_module):
        return (
            None,
            f"this module defines `{settings.helper_name}` ({settings.helper}); importing it here would be circular",
        )
    line = other_binding(site.module, site.func, local, settings.helper)
    if line is not None:
        return (
            None,
            f"`{local}` is already bound to something else here (line {line}); import `{settings.helper}` under another name by hand",
        )
    drops = tuple(unique([root_name(c.func) for c in calls if root_name(c.func)]))
    reason = (
        site.to_itself()
        or site.exported_by_call(drops)
        or (None if inline else site.bound_hazard(tensors, route, calls, f"`{settings.helper_name}`"))
    )
    edits = tuple(Edit(*site.src.span(c.func), local) for c in calls)
    imports = (
        () if helper_local_name(site.module, settings.helper) else ((settings.helper_module, settings.helper_name),)
    )
    return Fix(UNSAFE if reason else SAFE, reason, edits, imports, drops), None
