"""The gitignore pre-test (one regex per literal first directory, one search
for patterns that match in any directory) answers exactly as pathspec does,
and the scandir walk yields what a plain ``os.walk`` over the tree would."""

import itertools
import os
from pathlib import Path

from pinfix.files import _Spec, walk

PATTERNS = [
    "*.so",
    "build/",
    "/dist",
    "vllm/_version.py",
    "vllm/third_party/*",
    "docs/**/gen",
    "**/cache/",
    "__pycache__/",
    "!keep.so",
    "a-b/c.py",
    "*.py[cod]",
    "tmp*",
    "nested/dir/",
    "[Ll]ogs/",
    "x?y.py",
]
PATHS = [
    "a.so",
    "src/a.so",
    "keep.so",
    "build/",
    "src/build/",
    "build/x.py",
    "dist",
    "src/dist",
    "vllm/_version.py",
    "other/vllm/_version.py",
    "vllm/third_party/x.py",
    "vllm/third_party/",
    "docs/a/b/gen",
    "docs/gen",
    "cache/",
    "a/cache/",
    "a/__pycache__/",
    "a-b/c.py",
    "a-b/d.py",
    "m.pyc",
    "sub/tmpfile.py",
    "tmp/",
    "nested/dir/",
    "x/nested/dir/",
    "Logs/",
    "src/logs/",
    "xzy.py",
    "src/x.py",
    "setup.py",
]


def test_pretest_matches_pathspec_exactly() -> None:
    for n in range(1, len(PATTERNS) + 1, 3):
        for lines in (PATTERNS[:n], PATTERNS[n:], PATTERNS[::-1][:n]):
            spec = _Spec(lines)
            for path in PATHS:
                assert spec.match_file(path) == spec.spec.match_file(path), (lines, path)


def test_walk_matches_os_walk(tmp_path: Path) -> None:
    for d in ("a/b", "a/c", "z", "__pycache__", "build"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    for f in ("a/b/x.py", "a/c/y.py", "a/z.py", "z/q.py", "z/q.txt", "top.py", "__pycache__/m.py", "build/b.py"):
        (tmp_path / f).write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("build/\n")
    os.symlink(tmp_path / "a", tmp_path / "link_dir")  # a symlinked directory is never walked
    os.symlink(tmp_path / "top.py", tmp_path / "alias.py")  # the same file twice: reported once
    expected, linked = [], []
    for dirpath, dirnames, filenames in os.walk(tmp_path):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "build"))
        # A linked file only with --follow-symlinks; otherwise its target is walked itself.
        expected += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py") and f != "alias.py"]
        linked += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py") and f != "top.py"]
    errors: list = []
    found = list(walk([str(tmp_path)], errors, root=tmp_path))
    assert errors == [] and found == expected
    assert list(walk([str(tmp_path)], errors, root=tmp_path, follow_symlinks=True)) == linked
    assert list(itertools.chain(walk([str(tmp_path / "z")], errors, root=tmp_path))) == [tmp_path / "z" / "q.py"]


def test_gitignore_files_at_every_depth_are_honoured(tmp_path: Path) -> None:
    # The walk probes for a .gitignore only in folders whose listing holds one.
    files = ["a/keep.py", "a/b/drop.py", "a/b/keep_b.py", "a/b/c/d/gen.py", "a/b/c/d/real.py", "x/y/z/w.py"]
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "a" / "b" / ".gitignore").write_text("drop.py\n")
    (tmp_path / "a" / "b" / "c" / "d" / ".gitignore").write_text("*.py\n!real.py\n")
    (tmp_path / "x" / "y" / "z" / ".gitignore").write_text("w.py\n")
    found = sorted(p.relative_to(tmp_path).as_posix() for p in walk([str(tmp_path)], [], root=tmp_path))
    assert found == ["a/b/c/d/real.py", "a/b/keep_b.py", "a/keep.py"]
