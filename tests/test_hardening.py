"""Issue 14, the shell's part: no input may hang, crash, escape the tree or
change a byte it did not mean to. Every input here is generated."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import pinfix.writing
from pinfix.cache import CACHEDIR_TAG
from tests.test_bad_input import (
    FIXED,
    RUNNING_AS_ROOT,
    SAMPLE,
    assert_clean_stderr,
    assert_one_error,
    cli,
    cli_subprocess,
    error_lines,
    write,
)

#: The trees here are vLLM-shaped: their fixes use vLLM's helper (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("depends_on_vllm")

HAS_FIFO = hasattr(os, "mkfifo")


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write(tmp_path / "good.py", SAMPLE)


def with_tail(tail: bytes, fixed: bool = False) -> bytes:
    """The sample file (or its fixed form) with ``tail`` after it."""
    return (FIXED if fixed else SAMPLE) + tail


# --- 1. Nothing blocks on a FIFO ------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_FIFO, reason="no FIFOs here")
def test_fifo_named_like_a_source_file_is_reported_not_waited_on(tmp_path: Path, good: Path) -> None:
    os.mkfifo(tmp_path / "bad.py")
    proc = cli_subprocess("check", str(tmp_path), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert_one_error(proc.stderr, tmp_path / "bad.py", "not a regular file")
    assert f"{good}:6:" in proc.stdout  # the other file is still checked


@pytest.mark.skipif(not HAS_FIFO, reason="no FIFOs here")
def test_gitignore_that_is_a_fifo_is_reported_not_waited_on(tmp_path: Path, good: Path) -> None:
    sub = write(tmp_path / "sub" / "inner.py", SAMPLE).parent
    os.mkfifo(sub / ".gitignore")
    proc = cli_subprocess("fix", str(tmp_path), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert_one_error(proc.stderr, sub / ".gitignore", "not a regular file")
    assert good.read_bytes() == FIXED and (sub / "inner.py").read_bytes() == FIXED


@pytest.fixture
def own_cache(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's own cache: run from the project, without the tests' ``PINFIX_CACHE_DIR``."""
    monkeypatch.delenv("PINFIX_CACHE_DIR", raising=False)
    monkeypatch.chdir(project)
    return project


def cache_entries(project: Path) -> List[Path]:
    """The entries (``<version>/<settings>/<2 hex>/<entry>``), not the directories or tag files."""
    return [p for p in (project / ".pinfix_cache").glob("*/*/*/*") if not p.name.startswith(".")]


@pytest.mark.skipif(not HAS_FIFO, reason="no FIFOs here")
def test_cache_entry_that_is_a_fifo_is_a_miss(own_cache: Path) -> None:
    project = own_cache
    bad = write(project / "m.py", SAMPLE)
    first = cli_subprocess("check", str(bad), cwd=project, timeout=60)
    (entry,) = cache_entries(project)
    entry.unlink()
    os.mkfifo(entry)
    again = cli_subprocess("check", str(bad), cwd=project, timeout=60)
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout) == (1, again.stdout)
    assert f"{bad}:6:" in again.stdout


# --- 2. Odd ignore files and cache entries give no traceback ------------------------------------------


def test_gitignore_lines_git_cannot_use_are_skipped_the_others_count(tmp_path: Path, good: Path) -> None:
    write(tmp_path / "skipped.py", SAMPLE)
    write(tmp_path / "z.py", SAMPLE)
    (tmp_path / ".gitignore").write_text("[z-a].py\n!\n\\\nskipped.py\n")
    rc, out, err = cli("check", str(tmp_path))
    assert rc == 1, err
    assert_clean_stderr(err)
    assert "skipped.py" not in out  # the usable line still applies
    assert f"{good}:6:" in out and f"{tmp_path / 'z.py'}:6:" in out  # `[z-a].py` matches nothing, as in git


def test_cache_entry_of_deeply_nested_json_is_a_miss(own_cache: Path) -> None:
    project = own_cache
    bad = write(project / "m.py", SAMPLE)
    first = cli("check", str(bad))
    (entry,) = cache_entries(project)
    entry.write_text("[" * 200_000 + "]" * 200_000)
    assert cli("check", str(bad)) == first
    assert first[0] == 1 and f"{bad}:6:" in first[1]


# --- 3. What CPython rejects is an error; what it accepts is handled; a crash stays in its file -----------


DEEP = {
    # name: (source, what CPython says)
    "1220 nested calls": (b"x = " + b"f(" * 1220 + b"1" + b")" * 1220 + b"\n", "too many nested parentheses"),
    "1270 nested lists": (b"x = " + b"[" * 1270 + b"]" * 1270 + b"\n", "too many nested parentheses"),
    "3270 chained calls": (b"x = a" + b".b()" * 3270 + b"\n", "too deeply nested"),
    "500 nested parentheses": (b"x = " + b"(" * 500 + b"1" + b")" * 500 + b"\n", "too many nested parentheses"),
    "NUL in a string": (b"x = 'a\0b'\n", "null bytes"),
    "100,000 digits": (b"x = " + b"7" * 100_000 + b"\n", "Exceeds the limit"),
}


