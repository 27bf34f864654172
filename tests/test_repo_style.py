"""The repository passes its own checks: ``ruff check`` and ``ruff format --check``
with the settings in its ``pyproject.toml`` (the code pinfix's fixes promise to keep
green in other projects is kept green here)."""

import subprocess
from typing import List

import pytest

from pinfix.formatter import formatter_command
from tests.support import REPO


def _ruff(*args: str) -> subprocess.CompletedProcess:
    command: List[str] = formatter_command("ruff") or []
    if not command:
        pytest.skip("ruff is not installed")
    return subprocess.run([*command, *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_check_is_clean() -> None:
    proc = _ruff("check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr, proc.stderr  # e.g. a suppression comment ruff cannot read


def test_ruff_format_leaves_every_file_as_it_is() -> None:
    proc = _ruff("format", "--check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
