"""Issue 25, items 10 and 11: a cached verdict is reused only for the file it was
made for, and only while everything it read is as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.test_deep_cache import COPIER, PINNED_MAKER, check, found, tree

PAGEABLE_MAKER = PINNED_MAKER.replace(", pin_memory=True", "")


# --- 10. Keys by the resolved path --------------------------------------------------------------


def test_the_same_name_from_two_working_directories_is_two_files(tmp_path: Path) -> None:
    """``pkg/b.py`` typed in ``x/`` and in ``y/`` of one project: the same bytes, the
    same settings, but each imports its own ``pkg/a.py``."""
    root = tree(tmp_path, {"x/pkg/__init__.py": "", "x/pkg/a.py": PINNED_MAKER, "x/pkg/b.py": COPIER})
    tree(tmp_path, {"y/pkg/__init__.py": "", "y/pkg/a.py": PAGEABLE_MAKER, "y/pkg/b.py": COPIER})
    assert found(check(root / "x", "pkg/b.py")) == []
    assert found(check(root / "y", "pkg/b.py")) == [("pkg/b.py", 5, "PIN002")]
    assert found(check(root / "x", "pkg/b.py")) == []


# --- 11. Deep verdicts and what they read --------------------------------------------------------


def test_a_module_missing_when_the_verdict_was_made_is_seen_once_created(tmp_path: Path) -> None:
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/b.py": COPIER})
    assert found(check(root, "pkg/b.py")) == []  # pkg.a is not there: nothing known
    (root / "pkg/a.py").write_text(PAGEABLE_MAKER)
    assert found(check(root, "pkg/b.py")) == [("pkg/b.py", 5, "PIN002")]
    # And a package that appears beside the module it shadows.
    (root / "pkg/a").mkdir()
    (root / "pkg/a/__init__.py").write_text(PINNED_MAKER)
    assert found(check(root, "pkg/b.py")) == []


def test_a_module_reached_through_a_link_that_is_repointed(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/b.py": COPIER, "impl/pinned.py": PINNED_MAKER, "impl/pageable.py": PAGEABLE_MAKER},
    )
    (root / "pkg/a.py").symlink_to(root / "impl/pinned.py")
    assert found(check(root, "pkg/b.py")) == []
    (root / "pkg/a.py").unlink()
    (root / "pkg/a.py").symlink_to(root / "impl/pageable.py")
    assert found(check(root, "pkg/b.py")) == [("pkg/b.py", 5, "PIN002")]


def test_an_edit_that_keeps_the_size_and_the_modification_time(tmp_path: Path) -> None:
    from pinfix.deepcache import RACY_SECONDS

    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER})
    time.sleep(RACY_SECONDS + 0.2)  # past the racy window: the stamps are kept and relied on
    assert found(check(root, "pkg/b.py")) == []
    a = root / "pkg/a.py"
    before = a.stat()
    a.write_text(PINNED_MAKER.replace("4, pin_memory=True", "4" * 18))  # pageable, as long
    os.utime(a, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert a.stat().st_size == before.st_size and a.stat().st_mtime_ns == before.st_mtime_ns
    assert found(check(root, "pkg/b.py")) == [("pkg/b.py", 5, "PIN002")]


def test_an_edit_right_after_the_check_within_one_timestamp_tick(tmp_path: Path) -> None:
    """The stamp of a file changed just before it was taken may not change with the
    next edit (a coarse clock): such a stamp is not relied on."""
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER})
    a = root / "pkg/a.py"
    stamp = a.stat()
    assert found(check(root, "pkg/b.py")) == []
    a.write_text(PINNED_MAKER.replace("4, pin_memory=True", "4" * 18))
    os.utime(a, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert found(check(root, "pkg/b.py")) == [("pkg/b.py", 5, "PIN002")]


def test_the_order_of_the_files_changes_no_verdict(tmp_path: Path) -> None:
    """Two import roots each with its own ``pkg.a``: each ``b.py`` imports its own."""
    root = tree(tmp_path, {"x/pkg/__init__.py": "", "x/pkg/a.py": PINNED_MAKER, "x/pkg/b.py": COPIER})
    tree(tmp_path, {"y/pkg/__init__.py": "", "y/pkg/a.py": PAGEABLE_MAKER, "y/pkg/b.py": COPIER})
    for cached in (False, True):
        for order in (["x/pkg/b.py", "y/pkg/b.py"], ["y/pkg/b.py", "x/pkg/b.py"]):
            args = order if cached else ["--no-cache", "-j", "1", *order]
            assert found(check(root, *args)) == [("y/pkg/b.py", 5, "PIN002")], (cached, order)


def test_names_with_non_ascii_letters_are_searched_as_python_spells_them(tmp_path: Path) -> None:
    for name in ("_envoyé", "éclat", "_送る"):
        sender = f"def {name}(x, dev):\n    return x.to(dev, non_blocking=True)\n"
        root = tree(tmp_path / name, {"pkg/__init__.py": "", "pkg/b.py": sender})
        assert found(check(root, "pkg/b.py")) == []
        caller = (
            f"import torch\n\nfrom pkg.b import {name}\n\n\ndef go(dev):\n    return {name}(torch.arange(3), dev)\n"
        )
        (root / "pkg/c.py").write_text(caller)
        proc = check(root, "pkg/b.py")
        assert "Traceback" not in proc.stderr, proc.stderr
        assert found(proc) == [("pkg/b.py", 2, "PIN002")], name
        # The hook: checking the caller rechecks b.py (its verdict searched for callers).
        (root / "pkg/c.py").write_text(caller.replace("torch.arange(3)", "torch.arange(3).pin_memory()"))
        proc = check(root, "pkg/c.py")
        assert "Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr


def test_a_regular_package_comes_before_a_module_of_the_same_name(tmp_path: Path) -> None:
    copier = COPIER.replace("from pkg.a import make", "from a import make")
    root = tree(tmp_path, {"a.py": PAGEABLE_MAKER, "a/__init__.py": PINNED_MAKER, "b.py": copier})
    real = subprocess.run(
        [sys.executable, "-c", "import a; print(a.__file__)"], cwd=root, capture_output=True, text=True, check=True
    )
    assert real.stdout.strip() == str(root / "a" / "__init__.py")  # Python's own answer
    assert found(check(root, "b.py")) == []
    # Without the package, the module.
    (root / "a" / "__init__.py").rename(root / "a" / "other.py")
    assert found(check(root, "b.py")) == [("b.py", 5, "PIN002")]
