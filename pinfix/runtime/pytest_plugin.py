"""pytest plugin: run tests under the pageable-copy checker.

Loaded through the ``pytest11`` entry point by every pytest run in an environment where pinfix is
installed, including runs of users who only have the static tool and no torch.  So nothing here
imports torch at module import; the checker is imported on the first test that is armed.

Three ways to arm it:

* ``pytest --pinfix-copies=raise|warn|record``: every test;
* ``@pytest.mark.pinfix_copies`` (``mode="raise"`` by default, or ``mode="warn"|"record"``): one test;
* the ``pinfix_copies`` fixture: a check armed for the test (``record`` mode unless marked
  otherwise), whose ``.violations`` the test asserts on.  A test using the fixture is not armed a second time.

Violations recorded in ``record`` mode without the fixture are listed in the terminal summary.
"""

from __future__ import annotations

from typing import Optional

import pytest

MODES = ("raise", "warn", "record")
MARKER = "pinfix_copies"
FIXTURE = "pinfix_copies"
_RECORDED = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pinfix")
    group.addoption(
        "--pinfix-copies",
        choices=MODES,
        default=None,
        help="check non_blocking CPU<->accelerator copies in every test for pageable or "
        "non-dense CPU memory: raise, warn, or record (listed in the summary).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(mode='raise'): check this test's non_blocking CPU<->accelerator copies "
        "for pageable or non-dense CPU memory (mode: raise, warn or record).",
    )
    config.stash[_RECORDED] = []


def _mode_for(item: pytest.Item) -> Optional[str]:
    marker = item.get_closest_marker(MARKER)
    if marker is not None:
        mode = marker.kwargs.get("mode", marker.args[0] if marker.args else "raise")
        if mode not in MODES:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARKER}(mode={mode!r}): mode must be one of {MODES}"
            )
        return mode
    return item.config.getoption("--pinfix-copies")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    mode = None if FIXTURE in getattr(item, "fixturenames", ()) else _mode_for(item)
    if mode is None:
        yield
        return
    from pinfix.runtime.checker import pageable_copy_check

    with pageable_copy_check(mode) as check:
        yield
    if mode == "record":
        item.config.stash[_RECORDED].extend((item.nodeid, v) for v in check.violations)


@pytest.fixture(name=FIXTURE)
def _pinfix_copies(request: pytest.FixtureRequest):
    """A pageable-copy check armed for the whole test (setup to teardown); read ``.violations``.

    ``record`` mode unless the test's ``pinfix_copies`` marker names another mode.
    """
    from pinfix.runtime.checker import pageable_copy_check

    marked = request.node.get_closest_marker(MARKER)
    mode = _mode_for(request.node) if marked is not None else "record"
    with pageable_copy_check(mode) as check:
        yield check


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    recorded = config.stash.get(_RECORDED, [])
    if not recorded:
        return
    terminalreporter.section("pinfix: non_blocking copies that block the host")
    for nodeid, violation in recorded:
        terminalreporter.line(f"{nodeid}: {violation.message()}")
