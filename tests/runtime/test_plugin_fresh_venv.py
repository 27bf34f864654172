"""The pytest plugin where only ``pinfix[runtime]`` and pytest are installed (no LibCST, no Fixit).

A fresh virtual environment gets pinfix from this checkout (``--no-deps``) and torch (the CPU
build on this machine's disk), numpy and pytest. Then a test that copies pageable memory to a
``meta`` tensor must fail under ``--pinfix-copies=raise --pinfix-allow-meta``, with the plugin
loaded through its entry point. Installing torch takes minutes: marked ``slow``
(``python -m pytest -m slow``; CI runs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

INNER = """
import torch


def test_pageable_copy_to_meta():
    torch.empty(4, dtype=torch.int64, device="meta").copy_(torch.arange(4), non_blocking=True)


def test_pinned_by_marker():
    pass
"""


@pytest.mark.slow
def test_plugin_works_with_only_the_runtime_extra(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def run(*args: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess:
        return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)

    install = run("-m", "pip", "install", "-q", "--no-deps", str(REPO))
    assert install.returncode == 0, install.stderr[-3000:]
    # What the runtime extra needs, and pytest; torch 2.13.0 is the CPU build on disk.
    deps = run("-m", "pip", "install", "-q", "torch==2.13.0", "numpy", "pytest")
    assert deps.returncode == 0, deps.stderr[-3000:]
    missing = run("-c", "import importlib.util as u; print([m for m in ('libcst', 'fixit') if u.find_spec(m)])")
    assert missing.stdout.strip() == "[]", "the environment must not have the static tool's dependencies"

    (tmp_path / "case").mkdir()
    (tmp_path / "case" / "test_inner.py").write_text(INNER)
    result = run(
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--pinfix-copies=raise",
        "--pinfix-allow-meta",
        cwd=tmp_path / "case",
    )
    out = result.stdout + result.stderr
    assert "1 failed, 1 passed" in out, out
    assert "PageableCopyError" in out and "test_pageable_copy_to_meta" in out
    # Without --pinfix-allow-meta nothing can be flagged on a CPU-only machine.
    result = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "--pinfix-copies=raise", cwd=tmp_path / "case")
    assert "2 passed" in result.stdout, result.stdout + result.stderr
