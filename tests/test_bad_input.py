"""Bad input: every case gets a clear one-line message naming the path, a
non-zero exit where it failed, the other files of the run still processed, and
no traceback. Files pinfix must not change stay byte-identical."""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

import pinfix.writing
from pinfix.cli import main
from pinfix.writing import WriteRefused, replace_file
from tests.support import sigint_as_default

#: The trees here are vLLM-shaped: their fixes use vLLM's helper (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("depends_on_vllm")

# A file with one safe finding, and exactly what `pinfix fix` makes of it.
SAMPLE = (
    b"import numpy as np\n"
    b"import torch\n"
    b"\n"
    b"\n"
    b"def load(a):\n"
    b'    return torch.from_numpy(a).to("cuda", non_blocking=True)\n'
)
FIXED = (
    b"import numpy as np\n"
    b"from vllm.utils.torch_utils import np_to_pinned_tensor\n"
    b"\n"
    b"\n"
    b"def load(a):\n"
    b'    return np_to_pinned_tensor(a).to("cuda", non_blocking=True)\n'
)
RUNNING_AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def cli(*argv: str) -> Tuple[int, str, str]:
    """Run the CLI in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), out, err)
    return rc, out.getvalue(), err.getvalue()


def cli_subprocess(*argv: str, cwd: Optional[Path] = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pinfix", *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def error_lines(err: str) -> List[str]:
    return [line for line in err.splitlines() if ": error: " in line]


def assert_clean_stderr(err: str) -> None:
    assert "Traceback" not in err, err
    for line in err.splitlines():
        assert line.startswith("pinfix: ") or ": error: " in line, f"unexpected stderr line {line!r}"


def assert_one_error(err: str, path: Path, *fragments: str) -> str:
    """Exactly one error line, naming ``path``; returns it."""
    assert_clean_stderr(err)
    lines = error_lines(err)
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith(f"{path}: error: "), line
    for fragment in fragments:
        assert fragment in line, line
    return line


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def good(tmp_path: Path) -> Path:
    """Another file in the same run, which must still be fixed."""
    return write(tmp_path / "good.py", SAMPLE)


# --- Unparseable input ----------------------------------------------------------


def test_syntax_error_is_reported_and_left_untouched(tmp_path: Path, good: Path) -> None:
    broken = write(tmp_path / "broken.py", b"import torch\nx = torch.from_numpy(a).cuda(non_blocking=True\ndef (:\n")
    before = broken.read_bytes()
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 2
    assert_one_error(err, broken, "syntax error")
    assert broken.read_bytes() == before
    assert good.read_bytes() == FIXED


def test_syntax_error_through_a_real_process(tmp_path: Path, good: Path) -> None:
    broken = write(tmp_path / "broken.py", b"import torch\ntorch.from_numpy(a).cuda(non_blocking=True)\nclass :\n")
    proc = cli_subprocess("check", str(tmp_path))
    assert proc.returncode == 2
    assert_one_error(proc.stderr, broken, "syntax error")
    assert f"{good}:6:" in proc.stdout  # the good file's finding is still reported


def test_non_utf8_without_coding_line(tmp_path: Path, good: Path) -> None:
    bad = write(tmp_path / "latin.py", b"# caf\xe9\n" + SAMPLE)
    before = bad.read_bytes()
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 2
    assert_one_error(err, bad, "decode")
    assert bad.read_bytes() == before
    assert good.read_bytes() == FIXED


def test_latin1_coded_file_is_fixed_and_stays_latin1(tmp_path: Path, good: Path) -> None:
    head = b"# -*- coding: latin-1 -*-\n# caf\xe9 cr\xe8me\n"
    coded = write(tmp_path / "coded.py", head + SAMPLE)
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 0, err
    assert_clean_stderr(err)
    assert coded.read_bytes() == head + FIXED
    assert good.read_bytes() == FIXED


def test_utf8_bom_is_kept(tmp_path: Path, good: Path) -> None:
    bom = b"\xef\xbb\xbf"
    marked = write(tmp_path / "bom.py", bom + SAMPLE)
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 0, err
    assert marked.read_bytes() == bom + FIXED
    assert good.read_bytes() == FIXED


# --- Line endings and whitespace ------------------------------------------------------


def test_crlf_file_stays_crlf(tmp_path: Path, good: Path) -> None:
    crlf = write(tmp_path / "crlf.py", SAMPLE.replace(b"\n", b"\r\n"))
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 0, err
    assert crlf.read_bytes() == FIXED.replace(b"\n", b"\r\n")
    assert good.read_bytes() == FIXED


def test_mixed_line_endings_kept_byte_for_byte_outside_the_fix(tmp_path: Path, good: Path) -> None:
    # `import torch` stays used (by `dtype`), so the fix touches the call line and adds one import.
    original = [
        b"# header\r\n",
        b"import numpy as np\n",
        b"import torch\r\n",
        b"\n",
        b"dtype = torch.float16\r\n",
        b"\r\n",
        b"\n",
        b"def load(a):\r\n",
        b'    return torch.from_numpy(a).to("cuda", non_blocking=True)\n',
        b"# tail without newline",
    ]
    mixed = write(tmp_path / "mixed.py", b"".join(original))
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 0, err
    after = mixed.read_bytes().splitlines(keepends=True)
    inserted = [line for line in after if line.startswith(b"from vllm.utils.torch_utils import np_to_pinned_tensor")]
    assert len(inserted) == 1, after
    assert inserted[0].endswith((b"\n", b"\r\n"))
    rest = [line for line in after if line not in inserted]
    expected = list(original)
    expected[8] = b'    return np_to_pinned_tensor(a).to("cuda", non_blocking=True)\n'
    assert rest == expected  # every other line, with its own ending, unchanged
    assert after.index(inserted[0]) == 3  # after `import torch`, in isort order
    assert good.read_bytes() == FIXED


def test_tab_indented_file(tmp_path: Path, good: Path) -> None:
    tabs = write(tmp_path / "tabs.py", SAMPLE.replace(b"    ", b"\t"))
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 0, err
    assert tabs.read_bytes() == FIXED.replace(b"    ", b"\t")
    assert good.read_bytes() == FIXED


def test_empty_file(tmp_path: Path, good: Path) -> None:
    empty = write(tmp_path / "empty.py", b"")
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 0, err
    assert_clean_stderr(err)
    assert error_lines(err) == []
    assert empty.read_bytes() == b""
    assert good.read_bytes() == FIXED
    # Named explicitly, on its own.
    rc, out, err = cli("check", str(empty))
    assert (rc, out, error_lines(err)) == (0, "", [])


# --- Size ------------------------------------------------------------------------------


TEN_MB = 10 * 1024 * 1024


def test_ten_megabyte_files(tmp_path: Path, good: Path) -> None:
    # One without the trigger spellings (the text pre-filter must skip it cheaply), and
    # one with a finding whose bulk is a single string literal (cheap to parse).
    row = b"value_%07d = %7d  # plain filler, nothing to find here\n"
    plain = write(tmp_path / "plain_big.py", b"".join(row % (i, i) for i in range(TEN_MB // 50)))
    filler = b"abcdefghijklmnopqrstuvwxyz0123456789 " * (TEN_MB // 37)
    big = write(tmp_path / "finding_big.py", SAMPLE + b'\nDATA = """\n' + filler + b'\n"""\n')
    assert plain.stat().st_size >= TEN_MB and big.stat().st_size >= TEN_MB
    plain_before = plain.read_bytes()
    start = time.perf_counter()
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    elapsed = time.perf_counter() - start
    assert rc == 0, err
    assert_clean_stderr(err)
    assert plain.read_bytes() == plain_before
    assert big.read_bytes() == FIXED + b'\nDATA = """\n' + filler + b'\n"""\n'
    assert good.read_bytes() == FIXED
    assert elapsed < 30, f"10 MB files took {elapsed:.1f}s"


# --- Symlinks and cycles --------------------------------------------------------------------


def test_symlink_inside_the_tree_is_written_through_once(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    real = write(tree / "pkg" / "real.py", SAMPLE)
    link = tree / "alias.py"
    link.symlink_to(Path("pkg") / "real.py")
    rc, _, err = cli("fix", "-j", "1", str(tree))
    assert rc == 0, err
    assert_clean_stderr(err)
    assert real.read_bytes() == FIXED
    assert link.is_symlink() and os.readlink(link) == str(Path("pkg") / "real.py")
    assert "1 fix\n" in err  # the file behind both names is fixed once


def test_symlinks_pointing_outside_the_tree_are_not_followed(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    inside = write(tree / "inside.py", SAMPLE)
    outside = write(tmp_path / "outside" / "ext.py", SAMPLE)
    (tree / "ext_link.py").symlink_to(outside)
    (tree / "ext_dir").symlink_to(outside.parent, target_is_directory=True)
    rc, out, err = cli("fix", "-j", "1", str(tree))
    assert rc == 0, err
    assert_clean_stderr(err)
    assert outside.read_bytes() == SAMPLE
    assert (tree / "ext_link.py").is_symlink() and (tree / "ext_dir").is_symlink()
    assert inside.read_bytes() == FIXED
    rc, out, err = cli("check", str(tree))
    assert rc == 0 and out == "", out  # nothing outside the tree is even read


def test_directory_cycle_terminates(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    target = write(tree / "a" / "b" / "mod.py", SAMPLE)
    (tree / "a" / "b" / "up").symlink_to(Path(".."), target_is_directory=True)
    (tree / "a" / "loop").symlink_to(tree, target_is_directory=True)
    proc = cli_subprocess("fix", "-j", "1", str(tree), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert_clean_stderr(proc.stderr)
    assert target.read_bytes() == FIXED
    assert "1 file scanned" in proc.stderr


# --- Unreadable, changing, read-only --------------------------------------------------------


@pytest.mark.skipif(RUNNING_AS_ROOT, reason="root reads a chmod 000 file; the in-process variant below covers it")
def test_unreadable_file_chmod(tmp_path: Path, good: Path) -> None:
    locked = write(tmp_path / "locked.py", SAMPLE)
    locked.chmod(0)
    try:
        rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    finally:
        locked.chmod(0o644)
    assert rc == 2
    assert_one_error(err, locked, "cannot read")
    assert locked.read_bytes() == SAMPLE
    assert good.read_bytes() == FIXED


def test_unreadable_file_simulated(tmp_path: Path, good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = write(tmp_path / "locked.py", SAMPLE)
    real_read_bytes = Path.read_bytes
    real_open = os.open

    def os_open(path, flags, *args):  # type: ignore[no-untyped-def]
        if os.fspath(path).endswith("locked.py") and not flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", os_open)
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 2
    assert_one_error(err, locked, "cannot read", "Permission denied")
    assert real_read_bytes(locked) == SAMPLE
    assert real_read_bytes(good) == FIXED


def test_replace_file_refuses_when_content_differs(tmp_path: Path) -> None:
    target = write(tmp_path / "t.py", b"someone else's edit\n")
    with pytest.raises(WriteRefused, match="changed"):
        replace_file(target, SAMPLE, FIXED)
    assert target.read_bytes() == b"someone else's edit\n"
    assert list(tmp_path.glob("*.pinfix-tmp")) == list(tmp_path.glob(".*.pinfix-tmp")) == []


def test_replace_file_flushes_the_directory_after_the_rename(tmp_path: Path, monkeypatch) -> None:
    # Without it, a crash just after the rename may leave the old file (or none) under the name.
    import os
    import stat

    target = write(tmp_path / "t.py", SAMPLE)
    synced = []
    real_fsync = os.fsync

    def recording(fd: int) -> None:
        synced.append(("directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file", target.read_bytes()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    replace_file(target, SAMPLE, FIXED)
    # The new bytes first, then the directory, once the name holds them.
    assert synced == [("file", SAMPLE), ("directory", FIXED)]


def test_replace_file_that_already_holds_the_new_text_is_done(tmp_path: Path) -> None:
    # A worker wrote it and died before its report came back; the retry finds the fix in place.
    target = write(tmp_path / "t.py", FIXED)
    before = target.stat()
    replace_file(target, SAMPLE, FIXED)
    assert target.read_bytes() == FIXED
    assert (target.stat().st_ino, target.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert list(tmp_path.glob(".*.pinfix-tmp")) == []


def test_file_changing_between_read_and_write_is_not_overwritten(
    tmp_path: Path, good: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    racy = write(tmp_path / "racy.py", SAMPLE)
    edited = SAMPLE + b"# edited by someone else meanwhile\n"
    real_replace = pinfix.writing.replace_file

    def replace_after_concurrent_edit(path: Path, expected: bytes, new: bytes, **kw: bool) -> None:
        if Path(path).name == "racy.py":
            Path(path).write_bytes(edited)  # the edit lands after pinfix read the file
        real_replace(path, expected, new, **kw)

    monkeypatch.setattr(pinfix.writing, "replace_file", replace_after_concurrent_edit)
    rc, _, err = cli("fix", "-j", "1", str(tmp_path))
    assert rc == 2
    assert_one_error(err, racy, "changed", "not overwritten")
    assert racy.read_bytes() == edited
    assert good.read_bytes() == FIXED
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".pinfix-tmp")]


def test_read_only_file_is_refused(tmp_path: Path, good: Path) -> None:
    frozen = write(tmp_path / "frozen.py", SAMPLE)
    frozen.chmod(0o444)
    try:
        rc, _, err = cli("fix", "-j", "1", str(tmp_path))
        after = frozen.read_bytes()
        mode = stat.S_IMODE(frozen.stat().st_mode)
    finally:
        frozen.chmod(0o644)
    assert rc == 2, err
    assert_one_error(err, frozen, "read-only")
    assert after == SAMPLE
    assert mode == 0o444
    assert good.read_bytes() == FIXED


# --- Names -----------------------------------------------------------------------------------------


def test_paths_with_spaces_and_non_ascii_names(tmp_path: Path) -> None:
    tree = tmp_path / "my tree"
    spaced = write(tree / "sub dir" / "load data.py", SAMPLE)
    accented = write(tree / "données" / "chargé ü.py", SAMPLE)
    broken = write(tree / "sub dir" / "cassé é.py", b"torch.from_numpy(a).cuda(non_blocking=True)\nif :\n")
    proc = cli_subprocess("fix", "-j", "1", str(tree))
    assert proc.returncode == 2, proc.stderr
    assert_one_error(proc.stderr, broken, "syntax error")
    assert spaced.read_bytes() == FIXED
    assert accented.read_bytes() == FIXED
    proc = cli_subprocess("check", str(tree))
    assert proc.returncode == 2 and proc.stdout == ""


# --- SIGINT during a parallel fix ---------------------------------------------------------------


def _variant(i: int, template: bytes = SAMPLE) -> bytes:
    """A distinct file with a finding, and enough other code to take a moment to analyse."""
    body = "".join(f"\n\ndef helper_{i}_{k}(x):\n    return [x + {k} for _ in range(3)]\n" for k in range(40))
    return template.replace(b"def load(a)", f"def load_{i}(a)".encode()) + body.encode()


def variant_tree(
    tree: Path, count: int = 300, mode: Optional[int] = None
) -> Tuple[Dict[Path, bytes], Dict[Path, bytes]]:
    """``count`` distinct files with a finding under ``tree``: their bytes now, and fixed."""
    originals, fixed = {}, {}
    for i in range(count):
        path = write(tree / f"m{i:03d}.py", _variant(i))
        if mode is not None:
            path.chmod(mode)
        originals[path] = path.read_bytes()
        fixed[path] = _variant(i, FIXED)
    return originals, fixed


def fix_stopped(
    tree: Path, originals: Dict[Path, bytes], jobs: str, signum: int, preexec: Callable[[], None]
) -> Tuple[int, str]:
    """``pinfix fix`` over ``tree``, sent ``signum`` (to its whole process group, as a terminal
    or a service manager does) as soon as the first file is rewritten: its status and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pinfix", "fix", "-j", jobs, "--no-progress", str(tree)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=preexec,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.read_bytes() != originals[p] for p in originals):
            break
        time.sleep(0.02)
    if proc.poll() is None:
        os.killpg(proc.pid, signum)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


