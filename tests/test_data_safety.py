"""Issue 25, items 1-3: pinfix never deletes, overwrites or leaves behind what it
does not own. Each test builds a real tree of user files, runs the command line in
a subprocess and checks every user file byte for byte."""

from __future__ import annotations

import hashlib
import os
import signal
from pathlib import Path
from typing import Dict

import pytest

from pinfix.cache import CACHEDIR_TAG, VERSION_MARKER
from tests.support import BAD_SOURCE, pinfix
from tests.support import write_text as write

#: The fix these tests write needs vLLM's helper; the files sit alone in ``tmp_path``,
#: with no project metadata that would make it the default.
VLLM_HELPER = ("--config", 'helper = "vllm.utils.torch_utils.np_to_pinned_tensor"')


def snapshot(root: Path, skip: str = ".pinfix_cache") -> Dict[str, str]:
    """Every file under ``root`` (but pinfix's own cache) by its hash."""
    found = {}
    for path in sorted(root.rglob("*")):
        if skip in path.relative_to(root).parts or not path.is_file():
            continue
        found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A user's folder of projects: a cloned repository beside two projects of theirs."""
    write(tmp_path / "mine" / "notes.txt", "do not lose\n")
    write(tmp_path / "mine" / "src" / "model.py", "x = 1\n")
    write(tmp_path / "mine" / ".gitignore", "build/\n")
    write(tmp_path / "theirs" / "data" / "a.csv", "1,2,3\n")
    write(tmp_path / "theirs" / "data" / "sub" / "b.bin", "\x00\x01")
    write(tmp_path / "cloned" / "m.py", BAD_SOURCE)
    write(tmp_path / "cloned" / "data" / "keep.txt", "precious\n")
    write(tmp_path / "cloned" / "data" / "deeper" / "more.txt", "precious too\n")
    write(tmp_path / "cloned" / ".gitignore", "*.log\n")
    return tmp_path


def env(**extra: str) -> dict:
    return {"PINFIX_CACHE_DIR": "", **extra}


def test_a_repository_setting_cannot_point_the_cache_outside_it(workspace: Path) -> None:
    before = snapshot(workspace)
    for value in ("..", str(workspace / "mine"), "../theirs/data"):
        write(workspace / "cloned" / "pyproject.toml", f'[tool.pinfix]\ncache-dir = "{value}"\n')
        before = snapshot(workspace)
        proc = pinfix("check", "m.py", cwd=workspace / "cloned", env=env())
        assert proc.returncode == 1, proc.stderr
        assert "outside the project" in proc.stderr and "Traceback" not in proc.stderr
        assert snapshot(workspace) == before
        # The project's own cache is used instead.
        assert (workspace / "cloned" / ".pinfix_cache" / "CACHEDIR.TAG").is_file()
        assert not (workspace / "CACHEDIR.TAG").exists() and not (workspace / "mine" / "CACHEDIR.TAG").exists()
    # Inside the project it is honoured.
    write(workspace / "cloned" / "pyproject.toml", '[tool.pinfix]\ncache-dir = "build/pf"\n')
    proc = pinfix("check", "m.py", cwd=workspace / "cloned", env=env())
    assert "warning" not in proc.stderr
    assert (workspace / "cloned" / "build" / "pf" / "CACHEDIR.TAG").is_file()


@pytest.mark.parametrize("how", ["option", "environment", "absolute", "dot"])
def test_a_cache_directory_that_is_not_pinfixs_is_never_touched(workspace: Path, how: str) -> None:
    cloned = workspace / "cloned"
    before = snapshot(workspace)
    if how == "option":
        args, extra = ["--cache-dir", "data"], {}
    elif how == "environment":
        args, extra = [], {"PINFIX_CACHE_DIR": "data"}
    elif how == "absolute":
        args, extra = ["--cache-dir", str(workspace / "theirs")], {}
    else:
        args, extra = [], {"PINFIX_CACHE_DIR": "."}
    for _ in range(2):  # the second run would prune what the first left
        proc = pinfix("check", *args, "m.py", cwd=cloned, env=env(**extra))
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.count("is not pinfix's cache") == 1 and "running without a cache" in proc.stderr
        assert snapshot(workspace) == before
    assert not list(workspace.rglob("CACHEDIR.TAG")) and not list(workspace.rglob(VERSION_MARKER))
    # `clean` refuses it too, with one line and a non-zero exit.
    proc = pinfix("clean", *args, cwd=cloned, env=env(**extra))
    assert proc.returncode == 2 and "not removed" in proc.stderr and "Traceback" not in proc.stderr
    assert snapshot(workspace) == before