@pytest.mark.parametrize("name", list(DEEP))
def test_what_cpython_rejects_is_an_error_at_its_place_and_never_rewritten(
    tmp_path: Path, good: Path, name: str
) -> None:
    source, says = DEEP[name]
    bad = write(tmp_path / "bad.py", SAMPLE + b"\n" + source)
    proc = cli_subprocess("fix", "-j", "1", str(tmp_path))
    assert proc.returncode == 2, proc.stderr  # not 139 (LibCST's parser crashing), not 0 (rewritten)
    line = assert_one_error(proc.stderr, bad, says)
    if "nested" not in says or "parentheses" in says:
        assert ": error: syntax error at 8:" in line, line  # CPython's own line
    assert bad.read_bytes() == SAMPLE + b"\n" + source
    assert good.read_bytes() == FIXED


def test_a_file_python_parses_but_cannot_compile_is_never_rewritten(tmp_path: Path, good: Path) -> None:
    odd = write(tmp_path / "odd.py", SAMPLE + b"\nreturn 1\n")
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 2
    # As `check` reports it (issue 25 item 12): that syntax error, and no finding to fix.
    assert_one_error(err, odd, "syntax error at 8:1: 'return' outside function (Python will not compile the file)")
    assert odd.read_bytes() == SAMPLE + b"\nreturn 1\n" and good.read_bytes() == FIXED


def test_python2_file_is_reported_at_its_line(tmp_path: Path) -> None:
    old = write(tmp_path / "old.py", SAMPLE + b"\nprint 'from_numpy non_blocking'\n")
    rc, _, err = cli("check", str(old))
    assert rc == 2
    assert_one_error(err, old, "syntax error at 8:1: Missing parentheses in call to 'print'")


NESTED_VALID = {
    "150 nested calls": b"x = " + b"f(" * 150 + b"1" + b")" * 150 + b"\n",
    "190 nested lists": b"x = " + b"[" * 190 + b"]" * 190 + b"\n",
    "90 nested blocks": b"".join(b" " * i + b"if x:\n" for i in range(90)) + b" " * 90 + b"pass\n",
    "250 chained calls": b"x = a" + b".b()" * 250 + b"\n",
    "900 unary minus": b"x = " + b"-" * 900 + b"1\n",
}


@pytest.mark.parametrize("name", list(NESTED_VALID))
def test_deep_nesting_python_accepts_is_analysed_and_fixed(tmp_path: Path, name: str) -> None:
    tail = b"\n" + NESTED_VALID[name]
    deep = write(tmp_path / "deep.py", with_tail(tail))
    rc, _, err = cli("fix", "-j", "1", str(deep))
    assert (rc, error_lines(err)) == (0, []), err  # not "internal error (RecursionError)"
    assert deep.read_bytes() == with_tail(tail, fixed=True)


