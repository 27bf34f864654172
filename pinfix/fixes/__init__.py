"""Fixes are applied here, in one place, for every front end."""

from .apply import Applied, FixError, apply_fixes

__all__ = ["Applied", "FixError", "apply_fixes"]
