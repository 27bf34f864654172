"""How pinfix is installed and found: the front ends from a user's project, the wheel's layout.

The LibCST codemod and the Fixit rules run from a temporary project outside this repository,
which has its own ``codemods`` and ``lint_rules`` packages (ours ship as ``pinfix.codemods`` and
``pinfix.lint_rules``, so neither shadows the other). The wheel test (slow) installs the built
wheel into a fresh environment without Fixit and runs the CLI there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCE = "import torch\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
FIXED = (
    "from vllm.utils.torch_utils import np_to_pinned_tensor\n\n\n"
    "def f(dst, a):\n    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)\n"
)


@pytest.fixture
def user_project(tmp_path: Path) -> Path:
    """A project of the user's, outside the repository, with packages named like ours."""
    project = tmp_path / "proj"
    for own in ("codemods", "lint_rules"):
        (project / own).mkdir(parents=True)
        (project / own / "__init__.py").write_text("MINE = True\n")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "userproj"\ndependencies = ["vllm"]\n\n[tool.fixit]\nenable = ["pinfix.lint_rules"]\ndisable = ["fixit.rules"]\n'
    )
    (project / "m.py").write_text(SOURCE)
    return project


def _env() -> dict:
    # The user's environment: no PYTHONPATH pointing at this checkout.
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_readme_codemod_command_works_from_a_users_project(user_project: Path) -> None:
    assert not (user_project / ".libcst.codemod.yaml").exists()
    cmd = [
        sys.executable,
        "-m",
        "libcst.tool",
        "codemod",
        "--no-format",
        "-x",
        "pinfix.codemods.pin_pageable_sources.PinPageableSourcesCommand",
        "--hide-progress",
        "m.py",
    ]
    proc = subprocess.run(cmd, cwd=user_project, capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (user_project / "m.py").read_text() == FIXED
    # The documented command is the one in docs/usage.md.
    readme = (REPO / "docs" / "usage.md").read_text()
    assert (
        "python -m libcst.tool codemod --no-format -x pinfix.codemods.pin_pageable_sources.PinPageableSourcesCommand"
        in readme
    )


def test_fixit_loads_our_rules_next_to_a_users_own_packages(user_project: Path) -> None:
    fixit = Path(sys.executable).with_name("fixit")
    (user_project / "m.py").write_text(SOURCE + "\n\nclass C(object):\n    pass\n")
    proc = subprocess.run(
        [str(fixit), "lint", "m.py"], cwd=user_project, capture_output=True, text=True, env=_env(), timeout=300
    )
    out = proc.stdout + proc.stderr
    assert "PageableNonBlockingCopy" in out and "PIN001" in out, out
    # docs/usage.md's [tool.fixit] switches Fixit's own rules off (NoInheritFromObject would report).
    assert "NoInheritFromObject" not in out and "1 file with errors" in out


@pytest.mark.usefixtures("depends_on_vllm")
def test_cli_does_not_need_fixit(tmp_path: Path) -> None:
    """`pinfix rule` and SARIF output read the rules' documentation without importing Fixit."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "fixit.py").write_text("raise ImportError('fixit is not installed here')\n")
    env = dict(_env(), PYTHONPATH=str(blocker))
    (tmp_path / "m.py").write_text(SOURCE)
    rule = subprocess.run(
        [sys.executable, "-m", "pinfix", "rule", "PIN001"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert rule.returncode == 0 and "PIN001" in rule.stdout, rule.stderr
    sarif = subprocess.run(
        [sys.executable, "-m", "pinfix", "check", "--no-cache", "--output-format", "sarif", "m.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert sarif.returncode == 1 and '"fullDescription"' in sarif.stdout and "Traceback" not in sarif.stderr
    fix = subprocess.run(
        [sys.executable, "-m", "pinfix", "fix", "--no-progress", "m.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert fix.returncode == 0, fix.stderr
    assert (tmp_path / "m.py").read_text() == FIXED


def test_project_metadata_offers_the_front_ends_as_extras() -> None:
    text = (REPO / "pyproject.toml").read_text()
    deps = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert "fixit" not in deps  # the CLI does not need it
    assert 'fixit = ["fixit>=2.1"]' in text and 'lsp = ["fixit[lsp]>=2.1"]' in text


def test_both_ways_in_leave_the_heap_to_the_exit_without_a_last_walk(tmp_path: Path, monkeypatch, capfd) -> None:
    """The console script and ``python -m pinfix`` run :func:`pinfix.cli.command`: the
    exit code of ``main``, and the heap frozen so the interpreter's last collection
    does not walk what a deep run left (27 s of 62 s on vLLM 0.34.0, one process)."""
    import gc

    from pinfix.cli import command

    text = (REPO / "pyproject.toml").read_text()
    assert 'pinfix = "pinfix.cli:command"' in text.split("[project.scripts]", 1)[1].split("[", 1)[0]
    assert "sys.exit(command())" in (REPO / "pinfix" / "__main__.py").read_text()
    (tmp_path / "m.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pinfix", "check", "--no-cache", "--no-progress", "m.py"])
    gc.unfreeze()
    try:
        assert command() == 1
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert "PIN001" in capfd.readouterr().out


@pytest.mark.slow
@pytest.mark.usefixtures("depends_on_vllm")
def test_wheel_installs_only_the_pinfix_package_and_runs_without_fixit(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = dist.glob("pinfix-*.whl")
    tops = {name.split("/", 1)[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"pinfix"}
    names = zipfile.ZipFile(wheel).namelist()
    assert (
        "pinfix/lint_rules/pageable_non_blocking_copy.py" in names
        and "pinfix/codemods/pin_pageable_sources.py" in names
    )

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = _env()
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True, env=env, timeout=900
    )
    assert install.returncode == 0, install.stderr[-3000:]
    probe = subprocess.run(
        [str(python), "-c", "import importlib.util as u; print(u.find_spec('fixit'))"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert probe.stdout.strip() == "None"
    (tmp_path / "m.py").write_text(SOURCE)
    pinfix = venv / "bin" / "pinfix"
    check = subprocess.run(
        [str(pinfix), "check", "--no-cache", "m.py"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert check.returncode == 1 and "PIN001" in check.stdout, check.stderr
    rule = subprocess.run([str(pinfix), "rule", "PIN002"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert rule.returncode == 0 and "PIN002" in rule.stdout, rule.stderr
    fix = subprocess.run(
        [str(pinfix), "fix", "--no-progress", "m.py"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert fix.returncode == 0 and (tmp_path / "m.py").read_text() == FIXED, fix.stderr