def test_prune_and_clean_remove_only_what_pinfix_made(workspace: Path) -> None:
    cloned = workspace / "cloned"
    cache = cloned / ".pinfix_cache"
    assert pinfix("check", "m.py", cwd=cloned, env=env()).returncode == 1
    assert (cache / "CACHEDIR.TAG").read_text() == CACHEDIR_TAG
    # Things a user (or another tool) put in pinfix's directory are no version of pinfix's.
    write(cache / "0.0.1-old" / "notes.txt", "mine\n")
    write(cache / "0.0.2-old" / VERSION_MARKER, "not the marker pinfix writes\n")
    version = next(p for p in cache.iterdir() if (p / VERSION_MARKER).is_file())
    write(version / "my-settings" / "x.txt", "mine too\n")
    # A version pinfix made is pruned.
    stale = cache / "0.0.0-stale"
    (stale / "abc").mkdir(parents=True)
    (stale / VERSION_MARKER).write_bytes((version / VERSION_MARKER).read_bytes())
    for n in range(3):
        pinfix("check", "--config", f"line-length = {90 + n}", "m.py", cwd=cloned, env=env())
    assert not stale.exists()
    assert (cache / "0.0.1-old" / "notes.txt").read_text() == "mine\n"
    assert (cache / "0.0.2-old" / VERSION_MARKER).is_file()
    assert (version / "my-settings" / "x.txt").read_text() == "mine too\n"
    # `clean` removes pinfix's versions, its tag and ignore file, and keeps the rest.
    proc = pinfix("clean", cwd=cloned, env=env())
    assert "kept 0.0.1-old, 0.0.2-old" in proc.stderr, proc.stderr
    assert not version.exists() and (cache / "0.0.1-old" / "notes.txt").read_text() == "mine\n"
    assert not (cache / ".gitignore").exists() and (cache / "CACHEDIR.TAG").is_file()


def _pinfix_like_cache(root: Path) -> Path:
    """A directory laid out as pinfix's cache: its tag, its ignore file, a version of
    its own (marked) and another one, with entries."""
    from pinfix import __version__
    from pinfix.cache import IGNORE_ALL, VERSION_MARKER_TEXT

    write(root / "CACHEDIR.TAG", CACHEDIR_TAG)
    (root / ".gitignore").write_bytes(IGNORE_ALL)
    for version in (__version__, "0.0.0-old"):
        (root / version / "0123456789abcdef" / "ab").mkdir(parents=True)
        (root / version / VERSION_MARKER).write_bytes(VERSION_MARKER_TEXT)
        write(root / version / "0123456789abcdef" / "ab" / "entry", "{}")
    return root


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
@pytest.mark.parametrize("what", ["clean", "prune"])
def test_a_cache_swapped_for_a_link_after_its_check_is_not_removed_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    """The cache directory passes the ownership check, then is swapped for a link to
    another directory laid out as pinfix's cache (someone else's project): nothing
    there is removed."""
    import pinfix.cache as cache_module
    from pinfix.config import Config

    cache = _pinfix_like_cache(tmp_path / "project" / ".pinfix_cache")
    victim = _pinfix_like_cache(tmp_path / "elsewhere" / ".pinfix_cache")
    before = snapshot(victim, skip="")
    checked = cache_module.ownership

    def ownership_then_swap(directory: Path):  # type: ignore[no-untyped-def]
        found = checked(directory)
        if Path(directory) == cache and not Path(directory).is_symlink():
            os.rename(cache, cache.with_name("moved-away"))
            os.symlink(victim, cache)
        return found

    kept = cache_module.ResultCache(cache, Config())  # (its own check, before the swap)
    kept.used["0123456789abcdef"] = None
    monkeypatch.setattr(cache_module, "ownership", ownership_then_swap)
    if what == "clean":
        removed, why = cache_module.clean(cache)
        assert not removed and why is not None and "not removed" in why
    else:
        kept.prune()
    assert snapshot(victim, skip="") == before


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_a_version_swapped_for_a_link_before_its_removal_is_not_removed_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pinfix.cache as cache_module

    cache = _pinfix_like_cache(tmp_path / "project" / ".pinfix_cache")
    victim = _pinfix_like_cache(tmp_path / "elsewhere" / ".pinfix_cache")
    before = snapshot(victim, skip="")
    marked = cache_module._is_marked_at if cache_module.RELATIVE_REMOVAL else cache_module._marked_version

    def marked_then_swap(*args):  # type: ignore[no-untyped-def]
        found = marked(*args)
        old = cache / "0.0.0-old"
        if found and not old.is_symlink() and old.exists():
            os.rename(old, cache / "moved-away")
            os.symlink(victim / "0.0.0-old", old)
        return found

    monkeypatch.setattr(
        cache_module, "_is_marked_at" if cache_module.RELATIVE_REMOVAL else "_marked_version", marked_then_swap
    )
    cache_module.clean(cache)
    assert snapshot(victim, skip="") == before


