"""Issue 29: a safe default fix on any project. vLLM's helper is the default
only where the project is vLLM or depends on it (its metadata, read as data);
elsewhere, with no `helper` set, the fix appends `.pin_memory()` (no import)
and is unsafe: `.pin_memory()` raises where no accelerator is available."""

from pathlib import Path

import pytest

from tests.support import BAD_SOURCE, pinfix
from tests.support import write_text as write

BOUND = (
    "import torch\n\n\ndef g(dst, a):\n    h = torch.from_numpy(a)\n    dst.copy_(h, non_blocking=True)\n    return h\n"
)
VLLM_FIXED = (
    "from vllm.utils.torch_utils import np_to_pinned_tensor\n\n\n"
    "def f(dst, a):\n    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)\n"
)


def test_a_project_without_vllm_gets_no_vllm_import_and_an_unsafe_pin_memory_fix(tmp_path: Path) -> None:
    tmp_path = tmp_path / "mine"  # below the suite's vLLM-shaped tmp_path (tests/conftest.py)
    write(tmp_path / "pyproject.toml", '[project]\nname = "mine"\ndependencies = ["numpy", "vllm-lookalike"]\n')
    write(tmp_path / "m.py", BAD_SOURCE)
    write(tmp_path / "b.py", BOUND)
    proc = pinfix("fix", "--no-cache", ".", cwd=tmp_path)
    assert proc.returncode == 1
    assert "2 findings left: 2 unsafe fix (use --unsafe-fixes)" in proc.stderr
    assert (tmp_path / "m.py").read_text() == BAD_SOURCE and (tmp_path / "b.py").read_text() == BOUND
    full = " ".join(pinfix("check", "--no-cache", "--output-format", "full", "m.py", cwd=tmp_path).stdout.split())
    assert "= fix (unsafe): Pin the source with `.pin_memory()`;" in full
    assert "`.pin_memory()` raises where no accelerator is available" in full
    bound = " ".join(pinfix("check", "--no-cache", "--output-format", "full", "b.py", cwd=tmp_path).stdout.split())
    assert "`h` is also used at line 7; `.pin_memory()` returns a copy" in bound

    proc = pinfix("fix", "--no-cache", "--unsafe-fixes", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "m.py").read_text() == BAD_SOURCE.replace(
        "torch.from_numpy(a)", "torch.from_numpy(a).pin_memory()"
    )
    assert (tmp_path / "b.py").read_text() == BOUND.replace("torch.from_numpy(a)", "torch.from_numpy(a).pin_memory()")
    again = pinfix("fix", "--no-cache", "--unsafe-fixes", ".", cwd=tmp_path)
    assert again.returncode == 0 and "changed 0 files" in again.stderr
    shown = pinfix("show-settings", "m.py", cwd=tmp_path).stdout
    assert "helper = (unset)" in shown


@pytest.mark.parametrize(
    "files",
    [
        {"pyproject.toml": '[project]\nname = "app"\ndependencies = ["torch", "vLLM[tensorizer]>=0.9"]\n'},
        {"pyproject.toml": '[project]\nname = "app"\n[project.optional-dependencies]\nserve = ["vllm"]\n'},
        {"pyproject.toml": '[project]\nname = "vllm"\n'},
        {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.10"\nvllm = "^0.9"\n'},
        {
            "pyproject.toml": "[project]\nname = 'app'\n",
            "setup.cfg": "[options]\ninstall_requires =\n    numpy\n    vllm==0.9.1\n",
        },
        {
            "pyproject.toml": "[project]\nname = 'app'\n",
            "setup.py": "from setuptools import setup\nsetup(name='app', install_requires=['vllm>=0.9'])\n",
        },
        {"pyproject.toml": "[project]\nname = 'app'\n", "requirements.txt": "numpy\nvllm ; sys_platform == 'linux'\n"},
        {"pyproject.toml": "[project]\nname = 'app'\n", "vllm/__init__.py": ""},
    ],
    ids=["dependencies", "optional", "is-vllm", "poetry", "setup.cfg", "setup.py", "requirements", "package"],
)
def test_a_project_that_is_or_depends_on_vllm_gets_vllms_helper(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    tmp_path = tmp_path / "app"  # below the suite's vLLM-shaped tmp_path (tests/conftest.py)
    for rel, text in files.items():
        write(tmp_path / rel, text)
    write(tmp_path / "m.py", BAD_SOURCE)
    proc = pinfix("fix", "--no-cache", "m.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "m.py").read_text() == VLLM_FIXED


def test_a_configured_helper_wins_in_either_kind_of_project(tmp_path: Path) -> None:
    tmp_path = tmp_path / "mine"
    write(tmp_path / "pyproject.toml", '[project]\nname = "mine"\n[tool.pinfix]\nhelper = "mine.mem.pinned"\n')
    write(tmp_path / "m.py", BAD_SOURCE)
    assert pinfix("fix", "--no-cache", "m.py", cwd=tmp_path).returncode == 0
    assert (tmp_path / "m.py").read_text() == VLLM_FIXED.replace("vllm.utils.torch_utils", "mine.mem").replace(
        "np_to_pinned_tensor", "pinned"
    )
