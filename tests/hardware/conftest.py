"""Options, shared fixtures and the results table of the hardware job."""

from __future__ import annotations

import sys
import types

import pytest

RESULTS: list[dict] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vllm-src",
        default=None,
        metavar="PATH",
        help="a vLLM source tree (or site-packages) whose sparse-MLA builders the hardware job "
        "also runs, original against rewritten.",
    )


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="session")
def device(torch):
    """The accelerator ``torch.accelerator`` reports, else the CPU."""
    accelerator = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    return accelerator if accelerator is not None else torch.device("cpu")


@pytest.fixture
def require_accelerator(device):
    if device.type == "cpu":
        pytest.skip(
            "device-only: no accelerator here, so every copy is CPU-to-CPU and there is no "
            "pageable-vs-pinned difference to detect or time"
        )


@pytest.fixture
def helper_available(monkeypatch):
    """Make ``from vllm.utils.torch_utils import np_to_pinned_tensor`` importable.

    Real vLLM when it imports; otherwise a shim mapping to ``pinfix.runtime.pinned`` is put in
    ``sys.modules`` for this test only (monkeypatch restores every entry afterwards).
    Returns where the helper came from.
    """
    from . import hw_support

    why_not = hw_support.vllm_helper_importable()
    if why_not is None:
        return "vllm"
    from pinfix.runtime import pinned

    shim = types.ModuleType("vllm.utils.torch_utils")
    shim.np_to_pinned_tensor = pinned.np_to_pinned_tensor
    for name, module in (
        ("vllm", types.ModuleType("vllm")),
        ("vllm.utils", types.ModuleType("vllm.utils")),
        ("vllm.utils.torch_utils", shim),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    sys.modules["vllm"].utils = sys.modules["vllm.utils"]
    sys.modules["vllm.utils"].torch_utils = shim
    return f"shim ({why_not})"


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not RESULTS:
        return
    terminalreporter.section("pinfix hardware job: original vs rewritten")
    header = (
        f"{'builder':<10} {'device':<8} {'rewrite':<7} {'bit-exact':<9} "
        f"{'viol. before':>12} {'viol. after':>11} {'host us before':>14} {'host us after':>13}"
    )
    terminalreporter.line(header)
    for r in RESULTS:
        terminalreporter.line(
            f"{r['builder']:<10} {r['device']:<8} {r['origin']:<7} {r['bit_exact']:<9} "
            f"{r['viol_before']:>12} {r['viol_after']:>11} "
            f"{r['us_before']:>14} {r['us_after']:>13}"
        )
    terminalreporter.line(f"torch {RESULTS[0]['torch']}; helper: {RESULTS[0]['helper']}")
