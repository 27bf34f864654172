"""Where a module's file is: the project's import roots, found from its files.

A root is the directory above a file's outermost package (the highest
directory still holding ``__init__.py``); ``vllm/v1/utils.py`` in a checkout
gives the checkout. Only files under a root are ever read: a name that
resolves outside the project (torch, numpy) stays unknown.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Tuple

#: Directories under a project root that hold no project code.
NOT_PROJECT = frozenset({"build", "dist", "node_modules", "site-packages", "venv", "__pycache__"})
#: Folders of tests: their code calls the library with whatever it likes.
TEST_FOLDERS = frozenset({"tests", "test"})
#: Folders of code that runs the library rather than being it: tests, benchmarks, examples.
DEMO_FOLDERS = TEST_FOLDERS | {"benchmarks", "benchmark", "examples"}


def is_test_file(path: Optional[Path], folders: FrozenSet[str] = TEST_FOLDERS) -> bool:
    """Whether ``path`` is a test (under one of ``folders``, ``test_*.py``,
    ``*_test.py``, ``conftest.py``); with :data:`DEMO_FOLDERS`, whether it is a test,
    a benchmark or an example."""
    if path is None:
        return False
    name = path.name
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return any(part in folders for part in path.parts[:-1])


def is_demo_of(path: str, base: str) -> bool:
    """Whether the file ``path`` is a test, benchmark or example, judged by the part of
    its path below where it parts from ``base`` (another file of the project; the parting
    folder's own name counts when it is a tests or examples folder), so that a checkout
    under a folder named ``test`` is not all tests."""
    try:
        shared = os.path.commonpath([path, base])
    except ValueError:  # another drive, or one relative and one absolute
        shared = ""
    while shared and os.path.basename(shared) in DEMO_FOLDERS:
        shared = os.path.dirname(shared)
    return is_test_file(Path(os.path.relpath(path, shared) if shared else path), DEMO_FOLDERS)


def project_file_names(root: str, links: Optional[List[str]] = None) -> Iterator[str]:
    """The ``.py`` files below ``root`` that deep mode reads, in a stable order (each
    folder's files, then its folders', by name; strings: a listing of a large tree builds
    no ``Path``); no hidden or :data:`NOT_PROJECT` folder, nothing through a link to a
    folder (each such link is added to ``links``, if given). Unreadable folders are skipped.
    Walked with a stack, not by recursion: a tree any number of folders deep is listed."""
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as found:
                entries = list(found)
        except OSError:
            continue
        files, folders = [], []
        for entry in entries:
            try:
                if entry.is_dir():  # through a link: a linked folder is named, not walked
                    if _project_folder(entry.name):
                        folders.append(entry)
                elif entry.name.endswith(".py"):
                    files.append(entry.name)
            except OSError:
                continue
        # Each path is the folder's with one separator, plus a name (no join a file: a
        # one-file deep run lists the whole tree).
        prefix = os.path.join(folder, "")
        for name in sorted(files):
            yield prefix + name
        below = []
        for entry in sorted(folders, key=lambda e: e.name):
            path = prefix + entry.name
            try:
                linked = entry.is_symlink()
            except OSError:
                continue
            if not linked:
                below.append(path)
            elif links is not None:
                links.append(path)
        pending.extend(reversed(below))  # the first folder by name is walked first


def _project_folder(name: str) -> bool:
    return not name.startswith(".") and name not in NOT_PROJECT


def listable(root: str, path: str) -> bool:
    """Whether :func:`project_file_names` would list ``path`` (a resolved path) were it a
    file: a ``.py`` below ``root`` in no hidden or :data:`NOT_PROJECT` folder (a link to a
    folder on the way is listed apart)."""
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not path.startswith(prefix) or not path.endswith(".py"):
        return False
    return all(_project_folder(part) for part in path[len(prefix) :].split(os.sep)[:-1])


def import_root(path: Path) -> Path:
    """The directory that ``path``'s module is imported from."""
    directory = path.resolve().parent
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        directory = directory.parent
    return directory


def module_name(path: Path, root: Path) -> Optional[str]:
    """``root/a/b/c.py`` -> ``a.b.c``; ``root/a/__init__.py`` -> ``a``."""
    try:
        parts = list(path.resolve().relative_to(root).with_suffix("").parts)
    except ValueError:
        return None
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def absolute_name(name: str, current: Optional[str], is_package: bool) -> Optional[str]:
    """Resolve a relative qualified name (``.utils.f``) against the module ``current``."""
    if not name.startswith("."):
        return name
    if current is None:
        return None
    level = len(name) - len(name.lstrip("."))
    package = current.split(".") if is_package else current.split(".")[:-1]
    if level - 1 > len(package):
        return None
    base = package[: len(package) - (level - 1)]
    rest = name[level:]
    return ".".join([*base, rest] if rest else base) or None


class ModuleIndex:
    """Module name -> file, over the roots seen so far."""

    def __init__(self) -> None:
        self.roots: List[Path] = []
        #: (module name, the importer's root) -> its file.
        self._found: Dict[Tuple[str, Optional[Path]], Optional[Path]] = {}
        #: The same key -> the candidate files that were not there when it was looked for.
        self._missed: Dict[Tuple[str, Optional[Path]], List[Path]] = {}
        self._root_of: Dict[Path, Path] = {}

    def add_root_of(self, path: Path) -> Path:
        directory = path.parent
        root = self._root_of.get(directory)
        if root is None:
            root = self._root_of[directory] = import_root(path)
        if root not in self.roots:
            self.roots.append(root)
            self.roots.sort()  # the order files were seen in changes no answer
            self._found, self._missed = {}, {}  # a new root may hold them, or come first
        return root

    def find(self, dotted: str, near: Optional[Path] = None) -> Optional[Path]:
        """The file defining module ``dotted`` imported from a module under the root
        ``near`` (searched first, as Python puts a program's own directory first), or
        ``None`` when it is not the project's.

        As CPython's path finder does, in each root a regular package (``a/__init__.py``)
        comes before a module of the same name (``a.py``)."""
        key = (dotted, near)
        if key in self._found:
            return self._found[key]
        parts = dotted.split(".")
        found = None
        missed = []
        for root in ([near] if near in self.roots else []) + [r for r in self.roots if r != near]:
            base = root.joinpath(*parts)
            for candidate in (base / "__init__.py", base.with_name(base.name + ".py")):
                if candidate.is_file():
                    found = candidate
                    break
                missed.append(candidate)
            if found is not None:
                break
        self._found[key] = found
        self._missed[key] = missed
        return found

    def looked_for(self, qualified: str, near: Optional[Path] = None) -> List[Path]:
        """The files that were not there when :meth:`split` resolved ``qualified``, any of
        which, created, would change the answer (a longer module prefix, an earlier root)."""
        parts = qualified.split(".")
        out: List[Path] = []
        for cut in range(len(parts) - 1, 0, -1):
            key = (".".join(parts[:cut]), near)
            out += self._missed.get(key, ())
            if self._found.get(key) is not None:
                break
        return out

    def split(self, qualified: str, near: Optional[Path] = None) -> Optional[tuple]:
        """``a.b.c.f`` -> (file of the longest module prefix, remaining names), imported
        from under the root ``near`` (see :meth:`find`)."""
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            found = self.find(".".join(parts[:cut]), near)
            if found is not None:
                return found, parts[cut:]
        return None
