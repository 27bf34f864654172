"""The seed, on the real vLLM sources: 0.28.0 fixed by pinfix equals what vLLM 0.29.0 has.

The sdists are downloaded once from pip's default index by ``tests/sdist.py``
into ``PINFIX_SDIST_DIR`` (default ``/tmp/pinfix-sdists``), which is reused;
no third-party code lives in this repository. Only an index that cannot be
reached (offline) makes these tests skip, and they say so.
"""

import os
import shutil
from pathlib import Path

import pytest

from pinfix.cli import main
from tests.sdist import fetch
from tests.support import ruff_codes

SEED_FILES = (
    "vllm/v1/attention/backends/mla/xpu_mla_sparse.py",
    "vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py",
)
CACHE = Path(os.environ.get("PINFIX_SDIST_DIR", "/tmp/pinfix-sdists"))


def _sdist(version: str) -> Path:
    try:
        return fetch("vllm", version, CACHE)
    except OSError as exc:  # urllib's URLError included: no network
        pytest.skip(f"could not download the vLLM {version} sdist into {CACHE}: {exc}")


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


def _serve(root: Path):
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _index_with(root: Path, name: str, version: str, sha: str) -> bytes:
    import hashlib
    import io
    import tarfile

    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        body = b"print('made here')\n"
        info = tarfile.TarInfo(f"{name}-{version}/m.py")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    archive = data.getvalue()
    (root / "files").mkdir(parents=True)
    (root / "files" / f"{name}-{version}.tar.gz").write_bytes(archive)
    (root / "simple" / name).mkdir(parents=True)
    digest = sha or hashlib.sha256(archive).hexdigest()
    link = f'<a href="../../files/{name}-{version}.tar.gz#sha256={digest}">{name}-{version}.tar.gz</a>'
    (root / "simple" / name / "index.html").write_text(f"<html><body>{link}</body></html>")
    return archive


def test_the_sdists_come_from_the_index_with_a_tool_in_this_repository(tmp_path: Path) -> None:
    """What a newcomer's run does: the fetcher is in the repository, reads the
    index pip would (here PIP_INDEX_URL, a local one), checks the digest,
    unpacks, prints the tree; a digest that does not match leaves nothing."""
    import subprocess
    import sys

    from tests.support import REPO

    _index_with(tmp_path / "good", "pkg", "1.0", "")
    _index_with(tmp_path / "bad", "pkg", "1.0", "0" * 64)
    for which in ("good", "bad"):
        server = _serve(tmp_path / which)
        try:
            env = {**os.environ, "PIP_INDEX_URL": f"http://127.0.0.1:{server.server_address[1]}/simple"}
            dest = tmp_path / f"dest-{which}"
            proc = subprocess.run(
                [sys.executable, "-m", "tests.sdist", "pkg", "1.0", str(dest)],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
        finally:
            server.shutdown()
        if which == "good":
            assert proc.returncode == 0, proc.stderr
            assert Path(proc.stdout.strip()) == dest / "pkg-1.0"
            assert (dest / "pkg-1.0" / "m.py").read_text() == "print('made here')\n"
        else:
            assert proc.returncode != 0 and "sha256" in proc.stderr
            assert sorted(p.name for p in dest.iterdir()) == []
