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

Testing without an accelerator (CPU-only CI): ``meta`` tensors can stand in for device tensors,
and pinnedness can be decided by a predicate instead of ``Tensor.is_pinned()`` (which a CPU-only
torch cannot answer):

* ``--pinfix-allow-meta`` / ini ``pinfix_allow_meta = true`` / marker ``allow_meta=True``;
* ``--pinfix-is-pinned=WHAT`` / ini ``pinfix_is_pinned = WHAT`` / marker ``is_pinned=WHAT``, where
  ``WHAT`` is ``never`` (no CPU tensor counts as pinned), ``always`` (every one does), ``auto``
  (``Tensor.is_pinned()``, the default) or the dotted name of a predicate
  ``tensor -> bool`` (``package.module.function`` or ``package.module:function``); the marker
  also takes the callable itself.

The marker's arguments win over the option, the option over the ini setting.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, Optional

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
    group.addoption(
        "--pinfix-allow-meta",
        action="store_true",
        default=None,
        help="let meta tensors stand in for accelerator tensors (CPU-only CI).",
    )
    group.addoption(
        "--pinfix-is-pinned",
        default=None,
        metavar="WHAT",
        help="how a CPU tensor counts as pinned: never, always, auto (Tensor.is_pinned(), the "
        "default) or the dotted name of a predicate tensor -> bool.",
    )
    parser.addini("pinfix_allow_meta", "let meta tensors stand in for accelerator tensors", type="bool", default=False)
    parser.addini(
        "pinfix_is_pinned", "never, always, auto or the dotted name of a predicate tensor -> bool", default="auto"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(mode='raise', allow_meta=False, is_pinned='auto'): check this test's non_blocking "
        "CPU<->accelerator copies for pageable or non-dense CPU memory (mode: raise, warn or record).",
    )
    config.stash[_RECORDED] = []


def _mode_for(item: pytest.Item) -> Optional[str]:
    marker = item.get_closest_marker(MARKER)
    if marker is not None:
        mode = marker.kwargs.get("mode", marker.args[0] if marker.args else "raise")
        if mode not in MODES:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MARKER}(mode={mode!r}): mode must be one of {MODES}")
        return mode
    return item.config.getoption("--pinfix-copies")


_KEYWORDS = {"never": lambda tensor: False, "always": lambda tensor: True}


def resolve_is_pinned(what: Any) -> Optional[Callable[[Any], bool]]:
    """A predicate for ``is_pinned=``: ``None`` (the checker's default) for ``auto``."""
    if what is None or callable(what):
        return what
    text = str(what).strip()
    if text in ("", "auto"):
        return None
    if text in _KEYWORDS:
        return _KEYWORDS[text]
    module_name, sep, attribute = text.partition(":") if ":" in text else text.rpartition(".")
    if not sep or not module_name or not attribute:
        raise pytest.UsageError(f"pinfix: is_pinned must be never, always, auto or module.function, got {text!r}")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as e:
        raise pytest.UsageError(f"pinfix: is_pinned {text!r} cannot be imported: {e}") from None
    if not callable(target):
        raise pytest.UsageError(f"pinfix: is_pinned {text!r} is not callable")
    return target


def _check_options(item: pytest.Item) -> Dict[str, Any]:
    """``allow_meta`` and ``is_pinned`` for this test: marker, then option, then ini."""
    config = item.config
    marker = item.get_closest_marker(MARKER)
    kwargs = marker.kwargs if marker is not None else {}
    allow_meta = kwargs.get("allow_meta")
    if allow_meta is None:
        allow_meta = config.getoption("--pinfix-allow-meta")
    if allow_meta is None:
        allow_meta = config.getini("pinfix_allow_meta")
    is_pinned = kwargs.get("is_pinned")
    if is_pinned is None:
        is_pinned = config.getoption("--pinfix-is-pinned")
    if is_pinned is None:
        is_pinned = config.getini("pinfix_is_pinned")
    return {"allow_meta": bool(allow_meta), "is_pinned": resolve_is_pinned(is_pinned)}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    mode = None if FIXTURE in getattr(item, "fixturenames", ()) else _mode_for(item)
    if mode is None:
        yield
        return
    from pinfix.runtime.checker import pageable_copy_check

    with pageable_copy_check(mode, **_check_options(item)) as check:
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
    with pageable_copy_check(mode, **_check_options(request.node)) as check:
        yield check


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    recorded = config.stash.get(_RECORDED, [])
    if not recorded:
        return
    terminalreporter.section("pinfix: non_blocking copies that block the host")
    for nodeid, violation in recorded:
        terminalreporter.line(f"{nodeid}: {violation.message()}")
