"""PIN004: a non_blocking copy whose CPU side pinfix cannot tell pinned or pageable (informational).

The Fixit front end of :mod:`pinfix.rules.pin004` (its documentation and cases live there).
"""

from pinfix.rules.pin004 import UnknownPinnedness as _Rule

from ._report import fixit_rule

UnknownPinnedness = fixit_rule(_Rule, __name__)

__all__ = ["UnknownPinnedness"]
