"""PIN003: a non_blocking device-to-host copy read on the host before anything waits for it.

The Fixit front end of :mod:`pinfix.rules.pin003` (its documentation and cases live there).
"""

from pinfix.rules.pin003 import UnsynchronizedHostRead as _Rule

from ._report import fixit_rule

UnsynchronizedHostRead = fixit_rule(_Rule, __name__)

__all__ = ["UnsynchronizedHostRead"]
