from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A vLLM-shaped project root: ``vllm`` is first-party there, as in the real tree."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "vllm" / "v1").mkdir(parents=True)
    (tmp_path / "vllm" / "__init__.py").write_text("")
    (tmp_path / "vllm" / "v1" / "__init__.py").write_text("")
    return tmp_path


@pytest.fixture
def depends_on_vllm(tmp_path: Path) -> Path:
    """``tmp_path`` as a project that depends on vLLM (a ``requirements.txt``
    naming it), so a tree there without metadata of its own gets vLLM's helper by
    default, as the seed's trees do. Tests that expect that helper ask for it (or
    list it in ``pytestmark``); every other ``tmp_path`` holds only what its test
    writes, and gets the default of a project without vLLM
    (``tests/test_default_helper.py``)."""
    (tmp_path / "requirements.txt").write_text("vllm\n")
    return tmp_path


@pytest.fixture(autouse=True)
def _cache_outside_the_worktree(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check` caches at the working directory's project root (here: this
    repository); tests cache in a temporary directory instead, unless they
    unset ``PINFIX_CACHE_DIR`` to test that."""
    monkeypatch.setenv("PINFIX_CACHE_DIR", str(tmp_path_factory.mktemp("pinfix-cache")))
