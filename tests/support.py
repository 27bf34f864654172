"""Helpers shared by tests."""

import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

REPO = Path(__file__).resolve().parent.parent


def ruff_codes(path: Path, cwd: Path, select: str = "I,F") -> List[str]:
    """ruff's diagnostics for ``path`` as ``CODE message`` (lines left out, so runs compare)."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run(
        [ruff, "check", "--isolated", "--no-cache", "--select", select, "--output-format", "concise", str(path)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    out = []
    for line in proc.stdout.splitlines():
        parts = line.split(": ", 1)
        if len(parts) == 2 and parts[0].count(":") >= 2:
            out.append(parts[1].replace("[*] ", ""))
    return sorted(out)
