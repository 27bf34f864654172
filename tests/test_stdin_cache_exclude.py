"""Issue 15: editors (stdin), cache hygiene, and which files are excluded."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pinfix.cache import KEEP_OTHER_SETTINGS, VERSION_MARKER
from tests.support import BAD_SOURCE, pinfix, sigint_as_default
from tests.support import write_text as write

# --- stdin -------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "pyproject.toml", '[tool.pinfix]\nhelper = "top.mem.pinned"\n')
    write(tmp_path / "sub" / "pinfix.toml", 'helper = "sub.mem.pin_sub"\n')
    return tmp_path


def test_check_reads_stdin_with_the_settings_of_stdin_filename(project: Path) -> None:
    proc = pinfix("check", "--output-format", "json", "-", cwd=project, stdin=BAD_SOURCE.encode())
    assert proc.returncode == 1
    ((path, finding),) = [(f["path"], f) for f in json.loads(proc.stdout)["findings"]]
    assert (path, finding["line"], finding["column"]) == ("-", 5, 15) and finding["fix"]["title"].endswith(
        "`pinned(...)`"
    )
    proc = pinfix(
        "check", "--output-format", "json", "--stdin-filename", "sub/x.py", cwd=project, stdin=BAD_SOURCE.encode()
    )
    ((path, finding),) = [(f["path"], f) for f in json.loads(proc.stdout)["findings"]]
    assert path == "sub/x.py" and finding["fix"]["title"].endswith("`pin_sub(...)`")
    assert not (project / "sub" / "x.py").exists()


def test_fix_dash_writes_the_fixed_source_to_stdout(project: Path) -> None:
    proc = pinfix("fix", "--stdin-filename", "sub/x.py", "-", cwd=project, stdin=BAD_SOURCE.encode())
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout
        == b"from sub.mem import pin_sub\n\n\ndef f(dst, a):\n    dst.copy_(pin_sub(a), non_blocking=True)\n"
    )
    unchanged = b"x = 1\r\n"
    assert pinfix("fix", "-", cwd=project, stdin=unchanged).stdout == unchanged
    diff = pinfix("fix", "--diff", "-", cwd=project, stdin=BAD_SOURCE.encode())
    assert diff.returncode == 1 and diff.stdout.startswith(b"--- a/-\n+++ b/-\n")


def test_stdin_filename_honours_force_exclude(project: Path) -> None:
    proc = pinfix("fix", "--force-exclude", "--stdin-filename", "venv/x.py", cwd=project, stdin=BAD_SOURCE.encode())
    assert proc.returncode == 0 and proc.stdout == BAD_SOURCE.encode()
    proc = pinfix("check", "--force-exclude", "--stdin-filename", "venv/x.py", cwd=project, stdin=BAD_SOURCE.encode())
    assert proc.returncode == 0 and proc.stdout == b""


# --- cache ---------------------------------------------------------------------------


def cache_env() -> dict:
    return {"PINFIX_CACHE_DIR": ""}


def settings_dirs(cache: Path) -> list:
    return sorted(p.name for version in cache.iterdir() if version.is_dir() for p in version.iterdir() if p.is_dir())


def test_cache_is_tagged_at_the_project_root_and_cleaned(project: Path) -> None:
    write(project / "sub" / "deeper" / "m.py", BAD_SOURCE)
    proc = pinfix("check", "m.py", cwd=project / "sub" / "deeper", env=cache_env())
    assert proc.returncode == 1
    cache = project / "sub" / ".pinfix_cache"  # the working directory's settings are in sub/
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache / ".gitignore").read_text() == "*\n"
    clean = pinfix("clean", cwd=project, env=cache_env())
    assert clean.returncode == 0 and "removed" in clean.stderr and not cache.exists()


def test_cache_dir_setting_option_and_environment(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    write(project / "m.py", BAD_SOURCE)
    write(project / "pyproject.toml", '[tool.pinfix]\ncache-dir = "build-cache/pf"\n')
    pinfix("check", "m.py", cwd=project, env=cache_env())
    assert (project / "build-cache" / "pf" / "CACHEDIR.TAG").is_file()
    elsewhere = tmp_path_factory.mktemp("c") / "opt"
    pinfix("check", "--cache-dir", str(elsewhere), "m.py", cwd=project, env=cache_env())
    assert (elsewhere / "CACHEDIR.TAG").is_file()
    env_dir = tmp_path_factory.mktemp("c") / "env"
    pinfix("check", "m.py", cwd=project, env={"PINFIX_CACHE_DIR": str(env_dir)})
    assert (env_dir / "CACHEDIR.TAG").is_file()


def test_cache_prunes_other_versions_and_old_settings(project: Path) -> None:
    write(project / "m.py", BAD_SOURCE)
    cache = project / ".pinfix_cache"
    pinfix("check", "m.py", cwd=project, env=cache_env())
    stale_version = cache / "0.0.1-old" / "abc" / "00"
    stale_version.mkdir(parents=True)
    marker = next(cache.glob(f"*/{VERSION_MARKER}"))
    (cache / "0.0.1-old" / VERSION_MARKER).write_bytes(marker.read_bytes())  # a version pinfix made
    lengths = range(90, 90 + KEEP_OTHER_SETTINGS + 3)
    for length in lengths:
        pinfix("check", "--config", f"line-length = {length}", "m.py", cwd=project, env=cache_env())
    assert not (cache / "0.0.1-old").exists()
    # This run's settings and the KEEP_OTHER_SETTINGS most recently used others are kept.
    kept = KEEP_OTHER_SETTINGS + 1
    assert len(settings_dirs(cache)) == kept
    entries = sum(1 for _ in cache.rglob("*") if _.is_file() and _.parent.parent.parent.parent == cache)
    assert entries == kept
    # Editing a file replaces its entry rather than adding one.
    for n in range(3):
        (project / "m.py").write_text(BAD_SOURCE + f"x = {n}\n")
        pinfix("check", "--config", f"line-length = {lengths[-1]}", "m.py", cwd=project, env=cache_env())
    assert sum(1 for p in cache.rglob("*") if p.is_file() and len(p.name) == 64) == kept


def test_clean_never_follows_a_symlinked_cache(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    write(target / "keep.txt", "data")
    write(target / ".gitignore", "*\n")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / ".pinfix_cache").symlink_to(target)
    pinfix("clean", cwd=tmp_path / "work", env=cache_env())
    assert (target / "keep.txt").read_text() == "data"


# --- exclusion -----------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A package, and copies of it where ruff would not look."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for where in (
        "pkg",
        "venv/lib/pkg",
        ".venv/pkg",
        "dist/pkg",
        "build/lib/pkg",
        "node_modules/x",
        "site-packages/pkg",
        "tools/build",
    ):
        write(tmp_path / where / "m.py", BAD_SOURCE)
    write(tmp_path / "tools" / "build" / "__init__.py", "")  # a package named build: kept
    write(tmp_path / "pkg" / "private.py", BAD_SOURCE)
    write(tmp_path / "pkg" / "generated.py", BAD_SOURCE)
    (tmp_path / ".git" / "info" / "exclude").write_text("pkg/private.py\n")
    return tmp_path


def test_default_excludes_and_git_info_exclude(tree: Path) -> None:
    files = pinfix("show-files", cwd=tree).stdout.splitlines()
    assert files == ["pkg/generated.py", "pkg/m.py", "tools/build/__init__.py", "tools/build/m.py"]


def test_exclude_replaces_and_extend_exclude_adds(tree: Path) -> None:
    write(tree / "pyproject.toml", '[tool.pinfix]\nextend-exclude = ["generated.py"]\n')
    assert "pkg/generated.py" not in pinfix("show-files", cwd=tree).stdout
    write(tree / "pyproject.toml", '[tool.pinfix]\nexclude = ["/pkg/"]\n')
    files = pinfix("show-files", cwd=tree).stdout.splitlines()
    assert "dist/pkg/m.py" in files and not any(f.startswith("pkg/") for f in files)
    assert "pkg/generated.py" not in pinfix("show-files", "--extend-exclude", "generated.py", cwd=tree).stdout


def test_force_exclude_applies_to_named_files(tree: Path) -> None:
    named = ["venv/lib/pkg/m.py", "dist/pkg/m.py", "pkg/m.py"]
    proc = pinfix("check", "--output-format", "concise", *named, cwd=tree)
    assert len(proc.stdout.splitlines()) == 3  # named explicitly: checked
    proc = pinfix("check", "--force-exclude", "--output-format", "concise", *named, cwd=tree)
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == ["pkg/m.py"]
    write(tree / "pyproject.toml", '[tool.pinfix]\nforce-exclude = true\nextend-exclude = ["pkg/m.py"]\n')
    assert pinfix("check", *named, cwd=tree).stdout == ""


# --- the interrupt message -------------------------------------------------------------


def test_interrupted_check_does_not_speak_of_rewritten_files(tmp_path: Path) -> None:
    body = "".join(f"def f{i}(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n\n" for i in range(400))
    for i in range(240):  # about 8 s of work: the interrupt at 2 s must find it running
        write(tmp_path / f"m{i}.py", "import torch\n\n" + body)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pinfix", "check", "--no-cache", "-j", "2", "."],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_default,
    )
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode != 130:
        pytest.fail(
            f"the run finished before the interrupt (exit {proc.returncode}); make the files slower: {err[-500:]}"
        )
    assert err.splitlines()[-1] == "pinfix: interrupted"
    assert "rewritten" not in err


def test_a_walk_excludes_each_file_as_the_full_rule_does(tmp_path: Path) -> None:
    # Project.excluded decides the folders' part once per folder; every answer must be
    # what is_excluded gives for the file alone.
    import os

    from pinfix.project import Project, is_excluded

    write(
        tmp_path / "pyproject.toml",
        '[tool.pinfix]\nextend-exclude = ["gen_*.py", "third/*", "tools/**/x.py", "venv"]\n',
    )
    files = [
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg/gen_a.py",
        "pkg/build/__init__.py",
        "pkg/build/b.py",  # a package named build
        "build/lib/pkg/c.py",
        "build/lib/pkg/gen_c.py",  # a build's output
        "third/d.py",
        "third/sub/e.py",
        "tools/x.py",
        "tools/deep/er/x.py",
        "tools/deep/y.py",
        "venv/lib/f.py",
        "src/venv.py",
        "src/dist/g.py",
        "node_modules/h.py",
    ]
    for rel in files:
        write(tmp_path / rel, "x = 1\n")
    project = Project(cwd=tmp_path)
    answers = {}
    for rel in files:
        path = os.path.realpath(tmp_path / rel)
        config = project.config_for_directory(os.path.dirname(path))
        answers[rel] = project.excluded(path, False)
        assert answers[rel] == is_excluded(config, path, False, real=True), rel
    assert not answers["pkg/a.py"] and not answers["pkg/build/b.py"] and not answers["tools/deep/y.py"]
    assert answers["pkg/gen_a.py"] and answers["build/lib/pkg/c.py"] and answers["third/sub/e.py"]
    assert answers["tools/deep/er/x.py"] and answers["venv/lib/f.py"] and answers["src/dist/g.py"]
