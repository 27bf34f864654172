"""Fixit lint rules shipped with pinfix (``[tool.fixit] enable = ["lint_rules"]``)."""

from .pageable_cpu_source import PageableCpuSource
from .pageable_non_blocking_copy import PageableNonBlockingCopy
from .unknown_pinnedness import UnknownPinnedness
from .unsynchronized_host_read import UnsynchronizedHostRead

__all__ = ["PageableCpuSource", "PageableNonBlockingCopy", "UnknownPinnedness", "UnsynchronizedHostRead"]
