"""Fixit lint rules shipped with pinfix (``[tool.fixit] enable = ["lint_rules"]``)."""

from .pageable_non_blocking_copy import PageableNonBlockingCopy

__all__ = ["PageableNonBlockingCopy"]