def old_or_new(originals: Dict[Path, bytes], fixed: Dict[Path, bytes]) -> Dict[str, int]:
    """How many files are as they were and how many fully fixed; any other state fails."""
    states = {"old": 0, "new": 0}
    for path, before in originals.items():
        now = path.read_bytes()
        assert now in (before, fixed[path]), f"{path} is neither the original nor the fixed version"
        states["old" if now == before else "new"] += 1
    return states


def test_sigint_during_parallel_fix_leaves_every_file_old_or_new(tmp_path: Path) -> None:
    from pinfix.api import fix_text

    tree = tmp_path / "tree"
    originals, fixed = variant_tree(tree, mode=0o640)
    some = next(iter(originals))
    assert fix_text(originals[some].decode(), path=str(some)).encode() == fixed[some]

    returncode, err = fix_stopped(tree, originals, "2", signal.SIGINT, sigint_as_default)

    states = old_or_new(originals, fixed)
    for path in originals:
        assert stat.S_IMODE(path.stat().st_mode) == 0o640, path
    leftovers = [p.name for p in tree.iterdir() if p.name.endswith(".pinfix-tmp")]
    assert leftovers == []
    assert states["old"] > 0, "the run finished before the interrupt; make the files slower to process"
    assert returncode != 0
    assert "interrupted" in err
    assert "Traceback" not in err, err


