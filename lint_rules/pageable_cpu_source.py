"""PIN002: a non_blocking host-to-device copy from another pageable CPU source.

The Fixit front end of :mod:`pinfix.rules.pin002` (its documentation and cases live there).
"""

from pinfix.rules.pin002 import PageableCpuSource as _Rule

from ._report import fixit_rule

PageableCpuSource = fixit_rule(_Rule, __name__)

__all__ = ["PageableCpuSource"]
