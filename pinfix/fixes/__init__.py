"""Fixes are applied here, in one place, for every front end."""

from .apply import Applied, FixError, apply_fixes, chosen_fixes, fix_findings

__all__ = ["Applied", "FixError", "apply_fixes", "chosen_fixes", "fix_findings"]
