"""Issue 25, items 10 and 11: a cached verdict is reused only for the file it was
made for, and only while everything it read is as it was."""

from __future__ import annotations

import os
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
