"""The hooks, through the real pre-commit: the README's snippet as written
(only its ``<this repository>`` placeholder replaced by a local clone of this
tree, with no tags: tags do not travel with this repository), a two-pyproject
tree, ``--force-exclude``, and one pinfix process per run (``require_serial``)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

from tests.support import BAD_SOURCE, REPO

PLACEHOLDER = "<this repository>"


def _pre_commit() -> str:
    found = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    if not Path(found).exists():
        pytest.fail("pre-commit is a test dependency (pip install -e '.[test]')")
    return found


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def readme_snippet() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## pre-commit") :]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match, "the README's pre-commit section has no yaml snippet"
    return match.group(1)


def test_readme_snippet_names_a_rev_a_fresh_clone_has_and_the_hooks_follow_ruff(
    hook_repo: Dict[str, Path], tmp_path: Path
) -> None:
    config = yaml.safe_load(readme_snippet())
    (repo,) = config["repos"]
    assert repo["repo"] == PLACEHOLDER
    # A plain clone, as a user makes one: its rev must resolve there.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(hook_repo["clone"]), str(clone)], check=True)
    subprocess.run(
        ["git", "rev-parse", "--verify", f"origin/{repo['rev']}"], cwd=clone, check=True, capture_output=True
    )
    for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text()):
        assert hook["require_serial"] is True, hook["id"]
        assert hook["minimum_pre_commit_version"], hook["id"]
        assert "--force-exclude" in hook["entry"].split(), hook["id"]


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """A clone of this tree as it is now (tracked and new files) on ``main``,
    untagged; and one pre-commit cache for all tests."""
    base = tmp_path_factory.mktemp("hooks")
    clone = base / "pinfix"
    listed = _git(REPO, "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():
            (clone / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / rel)
    _git(clone, "init", "-q")
    _git(clone, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(clone, "add", "-A")
    _git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "release")
    return {"clone": clone, "home": base / "pre-commit-home"}


def user_repo(path: Path, hook_repo: Dict[str, Path], files: Dict[str, str], hooks_yaml: str = "") -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    config = hooks_yaml or readme_snippet()
    (path / ".pre-commit-config.yaml").write_text(config.replace(PLACEHOLDER, str(hook_repo["clone"])))
    _git(path, "add", "-A")
    return path


def pre_commit(repo: Path, hook_repo: Dict[str, Path], *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(hook_repo["home"]), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PINFIX_CACHE_DIR", None)
    return subprocess.run(
        [_pre_commit(), "run", "--color", "never", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_readme_snippet_works_as_written(tmp_path: Path, hook_repo: Dict[str, Path]) -> None:
    # A project that depends on vLLM: the fix uses vLLM's helper.
    repo = user_repo(
        tmp_path / "user", hook_repo, {"model.py": BAD_SOURCE, "clean.py": "x = 1\n", "requirements.txt": "vllm\n"}
    )
    check = pre_commit(repo, hook_repo, "--all-files")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "model.py:5:15: PIN001" in check.stdout
    # The snippet's commented-out hook, switched on.
    config = repo / ".pre-commit-config.yaml"
    config.write_text(config.read_text().replace("# - id: pinfix-fix", "- id: pinfix-fix"))
    fix = pre_commit(repo, hook_repo, "pinfix-fix", "--all-files")
    assert fix.returncode == 1, fix.stdout + fix.stderr  # files were modified
    assert "np_to_pinned_tensor(a)" in (repo / "model.py").read_text()
    again = pre_commit(repo, hook_repo, "pinfix", "--all-files")
    assert again.returncode == 0, again.stdout + again.stderr


def test_two_pyproject_tree_uses_each_files_settings(tmp_path: Path, hook_repo: Dict[str, Path]) -> None:
    repo = user_repo(
        tmp_path / "vllm-like",
        hook_repo,
        {
            "pyproject.toml": '[project]\nname = "top"\n\n[tool.pinfix]\nhelper = "mylib.pin.pinned"\n',
            "examples/demo/pyproject.toml": '[project]\nname = "demo"\n',
            "examples/demo/run.py": BAD_SOURCE,
            "pkg/worker.py": BAD_SOURCE,
        },
    )
    config = repo / ".pre-commit-config.yaml"
    config.write_text(config.read_text().replace("# - id: pinfix-fix", "- id: pinfix-fix"))
    for order in (["examples/demo/run.py", "pkg/worker.py"], ["pkg/worker.py", "examples/demo/run.py"]):
        proc = pre_commit(repo, hook_repo, "pinfix", "--files", *order)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        found = [line for line in proc.stdout.splitlines() if ": PIN001 " in line]
        assert len(found) == 2, proc.stdout
        # Each file fixed with the helper its own settings name.
        proc = pre_commit(repo, hook_repo, "pinfix-fix", "--files", *order)
        for rel in order:
            assert "pinned(a)" in (repo / rel).read_text(), proc.stdout + proc.stderr
            (repo / rel).write_text(BAD_SOURCE)
    assert (repo / ".pinfix_cache" / "CACHEDIR.TAG").is_file()
    assert not (repo / "examples" / "demo" / ".pinfix_cache").exists()


def test_force_exclude_keeps_excluded_files_out(tmp_path: Path, hook_repo: Dict[str, Path]) -> None:
    repo = user_repo(
        tmp_path / "excl",
        hook_repo,
        {
            "pyproject.toml": '[tool.pinfix]\nextend-exclude = ["generated/"]\n',
            "generated/gen.py": BAD_SOURCE,
            "venv/lib/vendored.py": BAD_SOURCE,
            "ok.py": "x = 1\n",
        },
    )
    proc = pre_commit(repo, hook_repo, "pinfix", "--all-files")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (repo / "real.py").write_text(BAD_SOURCE)
    _git(repo, "add", "real.py")
    proc = pre_commit(repo, hook_repo, "pinfix", "--all-files")
    assert proc.returncode == 1 and "real.py:5:15: PIN001" in proc.stdout and "gen.py" not in proc.stdout


def test_one_pinfix_process_per_run(tmp_path: Path, hook_repo: Dict[str, Path]) -> None:
    files = {f"m{i:02}.py": f"x = {i}\n" for i in range(40)}
    hooks = readme_snippet().replace("- id: pinfix ", "- id: pinfix\n        args: [--verbose]  ")
    repo = user_repo(tmp_path / "many", hook_repo, files, hooks)
    proc = pre_commit(repo, hook_repo, "pinfix", "--all-files", "--verbose")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs: List[str] = re.findall(r"pinfix: (\d+) files? scanned", proc.stdout)
    assert runs == ["40"], proc.stdout  # require_serial: one batch, not one per CPU


PINNED_MAKER = "import torch\n\n\ndef make():\n    return torch.zeros(4, pin_memory=True)\n"
COPIER = "from pkg.a import make\n\n\ndef send(dev):\n    return make().to(dev, non_blocking=True)\n"


def test_deep_hook_rechecks_the_copies_that_depend_on_a_changed_file(
    tmp_path: Path, hook_repo: Dict[str, Path]
) -> None:
    """Issue 17: `a.py`'s `make()` returns pinned memory and `b.py` copies it with
    non_blocking; a commit that drops `pin_memory` in `a.py` alone must fail, naming
    the copy in `b.py` and the file it depends on."""
    repo = user_repo(
        tmp_path / "cross",
        hook_repo,
        {
            "pyproject.toml": "[tool.pinfix]\ndeep = true\n",
            "pkg/__init__.py": "",
            "pkg/a.py": PINNED_MAKER,
            "pkg/b.py": COPIER,
        },
    )
    first = pre_commit(repo, hook_repo, "pinfix", "--all-files")
    assert first.returncode == 0, first.stdout + first.stderr
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    (repo / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    _git(repo, "add", "pkg/a.py")
    staged = pre_commit(repo, hook_repo, "pinfix")  # what `git commit` runs: the staged files only
    assert staged.returncode == 1, staged.stdout + staged.stderr
    (line,) = [li for li in staged.stdout.splitlines() if ": PIN002 " in li]
    assert line.startswith("pkg/b.py:5:12: PIN002") and "depends on `pkg/a.py`" in line, staged.stdout
    # Committing again without a fix still fails; pinning it again passes.
    assert pre_commit(repo, hook_repo, "pinfix").returncode == 1
    (repo / "pkg/a.py").write_text(PINNED_MAKER)
    _git(repo, "add", "pkg/a.py")
    fixed = pre_commit(repo, hook_repo, "pinfix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
