"""The real pre-commit runs our hooks from this repository (``pre-commit try-repo``)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

BAD = "import torch\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n    return torch.int32\n"


def _pre_commit() -> str:
    found = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    if not Path(found).exists():
        pytest.fail("pre-commit is a test dependency (pip install -e '.[test]')")
    return found


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_check_hook_fails_then_passes_after_fix_hook(tmp_path: Path) -> None:
    repo = tmp_path / "user-repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "model.py").write_text(BAD)
    (repo / "clean.py").write_text("x = 1\n")
    _git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pre_commit = _pre_commit()

    def hook(hook_id: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [pre_commit, "try-repo", str(REPO), hook_id, "--all-files", "--color", "never"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=900,
        )

    check = hook("pinfix")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "model.py:5:15: PIN001" in check.stdout

    fix = hook("pinfix-fix")
    assert fix.returncode == 1, fix.stdout + fix.stderr  # files were modified
    assert "np_to_pinned_tensor(a)" in (repo / "model.py").read_text()

    again = hook("pinfix")
    assert again.returncode == 0, again.stdout + again.stderr
