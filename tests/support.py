"""Helpers shared by tests."""

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

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


def ruff_clean_before_and_after(path: Path, cwd: Path, before: str, after: str) -> bool:
    """Whether ``before`` and ``after``, written at ``path`` in turn, both pass
    ruff's import order and pyflakes checks (``path`` is left holding ``after``)."""
    path.write_text(before)
    clean_before = ruff_codes(path, cwd)
    path.write_text(after)
    return ruff_codes(path, cwd) == clean_before == []


def project_file(project: Path, name: str) -> Path:
    """Where a case named ``name`` lives in the ``project`` fixture's tree."""
    return project / "vllm" / "v1" / f"{name}.py"


def fix_in_project(project: Path, name: str, source: str, **kw) -> str:
    """``source`` written at :func:`project_file` and fixed with the project's settings."""
    from pinfix.api import fix_text
    from pinfix.config import load_config

    path = project_file(project, name)
    path.write_text(source)
    return fix_text(source, path=str(path), config=load_config(project), **kw)


# --- Running the `pinfix` command in a subprocess (issue 15's CLI tests) -----


def write_text(path: Path, text: str) -> Path:
    """``text`` at ``path``, its directories made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


BAD_SOURCE = "import torch\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"


def pinfix(
    *args: str, cwd: Path, stdin: "bytes | None" = None, env: "dict | None" = None
) -> subprocess.CompletedProcess:
    """``python -m pinfix ARGS`` in ``cwd``: exit code, stdout and stderr as text
    (stdout as bytes when ``stdin`` is given). No colour unless ``env`` asks."""
    import os

    environ = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "PINFIX_OUTPUT_FORMAT")}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pinfix", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=stdin is None,
        env=environ,
        timeout=300,
    )


def sigint_as_default() -> None:
    """``preexec_fn`` for a child that a test interrupts: SIGINT back to its default.
    A process started in the background by a non-interactive shell inherits SIGINT
    ignored (so does every child of it), and then no Ctrl-C reaches Python at all."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def fix_titles(proc: "subprocess.CompletedProcess[str]") -> Dict[str, str]:
    """Each finding's path -> its fix title, from ``--output-format json``."""
    import json

    return {f["path"]: f["fix"]["title"] for f in json.loads(proc.stdout)["findings"]}
