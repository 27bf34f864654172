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
