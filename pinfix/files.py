"""Which files to look at: explicit files always, directories walked for
``*.py`` honouring ``.gitignore`` files, ``.git/info/exclude`` and the
configured ``exclude`` (or a predicate that decides it per path)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

#: Directories never worth walking into (ruff skips the same kind).
ALWAYS_SKIPPED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".tox",
        ".nox",
        ".venv",
        "__pycache__",
        "node_modules",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".pinfix_cache",
        "__pypackages__",
    }
)


@dataclass
class Discovery:
    files: List[Path] = field(default_factory=list)
    #: (path, reason) for arguments that could not be used.
    errors: List[Tuple[Path, str]] = field(default_factory=list)


class _Spec:
    """A gitignore spec with a regex pre-test.

    pathspec tries every pattern in turn (vLLM's root .gitignore has 120); an
    alternation of all of them tells at once that none can match, the answer
    for almost every file. Only then does pathspec decide exactly.
    """

    def __init__(self, lines: Sequence[str]):
        self.spec = _gitignore_spec(lines)
        parts = [
            re.sub(r"\(\?P<\w+>", "(?:", p.regex.pattern)
            for p in self.spec.patterns
            if getattr(p, "include", None) is not None and getattr(p, "regex", None) is not None
        ]
        #: The pre-test: ``rel -> may a pattern match?``
        self.test: Optional[Callable[[str], object]] = None
        # pathspec anchors every pattern at `^`; then `match` is `search`, and
        # far cheaper (search retries the whole alternation at every offset).
        # A pattern that starts with a literal directory (`^vllm/_version\.py`)
        # can only match under it: such patterns are tried only there.
        self.groups: Dict[str, "re.Pattern[str]"] = {}
        #: The other patterns anchored at the start (tried with `match`), and
        #: those that may start at any folder (tried with `search`).
        self.anchored: Optional["re.Pattern[str]"] = None
        self.anywhere: Optional["re.Pattern[str]"] = None
        if parts and all(x.startswith("^") and "(?m" not in x for x in parts):
            self.test = self._grouped_match
            by_dir: Dict[str, List[str]] = {}
            floating = []
            for x in parts:
                first = _literal_first_dir(x)
                if first is None:
                    floating.append(x)
                else:
                    by_dir.setdefault(first, []).append(x)
            self.groups = {d: re.compile("|".join(f"(?:{x})" for x in xs)) for d, xs in by_dir.items()}
            # `^(?:.+/)?REST` (a pattern without a slash: any directory) is
            # REST at the start or after a `/`: one search, where the
            # alternation would backtrack through `.+` once per pattern.
            anywhere = [x[len(_ANY_DIR) :] for x in floating if x.startswith(_ANY_DIR)]
            rest = [x for x in floating if not x.startswith(_ANY_DIR)]
            if rest:  # kept out of the search, which would try them at every offset
                self.anchored = re.compile("|".join(f"(?:{x})" for x in rest))
            # Those that start with any name (`*.so`: `[^/]*\.so...`) share that
            # start: one run to the end of a name and back, where each would
            # make its own (two dozen in vLLM's .gitignore).
            any_name = [x[len(_ANY_NAME) :] for x in anywhere if x.startswith(_ANY_NAME)]
            anywhere = [f"(?:{x})" for x in anywhere if not x.startswith(_ANY_NAME)]
            if any_name:
                anywhere.append(_ANY_NAME + "(?:" + "|".join(f"(?:{x})" for x in any_name) + ")")
            if anywhere:
                self.anywhere = re.compile("(?:^|(?<=/))(?:" + "|".join(anywhere) + ")")
        elif parts:  # one alternation of them all, searched
            self.test = re.compile("|".join(f"(?:{x})" for x in parts)).search

    def _grouped_match(self, rel: str) -> bool:
        if self.anchored is not None and self.anchored.match(rel) is not None:
            return True
        if self.anywhere is not None and self.anywhere.search(rel) is not None:
            return True
        group = self.groups.get(rel.partition("/")[0]) if "/" in rel else None
        return group is not None and group.match(rel) is not None

    def match_file(self, rel: str) -> bool:
        if self.test is None or not self.test(rel):
            return False
        return self.spec.match_file(rel)


_ANY_DIR = "^(?:.+/)?"
_ANY_NAME = "[^/]*"


def _gitignore_spec(lines: Sequence[str]):  # type: ignore[no-untyped-def]
    """pathspec's spec of ``lines``; a line it cannot compile (``[z-a].py``, a
    lone ``!`` or ``\\``) matches nothing, as git treats it, and the others count."""
    import pathspec  # only when a directory is walked: pre-commit passes files

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, re.error):
        pass
    usable = []
    for line in lines:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except (ValueError, re.error):
            continue
        usable.append(line)
    return pathspec.GitIgnoreSpec.from_lines(usable)


def _literal_first_dir(regex: str) -> Optional[str]:
    """``vllm`` for ``^vllm/...``: the literal first directory an anchored
    pattern requires; ``None`` when anything but literal text comes first."""
    out: List[str] = []
    i = 1
    while i < len(regex):
        c = regex[i]
        if c == "\\" and i + 1 < len(regex) and not regex[i + 1].isalnum():
            out.append(regex[i + 1])
            i += 2
            continue
        if c in ".^$*+?{}[]|()\\":
            return None
        if c == "/":
            return "".join(out) or None
        out.append(c)
        i += 1
    return None


def _gitignore(directory: Path, problems: List[Tuple[Path, str]], candidate: Optional[Path] = None) -> Optional[_Spec]:
    """The ``.gitignore`` of ``directory`` (or ``candidate``); one that is no
    regular file (a FIFO would block the walk forever) is not read, and goes
    to ``problems``."""
    from .regular import NotRegularFile, read_regular

    candidate = candidate or directory / ".gitignore"
    try:
        lines = read_regular(candidate).decode("utf-8", errors="replace").splitlines()
    except NotRegularFile:
        problems.append((candidate, "not a regular file; not used"))
        return None
    except OSError:
        return None
    try:
        return _Spec(lines)
    except re.error:  # a pattern pathspec compiles but the union does not
        spec = _Spec([])
        spec.spec = _gitignore_spec(lines)
        spec.test = lambda rel: True  # always "maybe": pathspec decides
        return spec


def _git_top(start: Path) -> Optional[Path]:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


class _Ignores:
    """The configured ``exclude`` and the ``.gitignore`` files from the git top
    down to each walked directory. Works on path strings and decides once per
    directory what holds for all its entries (its chain of specs, each entry's
    path relative to each spec's folder but for the name): it runs once per
    file of a large tree."""

    def __init__(
        self,
        exclude: Sequence[str],
        root: Path,
        excluded_in: Optional[Callable[[str], Callable[[str, bool], bool]]] = None,
    ):
        self.exclude = _Spec(exclude) if exclude else None
        self.root = str(root)
        self.chains: Dict[Tuple[str, str], List[Tuple[str, _Spec]]] = {}
        #: ``absolute directory -> ((name, is a directory) -> excluded?)``, from its own settings.
        self.excluded_in = excluded_in
        #: ``(absolute directory, top) -> ((name, is a directory) -> ignored?)``
        self.deciders: Dict[Tuple[str, str], Callable[[str, bool], bool]] = {}
        #: ``.gitignore`` files that could not be used, and why.
        self.problems: List[Tuple[Path, str]] = []
        #: Walked directories (absolute) whose listing holds no ``.gitignore``: not probed.
        self.without_gitignore: Set[str] = set()

    def _chain(self, directory: str, top: str) -> List[Tuple[str, _Spec]]:
        key = (directory, top)
        chain = self.chains.get(key)
        if chain is None:
            parent = os.path.dirname(directory)
            outer = [] if directory == top or parent == directory else self._chain(parent, top)
            spec = None if directory in self.without_gitignore else _gitignore(Path(directory), self.problems)
            chain = outer + [(directory, spec)] if spec is not None else outer
            if directory == top:  # the repository's own excludes, rooted at its top
                info = _gitignore(Path(top), self.problems, Path(top) / ".git" / "info" / "exclude")
                chain = [(directory, info)] + chain if info is not None else chain
            self.chains[key] = chain
        return chain

    def in_directory(self, directory: str, top: str) -> Callable[[str, bool], bool]:
        """``(name, is a directory) -> ignored?`` for the entries of ``directory``
        (absolute): whether the settings or the configured ``exclude`` exclude it,
        or a ``.gitignore`` between ``top`` and it (or ``.git/info/exclude``) ignores it."""
        key = (directory, top)
        found = self.deciders.get(key)
        if found is None:
            found = self.deciders[key] = self._decider(directory, top)
        return found

    def _decider(self, directory: str, top: str) -> Callable[[str, bool], bool]:
        settings = self.excluded_in(directory) if self.excluded_in is not None else None
        tests: Optional[List[Tuple[str, _Spec]]] = None

        def ignored(name: str, is_dir: bool) -> bool:
            nonlocal tests
            if settings is not None and settings(name, is_dir):
                return True
            if tests is None:  # the .gitignore files are read once an entry needs them
                tests = self._prefixed(directory, top)
            suffix = "/" if is_dir else ""
            for prefix, spec in tests:
                if spec.match_file(prefix + name + suffix):
                    return True
            return False

        return ignored

    def _prefixed(self, directory: str, top: str) -> List[Tuple[str, _Spec]]:
        """The specs that apply in ``directory`` (the configured ``exclude``, then its
        chain), each with the path of ``directory`` relative to the spec's folder:
        an entry's path there is that prefix plus its name."""
        here = os.path.join(directory, "")  # with one separator at the end, as an entry's path has
        tests: List[Tuple[str, _Spec]] = []
        if self.exclude is not None and here.startswith(self.root + os.sep):
            tests.append((here[len(self.root) + 1 :].replace(os.sep, "/"), self.exclude))
        for base, spec in self._chain(directory, top):
            tests.append((here[len(base) + 1 :].replace(os.sep, "/"), spec))
        return tests


def _py_files(
    top_dir: str, top_real: str, ignores: _Ignores, top: str, errors: List[OSError], follow_symlinks: bool
) -> Iterator[Tuple[str, str, str, str, bool]]:
    """(path as given, real path, the real path of its directory, name, is a
    symlink) of each ``*.py`` entry under ``top_dir``, in ``os.walk``'s order (sorted, each
    directory's files before its subdirectories), never into a symlinked
    directory or a skipped or ignored one; a linked file only with
    ``follow_symlinks`` (its target, in the tree, is walked on its own). One ``scandir`` per directory and
    no call per file: its entries already say what is a directory or a link,
    and a walked directory's real path is its parent's plus its name (paths are
    a folder's, with its separator, plus a name: no join per file)."""
    stack = [(top_dir, top_real)]
    while stack:
        dirpath, absolute = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            errors.append(e)
            continue
        subdirs = []
        if not any(e.name == ".gitignore" for e in entries):
            ignores.without_gitignore.add(absolute)
        ignored = None
        shown, real = os.path.join(dirpath, ""), os.path.join(absolute, "")
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if entry.is_symlink() or name in ALWAYS_SKIPPED:
                    continue
                if ignored is None:
                    ignored = ignores.in_directory(absolute, top)
                if not ignored(name, True):
                    subdirs.append((shown + name, real + name))
            elif name.endswith(".py"):
                is_link = entry.is_symlink()
                if follow_symlinks or not is_link:
                    yield shown + name, real + name, absolute, name, is_link
        stack.extend(reversed(subdirs))


def discover(
    paths: Iterable[str], exclude: Sequence[str] = (), root: Optional[Path] = None, follow_symlinks: bool = False
) -> Discovery:
    found = Discovery()
    found.files.extend(walk(paths, found.errors, exclude, root, follow_symlinks=follow_symlinks))
    return found


def walk(
    paths: Iterable[str],
    errors: List[Tuple[Path, str]],
    exclude: Sequence[str] = (),
    root: Optional[Path] = None,
    excluded_in: Optional[Callable[[str], Callable[[str, bool], bool]]] = None,
    follow_symlinks: bool = False,
) -> Iterator[Path]:
    """The files to look at, as they are found; unusable arguments go to
    ``errors``. A symbolic link to a file is walked only with
    ``follow_symlinks`` (and never out of the tree); named, it is always taken.
    ``excluded_in`` gives, for a walked directory, which of its entries the
    settings exclude (:meth:`pinfix.project.Project.excluded_in`)."""
    root = (root or Path.cwd()).resolve()
    ignores = _Ignores(exclude, root, excluded_in)
    seen = set()

    def new(p: Optional[Path], key: Optional[str] = None) -> bool:
        key = key or os.path.realpath(p)  # type: ignore[arg-type]
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
        top = str(_git_top(tree) or tree)
        walk_errors: List[OSError] = []
        walked = _py_files(str(path), os.path.realpath(path), ignores, top, walk_errors, follow_symlinks)
        folder, ignored = None, None
        for shown, key, absolute, name, is_link in walked:
            if is_link:
                key = os.path.realpath(key)
                if tree not in Path(key).parents:
                    continue  # never follow a link out of the tree
            if absolute != folder:
                folder, ignored = absolute, ignores.in_directory(absolute, top)
            if not ignored(name, False) and new(None, key):  # type: ignore[misc]
                yield Path(shown)
        for error in walk_errors:
            errors.append((Path(error.filename or path), f"cannot list directory: {error.strerror or error}"))
        errors.extend(ignores.problems)
        ignores.problems.clear()
