"""Fixit's own machinery runs the rule's VALID / INVALID cases."""

from fixit.testing import add_lint_rule_tests_to_module

from lint_rules import PageableNonBlockingCopy

add_lint_rule_tests_to_module(globals(), [PageableNonBlockingCopy()])
