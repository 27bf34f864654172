"""PIN001: a non_blocking host-to-device copy whose source is ``torch.from_numpy``.

The Fixit front end of :mod:`pinfix.rules.pin001` (its documentation and cases live there).
"""

from pinfix.rules.pin001 import PageableNonBlockingCopy as _Rule

from ._report import fixit_rule

PageableNonBlockingCopy = fixit_rule(_Rule, __name__)

__all__ = ["PageableNonBlockingCopy"]
