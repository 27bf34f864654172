"""What every finding says, in one shape for the analysis and the reports.

Kept free of LibCST so the engine and the output formats can use it on the
pre-commit fast path.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, Optional


@dataclass
class FindingFields:
    code: str
    line: int
    column: int  # 1-based, like ruff and flake8
    end_line: int
    end_column: int
    message: str
    #: ``<sink>/<how the source reaches it>``, e.g. ``copy_/inline``, ``to/bound``.
    pattern: str
    #: ``"safe"``, ``"unsafe"`` or ``None`` (no fix offered).
    fix_safety: Optional[str]
    #: Why the fix is unsafe, or why there is none.
    fix_note: Optional[str]

    def shared_fields(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(FindingFields)}
