#!/usr/bin/env python3
"""Whether ``check --deep FILE`` answered from the cache after an edit says what a check
without the cache says, on a real tree.

usage: python benchmarks/cache_parity.py --tree DIR [--pinfix CMD] FILE [FILE ...] > parity.md

For each FILE (relative to ``--tree``, which is edited in place and restored), and for each
edit below, the file's deep verdict is cached as it is (``pinfix check --deep FILE``), the
edit is made, and ``check --deep FILE`` (the cache: the shortcuts of
:mod:`pinfix.deepcache` for an edit that moves nothing a verdict says, or that only adds
statements) is compared with ``check --deep --no-cache FILE``, every field of every finding.
The edits:

- ``comment``: a comment appended;
- ``comment-above``: a comment line inserted above the first import (the code below moves);
- ``copy``: a function with a new pageable copy appended (issue 27's pre-commit case);
- ``constant``: a module constant appended;
- ``inserted``: the function inserted before the module's last top-level statement;
- ``removed``: the module's last top-level function without decorators removed.

The file is restored after each edit, even on failure. The report is a markdown table (one
row per file and edit: same or different, findings, seconds with and without the cache) and
the differences; the exit status is 1 when any differs. Run it on a copy of a tree: the
files' bytes are restored, their modification times are not.

Standard library only; pinfix is run as a subprocess (``--pinfix``, default ``python -m
pinfix`` of this interpreter), with the tree as its working directory.
"""

from __future__ import annotations

import argparse
import ast
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

COPY = "\n\ndef _pinfix_parity_copy(a, dev):\n    import torch\n\n    return torch.from_numpy(a).to(dev, non_blocking=True)\n"


def _inserted(text: bytes) -> bytes:
    """The new-copy function inserted before the module's last top-level statement."""
    tree = ast.parse(text)
    if not tree.body:
        return text + COPY.encode()
    last = tree.body[-1]
    first = min([last.lineno, *(d.lineno for d in getattr(last, "decorator_list", ()))])
    lines = text.splitlines(True)
    return b"".join(lines[: first - 1]) + COPY.lstrip("\n").encode() + b"\n\n" + b"".join(lines[first - 1 :])


def _removed(text: bytes) -> bytes:
    """The module's last top-level function without decorators removed (the text as it is
    where it has none)."""
    tree = ast.parse(text)
    defs = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not s.decorator_list]
    if not defs:
        return text
    last = defs[-1]
    lines = text.splitlines(True)
    return b"".join(lines[: last.lineno - 1]) + b"".join(lines[last.end_lineno or last.lineno :])


def _commented_above(text: bytes) -> bytes:
    """A comment line inserted above the module's first import (or its first line): every
    line of its code moves."""
    lines = text.splitlines(True)
    first = next((n for n, line in enumerate(lines) if line.startswith((b"import ", b"from "))), 0)
    return b"".join(lines[:first]) + b"# pinfix parity note\n" + b"".join(lines[first:])


EDITS: Dict[str, Callable[[bytes], bytes]] = {
    "comment": lambda t: t + b"# pinfix parity edit\n",
    "comment-above": _commented_above,
    "copy": lambda t: t + COPY.encode(),
    "constant": lambda t: t + b"\n\n_PINFIX_PARITY_LIMIT = 4\n",
    "inserted": _inserted,
    "removed": _removed,
}


def check(pinfix: List[str], tree: Path, *args: str) -> Tuple[Any, float]:
    """The findings of ``pinfix check --deep ARGS`` (or its output, when it gave none)."""
    start = time.perf_counter()
    proc = subprocess.run(
        [*pinfix, "check", "--no-progress", "--output-format", "json", "--deep", *args],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - start
    try:
        return json.loads(proc.stdout)["findings"], took
    except (ValueError, KeyError, TypeError):
        return f"rc={proc.returncode}: {proc.stdout[-500:]}{proc.stderr[-500:]}", took


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--pinfix", default=f"{shlex.quote(sys.executable)} -m pinfix")
    parser.add_argument("--edits", default=",".join(EDITS), help="which edits (comma-separated)")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    pinfix = shlex.split(args.pinfix)
    edits = [e for e in args.edits.split(",") if e]
    unknown = [e for e in edits if e not in EDITS]
    if unknown:
        parser.error(f"unknown edits: {', '.join(unknown)}")
    rows, differences = [], []
    for rel in args.files:
        path = args.tree / rel
        original = path.read_bytes()
        try:
            for edit in edits:
                check(pinfix, args.tree, rel)  # the file's verdict as it is, cached
                path.write_bytes(EDITS[edit](original))
                cached, with_cache = check(pinfix, args.tree, rel)
                fresh, without = check(pinfix, args.tree, "--no-cache", rel)
                same = cached == fresh and isinstance(fresh, list)
                count = len(fresh) if isinstance(fresh, list) else "?"
                rows.append(f"| `{rel}` | {edit} | {'same' if same else '**different**'} | {count} | ")
                rows[-1] += f"{with_cache:.2f} | {without:.2f} |"
                if not same:
                    differences.append(f"- `{rel}`, {edit}:\n  - cache: `{json.dumps(cached)[:1500]}`\n")
                    differences[-1] += f"  - no cache: `{json.dumps(fresh)[:1500]}`"
                path.write_bytes(original)
        finally:
            path.write_bytes(original)
    print("| file | edit | findings | count | s, cache | s, no cache |")
    print("|---|---|---|---:|---:|---:|")
    print("\n".join(rows))
    print(f"\n{len(rows) - len(differences)} of {len(rows)} the same.")
    if differences:
        print("\n## Differences\n")
        print("\n".join(differences))
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
