"""The ``.pin_memory()`` fix: what pins the source where no helper is configured."""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..edits import UNSAFE, Edit, Fix
from ..rules.pageable import Route
from ..semantic.values import Tensor
from .site import FixSite, unique


def pin_method_fix(
    site: FixSite, tensors: List[Tensor], route: Route, inline: bool
) -> Tuple[Optional[Fix], Optional[str]]:
    """No helper configured: ``torch.from_numpy(a)`` -> ``torch.from_numpy(a).pin_memory()``,
    which needs no import. The same values, dtype and shape in pinned memory, a copy
    as a helper's is; but ``.pin_memory()`` raises where no accelerator is available,
    where vLLM's helper gives the plain tensor: always unsafe."""
    calls = unique([t.origin.node for t in tensors if t.origin is not None])
    if any(t.origin is not None and t.origin.src is not site.src for t in tensors):
        return None, "the source is made in another file; fix it there"
    hazard = None if inline else site.bound_hazard(tensors, route, calls, "`.pin_memory()`")
    reason = hazard or (
        "`.pin_memory()` raises where no accelerator is available; set `helper` to a function that pins "
        "only where it can (vLLM: `vllm.utils.torch_utils.np_to_pinned_tensor`) to make this fix safe"
    )
    edits = tuple(Edit(site.src.span(c)[1], site.src.span(c)[1], ".pin_memory()") for c in calls)
    return Fix(UNSAFE, reason, edits), None
