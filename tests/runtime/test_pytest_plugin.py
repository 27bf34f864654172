"""The pytest plugin, run in an inner pytest in a subprocess.

A subprocess rather than ``pytester``, which would have to be enabled from the top-level
conftest.  Plugin autoloading is switched off in the inner runs and the plugin is named with
``-p``, so the tests do not depend on whether pinfix is installed (entry point) here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

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


@dataclass
class InnerRun:
    ret: int
    out: str

    def outcomes(self) -> dict:
        """Counts from the final summary line, e.g. ``{"passed": 1, "warnings": 1}``."""
        last = self.out.strip().splitlines()[-1] if self.out.strip() else ""
        counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}
        for singular in ("warning", "error"):
            if singular in counts:
                counts[singular + "s"] = counts.pop(singular)
        return counts

    def assert_outcomes(self, **expected: int) -> None:
        got = {k: v for k, v in self.outcomes().items() if k in ("passed", "failed", "warnings", "errors")}
        assert got == expected, self.out

    def has(self, pattern: str) -> bool:
        return re.search(pattern, self.out) is not None


@pytest.fixture
def inner(tmp_path):
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONPATH=os.pathsep.join(sys.path))

    def run(body: str, *args: str) -> InnerRun:
        (tmp_path / "test_inner.py").write_text(INNER.format(body=body))
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", *PLUGIN, "-p", "no:cacheprovider", "-q", "-rA", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        return InnerRun(proc.returncode, proc.stdout + proc.stderr)

    return run


def test_unarmed_tests_are_not_checked(inner):
    result = inner("def test_a():\n    copy()\n")
    result.assert_outcomes(passed=1)


def test_option_raise_fails_every_test_that_copies(inner):
    result = inner("def test_a():\n    copy()\n\ndef test_b():\n    pass\n", "--pinfix-copies=raise")
    result.assert_outcomes(passed=1, failed=1)
    assert result.has(r"PageableCopyError.*Tensor\.cuda\(.*H2D.*cuda:0.*not pinned")


def test_option_warn_passes_and_shows_the_warning(inner):
    result = inner("def test_a():\n    copy()\n", "--pinfix-copies=warn")
    result.assert_outcomes(passed=1, warnings=1)
    assert result.has("PageableCopyWarning")


def test_option_record_lists_violations_in_the_summary(inner):
    result = inner("def test_a():\n    copy()\n", "--pinfix-copies=record")
    result.assert_outcomes(passed=1)
    assert result.has("pinfix: non_blocking copies that block the host") and result.has(r"test_a.*H2D")


def test_option_rejects_unknown_modes(inner):
    result = inner("def test_a():\n    pass\n", "--pinfix-copies=loud")
    assert result.ret != 0
    assert result.has("invalid choice.*loud")


def test_marker_arms_one_test(inner):
    body = "@pytest.mark.pinfix_copies\ndef test_marked():\n    copy()\n\ndef test_plain():\n    copy()\n"
    result = inner(body)
    result.assert_outcomes(passed=1, failed=1)
    assert result.has("FAILED.*test_marked") and not result.has("FAILED.*test_plain")


def test_marker_mode_argument(inner):
    result = inner("@pytest.mark.pinfix_copies(mode='record')\ndef test_a():\n    copy()\n")
    result.assert_outcomes(passed=1)
    assert result.has(r"test_a.*Tensor\.cuda\(")


def test_marker_with_a_bad_mode_is_a_usage_error(inner):
    result = inner("@pytest.mark.pinfix_copies(mode='loud')\ndef test_a():\n    pass\n")
    assert result.ret != 0
    assert result.has("mode must be one of")


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
    assert result.has(r"pinfix_copies\(mode='raise', allow_meta=False, is_pinned='auto'\)")


def test_plugin_module_does_not_import_torch():
    code = (
        "import sys, pinfix.runtime.pytest_plugin, pinfix.runtime\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr


# --- CPU-only CI: meta tensors stand in for the device, pinnedness by a predicate ---------------

META = (
    "def test_meta():\n"
    "    dst = torch.empty(4, dtype=torch.int64, device='meta')\n"
    "    dst.copy_(torch.arange(4), non_blocking=True)\n"
)


def test_without_allow_meta_a_meta_copy_is_not_flagged(inner):
    inner(META, "--pinfix-copies=raise").assert_outcomes(passed=1)


def test_option_allow_meta_flags_a_pageable_copy_to_meta(inner):
    result = inner(META, "--pinfix-copies=raise", "--pinfix-allow-meta")
    result.assert_outcomes(failed=1)
    assert result.has(r"PageableCopyError.*copy_.*H2D.*meta")


@pytest.mark.parametrize("what,outcome", [("never", "failed"), ("always", "passed"), ("auto", "failed")])
def test_option_is_pinned_keywords(inner, what, outcome):
    result = inner(META, "--pinfix-copies=raise", "--pinfix-allow-meta", f"--pinfix-is-pinned={what}")
    result.assert_outcomes(**{outcome: 1})


def test_ini_settings(inner, tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\npinfix_allow_meta = true\npinfix_is_pinned = never\n")
    inner(META, "--pinfix-copies=raise").assert_outcomes(failed=1)
    (tmp_path / "pytest.ini").write_text("[pytest]\npinfix_allow_meta = true\npinfix_is_pinned = always\n")
    inner(META, "--pinfix-copies=raise").assert_outcomes(passed=1)


def test_is_pinned_by_dotted_name(inner, tmp_path):
    (tmp_path / "pinpred.py").write_text("def pinned(tensor):\n    return tensor.numel() == 4\n")
    inner(META, "--pinfix-copies=raise", "--pinfix-allow-meta", "--pinfix-is-pinned=pinpred.pinned").assert_outcomes(
        passed=1
    )
    inner(META, "--pinfix-copies=raise", "--pinfix-allow-meta", "--pinfix-is-pinned=pinpred:pinned").assert_outcomes(
        passed=1
    )
    result = inner(META, "--pinfix-copies=raise", "--pinfix-is-pinned=pinpred.nothing")
    assert result.ret != 0 and result.has("cannot be imported")


def test_marker_arguments_win_over_the_options(inner):
    body = (
        "@pytest.mark.pinfix_copies(allow_meta=True, is_pinned='never')\n"
        + META
        + "\n@pytest.mark.pinfix_copies(allow_meta=True, is_pinned=lambda t: True)\n"
        + META.replace("test_meta", "test_meta_pinned")
    )
    result = inner(body, "--pinfix-is-pinned=always")
    result.assert_outcomes(passed=1, failed=1)
    assert result.has("FAILED.*test_meta ") or result.has("FAILED.*test_meta$") or result.has("FAILED.*::test_meta\\b")


def test_fixture_takes_the_settings(inner):
    body = (
        "def test_a(pinfix_copies):\n"
        "    torch.empty(4, dtype=torch.int64, device='meta').copy_(torch.arange(4), non_blocking=True)\n"
        "    assert [v.reason for v in pinfix_copies.violations] == ['pageable']\n"
    )
    inner(body, "--pinfix-allow-meta").assert_outcomes(passed=1)
