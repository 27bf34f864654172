"""Fixit's own machinery runs the rules' VALID / INVALID cases."""

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


H2D_HELPER = "vllm.utils.torch_utils.async_tensor_h2d"


# (The call above put a test class named PageableNonBlockingCopy into this module.)
from pinfix.lint_rules.pageable_non_blocking_copy import PageableNonBlockingCopy as _Rule  # noqa: E402


class PageableNonBlockingCopyH2D(_Rule):
    """PIN001 with ``[tool.pinfix] h2d-helper`` set: its H2D_VALID / H2D_INVALID cases."""

    VALID = _Rule.H2D_VALID
    INVALID = _Rule.H2D_INVALID

    def __init__(self) -> None:
        super().__init__()
        self.config = self.config.with_overrides(h2d_helper=H2D_HELPER)


add_lint_rule_tests_to_module(globals(), [PageableNonBlockingCopyH2D()])
