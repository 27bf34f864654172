"""Runtime half of pinfix: catch pageable ``non_blocking`` copies while code actually runs.

Exports are resolved lazily so that importing ``pinfix.runtime.pytest_plugin`` (loaded by
pytest for every user of the static tool, through its entry point) never imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "pageable_copy_check": "checker",
    "PageableCopyCheck": "checker",
    "PageableCopyError": "checker",
    "PageableCopyWarning": "checker",
    "Violation": "checker",
    "np_to_pinned_tensor": "pinned",
    "pin_memory_available": "pinned",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
