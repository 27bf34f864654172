"""Fixit's own machinery runs the rules' VALID / INVALID cases (those that need no settings)."""

from pathlib import Path

import pytest
from fixit.testing import add_lint_rule_tests_to_module
from pinfix.lint_rules import (
    PageableCpuSource,
    PageableNonBlockingCopy,
    UnknownPinnedness,
    UnsynchronizedHostRead,
)


@pytest.fixture(autouse=True)
def _in_a_project_that_depends_on_vllm(depends_on_vllm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixit gives the rules no path: they read the working directory's project. The
    cases are written for vLLM's helper, the default in a project that depends on vLLM
    (``depends_on_vllm`` is one: tests/conftest.py)."""
    monkeypatch.chdir(depends_on_vllm)


add_lint_rule_tests_to_module(
    globals(), [PageableNonBlockingCopy(), PageableCpuSource(), UnsynchronizedHostRead(), UnknownPinnedness()]
)