def test_a_users_gitignore_in_the_cache_directory_is_never_replaced(workspace: Path) -> None:
    cloned = workspace / "cloned"
    cache = cloned / ".pinfix_cache"
    write(cache / "CACHEDIR.TAG", CACHEDIR_TAG)
    write(cache / ".gitignore", "!keep-me\n")
    assert pinfix("check", "m.py", cwd=cloned, env=env()).returncode == 1
    assert (cache / ".gitignore").read_text() == "!keep-me\n"
    assert pinfix("clean", cwd=cloned, env=env()).returncode == 0
    assert (cache / ".gitignore").read_text() == "!keep-me\n"


def test_an_empty_directory_becomes_the_cache_and_clean_removes_it(workspace: Path) -> None:
    cloned = workspace / "cloned"
    (cloned / "empty").mkdir()
    assert pinfix("check", "--cache-dir", "empty", "m.py", cwd=cloned, env=env()).returncode == 1
    assert (cloned / "empty" / "CACHEDIR.TAG").is_file() and (cloned / "empty" / ".gitignore").read_text() == "*\n"
    proc = pinfix("clean", "--cache-dir", "empty", cwd=cloned, env=env())
    assert proc.returncode == 0 and "removed" in proc.stderr and not (cloned / "empty").exists()


# --- 2. An edit saved while `fix` runs ---------------------------------------------------------


@pytest.mark.parametrize("same_stat", [False, True])
def test_an_edit_saved_between_flush_and_rename_survives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, same_stat: bool
) -> None:
    """The save lands in the last window: after pinfix flushed its new bytes, before
    the rename. ``same_stat``: the edit keeps the size and the modification time."""
    import pinfix.writing
    from tests.test_bad_input import cli

    target = write(tmp_path / "m.py", BAD_SOURCE)
    edited = BAD_SOURCE.replace("dst, a", "dst, b").replace("(a)", "(b)") if same_stat else BAD_SOURCE + "# saved\n"
    assert len(edited) == len(BAD_SOURCE) or not same_stat
    real_fsync = os.fsync

    def fsync_then_save(fd: int) -> None:
        real_fsync(fd)
        info = target.stat()
        target.write_text(edited)  # the editor saves in place
        if same_stat:
            os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))

    monkeypatch.setattr(pinfix.writing.os, "fsync", fsync_then_save)
    rc, _, err = cli("fix", "-j", "1", *VLLM_HELPER, str(target))
    assert rc == 2, err
    assert "changed while" in err and "not overwritten" in err and "write refused (changed while fixing)" in err
    assert target.read_text() == edited
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]  # no temporary file left


# --- 3. SIGTERM and SIGHUP during `fix` ----------------------------------------------------------


def _stop_signals_as_default() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


@pytest.mark.usefixtures("depends_on_vllm")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigterm_and_sighup_during_fix_leave_every_file_old_or_new(tmp_path: Path, signum: int, jobs: str) -> None:
    from tests.test_bad_input import fix_stopped, old_or_new, variant_tree

    tree = tmp_path / "tree"
    originals, fixed = variant_tree(tree)
    returncode, err = fix_stopped(tree, originals, jobs, signum, _stop_signals_as_default)
    states = old_or_new(originals, fixed)
    assert [p.name for p in tree.iterdir() if not p.name.endswith(".py")] == []  # no .pinfix-tmp left
    assert states["old"] > 0, "the run finished before the signal; make the files slower to process"
    assert returncode == 128 + signum, err
    assert f"interrupted ({signal.Signals(signum).name}); every file is either as it was or fully rewritten" in err
    assert "Traceback" not in err, err


