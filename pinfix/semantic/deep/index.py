"""The project's reverse indexes, built from every module's summary.

:class:`ProjectIndex` answers the questions deep mode used to answer by searching
the project's text: which modules call a name (and on which lines), which store
an attribute, which name a class as a base. Each answer is exact (from the
modules' syntax, never from their comments or strings) and whole (no cap on how
many modules say it). A name is a call's last name (``f`` in ``f(...)``,
``obj.f(...)``, ``mod.f(...)``: a method call on a receiver of unknown class may
call any method of that name) and, for a name imported under another
(``from pkg.a import make as build``), the imported one too.

Every module under each import root is summarised once (:mod:`.store`); the
tables hold file numbers and lines, not the summaries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from ...regular import read_regular
from ..roots import module_name, project_file_names
from .store import summary_of
from .summary import ModuleSummary

#: What the index is asked about: calls of a name said as such or through an import
#: (``f(...)``, ``mod.f(...)``, ``Class.f(...)``); calls of a method of that name on
#: another receiver (``obj.f(...)``, ``self.f(...)``); stores of an attribute on
#: something other than the storing method's own ``self`` (``obj.x = ...``) and on it
#: (``self.x = ...``); classes naming a base.
CALLS = "call"
METHOD_CALLS = "mcall"
STORES = "store"
OWN_STORES = "sstore"
BASES = "base"
KINDS = (CALLS, METHOD_CALLS, STORES, OWN_STORES, BASES)

#: key (``kind\\0name``) -> [(file number, lines)] in the order the files were listed.
Table = Dict[str, List[Tuple[int, Tuple[int, ...]]]]


def entries(summary: ModuleSummary) -> Dict[str, List[int]]:
    """The index entries a module's summary makes: ``kind\\0name`` -> lines."""
    found: Dict[str, List[int]] = {}

    def add(key: str, line: int) -> None:
        lines = found.get(key)
        if lines is None:
            found[key] = [line]
        elif lines[-1] != line:
            lines.append(line)

    for call in summary.calls:
        if call.target:
            add(CALLS + "\0" + call.target.rpartition(".")[2], call.line)
            if call.name and call.target.rpartition(".")[2] != call.name:
                add(CALLS + "\0" + call.name, call.line)
        elif call.name and call.callee and "." not in call.callee:
            add(CALLS + "\0" + call.name, call.line)  # a name of the module itself (or a builtin)
        elif call.name:
            add(METHOD_CALLS + "\0" + call.name, call.line)
    for store in summary.stores:
        add((STORES if store.outside else OWN_STORES) + "\0" + store.attr, store.line)
    for cls in summary.classes:
        for base in cls.bases:
            add(BASES + "\0" + base.rpartition(".")[2], cls.line)
    return found


class RootIndex:
    """The tables of one import root."""

    def __init__(self, root: Path, read: Callable[[str], Optional[bytes]]):
        self.root = root
        self.paths: List[Path] = []
        self.table: Table = {}
        for name in project_file_names(str(root)):
            data = read(name)
            if data is None:
                continue  # unreadable: what it says stays unknown
            path = Path(name)
            dotted = module_name(path, root) or ""
            summary = summary_of(data, dotted, path.name == "__init__.py", memo=False)
            if summary is None:
                continue  # Python cannot parse it: it calls nothing
            number = len(self.paths)
            self.paths.append(path)
            for key, lines in entries(summary).items():
                found = self.table.get(key)
                item = (number, tuple(sorted(set(lines))))
                if found is None:
                    self.table[key] = [item]
                else:
                    found.append(item)


def _read(name: str) -> Optional[bytes]:
    try:
        return read_regular(name)
    except OSError:
        return None


class ProjectIndex:
    """The indexes of every module under the project's import roots."""

    def __init__(self, read: Callable[[str], Optional[bytes]] = _read):
        self.read = read
        self._roots: Dict[Path, RootIndex] = {}

    def root(self, root: Path) -> RootIndex:
        found = self._roots.get(root)
        if found is None:
            found = self._roots[root] = RootIndex(root, self.read)
        return found

    def built(self, root: Path) -> bool:
        """Whether the indexes of ``root`` are built (a module's summary is then no longer needed)."""
        return root in self._roots

    def find(self, roots: List[Path], kind: str, name: str) -> Iterator[Tuple[Path, Tuple[int, ...]]]:
        """``(path, lines)`` of each module under ``roots`` with entries for ``name``
        of ``kind`` (:data:`KINDS`), each path once (a root inside another shares files)."""
        key = kind + "\0" + name
        seen = set()
        for root in roots:
            index = self.root(root)
            for number, lines in index.table.get(key, ()):
                path = index.paths[number]
                if path not in seen:
                    seen.add(path)
                    yield path, lines


__all__ = ["BASES", "CALLS", "KINDS", "METHOD_CALLS", "OWN_STORES", "STORES", "ProjectIndex", "RootIndex", "entries"]
