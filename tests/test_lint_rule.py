"""Fixit's own machinery runs the rules' VALID / INVALID cases (those that need no settings)."""

from fixit.testing import add_lint_rule_tests_to_module
from pinfix.lint_rules import (
    PageableCpuSource,
    PageableNonBlockingCopy,
    UnknownPinnedness,
    UnsynchronizedHostRead,
)

add_lint_rule_tests_to_module(
    globals(), [PageableNonBlockingCopy(), PageableCpuSource(), UnsynchronizedHostRead(), UnknownPinnedness()]
)
