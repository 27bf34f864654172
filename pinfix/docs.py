"""Keep the README's tables of options and settings made from the code.

``python -m pinfix.docs README.md`` rewrites the text between each pair of
markers; ``--check`` only says whether it is up to date (``tests/test_docs.py``
fails when it is not).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

from .cli import options_markdown
from .config import settings_markdown

TABLES: Dict[str, Callable[[], str]] = {"options": options_markdown, "settings": settings_markdown}


def _markers(name: str) -> "re.Pattern[str]":
    return re.compile(
        rf"(<!-- begin {name}: made by `python -m pinfix.docs`; do not edit -->\n)(.*?)(<!-- end {name} -->)", re.S
    )


def update(text: str) -> str:
    """``text`` with every generated table made afresh."""
    for name, make in TABLES.items():
        pattern = _markers(name)
        if pattern.search(text) is None:
            raise ValueError(f"no markers for the {name} table")
        text = pattern.sub(lambda m, table=make(): m.group(1) + table + m.group(3), text)
    return text


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pinfix.docs", description=__doc__.splitlines()[0])
    parser.add_argument("readme", type=Path, nargs="?", default=Path("README.md"))
    parser.add_argument("--check", action="store_true", help="exit 1 if the tables are out of date; write nothing")
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    fresh = update(text)
    if args.check:
        return int(fresh != text)
    args.readme.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