# --- Found looking further: what a rename drops ------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "setxattr"), reason="no extended attributes here")
@pytest.mark.usefixtures("depends_on_vllm")
def test_fix_keeps_the_files_extended_attributes(tmp_path: Path) -> None:
    from tests.test_bad_input import FIXED, SAMPLE, cli

    target = tmp_path / "m.py"
    target.write_bytes(SAMPLE)
    try:
        os.setxattr(target, "user.reviewed-by", b"ana")
    except OSError:
        pytest.skip("this file system keeps no user attributes")
    rc, _, err = cli("fix", "-j", "1", str(target))
    assert rc == 0, err
    assert target.read_bytes() == FIXED
    assert os.getxattr(target, "user.reviewed-by") == b"ana"


def test_links_committed_inside_a_cache_are_never_written_or_pruned_through(tmp_path: Path) -> None:
    """A repository can commit a `.pinfix_cache` of pinfix's own shape, with links inside
    it: the deep cache's listings and texts folders pointing at the user's files."""
    from tests.test_deep_cache import COPIER, PINNED_MAKER, tree

    victim = tmp_path / "victim"
    for i in range(20):
        write(victim / f"{i:032x}", f"user file {i}\n")  # named as listings are
    write(victim / "ab" / ("0" * 64 + ".z"), "user file\n")
    before = snapshot(victim)
    root = tree(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER})
    assert pinfix("check", "pkg", cwd=root, env=env()).returncode == 0
    (settings,) = [p for p in (root / ".pinfix_cache").glob("*/*") if p.is_dir()]
    for name in ("listings", "texts"):
        if (settings / name).exists():
            import shutil

            shutil.rmtree(settings / name)
        (settings / name).symlink_to(victim, target_is_directory=True)
    for n in range(12):  # new listings each time: the prune would take all but the newest
        write(root / "pkg" / f"new{n}.py", f"x = {n}\n")
        proc = pinfix("check", "pkg", cwd=root, env=env())
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert snapshot(victim) == before
    assert sorted(p.name for p in victim.iterdir()) == sorted([f"{i:032x}" for i in range(20)] + ["ab"])


def test_a_meaning_is_never_written_through_a_texts_folder_that_is_a_link(tmp_path: Path) -> None:
    """A committed cache whose texts folder points at the user's files, holding the kept
    text of a module a verdict read (so its meaning is worked out after a comment is added):
    the meaning is not written beside it there."""
    import zlib

    from tests.test_deep_cache import COPIER, PINNED_MAKER, tree

    root = tree(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER})
    assert pinfix("check", "pkg", cwd=root, env=env()).returncode == 0
    (settings,) = [p for p in (root / ".pinfix_cache").glob("*/*") if p.is_dir()]
    victim = tmp_path / "victim"
    digest = hashlib.sha256(PINNED_MAKER.encode()).hexdigest()
    (victim / digest[:2]).mkdir(parents=True)
    (victim / digest[:2] / (digest + ".z")).write_bytes(zlib.compress(PINNED_MAKER.encode()))
    before = snapshot(victim)
    import shutil

    shutil.rmtree(settings / "texts")
    (settings / "texts").symlink_to(victim, target_is_directory=True)
    write(root / "pkg" / "a.py", PINNED_MAKER + "# a comment: the same meaning\n")
    proc = pinfix("check", "pkg/a.py", cwd=root, env=env())
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert snapshot(victim) == before


def test_a_file_with_the_longest_name_allowed_is_fixed(tmp_path: Path) -> None:
    from tests.test_bad_input import FIXED, SAMPLE, cli

    for stem in ("a" * 252, "é" * 126):  # 255 bytes with `.py`, the most a name may have
        target = tmp_path / (stem + ".py")
        target.write_bytes(SAMPLE)
        rc, _, err = cli("fix", "-j", "1", *VLLM_HELPER, str(target))
        assert rc == 0, err
        assert target.read_bytes() == FIXED
    assert all(p.suffix == ".py" for p in tmp_path.iterdir())
