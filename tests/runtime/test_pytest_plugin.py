"""The pytest plugin, run in an inner pytest with ``pytester``.

Plugin autoloading is switched off in the inner runs and the plugin is named with ``-p``, so the
tests do not depend on whether pinfix is installed (entry point) in this environment.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

PLUGIN = ("-p", "pinfix.runtime.pytest_plugin")

# Inner tests use a real device type that the check rejects before torch looks for it, so
# they behave the same on CPU-only and accelerator machines: ``.cuda(0, True)`` of a pageable
# tensor is a violation, and with the check off it reaches torch (which may fail without CUDA;
# that is not what these tests look at).
INNER = """
import pytest, torch

def copy():
    try:
        torch.arange(4).cuda(0, True)
    except RuntimeError as e:
        if type(e).__name__ == "PageableCopyError":
            raise

{body}
"""


@pytest.fixture
def inner(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    def run(body: str, *args: str):
        pytester.makepyfile(INNER.format(body=body))
        return pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider", *args)

    return run


def test_unarmed_tests_are_not_checked(inner):
    result = inner("def test_a():\n    copy()\n")
    result.assert_outcomes(passed=1)


def test_option_raise_fails_every_test_that_copies(inner):
    result = inner("def test_a():\n    copy()\n\ndef test_b():\n    pass\n", "--pinfix-copies=raise")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*PageableCopyError*Tensor.cuda(*H2D*cuda:0*not pinned*"])


def test_option_warn_passes_and_shows_the_warning(inner):
    result = inner("def test_a():\n    copy()\n", "--pinfix-copies=warn")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*PageableCopyWarning*"])


def test_option_record_lists_violations_in_the_summary(inner):
    result = inner("def test_a():\n    copy()\n", "--pinfix-copies=record")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*pinfix: non_blocking copies that block the host*", "*test_a*H2D*"])


def test_option_rejects_unknown_modes(inner):
    result = inner("def test_a():\n    pass\n", "--pinfix-copies=loud")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*invalid choice*loud*"])


def test_marker_arms_one_test(inner):
    body = (
        "@pytest.mark.pinfix_copies\ndef test_marked():\n    copy()\n\n"
        "def test_plain():\n    copy()\n"
    )
    result = inner(body)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED*test_marked*"])


def test_marker_mode_argument(inner):
    result = inner("@pytest.mark.pinfix_copies(mode='record')\ndef test_a():\n    copy()\n")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_a*Tensor.cuda(*"])


def test_marker_with_a_bad_mode_is_a_usage_error(inner):
    result = inner("@pytest.mark.pinfix_copies(mode='loud')\ndef test_a():\n    pass\n")
    assert result.ret != 0
    assert "mode must be one of" in result.stdout.str() + result.stderr.str()


def test_fixture_records_for_the_test_to_assert_on(inner):
    body = (
        "def test_a(pinfix_copies):\n"
        "    copy(); copy()\n"
        "    assert [v.op for v in pinfix_copies.violations] == ['cuda', 'cuda']\n"
    )
    # The fixture takes precedence over a run-wide raise: the test asserts instead.
    inner(body, "--pinfix-copies=raise").assert_outcomes(passed=1)


def test_marker_is_registered(inner):
    result = inner("def test_a():\n    pass\n", "--markers")
    result.stdout.fnmatch_lines(["*pinfix_copies(mode='raise')*"])


def test_plugin_module_does_not_import_torch():
    code = (
        "import sys, pinfix.runtime.pytest_plugin, pinfix.runtime\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
