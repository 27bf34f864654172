"""Keep the documentation's tables of options, settings and rules made from the code.

``python -m pinfix.docs`` rewrites the text between each pair of markers in
README.md and docs/*.md (or the files named); ``--check`` only says whether
they are up to date (``tests/test_docs.py`` fails when they are not). Each
table lives between its markers in exactly one of the files.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from .cli import options_markdown, rules_markdown
from .config import settings_markdown
from .layers import LAYERS

#: The checkout the layout table describes: pinfix/, and lint_rules/ and codemods/ beside it.
CHECKOUT = Path(__file__).resolve().parent.parent


def layout_markdown() -> str:
    """The layout table: every module of the checkout, in the layer the import
    contract (:mod:`pinfix.layers`) puts it, with its docstring's first sentence."""
    rows = ["| module | layer | what |", "| --- | --- | --- |"]
    for layer, entries in LAYERS:
        for entry in entries:
            base = CHECKOUT.joinpath(*entry.rstrip(".*").split("."))
            if entry.endswith(".*"):
                files = sorted(base.rglob("*.py"), key=lambda f: (f.parent != base, f.as_posix()))
            else:
                files = [base / "__init__.py" if base.is_dir() else base.with_suffix(".py")]
            for path in files:
                if path.name == "__main__.py" and entry != "pinfix.__main__":
                    continue
                rel = path.relative_to(CHECKOUT).as_posix()
                rows.append(f"| `{rel}` | {layer} | {_first_sentence(path)} |")
    return "\n".join(rows) + "\n"


def _first_sentence(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_bytes())) if path.is_file() else None
    first = " ".join((doc or "").split("\n\n")[0].split())
    end = re.search(r"[.?](\s|$)", first)
    first = re.sub(r":[a-z]+:`~?", "`", first[: end.start() + 1] if end else first)
    return first.replace("``", "`").replace("|", "\\|")


TABLES: Dict[str, Callable[[], str]] = {
    "options": options_markdown,
    "settings": settings_markdown,
    "rules": rules_markdown,
    "layout": layout_markdown,
}


def _markers(name: str) -> "re.Pattern[str]":
    return re.compile(
        rf"(<!-- begin {name}: made by `python -m pinfix.docs`; do not edit -->\n)(.*?)(<!-- end {name} -->)", re.S
    )


def documents(root: Path) -> List[Path]:
    """The documentation under ``root``: its README.md and docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def update_all(texts: Dict[Path, str]) -> Dict[Path, str]:
    """Each text with the generated tables it holds made afresh; every table
    must be held by exactly one text."""
    fresh = dict(texts)
    for name, make in TABLES.items():
        pattern = _markers(name)
        holders = [path for path, text in fresh.items() if pattern.search(text)]
        if len(holders) != 1:
            where = ", ".join(str(p) for p in holders) or "none of " + ", ".join(str(p) for p in texts)
            raise ValueError(f"the {name} table must have its markers in exactly one file: {where}")
        table = make()
        (path,) = holders
        fresh[path] = pattern.sub(lambda m: m.group(1) + table + m.group(3), fresh[path])
    return fresh


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pinfix.docs", description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="*", help="default: README.md and docs/*.md here")
    parser.add_argument("--check", action="store_true", help="exit 1 if a table is out of date; write nothing")
    args = parser.parse_args(argv)
    paths: Sequence[Path] = args.files or documents(Path("."))
    texts = {path: path.read_text(encoding="utf-8") for path in paths}
    try:
        fresh = update_all(texts)
    except ValueError as exc:
        parser.exit(2, f"python -m pinfix.docs: error: {exc}\n")
    stale = [path for path in paths if fresh[path] != texts[path]]
    if args.check:
        for path in stale:
            sys.stderr.write(f"{path}: out of date (run `python -m pinfix.docs`)\n")
        return int(bool(stale))
    for path in stale:
        path.write_text(fresh[path], encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
