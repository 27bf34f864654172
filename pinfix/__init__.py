"""pinfix: find non_blocking host-to-device copies from pageable memory and pin them.

The static tool never imports torch; see :mod:`pinfix.runtime` for the
runtime checker, which does.
"""

__version__ = "0.1.0"
