"""Which files to look at: explicit files always, directories walked for
``*.py`` honouring ``.gitignore`` files and the configured ``exclude``."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

#: Directories never worth walking into (ruff skips the same kind).
ALWAYS_SKIPPED = frozenset(
    {".git", ".hg", ".svn", ".tox", ".nox", ".venv", "__pycache__", "node_modules", ".mypy_cache",
     ".ruff_cache", ".pytest_cache", ".pinfix_cache", "__pypackages__"}
)


@dataclass
class Discovery:
    files: List[Path] = field(default_factory=list)
    #: (path, reason) for arguments that could not be used.
    errors: List[Tuple[Path, str]] = field(default_factory=list)


class _Spec:
    """A gitignore spec with a one-regex pre-test.

    pathspec tries every pattern in turn (vLLM's root .gitignore has 120); a
    single alternation of all of them tells at once that none can match, the
    answer for almost every file. Only then does pathspec decide exactly.
    """

    def __init__(self, lines: Sequence[str]):
        import pathspec  # only when a directory is walked: pre-commit passes files

        self.spec = pathspec.GitIgnoreSpec.from_lines(lines)
        parts = [
            re.sub(r"\(\?P<\w+>", "(?:", p.regex.pattern)
            for p in self.spec.patterns
            if getattr(p, "include", None) is not None and getattr(p, "regex", None) is not None
        ]
        self.any = re.compile("|".join(f"(?:{x})" for x in parts)) if parts else None

    def match_file(self, rel: str) -> bool:
        if self.any is None or self.any.search(rel) is None:
            return False
        return self.spec.match_file(rel)


def _gitignore(directory: Path) -> Optional[_Spec]:
    candidate = directory / ".gitignore"
    try:
        lines = candidate.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    try:
        return _Spec(lines)
    except re.error:  # a pattern pathspec compiles but the union does not
        spec = _Spec([])
        spec.spec, spec.any = type(spec.spec).from_lines(lines), re.compile("")
        return spec


def _git_top(start: Path) -> Optional[Path]:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


class _Ignores:
    """``.gitignore`` files from the git top down to each walked directory."""

    def __init__(self, exclude: Sequence[str], root: Path):
        self.exclude = _Spec(exclude) if exclude else None
        self.root = root
        self.specs: Dict[Path, Optional[_Spec]] = {}

    def _spec(self, directory: Path) -> Optional[_Spec]:
        if directory not in self.specs:
            self.specs[directory] = _gitignore(directory)
        return self.specs[directory]

    def ignored(self, path: Path, is_dir: bool, top: Path) -> bool:
        """Whether ``path`` is excluded by config or by a ``.gitignore`` between ``top`` and it."""
        suffix = "/" if is_dir else ""
        if self.exclude is not None:
            try:
                rel = path.relative_to(self.root).as_posix()
            except ValueError:
                rel = None
            if rel is not None and self.exclude.match_file(rel + suffix):
                return True
        base = path.parent
        while True:
            spec = self._spec(base)
            if spec is not None and spec.match_file(path.relative_to(base).as_posix() + suffix):
                return True
            if base == top or base == base.parent:
                return False
            base = base.parent


def discover(paths: Iterable[str], exclude: Sequence[str] = (), root: Optional[Path] = None) -> Discovery:
    found = Discovery()
    found.files.extend(walk(paths, found.errors, exclude, root))
    return found


def walk(
    paths: Iterable[str], errors: List[Tuple[Path, str]], exclude: Sequence[str] = (), root: Optional[Path] = None
) -> Iterator[Path]:
    """The files to look at, as they are found; unusable arguments go to ``errors``."""
    root = (root or Path.cwd()).resolve()
    ignores = _Ignores(exclude, root)
    seen = set()

    def new(p: Path) -> bool:
        key = os.path.realpath(p)
        if key in seen:
            return False
        seen.add(key)
        return True

    for raw in paths:
        path = Path(raw)
        if path.is_file():
            if new(path):
                yield path  # named explicitly: always checked
            continue
        if not path.exists():
            kind = "broken symlink" if path.is_symlink() else "no such file or directory"
            errors.append((path, kind))
            continue
        if not path.is_dir():
            errors.append((path, "not a regular file or directory"))
            continue
        tree = path.resolve()
        # .gitignore files count from the repository's top (or the walked tree's).
        top = _git_top(tree) or tree
        walk_errors: List[OSError] = []
        for dirpath, dirnames, filenames in os.walk(path, onerror=walk_errors.append, followlinks=False):
            base = Path(dirpath)
            absolute = base.resolve()
            dirnames[:] = sorted(
                d for d in dirnames
                if d not in ALWAYS_SKIPPED and not ignores.ignored(absolute / d, is_dir=True, top=top)
            )
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                candidate = base / name
                if candidate.is_symlink():
                    real = Path(os.path.realpath(candidate))
                    if tree not in real.parents:
                        continue  # never follow a link out of the tree
                if not ignores.ignored(absolute / name, is_dir=False, top=top) and new(candidate):
                    yield candidate
        for error in walk_errors:
            errors.append((Path(error.filename or path), f"cannot list directory: {error.strerror or error}"))
