"""benchmarks/cache_parity.py: a cached deep verdict after an edit against one without the cache."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "cache_parity.py"

MAKER = "import torch\n\n\ndef make():\n    return torch.zeros(4)\n"
COPIER = "from pkg.a import make\n\n\ndef send(dev):\n    return make().to(dev, non_blocking=True)\n"


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/__init__.py").write_text("")
    (root / "pkg/a.py").write_text(MAKER)
    (root / "pkg/b.py").write_text(COPIER)
    (root / "pyproject.toml").write_text("[tool.pinfix]\ndeep = true\n")
    return root


def test_every_edit_is_checked_both_ways_and_the_file_restored(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--tree", str(root), "pkg/b.py"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| `pkg/b.py`")]
    assert [row.split(" | ")[1:4] for row in rows] == [
        ["comment", "same", "1"],
        ["comment-above", "same", "1"],  # the finding moved down a line
        ["copy", "same", "2"],  # the new copy is reported
        ["constant", "same", "1"],
        ["inserted", "same", "2"],
        ["removed", "same", "0"],  # `send` removed: the copy with it
    ]
    assert "6 of 6 the same." in proc.stdout
    assert (root / "pkg/b.py").read_text() == COPIER


def test_a_difference_is_shown_and_fails(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    # A pinfix that says one thing from its cache and another without.
    fake = tmp_path / "fake.py"
    fake.write_text(
        "import json, sys\n"
        "line = 9 if '--no-cache' in sys.argv else 5\n"
        "print(json.dumps({'findings': [{'path': 'pkg/b.py', 'line': line}]}))\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--tree",
            str(root),
            "--pinfix",
            f"{sys.executable} {fake}",
            "--edits",
            "copy",
            "pkg/b.py",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "| `pkg/b.py` | copy | **different** | 1 |" in proc.stdout
    assert "0 of 1 the same." in proc.stdout and "## Differences" in proc.stdout
    assert (root / "pkg/b.py").read_text() == COPIER