def test_nesting_beyond_what_pinfix_analyses_is_refused_quickly_and_clearly(tmp_path: Path, good: Path) -> None:
    from pinfix.engine import MAX_SYNTAX_DEPTH

    tail = b"\nx = a" + b".b()" * (MAX_SYNTAX_DEPTH // 2 + 20) + b"\n"  # each call is two levels deep
    deep = write(tmp_path / "deep.py", with_tail(tail))
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 2
    assert_one_error(err, deep, f"nested more than {MAX_SYNTAX_DEPTH} levels deep")
    assert deep.read_bytes() == with_tail(tail)
    assert good.read_bytes() == FIXED


def _depth(node: "object") -> int:
    import ast

    return 1 + max((_depth(c) for c in ast.iter_child_nodes(node)), default=-1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "make",
    [
        lambda k: "x = " + "-" * k + "1",
        lambda k: "x = " + "f(" * k + ")" * k,
        lambda k: "x = a" + ".b" * k,
        lambda k: "x = " + "lambda: " * k + "1",
        lambda k: "x = " + "not " * k + "y",
        lambda k: "x = (a" + "\n.b()" * k + ")",  # over many lines
        lambda k: (
            "def f():\n" + "".join(" " * (i + 1) + "if x:\n" for i in range(k // 3)) + " " * (k // 3 + 1) + "pass"
        ),
        # Decorators stand above the def's first line: a short def does not hide them.
        lambda k: "@d(" + "-" * k + "1)\ndef f(): pass",
        lambda k: "class C:\n    @d(\n" + "-" * k + "1)\n    def f(self):\n        pass",
        lambda k: "@d(a" + "\n.b()" * k + ")\nclass C: pass",
        # Long multi-line statements around short deep ones, and the other way round.
        lambda k: "def f():\n" + "    y = 1\n" * 40 + "    x = " + "-" * k + "1\n" + "    z = 2\n" * 40,
        lambda k: "x = [\n" + "    1,\n" * 200 + "    " + "not " * k + "y,\n]",
    ],
)
def test_the_nesting_screen_never_misses_a_deep_tree(make) -> None:  # type: ignore[no-untyped-def]

    from pinfix.engine import nested_deeper_than
    from pinfix.semantic import SourceText

    for k in range(30, 80, 7):
        src = SourceText.from_bytes(make(k).encode(), "m.py")
        tree = src.parse()
        for limit in (40, 60, 90):
            expected = _depth(tree) > limit
            assert nested_deeper_than(tree, limit) == expected, (k, limit, _depth(tree))
            # Measured by the lines a statement spans too (what the engine gives it).
            assert nested_deeper_than(tree, limit, src.line_starts, len(src.text)) == expected, (k, limit)


CRASHING_RUN = """
import os, signal, sys
import pinfix.engine as engine
real = engine._process_source
def crash_on_marked_files(path, data, config, mode, added):
    if b"CRASH_HERE" in data:
        os.kill(os.getpid(), signal.SIGSEGV)  # as a native parser crash does
    return real(path, data, config, mode, added)
engine._process_source = crash_on_marked_files
from pinfix.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(
    sys.platform != "linux", reason="the pool's workers must be forked to inherit the crashing stand-in"
)
def test_a_worker_that_crashes_takes_only_its_own_file_down(tmp_path: Path) -> None:
    files = [write(tmp_path / f"m{i:02d}.py", SAMPLE.replace(b"def load", f"def load_{i}".encode())) for i in range(12)]
    crashers = [write(tmp_path / f"z{i}.py", SAMPLE + b"# CRASH_HERE\n") for i in range(2)]
    proc = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, "fix", "-j", "2", "--no-progress", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert_clean_stderr(proc.stderr)
    assert sorted(error_lines(proc.stderr)) == [
        f"{c}: error: the process analysing it crashed (killed by SIGSEGV); file left unchanged" for c in crashers
    ]
    for i, f in enumerate(files):
        assert f.read_bytes() == FIXED.replace(b"def load", f"def load_{i}".encode()), f
    assert all(c.read_bytes() == SAMPLE + b"# CRASH_HERE\n" for c in crashers)
    assert "changed 12 files, 12 fixes, 2 errors" in proc.stderr


# --- 4. Large inputs complete with the right result (the curve is in benchmarks/stress_inputs.py) ----


def test_large_inputs_complete_with_the_right_result(tmp_path: Path) -> None:
    from pinfix.diffs import unified_diff

    # The bulk sits where LibCST costs little (inside a string): this tests the
    # pipeline's own steps (read, screen, the byte comparison, the diff) at scale.
    many_lines = b'DOC = """\n' + b"".join(b"line %d of the text\n" % i for i in range(200_000)) + b'"""\n'
    one_line = b"DATA = '" + b"x" * 5_000_000 + b"'\n"
    tails = {"lines.py": many_lines, "one_line.py": one_line}
    for name, tail in tails.items():
        write(tmp_path / name, with_tail(b"\n" + tail))
    rc, out, err = cli("check", "--no-cache", "-j", "1", str(tmp_path))
    assert rc == 1 and sorted(line.split(":")[0] for line in out.splitlines()) == sorted(
        str(tmp_path / n) for n in tails
    )
    rc, out, err = cli("fix", "--diff", "-j", "1", str(tmp_path))
    assert rc == 1 and error_lines(err) == [], err
    assert out == "".join(
        unified_diff(
            with_tail(b"\n" + tails[n]), with_tail(b"\n" + tails[n], fixed=True), str(tmp_path / n).lstrip("/")
        ).decode()
        for n in sorted(tails)
    )
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 0, err
    for name, tail in tails.items():
        assert (tmp_path / name).read_bytes() == with_tail(b"\n" + tail, fixed=True)


# --- 5. Workers die with the main process ----------------------------------------------------------------


def _children(pid: int) -> List[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie has exited; only its parent has not reaped it


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to find the workers")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_workers_die_with_the_main_process(tmp_path: Path, sig: signal.Signals) -> None:
    body = "".join(f"\n\ndef helper_{k}(x):\n    return [x + {k} for _ in range(3)]\n" for k in range(150)).encode()
    for i in range(400):
        write(tmp_path / f"m{i:03d}.py", SAMPLE.replace(b"def load", f"def load_{i}".encode()) + body)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pinfix", "check", "--no-cache", "-j", "2", "--no-progress", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: List[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(workers) < 2 and proc.poll() is None:
        time.sleep(0.1)
        workers = _children(proc.pid)
    assert len(workers) >= 2, "the pool did not start"
    proc.send_signal(sig)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for w in left:
        os.kill(w, signal.SIGKILL)
    assert left == [], f"workers outlived the main process after {sig.name}"


# --- 6. Links, projects, owners --------------------------------------------------------------------------


def test_an_explicitly_named_symlink_is_not_written_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = write(tmp_path / "outside" / "target.py", SAMPLE)
    other = write(tmp_path / "outside" / "lib" / "x.py", SAMPLE)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link.py").symlink_to(outside)
    (tree / "linkdir").symlink_to(other.parent, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    for named in (Path("tree/link.py"), Path("tree/linkdir/x.py")):
        rc, _, err = cli("fix", str(named))
        assert rc == 2
        assert_one_error(err, named, "symbolic link", "--follow-symlinks")
        assert "1 write refused (symbolic link)" in err
    assert outside.read_bytes() == SAMPLE and other.read_bytes() == SAMPLE
    rc, _, err = cli("fix", "--follow-symlinks", "tree/link.py", "tree/linkdir/x.py")
    assert rc == 0, err
    assert outside.read_bytes() == FIXED and other.read_bytes() == FIXED
    assert (tree / "link.py").is_symlink() and (tree / "linkdir").is_symlink()


def test_a_cache_directory_that_is_a_symlink_is_never_written_through(own_cache: Path, tmp_path_factory) -> None:
    project = own_cache
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (project / ".pinfix_cache").symlink_to(elsewhere, target_is_directory=True)
    write(project / "m.py", SAMPLE)
    rc, out, _ = cli("check", str(project))
    assert rc == 1 and "m.py:6:" in out
    assert list(elsewhere.iterdir()) == []
    # Nor a link inside a real cache directory.
    (project / ".pinfix_cache").unlink()
    write(project / "n.py", SAMPLE.replace(b"load", b"other"))
    cli("check", str(project))
    cache = project / ".pinfix_cache"
    assert (cache / ".gitignore").read_bytes() == b"*\n"
    (entry, _) = cache_entries(project)
    # A link at each level of <version>/<settings>/<2 hex>/<entry> in turn.
    for level in (entry.parent.parent.parent, entry.parent.parent, entry.parent):
        for sub in [p for p in cache.iterdir() if p.is_dir() and not p.is_symlink()]:
            shutil.rmtree(sub)
        for p in [p for p in cache.iterdir() if p.is_symlink()]:
            p.unlink()
        level.parent.mkdir(parents=True, exist_ok=True)
        level.symlink_to(elsewhere, target_is_directory=True)
        (cache / ".gitignore").unlink(missing_ok=True)  # a link there is left alone, never written through
        (cache / ".gitignore").symlink_to(elsewhere / "ignored")
        assert cli("check", str(project))[0] == 1
        assert list(elsewhere.iterdir()) == []
        level.unlink()


def test_no_cache_is_created_beside_files_outside_any_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PINFIX_CACHE_DIR", raising=False)
    here = tmp_path / "work"
    write(here / "pyproject.toml", b"[project]\nname = 'here'\n")
    other = write(tmp_path / "other" / "sub" / "m.py", SAMPLE)
    proc = cli_subprocess("check", str(other), cwd=here)
    assert proc.returncode == 1 and f"{other}:6:" in proc.stdout, proc.stderr
    assert not (other.parent / ".pinfix_cache").exists()
    assert not (here / ".pinfix_cache").exists()  # not the cwd's project's file either
    # A file under the working directory's project (which has no settings for it) is cached there.
    inner = write(here / "pkg" / "m.py", SAMPLE)
    proc = cli_subprocess("check", str(inner), cwd=here)
    assert proc.returncode == 1 and (here / ".pinfix_cache").is_dir()


@pytest.mark.skipif(not RUNNING_AS_ROOT, reason="only root may give a file to another owner")
def test_fix_keeps_the_owner_and_group(tmp_path: Path) -> None:
    owned = write(tmp_path / "owned.py", SAMPLE)
    os.chown(owned, 1234, 5678)
    rc, _, err = cli("fix", str(owned))
    assert rc == 0, err
    info = owned.stat()
    assert owned.read_bytes() == FIXED and (info.st_uid, info.st_gid) == (1234, 5678)


def test_a_hard_linked_file_is_refused_not_split(tmp_path: Path, good: Path) -> None:
    first = write(tmp_path / "first.py", SAMPLE.replace(b"load", b"load_linked"))
    second = tmp_path / "second.txt"  # not walked: the same file by another name
    os.link(first, second)
    rc, _, err = cli("fix", str(tmp_path))
    assert rc == 2
    assert_one_error(err, first, "2 hard links", "not changed")
    assert "1 finding left: 1 write refused (hard links)" in err
    assert first.read_bytes() == second.read_bytes() == SAMPLE.replace(b"load", b"load_linked")
    assert os.stat(first).st_ino == os.stat(second).st_ino
    assert good.read_bytes() == FIXED


# --- 7. Full disks and refused writes -----------------------------------------------------------------


def _full_disk(monkeypatch: pytest.MonkeyPatch, on: str) -> None:
    """Writes of temporary files next to ``on`` fail as on a full disk."""
    real = pinfix.writing.tempfile.mkstemp

    def mkstemp(*args, **kw):  # type: ignore[no-untyped-def]
        fd, name = real(*args, **kw)
        if on in str(kw.get("dir", "")) or on in name:
            os.close(fd)
            fd = os.open("/dev/full", os.O_WRONLY) if os.path.exists("/dev/full") else fd
            if not os.path.exists("/dev/full"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), name)
        return fd, name

    monkeypatch.setattr(pinfix.writing.tempfile, "mkstemp", mkstemp)


def test_a_full_disk_is_named_as_why_findings_were_left(tmp_path: Path, good: Path, monkeypatch) -> None:
    full = write(tmp_path / "full" / "f.py", SAMPLE)
    _full_disk(monkeypatch, str(full.parent))
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 2
    assert_one_error(err, full, "No space left on device")
    assert "pinfix: 1 finding left: 1 write refused (disk full)" in err
    assert full.read_bytes() == SAMPLE and good.read_bytes() == FIXED
    assert not [p for p in full.parent.iterdir() if p.name != "f.py"]


def test_a_read_only_file_is_named_too(tmp_path: Path) -> None:
    frozen = write(tmp_path / "frozen.py", SAMPLE)
    frozen.chmod(0o444)
    try:
        rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    finally:
        frozen.chmod(0o644)
    assert rc == 2 and "1 finding left: 1 write refused (read-only)" in err


def test_cache_gitignore_is_written_whole_and_repaired(own_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = own_cache
    write(project / "m.py", SAMPLE)
    ignore = project / ".pinfix_cache" / ".gitignore"
    real_mkstemp = pinfix.writing.tempfile.mkstemp
    _full_disk(monkeypatch, ".pinfix_cache")
    assert cli("check", str(project))[0] == 1
    assert not ignore.exists() or ignore.read_bytes() == b"*\n"  # never left empty
    monkeypatch.setattr(pinfix.writing.tempfile, "mkstemp", real_mkstemp)
    ignore.parent.mkdir(exist_ok=True)
    (ignore.parent / "CACHEDIR.TAG").write_text(CACHEDIR_TAG)
    ignore.write_bytes(b"")  # what a full disk left behind before (an empty one is no user's)
    write(project / "n.py", SAMPLE.replace(b"load", b"other"))
    assert cli("check", str(project))[0] == 1
    assert ignore.read_bytes() == b"*\n"


# --- 8. Bytes the fix did not mean to change ---------------------------------------------------------------


def test_unintended_change_allows_edits_on_allowed_lines_only() -> None:
    from pinfix.writing import START_OF_FILE, unintended_change

    old = b"a\nb\nc\nd\n"
    assert unintended_change(old, old, set()) is None
    assert unintended_change(old, b"a\nB\nc\nd\n", {2}) is None
    assert unintended_change(old, b"a\nB\nB2\nc\nd\n", {2}) is None  # replaced by two lines
    assert unintended_change(old, b"a\nc\nd\n", {2}) is None  # deleted
    assert unintended_change(old, b"a\nb\nnew\nc\nd\n", {2}) is None  # inserted next to an allowed line
    assert unintended_change(old, b"new\na\nb\nc\nd\n", {START_OF_FILE}) is None
    assert unintended_change(old, b"a\nb\nc\nnew\nd\n", {2}) == "line 4 would become 'new\\n' (was 'd\\n')"
    assert unintended_change(old, b"new\na\nb\nc\nd\n", {2}) == "line 1 would become 'new\\n' (was 'a\\n')"
    assert unintended_change(old, b"a\nB\nc\nD\n", {2}) == "line 4 would become 'D\\n' (was 'd\\n')"
    assert unintended_change(old, b"a\nb\nc\nd", {2}) == "line 4 would become 'd' (was 'd\\n')"


def test_unintended_change_counts_lines_as_python_does() -> None:
    from pinfix.writing import unintended_change

    # \r alone and \r\n end lines; \x0b, \x0c, \x1c and U+2028 do not.
    old = b"a\rb\r\nc \x0b\x0c\x1c \xe2\x80\xa8 c\nd"
    assert unintended_change(old, b"a\rB\r\nc \x0b\x0c\x1c \xe2\x80\xa8 c\nd", {2}) is None
    assert unintended_change(old, b"a\rb\r\nC\nd", {3}) is None
    assert (
        unintended_change(old, b"a\rb\r\nc \x0b\x0c\x1c \xe2\x80\xa8 c\nD", {2}) == "line 4 would become 'D' (was 'd')"
    )
    assert unintended_change(b"x\r", b"y", {1}) == "the file's last line end would become '' (was '\\r')"
    # A \r and a \n brought together make one \r\n: the line before changed its end.
    assert unintended_change(b"a\n\nb\n", b"a\r\nb\n", {1}) is not None
    assert unintended_change(b"a\rb\nc\n", b"a\r\nB\nc\n", {2}) == "line 1 would become 'a\\r\\n' (was 'a\\r')"


#: Files LibCST once did not round-trip: (bytes, what the fix makes of them, a loss
#: as a whole-file round trip would make it, what the byte check says of that loss).
ROUND_TRIPS = {
    "form feed before def": (
        SAMPLE + b"\n\n\x0cdef other():\n    pass\n",
        FIXED + b"\n\n\x0cdef other():\n    pass\n",
        lambda b: b.replace(b"\x0cdef", b"def"),
        "line 9 would become 'def other():\\n'",
    ),
    "trailing lone CR": (
        SAMPLE.replace(b"\n", b"\r"),
        FIXED.replace(b"\n", b"\r"),
        lambda b: b[:-1],
        "last line end would become ''",
    ),
    "mixed endings, lone CR last": (
        SAMPLE + b"x = 1\r",
        FIXED + b"x = 1\r",
        lambda b: b[:-1],
        "line 7 would become 'x = 1' (was 'x = 1\\r')",
    ),
    "cp932": (
        b"# -*- coding: cp932 -*-\n" + SAMPLE + b"s = '\x87\x90'\n",
        b"# -*- coding: cp932 -*-\n" + FIXED + b"s = '\x87\x90'\n",
        lambda b: b.replace(b"\x87\x90", b"\x81\xe0"),
        "line 8 would become \"s = '\\x81\\xe0'\\n\"",
    ),
    "utf-7": (
        b"# -*- coding: utf-7 -*-\n" + SAMPLE + b"s = '~'\n",
        b"# -*- coding: utf-7 -*-\n" + FIXED + b"s = '~'\n",
        lambda b: b.replace(b"'~'", b"'+AH4'"),
        "line 8 would become \"s = '+AH4'\\n\"",
    ),
}


@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_a_fix_keeps_every_byte_outside_its_lines(tmp_path: Path, name: str) -> None:
    # The fix applier splices text and keeps the very bytes of every line it did not change.
    data, fixed, _, _ = ROUND_TRIPS[name]
    odd = write(tmp_path / "odd.py", data)
    rc, _, err = cli("fix", "-j", "1", str(odd))
    assert (rc, error_lines(err)) == (0, []), err
    assert odd.read_bytes() == fixed


@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_a_fix_that_would_change_other_bytes_is_refused(
    tmp_path: Path, good: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The byte check is fed the lines the applier meant to change (Applied.touched);
    # an applier that also changed another byte (as a whole-file round trip did) is refused.
    import pinfix.fixes.apply

    data, _, lose, says = ROUND_TRIPS[name]
    real = pinfix.fixes.apply.apply_fixes

    def lossy_apply(src, *args, **kw):  # type: ignore[no-untyped-def]
        result = real(src, *args, **kw)
        if src.data == data:
            result.data = lose(result.data)
        return result

    monkeypatch.setattr(pinfix.fixes.apply, "apply_fixes", lossy_apply)
    lossy = write(tmp_path / "lossy.py", data)
    for argv in (("fix", "--diff"), ("fix",)):
        rc, out, err = cli(*argv, "-j", "1", str(tmp_path))
        assert rc == 2
        (line,) = error_lines(err)  # with --diff, the findings left go to stderr too
        assert line.startswith(f"{lossy}: error: the fix would also change bytes it does not mean to: "), line
        assert says in line and line.endswith("; file left unchanged"), line
        assert "1 write refused (unintended change)" in err
        assert f"a/{lossy}" not in out
    assert lossy.read_bytes() == data
    assert good.read_bytes() == FIXED


# --- 9. Diffs that git apply and patch apply ---------------------------------------------------------------


DIFF_SHAPES: Dict[str, bytes] = {
    "plain": SAMPLE,
    "fix on the last line, no newline": SAMPLE.rstrip(b"\n"),
    "\\x0b \\x0c \\x1c U+2028 inside lines": SAMPLE.replace(
        b"def load(a):", b"def load(a):  # \x0b\x0c\x1c \xe2\x80\xa8 x"
    )
    + b"S = '\x0c\x1c'\n",
    "lone CR": SAMPLE.replace(b"\n", b"\r") + b"x = 1",
    "mixed endings": SAMPLE.replace(b"np\n", b"np\r\n").replace(b"\n\n\n", b"\r\n\n\r") + b"y = 2\r\nz = 3",
    "CRLF": SAMPLE.replace(b"\n", b"\r\n"),
    "BOM": b"\xef\xbb\xbf" + SAMPLE,
    "latin-1": b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + SAMPLE + b"s = '\xe9\xe8'\n",
}


def _git(repo: Path, *argv: str, stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *argv], cwd=repo, input=stdin, capture_output=True, check=False)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("shape", list(DIFF_SHAPES))
def test_every_diff_applies_with_git_and_patch_to_what_fix_writes(tmp_path: Path, shape: str, monkeypatch) -> None:
    original = DIFF_SHAPES[shape]
    repo = tmp_path / "repo"
    write(repo / "pkg" / "m.py", original)
    assert _git(repo, "init", "-q").returncode == 0
    monkeypatch.chdir(repo)
    proc = subprocess.run(
        [sys.executable, "-m", "pinfix", "fix", "--diff", "pkg/m.py"], cwd=repo, capture_output=True, check=False
    )
    assert proc.returncode == 1, proc.stderr
    diff = proc.stdout
    assert diff.startswith(b"--- a/pkg/m.py\n+++ b/pkg/m.py\n"), diff
    rc, _, err = cli("fix", "pkg/m.py")
    assert rc == 0, err
    fixed = (repo / "pkg" / "m.py").read_bytes()
    assert fixed != original
    for tool in (["git", "apply", "-"], ["patch", "-p1", "--quiet", "--binary"]):
        if shutil.which(tool[0]) is None:
            continue
        (repo / "pkg" / "m.py").write_bytes(original)
        applied = subprocess.run(tool, cwd=repo, input=diff, capture_output=True, check=False)
        assert applied.returncode == 0, (tool, applied.stderr, diff)
        assert (repo / "pkg" / "m.py").read_bytes() == fixed, tool
        for leftover in (repo / "pkg").iterdir():
            assert leftover.name == "m.py", leftover


def test_unified_diff_marks_a_missing_last_newline_and_keeps_far_edits_apart() -> None:
    from pinfix.diffs import unified_diff

    old = b"".join(b"line %d\n" % i for i in range(1000)) + b"last"
    new = old.replace(b"line 2\n", b"line two\n").replace(b"last", b"LAST")
    diff = unified_diff(old, new, "f.py")
    assert diff.count(b"\n@@ ") == 2
    assert diff.endswith(b"-last\n\\ No newline at end of file\n+LAST\n\\ No newline at end of file\n")
    assert unified_diff(old, old, "f.py") == b""


def _apply(old: bytes, diff: bytes) -> bytes:
    """A strict reading of our unified diffs (as patch does, with no fuzz): the result."""
    import re

    lines = old.split(b"\n")
    src = [x + b"\n" for x in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    out: List[bytes] = []
    at = 0
    body = diff.split(b"\n")[2:]
    k = 0
    last_mark, last_text = b"", b""
    while k < len(body) and body[k]:
        m = re.match(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$", body[k])
        assert m, body[k]
        start = int(m.group(1)) - (0 if m.group(2) == b"0" else 1)
        out.extend(src[at:start])
        at = start
        k += 1
        while k < len(body) and body[k][:1] in (b" ", b"-", b"+", b"\\"):
            mark, text = body[k][:1], body[k][1:] + b"\n"
            if mark == b"\\":
                out[-1:] = [out[-1][:-1]] if last_mark != b"-" else out[-1:]
                if last_mark != b"+":
                    assert src[at - 1] == last_text[:-1]
            elif mark in (b" ", b"-"):
                assert src[at] in (text, text[:-1]), (src[at], text)
                at += 1
                if mark == b" ":
                    out.append(text)
            else:
                out.append(text)
            last_mark, last_text = mark, text
            k += 1
    out.extend(src[at:])
    return b"".join(out)


def test_unified_diff_applies_to_give_exactly_the_new_bytes_on_random_edits() -> None:
    import random

    from pinfix.diffs import unified_diff

    rng = random.Random(14)
    pool = [b"a\n", b"b\n", b"\n", b"x = 1\r\n", b"\x0cdef f():\n", b"  pass\n", b"c\rd\n", b"e\xe9\n"]
    for case in range(300):
        old_lines = [rng.choice(pool) for _ in range(rng.randrange(0, 60))]
        new_lines = list(old_lines)
        for _ in range(rng.randrange(1, 6)):
            at = rng.randrange(0, len(new_lines) + 1)
            what = rng.randrange(3)
            if what == 0 or not new_lines[at:]:
                new_lines.insert(at, rng.choice(pool))
            elif what == 1:
                del new_lines[at]
            else:
                new_lines[at] = rng.choice(pool)
        old, new = b"".join(old_lines), b"".join(new_lines)
        if rng.random() < 0.3:
            old = old.rstrip(b"\n")
        if rng.random() < 0.3:
            new = new.rstrip(b"\n")
        diff = unified_diff(old, new, "f.py")
        assert (diff == b"") == (old == new)
        if diff:
            assert _apply(old, diff) == new, (case, old, new, diff)


def test_unified_diff_of_a_fix_in_every_function() -> None:
    # Every fourth line changed, many lines repeated: difflib's matcher grows with
    # the square of the lines here; the anchored matcher visits each line a few times.
    from pinfix.diffs import unified_diff

    old = b"".join(b"\n\ndef f_%d(a):\n    return old(a)\n" % i for i in range(5000))
    new = old.replace(b"old(a)", b"new(a)")
    diff = unified_diff(old, new, "f.py")
    assert diff.count(b"\n-    return old(a)") == diff.count(b"\n+    return new(a)") == 5000
    assert _apply(old, diff) == new


# --- 10. Output encoding -----------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names are bytes")
@pytest.mark.parametrize("fmt", ["text", "github"])
def test_file_names_that_are_not_utf8_never_crash_the_output(tmp_path: Path, fmt: str) -> None:
    name = os.fsencode(tmp_path) + b"/caf\xe9.py"
    with open(name, "wb") as f:
        f.write(SAMPLE)
    with open(os.fsencode(tmp_path) + b"/broken\xff.py", "wb") as f:
        f.write(b"from_numpy non_blocking def (:\n")
    env = dict(os.environ, PYTHONIOENCODING="utf-8", LC_ALL="C.UTF-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pinfix", "check", "--output-format", fmt, str(tmp_path)],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert b"Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2
    both = proc.stdout + proc.stderr
    assert b"caf\\xe9.py" in both and b"broken\\xff.py" in both
    both.decode("utf-8")  # what is written is valid UTF-8


def test_an_interrupt_lets_the_deep_thread_end_its_file_first() -> None:
    # Ctrl-C reaches the main thread only; the file's work (a write) runs on the deep
    # thread and must end (land whole, or clean up) before the interrupt goes on.
    import _thread

    from pinfix.engine import on_deep_stack

    ended = []
    # Started in the background, this process may have inherited SIGINT ignored: then no
    # interrupt would be raised at all.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def work() -> None:
        _thread.interrupt_main()
        time.sleep(0.3)
        ended.append(True)

    try:
        with pytest.raises(KeyboardInterrupt):
            on_deep_stack(work)
            time.sleep(1)  # where the interrupt lands when on_deep_stack did not wait for it
    finally:
        signal.signal(signal.SIGINT, previous)
    assert ended == [True]


def test_line_opcodes_turn_one_list_of_lines_into_the_other() -> None:
    # What the fix applier (Applied.touched, the bytes kept per line) and relayout align
    # with, instead of difflib's matcher, which grows with the square on a fix per function.
    import random

    from pinfix.diffs import line_opcodes

    rng = random.Random(16)
    pool = ["a\n", "b\n", "\n", "x = 1\r\n", "    pass\n", "c\r", "é\n"]
    for _ in range(300):
        old = [rng.choice(pool) for _ in range(rng.randrange(0, 40))]
        new = list(old)
        for _ in range(rng.randrange(0, 6)):
            at = rng.randrange(0, len(new) + 1)
            if rng.random() < 0.5 or not new[at:]:
                new.insert(at, rng.choice(pool))
            else:
                del new[at]
        rebuilt: List[str] = []
        i = j = 0
        for tag, i1, i2, j1, j2 in line_opcodes(old, new):
            assert (i1, j1) == (i, j) and tag in ("equal", "replace", "insert", "delete")
            if tag == "equal":
                assert old[i1:i2] == new[j1:j2]
            rebuilt += new[j1:j2]
            i, j = i2, j2
        assert (i, j) == (len(old), len(new)) and rebuilt == new


def test_add_noqa_names_a_file_it_cannot_write(tmp_path: Path) -> None:
    frozen = write(tmp_path / "frozen.py", SAMPLE)
    frozen.chmod(0o444)
    try:
        rc, _, err = cli("check", "--add-noqa", str(frozen))
    finally:
        frozen.chmod(0o644)
    assert rc == 2
    assert_one_error(err, frozen, "read-only")
    assert frozen.read_bytes() == SAMPLE


def test_a_file_without_directives_is_searched_for_them_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Once per finding, the search made a file with a finding in each of N functions cost N
    # passes over it (2,000 findings in 160 kB: 14 s).
    import pinfix.suppression
    from pinfix.config import Config
    from pinfix.engine import process_source
    from pinfix.findings import Mode

    searched = []
    real = pinfix.suppression.DIRECTIVE_BYTES

    class Counting:
        def search(self, data: bytes):  # type: ignore[no-untyped-def]
            searched.append(len(data))
            return real.search(data)

    monkeypatch.setattr(pinfix.suppression, "DIRECTIVE_BYTES", Counting())
    body = b"".join(
        b"\n\ndef load_%d(a):\n    return torch.from_numpy(a).to('cuda', non_blocking=True)\n" % i for i in range(5)
    )
    report = process_source("m.py", SAMPLE + body, Config(), Mode())
    assert len(report.diagnostics) == 6 and report.error is None
    assert len(searched) == 1


def test_deep_mode_starts_no_more_workers_than_memory_holds(monkeypatch) -> None:
    import pinfix.pool as engine

    monkeypatch.setattr(engine, "available_cpus", lambda: 8)
    monkeypatch.setattr(engine, "available_memory", lambda: 5 * engine.DEEP_WORKER_MEMORY // 2)
    assert engine.default_jobs(deep=True) == 2
    assert engine.default_jobs(deep=False) == 8  # plain mode's workers stay small
    monkeypatch.setattr(engine, "available_memory", lambda: 1 << 20)
    assert engine.default_jobs(deep=True) == 1  # never none
    monkeypatch.setattr(engine, "available_memory", lambda: None)
    assert engine.default_jobs(deep=True) == 8  # no telling: one a CPU
    monkeypatch.setattr(engine, "available_memory", lambda: 64 * engine.DEEP_WORKER_MEMORY)
    assert engine.default_jobs(deep=True) == 8


def test_the_cli_sizes_a_deep_runs_pool_by_memory(tmp_path: Path, monkeypatch) -> None:
    import io

    import pinfix.pool as engine
    from pinfix.cli import main

    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(engine, "available_cpus", lambda: 8)
    monkeypatch.setattr(engine, "available_memory", lambda: engine.DEEP_WORKER_MEMORY * 3)
    for flags, jobs in (([], "8 jobs"), (["--deep"], "3 jobs"), (["--deep", "--jobs", "5"], "5 jobs")):
        out, err = io.StringIO(), io.StringIO()
        main(["check", "--no-progress", "--verbose", "--no-cache", *flags, str(tmp_path)], out, err)
        assert jobs in out.getvalue() + err.getvalue(), (flags, out.getvalue(), err.getvalue())


def test_available_memory_is_a_positive_count_or_none() -> None:
    from pinfix.pool import available_memory

    found = available_memory()
    assert found is None or found > 0


@pytest.mark.skipif(not HAS_FIFO, reason="no FIFOs here")
def test_deep_mode_never_waits_on_a_fifo_in_the_project(tmp_path: Path) -> None:
    # Deep mode reads the project's text (to find callers) and parses other modules;
    # a FIFO named like a module is left unread, never opened for a read that blocks.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "b.py").write_text("def send(x, dev):\n    return x.to(dev, non_blocking=True)\n")
    (pkg / "c.py").write_text(
        "import torch\n\nfrom pkg.b import send\n\n\ndef go(dev):\n    return send(torch.arange(3), dev)\n"
    )
    os.mkfifo(pkg / "fifo.py")
    os.mkfifo(pkg / "helpers.py")
    (pkg / "d.py").write_text(
        "from pkg.helpers import make\n\n\ndef h(dev):\n    return make().to(dev, non_blocking=True)\n"
    )
    proc = cli_subprocess(
        "check", "--deep", "--no-cache", "--output-format", "json", str(pkg / "b.py"), str(pkg / "d.py"), timeout=60
    )
    assert proc.returncode == 1, proc.stderr
    assert '"line": 2' in proc.stdout and "Traceback" not in proc.stderr