def _children(pid: int) -> List[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the workers through Linux's /proc")
def test_workers_leave_sigint_to_the_parent(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole group: a worker that took it would die wherever it
    stood (in a weakref callback it prints a traceback, between files it breaks the
    pool). Interrupting the workers alone must change nothing in the run."""
    tree = tmp_path / "tree"
    for i in range(120):
        write(tree / f"m{i:03d}.py", _variant(i))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pinfix", "fix", "-j", "2", "--no-progress", str(tree)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_as_default,
    )
    interrupted = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and interrupted < 20:
        for child in _children(proc.pid) if proc.poll() is None else []:
            try:
                os.kill(child, signal.SIGINT)
                interrupted += 1
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    out, err = proc.communicate(timeout=120)
    assert interrupted > 0, "the run finished before a worker started; make the files slower to process"
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "interrupted" not in err, err
    assert all(path.read_bytes() == _variant(int(path.stem[1:]), FIXED) for path in tree.iterdir())


def test_read_gives_whole_files_and_says_why_not(tmp_path: Path) -> None:
    from pinfix.pool import _read

    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 200_000)
    assert _read(big) == big.read_bytes()
    assert _read(tmp_path / "empty.py") == "cannot read: No such file or directory"
    assert _read(tmp_path) == "is a directory"
    if hasattr(os, "mkfifo"):
        # A pipe is never read: with no writer, that would wait forever.
        pipe = tmp_path / "pipe.py"
        os.mkfifo(pipe)
        assert _read(pipe) == "not a regular file"
