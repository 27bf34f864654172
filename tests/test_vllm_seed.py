"""The seed, on the real vLLM sources: 0.28.0 fixed by pinfix equals what vLLM 0.29.0 has.

The sdists are downloaded from the package index by ``../shared/tools/fetch-sdist``
(or taken from ``PINFIX_SDIST_DIR``); no third-party code lives in this repository.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pinfix.cli import main
from tests.support import REPO, ruff_codes

SEED_FILES = (
    "vllm/v1/attention/backends/mla/xpu_mla_sparse.py",
    "vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py",
)
FETCH = REPO.parent / "shared" / "tools" / "fetch-sdist"
CACHE = Path(os.environ.get("PINFIX_SDIST_DIR", "/tmp/pinfix-sdists"))


def _sdist(version: str) -> Path:
    tree = CACHE / f"vllm-{version}"
    if tree.is_dir():
        return tree
    if not FETCH.exists():
        pytest.skip(f"needs the vLLM {version} sdist: no {FETCH} and nothing in {CACHE}")
    proc = subprocess.run([sys.executable, str(FETCH), "vllm", version, str(CACHE)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"could not download the vLLM {version} sdist: {proc.stderr.strip()[-300:]}")
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def seed_trees(tmp_path_factory: pytest.TempPathFactory):
    before, after = _sdist("0.28.0"), _sdist("0.29.0")
    work = tmp_path_factory.mktemp("vllm-0.28.0")
    shutil.copy(before / "pyproject.toml", work / "pyproject.toml")
    for rel in SEED_FILES:
        # The package path matters: it makes `vllm` first-party for import placement.
        for parent in reversed(Path(rel).parents[:-1]):
            (work / parent).mkdir(exist_ok=True)
            init = before / parent / "__init__.py"
            if init.exists():
                shutil.copy(init, work / parent / "__init__.py")
        shutil.copy(before / rel, work / rel)
    return before, after, work


def _pinned_lines(text: str):
    """Each line that names the helper, with the lines around it (its place)."""
    lines = text.splitlines()
    return [tuple(lines[max(i - 1, 0) : i + 2]) for i, line in enumerate(lines) if "np_to_pinned_tensor" in line]


def test_check_reports_both_seed_sites(seed_trees) -> None:
    _, _, work = seed_trees
    import io

    out = io.StringIO()
    assert main(["check", str(work)], out, io.StringIO()) == 1
    reported = sorted(line.split(":", 1)[0].replace(str(work) + "/", "") for line in out.getvalue().splitlines())
    assert reported == sorted(SEED_FILES)


def test_fix_gives_exactly_the_upstream_lines(seed_trees) -> None:
    before, after, work = seed_trees
    import io

    assert main(["fix", str(work)], io.StringIO(), io.StringIO()) == 0
    for rel in SEED_FILES:
        fixed = (work / rel).read_text()
        assert _pinned_lines(fixed) == _pinned_lines((after / rel).read_text()), rel
        # Nothing else changed: every other line is the 0.28.0 line.
        original = (before / rel).read_text().splitlines()
        assert [ln for ln in fixed.splitlines() if "np_to_pinned_tensor" not in ln] == [
            ln
            for ln in original
            if "from_numpy(req_id_per_token)" not in ln and not ln.startswith("from vllm.utils.torch_utils import")
        ]
        assert ruff_codes(work / rel, work) == ruff_codes(before / rel, before)
    snapshot = {rel: (work / rel).read_bytes() for rel in SEED_FILES}
    assert main(["fix", str(work)], io.StringIO(), io.StringIO()) == 0
    assert {rel: (work / rel).read_bytes() for rel in SEED_FILES} == snapshot
