"""Deep mode: the whole project, read with the stdlib ``ast``, on the same engine.

What one function cannot see, the project answers with the same evaluator run
elsewhere, each answer memoised for the life of the process:

- a **call** of a project function (``f(...)``, ``self.m(...)``, ``mod.f(...)``)
  is that function evaluated with the arguments the call gives it (so a helper
  that returns its argument pinned is pinned whatever it gets, one that returns
  ``torch.from_numpy(...)`` pageable); recursion is unknown at the recursive call;
- an **attribute** of a project object (``self.buf``, ``obj.cpu``) is every value
  stored to it in its class's methods and class body (else its project bases');
- a **name** imported from another project module (relative imports and
  package re-exports too) is what that module binds it to.

Modules are found under the project's import roots (the directory above each
checked file's outermost package); anything outside them (torch, numpy) is
left to the effects table or stays unknown.
"""

from __future__ import annotations

import ast
import enum
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, cast

from ...regular import read_regular
from ...settings import Settings
from ..calls import Arguments
from ..evaluator import Evaluator, fixture_given
from ..facts import Copy, FunctionFacts
from ..fixtures import asks_fixture, filled_by, module_fixtures
from ..flow import RETURNED, TRANSPARENT_DECORATORS
from ..module import ModuleContext, Questions, functions_at
from ..roots import ModuleIndex, is_test_file, module_name
from ..scope import ClassInfo, FunctionInfo, ModuleInfo, last_name
from ..slices import ANY_ATTRIBUTE, Graph, Purpose, Slice
from ..source import SourceError, SourceText
from ..state import State
from ..values import (
    ANY_DEVICE,
    CPU,
    DENSE,
    PINNED,
    Class,
    Const,
    Func,
    Instance,
    NoneValue,
    Ref,
    Seq,
    Step,
    Tensor,
    Unknown,
    Value,
    join,
    mark,
    unknown,
)
from .searches import calls_of, record, stores_to, subclasses_of
from .words import Searcher, WordIndex, current_keeper

#: What a helper's evaluation is for: its returns; an ``__init__``'s: what it stores on ``self``.
RETURNS: Purpose = ("returns",)
SELF_STORES: Purpose = ("stores", None)
#: Folders looked in for a ``conftest.py`` above a test module, its own first.
MAX_CONFTEST_LEVELS = 8
#: What marks the top of a project (pytest's rootdir holds one): no ``conftest.py`` above it is looked for.
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", ".git")
#: How many calls and stores away from the copy deep mode evaluates with what the copy's
#: side gives them (an attribute's answer starts again from :data:`ATTRIBUTE_LEFT`, and a
#: function's own facts past :data:`CONTEXT_DEPTH` from :data:`OWN_LEFT`, wherever they
#: are asked: neither is ever too far from the copy).
DEPTH = 4
#: The first this many of them evaluate a call with the arguments it gets (further
#: away, a function is evaluated with its own parameters, unknown).
CONTEXT_DEPTH = 2
#: How many of them the questions that search the project's text may be asked in.
WIDE_DEPTH = 1
#: The same for a record's constructor calls (``Meta(lens=...)``): one step further, as
#: a record's field is often read in a caller that passes it on to the copying helper,
#: and a record is built in few places (a class name in many files is not searched).
RECORD_DEPTH = WIDE_DEPTH + 1
#: The depth left an attribute's stores are evaluated with, wherever the attribute is
#: asked about (see :meth:`DeepProject.attribute`): a storing method's calls are then
#: followed two deep, with their own parameters.
ATTRIBUTE_LEFT = DEPTH - 1
#: The same for an attribute asked about next to a copy (:attr:`Reach.WIDE`): its storing
#: methods are evaluated as the copy's own function would evaluate them, calls with the
#: arguments they get (:data:`CONTEXT_DEPTH`).
WIDE_LEFT = DEPTH
#: The depth left a function is evaluated with for its own facts (its own parameters) once
#: it is past the calls evaluated with their arguments (:data:`CONTEXT_DEPTH`), wherever it
#: is asked (see :meth:`DeepProject.facts`).
OWN_LEFT = DEPTH - CONTEXT_DEPTH
#: The last item of such an answer's key, in place of the depth left.
ANY_DEPTH = "any"


class Reach(enum.Enum):
    """What an answer about an attribute takes in besides its class's own stores."""

    #: Nothing more (asked far from a copy, or where another attribute's stores are evaluated).
    NARROW = "narrow"
    #: A record's fields as its constructor calls give them (:data:`RECORD_DEPTH`).
    RECORDS = "records"
    #: Those, its subclasses' stores, stores from outside the class, and what the calls of
    #: each storing function give it (:data:`WIDE_DEPTH`).
    WIDE = "wide"


#: How many re-exports (``from .impl import f`` in a package) are followed.
MAX_HOPS = 4
#: A name said in more files than this is too common to read every caller of.
MAX_CALLER_FILES = 16
#: The same for stores of an attribute from outside its class, and subclasses.
MAX_STORE_FILES = 8
#: The same for stores of an attribute on objects of classes pinfix cannot see.
MAX_AGREED_FILES = 4
#: Calls of a function looked at for the ``non_blocking=True`` they pass to its copies.
MAX_FLAG_SITES = 8
#: How many calls up a ``non_blocking`` parameter passed on unchanged (``_move(t, dev,
#: non_blocking)``) is followed to the call that gives it ``True``.
MAX_FLAG_RELAY = 4
#: A function storing more attributes than this is evaluated once for all its stores
#: (not once per attribute asked about: a big ``__init__`` would be run for each).
MAX_SLICED_STORES = 4
#: Statement visits the project's evaluations may spend for each statement of the
#: checked module (then every further project question is unknown): whatever the
#: project, one file's deep check costs at most this times the file's own size.
WORK_PER_STATEMENT = 400
#: ... and this many more, whatever the file's size.
WORK_BASE = 20000


#: Attributes a class is asked about before its methods are indexed by what they store.
ASKED_BEFORE_INDEX = 8

#: A line that starts a def: its name.
_DEF_LINE = re.compile(r"\s*(?:async\s+)?def\s+(\w+)\s*\(")


def _only_defines(module: ModuleInfo, line: int, name: str) -> bool:
    """Whether line ``line`` of ``module`` says ``name`` only as the name of the def it
    starts (no call of it: a one-line def that calls itself says it twice)."""
    text = module.src.line_text(line)
    found = _DEF_LINE.match(text)
    return found is not None and found.group(1) == name and text.count(name) == 1


def _without_locals(facts: FunctionFacts) -> FunctionFacts:
    """``facts`` without what each local name held: only a module's own evaluations
    (:meth:`.module.ModuleContext.evaluate`: closures, module names) are asked that, and
    kept for every answer it was 85 MB on vLLM 0.34.0."""
    facts.all_values = {}
    return facts


class DeepProject(Questions):
    """The modules of the project and the answers computed about them."""

    deep = True

    def __init__(self, settings: Settings):
        self.settings = settings
        self.index = ModuleIndex()
        self.modules: Dict[Path, Optional[ModuleInfo]] = {}
        self.contexts: Dict[int, ModuleContext] = {}
        #: Answers, keyed by the question and the depth left when it was asked: the
        #: same question asked as far from a copy gets the same answer.
        self.calls: Dict[Tuple[Any, ...], Optional[Value]] = {}
        self.attributes: Dict[Tuple[Any, ...], Optional[Value]] = {}
        self.own: Dict[Tuple[Any, ...], Optional[FunctionFacts]] = {}
        self.refined: Dict[Tuple[Any, ...], Optional[FunctionFacts]] = {}
        self.active: Set[Tuple[Any, ...]] = set()
        #: How many more calls and stores the current question may pass through.
        self.left = DEPTH
        #: While an attribute's stores are evaluated: no search of the project's text is made.
        self.narrow = False
        #: Statement visits left to the checked module's questions (``None``: no limit).
        self.work_left: Optional[int] = None
        self.passed: Dict[Tuple[Any, ...], Dict[str, Value]] = {}
        self.relays: Dict[Tuple[Any, ...], Optional[Step]] = {}
        self._callers: Dict[int, Optional[List[FunctionInfo]]] = {}
        self._files: Optional[Tuple[Tuple[Path, ...], Searcher]] = None
        self._word_indexes: Dict[Path, WordIndex] = {}
        self._greps: Dict[Tuple[bytes, str], Optional[List[Tuple[Path, List[int]]]]] = {}
        self._subclasses: Dict[int, List[ClassInfo]] = {}
        #: By class: its methods by each attribute they store, once it was asked about so
        #: many attributes (:data:`ASKED_BEFORE_INDEX`), and how many it was asked about.
        self._storing_methods: Dict[int, Dict[str, List[FunctionInfo]]] = {}
        self._attributes_asked: Dict[int, int] = {}
        self._slices: Dict[Tuple[int, Purpose], Slice] = {}
        self._graphs: Dict[Tuple[int, bool], Graph] = {}
        #: What each answer read (``f:<path>`` of a module, ``g:<word>\0<pattern>`` of a search
        #: of the project's text, ``t:`` one that found too many files to read), so that a
        #: cached verdict knows what to recheck.
        self._reads: Dict[Tuple[Any, ...], Tuple[str, ...]] = {}
        #: Each distinct set of reads, once, as a tuple (many answers read the same modules:
        #: on vLLM 0.34.0 the sets held 3 million reads of 20,000 names, 150 MB as copies;
        #: the 14,000 distinct ones 95 MB as frozensets, whose tables are mostly empty
        #: slots), found by the hash of the set.
        self._read_sets: Dict[int, List[Tuple[str, ...]]] = {}
        #: The read of each module file (``f:<path>``), made once.
        self._file_reads: Dict[Path, str] = {}
        self._readers: List[Set[str]] = []
        #: Module files found by name: whether a symbolic link is on the way.
        self._linked: Dict[Path, bool] = {}
        #: Each path asked about, resolved (once a run: the tree does not move under it).
        self._real: Dict[Path, Path] = {}
        #: The folders a test module's ``conftest.py`` files are looked for in, by its folder.
        self._conftest_folders: Dict[Path, List[Path]] = {}
        #: Each checked tree's statements, counted once (the tree kept with its count).
        self._statements: Dict[int, Tuple[ast.Module, int]] = {}

    # --- what answers read -----------------------------------------------------------------

    @contextmanager
    def recording(self, key: Optional[Tuple[Any, ...]] = None) -> Iterator[Set[str]]:
        """Collect what is read inside (also into the question around it); with
        ``key``, remember it for that answer, so reusing the answer reads it too."""
        found: Set[str] = set()
        self._readers.append(found)
        try:
            yield found
        finally:
            self._readers.pop()
            if key is not None:
                self._reads[key] = self._read_set(found)
            if self._readers:
                self._readers[-1].update(found)

    def _read_set(self, found: Set[str]) -> Tuple[str, ...]:
        """``found`` as the one tuple kept for that set of reads."""
        same = self._read_sets.setdefault(hash(frozenset(found)), [])
        for kept in same:
            if len(kept) == len(found) and found.issuperset(kept):
                return kept
        kept = tuple(found)
        same.append(kept)
        return kept

    def reused(self, key: Tuple[Any, ...]) -> None:
        """An answer given again: what it read is read again."""
        if self._readers:
            self._readers[-1].update(self._reads.get(key, ()))

    def read(self, what: str) -> None:
        if self._readers:
            self._readers[-1].add(what)

    def read_file(self, path: Path) -> None:
        """The module file ``path`` (absolute) is read, or looked for."""
        if self._readers:
            what = self._file_reads.get(path)
            if what is None:
                what = self._file_reads[path] = "f:" + str(path)
            self._readers[-1].add(what)

    # --- modules ---------------------------------------------------------------------------

    def module_for(self, src: SourceText, tree: ast.Module, path: Optional[Path]) -> ModuleInfo:
        """The module being checked (its file's text as read now)."""
        if path is None:
            return ModuleInfo(src, tree)
        resolved = path.resolve()
        self.read_file(resolved)
        root = self.index.add_root_of(path)
        known = self.modules.get(resolved)
        if known is not None and known.src.text == src.text:
            return known
        info = ModuleInfo(src, tree, path, module_name(path, root), path.name == "__init__.py")
        self.modules[resolved] = info
        return info

    def open(self, src: SourceText, tree: ast.Module, path: Optional[Path], settings: Settings) -> ModuleContext:
        """The checked module's context (``settings`` are this project's own)."""
        ctx = self.context(self.module_for(src, tree, path))
        self.begin(tree)
        return ctx

    def begin(self, tree: ast.Module) -> None:
        """A module's check starts: its project questions get a budget in proportion to it."""
        known = self._statements.get(id(tree))
        if known is None or known[0] is not tree:
            known = self._statements[id(tree)] = (tree, sum(1 for node in ast.walk(tree) if isinstance(node, ast.stmt)))
        self.work_left = WORK_BASE + WORK_PER_STATEMENT * known[1]

    @property
    def out_of_work(self) -> bool:
        return self.work_left is not None and self.work_left <= 0

    def unfollowed(self, what: str) -> str:
        """Why ``what`` got no answer from an evaluation that returned none."""
        if self.out_of_work:
            return f"{what} is past what pinfix follows for one file (its budget for project questions is spent)"
        if self.left <= 0:
            return f"{what} is too far from the copy for pinfix to follow"
        return f"{what} is defined in terms of itself"

    def pinned_producers(self, module: ModuleInfo) -> List[Tuple[FunctionInfo, Value]]:
        """The functions of ``module`` every return of which is pinned host memory, with
        what they return (inferred: a call of one needs no ``pinned-producers`` entry)."""
        found = []
        self.begin(module.tree)
        budget = self.work_left
        # A snapshot: evaluating a function registers the lambdas in it as it meets them.
        for func in list(module.functions.values()):
            if isinstance(func.node, ast.Lambda) or func.is_generator or func.is_class_body:
                continue
            self.work_left = budget  # each function's question, a budget of its own
            facts = self.facts(func, RETURNS)
            returned = facts.returns if facts is not None else None
            if returned and all(
                isinstance(a, Tensor) and a.device == CPU and a.memory == PINNED and a.layout == DENSE for a in returned
            ):
                found.append((func, returned))
        return found

    def conftest_fixture(self, module: ModuleInfo, name: str) -> Optional[FunctionInfo]:
        """The fixture ``name`` of the nearest ``conftest.py`` that has one, from ``module``'s
        folder up (:data:`MAX_CONFTEST_LEVELS` folders at most, the last one holding a
        project's settings or ``.git``): pytest's choice for a test there. Each file looked
        for is read, so a ``conftest.py`` made later is a change to the verdict."""
        if module.path is None:
            return None
        start = self.real(module.path).parent
        folders = self._conftest_folders.get(start)
        if folders is None:
            folders = self._conftest_folders[start] = []
            folder = start
            while len(folders) < MAX_CONFTEST_LEVELS:
                folders.append(folder)
                # (os.path: a folder pinfix may not look into is no marker, and raises nothing)
                if folder.parent == folder or any(os.path.exists(folder / marker) for marker in _PROJECT_MARKERS):
                    break
                folder = folder.parent
        for folder in folders:
            conftest = self.load(folder / "conftest.py")  # (read each time: the verdict depends on it)
            found = module_fixtures(conftest).get(name) if conftest is not None else None
            if found is not None:
                return found
        return None

    def real(self, path: Path) -> Path:
        """``path`` resolved (memoised: asked for every module read by every answer)."""
        found = self._real.get(path)
        if found is None:
            found = self._real[path] = path.resolve()
        return found

    def load(self, path: Path) -> Optional[ModuleInfo]:
        resolved = self.real(path)
        self.read_file(resolved)
        if resolved in self.modules:
            return self.modules[resolved]
        self.modules[resolved] = None
        try:
            data = read_regular(resolved)
            src = SourceText.from_bytes(data, str(resolved))
            tree = src.parse()
        except (OSError, SourceError):
            return None  # unreadable or unparsable: what it would say stays unknown
        root = self.index.add_root_of(resolved)
        info = ModuleInfo(src, tree, resolved, module_name(resolved, root), resolved.name == "__init__.py")
        # Most of a module a question leads to is never evaluated: its defs' bodies are
        # parsed again where one is (seven in ten of its nodes are never looked into on
        # vLLM: see .bodies).
        info.defer_bodies()
        self.modules[resolved] = info
        return info

    def context(self, module: ModuleInfo) -> ModuleContext:
        if module.path is not None:
            self.read_file(self.real(module.path))
        ctx = self.contexts.get(id(module))
        if ctx is None:
            ctx = self.contexts[id(module)] = ModuleContext(module, self.settings, self)
        return ctx

    def evaluator(
        self,
        ctx: ModuleContext,
        func: FunctionInfo,
        params: Optional[Dict[str, Value]] = None,
        purpose: Optional[Purpose] = None,
    ) -> "DeepEvaluator":
        """An evaluator of ``func`` that asks the project only where ``purpose``
        (see :mod:`.slices`) can be reached (``None``: everywhere)."""
        relevant = None
        if purpose is not None and not isinstance(func.node, ast.Lambda):
            relevant = self.slice(func, purpose)
        return DeepEvaluator(ctx, func, params, relevant)

    def slice(self, func: FunctionInfo, purpose: Purpose) -> Slice:
        """The statements of ``func`` (not a lambda) that may matter to ``purpose``, and the keys they read."""
        key = (id(func.node), purpose)
        relevant = self._slices.get(key)
        if relevant is None:
            closures = purpose[0] == "copies"
            graph = self._graphs.get((id(func.node), closures))
            if graph is None:
                graph = self._graphs[(id(func.node), closures)] = Graph(func, closures)
            relevant = self._slices[key] = graph.slice(purpose)
        return relevant

    def purpose_for(self, func: FunctionInfo, purpose: Purpose) -> Purpose:
        """``purpose``, or all of ``func``'s stores where it stores so many attributes
        that one evaluation for all of them costs less than one per attribute asked
        (decided by the function alone, so no answer depends on what was asked first)."""
        if purpose[0] == "stores" and purpose[1] not in (None, ANY_ATTRIBUTE) and not isinstance(func.node, ast.Lambda):
            if len(func.attribute_stores) > MAX_SLICED_STORES:
                return ("stores", ANY_ATTRIBUTE)
        return purpose

    def global_value(self, module: ModuleInfo, name: str) -> Optional[Value]:
        return self.context(module).global_value(module, name)

    # --- names -----------------------------------------------------------------------------

    def near(self, module: ModuleInfo) -> Optional[Path]:
        """The import root of ``module``'s file: where its imports are looked for first."""
        return None if module.path is None else self.index.add_root_of(module.path)

    def resolve(self, qualified: str, hops: int = 0, near: Optional[Path] = None) -> Optional[Value]:
        """What a dotted name of the project is (``pkg.helpers.make``) to a module
        under the import root ``near``, or ``None`` when it is not the project's."""
        split = self.index.split(qualified, near)
        for absent in self.index.looked_for(qualified, near):
            self.read_file(absent)  # created later, it changes the answer
        if split is None:
            return None
        path, names = split
        linked = self._linked.get(path)
        if linked is None:
            linked = self._linked[path] = path.resolve() != path
        if linked:
            self.read_file(path)  # reached through a link: re-pointed later, it changes the answer
        module = self.load(path)
        if module is None:
            return unknown(f"`{qualified}` is in a module pinfix cannot read")
        if not names:
            return Value((Ref(qualified),))
        value = self.export(module, names[0], hops)
        for attr in names[1:]:
            value = value.map(lambda a: self.member(a, attr, near))
        return value

    def export(self, module: ModuleInfo, name: str, hops: int = 0) -> Value:
        """What ``module`` binds ``name`` to at its top level."""
        found = module.top.get(name)
        if found is not None and _only_binding(module, name):
            if isinstance(found, ClassInfo):
                return Value((Class(found),))
            if set(found.decorators) <= TRANSPARENT_DECORATORS:
                return Value((Func(found),))
            return unknown(f"`{name}` is decorated in a way pinfix does not follow")
        for stmt in module.tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for local, qualified, _ in module.import_bindings(stmt):
                    if local == name and not qualified.startswith("."):
                        if hops >= MAX_HOPS:
                            return unknown(f"`{name}` is re-exported too many times")
                        resolved = self.resolve(qualified, hops + 1, self.near(module))
                        return resolved if resolved is not None else Value((Ref(qualified),))
        value = self.global_value(module, name)
        return value if value is not None else unknown(f"`{module.name}.{name}` is not bound where pinfix looks")

    def member(self, atom: Any, attr: str, near: Optional[Path] = None) -> Value:
        if isinstance(atom, Ref):
            found = self.resolve(atom.name + "." + attr, near=near)
            return found if found is not None else Value((Ref(atom.name + "." + attr),))
        if isinstance(atom, Class):
            method = self.method(atom.info, attr)
            if method is not None:
                return Value((Func(method),))
            return self.attribute(atom.info, attr) or unknown(
                f"pinfix cannot see every assignment to `{atom.info.name}.{attr}`"
            )
        return unknown(f"`{attr}` of something pinfix cannot see")

    def class_expression(self, module: ModuleInfo, node: ast.AST) -> Optional[ClassInfo]:
        """The project class a base-class expression names."""
        if isinstance(node, ast.Name):
            value = self.export(module, node.id)
        elif isinstance(node, ast.Attribute):
            inner = node
            parts = []
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if not isinstance(inner, ast.Name):
                return None
            value = self.export(module, inner.id)
            for attr in reversed(parts):
                value = value.map(lambda a: self.member(a, attr, self.near(module)))
        else:
            return None
        classes = value.only(Class)
        return classes[0].info if classes else None

    def bases(self, cls: ClassInfo) -> List[ClassInfo]:
        out = []
        for base in cls.bases:
            found = self.class_expression(cls.module, base)
            if found is not None and found is not cls:
                out.append(found)
        return out

    def record_fields(self, cls: ClassInfo, seen: int = 0) -> Optional[List[Tuple[str, Optional[ast.expr]]]]:
        """A record's fields in the order its constructor takes them: a dataclass's project
        dataclass bases' first, then its own (a field declared again keeps its place and
        takes the new default); ``None`` where a base pinfix cannot see may add fields."""
        own = cls.fields()
        if not cls.is_dataclass or not cls.bases:
            return own
        if seen > DEPTH * 4:
            return None
        out: Dict[str, Optional[ast.expr]] = {}
        for base in cls.bases:
            found = self.class_expression(cls.module, base)
            if found is None:
                if _fieldless_base(base):
                    continue
                return None
            if found is cls or not found.is_dataclass:
                continue  # a plain class adds no fields to a dataclass
            inherited = self.record_fields(found, seen + 1)
            if inherited is None:
                return None
            out.update(inherited)
        out.update(own)
        return list(out.items())

    def method(self, cls: ClassInfo, name: str, seen: int = 0) -> Optional[FunctionInfo]:
        if name in cls.methods:
            return cls.methods[name]
        if seen > DEPTH * 4:
            return None
        for base in self.bases(cls):
            found = self.method(base, name, seen + 1)
            if found is not None:
                return found
        return None

    # --- calls -----------------------------------------------------------------------------

    def wide(self, depth: int = WIDE_DEPTH) -> bool:
        """Whether questions that search the whole project's text (callers, stores
        from outside the class, subclasses, agreeing stores) may be asked here: only
        within ``depth`` (:data:`WIDE_DEPTH`) steps of the copy, as each reads many
        files and asks more questions in each."""
        return not self.narrow and DEPTH - self.left <= depth

    def deeper(self) -> "_Deeper":
        return _Deeper(self)

    def call(
        self, func: FunctionInfo, receiver: Optional[Value], args: Optional[Arguments], node: ast.AST
    ) -> Optional[Value]:
        """What ``func`` returns for these arguments (``None``: recursion, or too far
        from the copy to follow). Within :data:`CONTEXT_DEPTH` of the copy, ``func``
        is evaluated with the arguments the call gives it; further away with its own
        parameters (unknown)."""
        if func.is_generator:
            # What it yields, evaluated with its own parameters (each item is the yielded value).
            facts = self.facts(func, RETURNS)
            if facts is None or facts.yields is None:
                return Value((Seq("gen", None, unknown(f"`{func.name}` is a generator")),))
            step = Step("returned", func.node, f"yielded by `{func.name}()`", func.module.src)
            return Value((Seq("gen", None, mark(facts.yields, step)),))
        if DEPTH - self.left >= CONTEXT_DEPTH:
            facts = self.facts(func, RETURNS)
            return _returned(facts) if facts is not None else None
        params = self.parameters(func, receiver, args)
        key = ("call", id(func.node), tuple(sorted((n, v.keys) for n, v in params.items())), self.left)
        return self.evaluated(self.calls, key, func, params, RETURNS, _returned)

    def evaluated(
        self,
        table: Dict[Tuple[Any, ...], Any],
        key: Tuple[Any, ...],
        func: FunctionInfo,
        params: Optional[Dict[str, Value]],
        purpose: Optional[Purpose],
        keep: Callable[[FunctionFacts], Any] = _without_locals,
    ) -> Any:
        """``func`` evaluated one step further from the copy for ``purpose``, and what
        of it ``table`` keeps (memoised under ``key``, whose last item is the depth
        left or :data:`ANY_DEPTH`, with what it read); ``None`` while it is being
        evaluated (recursion)."""
        if key in table:
            self.reused(key)
            return table[key]
        if key[:-1] in self.active or self.out_of_work:
            return None
        self.active.add(key[:-1])
        try:
            with self.deeper(), self.recording(key):
                facts = self.run(self.evaluator(self.context(func.module), func, params, purpose))
        finally:
            self.active.discard(key[:-1])
        if facts is None:
            return None
        found = table[key] = keep(facts)
        return found

    def run(self, evaluator: "DeepEvaluator") -> Optional[FunctionFacts]:
        """``evaluator`` run, its statement visits taken from what is left to the checked
        module's project questions (``None``: nothing is left)."""
        if self.out_of_work:
            return None
        before = evaluator.budget
        facts = evaluator.run()
        if self.work_left is not None:
            self.work_left -= before - evaluator.budget
        return facts

    def facts(self, func: FunctionInfo, purpose: Optional[Purpose]) -> Optional[FunctionFacts]:
        """``func`` evaluated with its own parameters (a method's receiver is an object
        of its class), asking the project only what ``purpose`` needs: what it
        stores, and returns given nothing known; ``None`` while it is being
        evaluated.

        Past the calls evaluated with their arguments (:data:`CONTEXT_DEPTH`), the answer
        does not depend on the depth left where it is asked: ``func`` is evaluated from
        :data:`OWN_LEFT`, once a run, with no search of the project's text, and a call in
        it past that point is the same kind of answer. So a chain of calls is followed to
        its end (where the depth budget left it "too far from the copy"), and each
        function's own facts are worked out once, not once for each depth."""
        if purpose is not None:
            purpose = self.purpose_for(func, purpose)
        if DEPTH - self.left < CONTEXT_DEPTH:
            return self.evaluated(self.own, ("own", id(func.node), purpose, self.left), func, None, purpose)
        with _Restarted(self, OWN_LEFT):
            return self.evaluated(self.own, ("own", id(func.node), purpose, ANY_DEPTH), func, None, purpose)

    def parameters(self, func: FunctionInfo, receiver: Optional[Value], args: Optional[Arguments]) -> Dict[str, Value]:
        """The values the call gives ``func``'s parameters (defaults where it gives none)."""
        params = list(func.params)
        out: Dict[str, Value] = {}
        if func.kind in ("method", "property", "classmethod") and params and receiver is not None:
            out[params[0].name] = receiver
            params = params[1:]
        elif func.kind in ("method", "property") and params and receiver is None:
            params = params[1:]
        positional = [p for p in params if p.kind in ("posonly", "positional")]
        given = list(args.positional) if args is not None else []
        starred = args is not None and (args.starred or args.double_starred)
        for p, (_, value) in zip(positional, given):
            out[p.name] = value
        if args is not None:
            for name, _, value in args.keywords:
                if any(p.name == name and p.kind != "posonly" for p in params):
                    out[name] = value
        for p in params:
            if p.name in out:
                continue
            if starred or p.kind in ("vararg", "kwarg"):
                continue  # the evaluator's own reading of the parameter
            if p.default is not None:
                out[p.name] = _literal(p.default)
        return out

    def fields(self, cls: ClassInfo, args: Arguments, node: ast.AST) -> List[Tuple[str, Value]]:
        """The fields a constructor call gives a new object of ``cls``."""
        if cls.is_record:
            fields = self.record_fields(cls)
            # A base pinfix cannot see may take the first places: only keywords say which field gets what.
            names = fields if fields is not None else cls.fields()
            given: Dict[str, Value] = {}
            for (name, _), (_, value) in zip(names if fields is not None else (), args.positional):
                given[name] = value
            for name, _, value in args.keywords:
                if any(n == name for n, _ in names):
                    given[name] = value
            for name, default in names:
                if name in given:
                    continue
                if args.starred or args.double_starred:  # `*a` or `**kw` may give it
                    given[name] = unknown(f"`{name}` may be given by `*` or `**` in `{cls.name}(...)`")
                elif fields is None and args.positional:
                    given[name] = unknown(
                        f"`{name}` may be given by a positional argument of `{cls.name}(...)` (a base pinfix cannot see comes first)"
                    )
                elif default is not None:
                    given[name] = _literal(default)
            return sorted(given.items())
        init = self.method(cls, "__init__")
        if init is None or self.left <= 0 or DEPTH - self.left >= CONTEXT_DEPTH:
            return []
        receiver = Value((Instance(cls),))
        params = self.parameters(init, receiver, args)
        key = ("init", id(init.node), tuple(sorted((n, v.keys) for n, v in params.items())), self.left)
        found = self.evaluated(self.own, key, init, params, SELF_STORES)
        if found is None:
            return []
        out: Dict[str, Value] = {}
        for receiver_value, name, value, store in found.stores:
            if receiver_value.any(lambda a: isinstance(a, Instance) and a.cls is cls):
                step = Step("attribute", store, f"the attribute `self.{name}` assigned in `__init__`", init.module.src)
                out[name] = join(out.get(name), mark(value, step, via=True))
        return sorted(out.items())

    # --- callers ---------------------------------------------------------------------------

    def corpus(self) -> Searcher:
        """The searches of every ``.py`` file under the project's roots, each root's
        word index built (or read back) once a run."""
        roots = tuple(self.index.roots)
        if self._files is None or self._files[0] != roots:
            indexes = []
            for root in roots:
                known = self._word_indexes.get(root)
                if known is None:
                    known = self._word_indexes[root] = WordIndex(root, current_keeper())
                indexes.append(known)
            self._files = (roots, Searcher(indexes))
        return self._files[1]

    def callers(self, func: FunctionInfo) -> Optional[List[FunctionInfo]]:
        """The project functions whose text calls ``func`` by its name (``None``: too
        many files say the name for pinfix to read them all)."""
        key = id(func.node)
        if key in self._callers:
            self.reused(("callers-of", key))
            return self._callers[key]
        with self.recording(("callers-of", key)):
            found = self._find_callers(func)
        self._callers[key] = found
        return found

    def _find_callers(self, func: FunctionInfo) -> Optional[List[FunctionInfo]]:
        found = self.functions_calling(_called_name(func), func.module)
        return None if found is None else [caller for caller in found if caller.node is not func.node]

    def functions_calling(self, name: str, asker: ModuleInfo) -> Optional[List[FunctionInfo]]:
        """The project functions whose text says ``name(`` (``None``: too many files
        say it for pinfix to read them all), in the modules that speak for ``asker``."""
        hits = self.grep(calls_of(name), name)
        if hits is None:
            return None
        found: List[FunctionInfo] = []
        for module, lines in self.speaking(hits, asker):
            # A def's own line says `name(` and calls nothing: the scope around it is no
            # caller (taken for one, a class body with a thousand methods was evaluated
            # once for each of them).
            lines = [line for line in lines if not _only_defines(module, line, name)]
            found.extend(f for f in functions_at(module, lines) if f not in found)
        return found

    def from_callers(self, func: FunctionInfo, names: Set[str], wide: Optional[bool] = None) -> Dict[str, Value]:
        """What the project's calls of ``func`` pass to the parameters ``names`` (their
        join; a public function may also be called from outside, with anything), where
        the searches of the project's text may be made (``wide``: said by the asker)."""
        if self.left <= 0 or not (self.wide() if wide is None else wide):
            return {}
        key = ("callers", id(func.node), frozenset(names), self.left)
        if key in self.passed:
            self.reused(key)
            return self.passed[key]
        self.passed[key] = {}  # while asked: a caller that is also called from here sees nothing
        with self.recording(key):
            result = self._passed(func, names)
        self.passed[key] = result
        return result

    def call_sites(self, func: FunctionInfo) -> Iterator[Tuple[FunctionInfo, ast.Call, Dict[str, Value]]]:
        """Each call of ``func`` the project shows: the calling function, the call, and
        what it gives the parameters (defaults where it gives none)."""
        called = ("calls", _called_name(func))
        for caller in self.callers(func) or ():
            with self.deeper():
                facts = self.facts(caller, called)
            for callee, call, args, receiver in facts.sites if facts is not None else ():
                if callee.node is func.node:
                    yield caller, call, self.parameters(func, receiver, args)

    def _passed(self, func: FunctionInfo, names: Set[str]) -> Dict[str, Value]:
        callers = self.callers(func)
        out: Dict[str, List[Value]] = {n: [] for n in names}
        for caller, call, given in self.call_sites(func):
            where = Step(
                "argument", call, f"the argument given to `{func.name}()` in `{caller.name}`", caller.module.src
            )
            for name in names:
                if name in given:
                    out[name].append(mark(given[name], where, via=True))
        public = not func.name.startswith("_") or func.name == "__init__"
        result = {}
        for name, values in out.items():
            if not values:
                continue
            if public or callers is None:
                values.append(unknown(f"`{name}` may also be given by callers outside the project"))
            result[name] = join(*values)
        return result

    def refine(
        self, ctx: ModuleContext, facts: FunctionFacts, purpose: Optional[Purpose] = None, wide: Optional[bool] = None
    ) -> FunctionFacts:
        """``facts`` again, with the parameters its copies and stores depend on filled
        from the project's calls of the function, where those say something; and
        copies whose ``non_blocking`` is a parameter, as the calls that pass ``True`` make them."""
        func = facts.info
        params = {p.name for p in func.params}
        if purpose is None:
            purpose = None if ctx.whole else ("copies", ctx.lines)
        else:
            purpose = self.purpose_for(func, purpose)
        wanted: Set[str] = set()
        for value in [c.source for c in facts.copies.values()] + [v for _, _, v, _ in facts.stores]:
            for atom in value.only(Unknown):
                if isinstance(atom.node, ast.arg) and atom.node.arg in params:
                    wanted.add(atom.node.arg)
        shaping = self._shaping_parameters(facts) - wanted
        wanted |= shaping
        given = self.from_callers(func, wanted, wide) if wanted else {}
        given = {n: v for n, v in given.items() if v.any(lambda a: not isinstance(a, Unknown))}
        # A number or a flag a caller passes decides no tensor's memory here: not worth an evaluation.
        given = {
            n: v
            for n, v in given.items()
            if n not in shaping or v.any(lambda a: not isinstance(a, (Unknown, Const, NoneValue)))
        }
        refined = facts
        if given:
            key = ("refined", id(func.node), purpose, tuple(sorted((n, v.keys) for n, v in given.items())), self.left)
            refined = self.evaluated(self.refined, key, func, given, purpose) or facts
        flags = _flag_parameters(refined, params)
        return self.given_non_blocking(refined, flags, purpose, wide) if flags else refined

    def _shaping_parameters(self, facts: FunctionFacts) -> Set[str]:
        """The parameters that may decide where the source of a non_blocking copy
        lives, when the function alone cannot tell (``lens - 1`` of a parameter
        ``lens``: a fresh tensor on ``lens``' device): those its copies' slices read.
        (A copy of the parameter itself is asked for by name, in :meth:`refine`.)"""
        func = facts.info
        if isinstance(func.node, ast.Lambda):
            return set()
        lines: Set[int] = set()
        for copy in facts.copies.values():
            if copy.non_blocking is False or copy.blocking:
                continue
            if copy.source.any(_undetermined):
                lines.update(range(copy.call.lineno, (copy.call.end_lineno or copy.call.lineno) + 1))
        if not lines:
            return set()
        relevant = self.slice(func, ("copies", frozenset(lines)))
        me = func.self_name
        return {
            p.name
            for p in func.params
            if p.kind not in ("vararg", "kwarg") and p.name != me and relevant.reads_name(p.name)
        }

    def given_non_blocking(
        self, facts: FunctionFacts, flags: Dict[int, str], purpose: Optional[Purpose], wide: Optional[bool] = None
    ) -> FunctionFacts:
        """``facts`` with each copy whose ``non_blocking`` is the parameter ``flags[id(call)]``
        seen as the project's calls that pass ``True`` for it make it: one evaluation per
        such call, with everything that call gives (the copy's source joined over them)."""
        func = facts.info
        if self.left <= 0 or not (self.wide() if wide is None else wide):
            return facts
        names = set(flags.values())
        seen: Dict[int, Copy] = {}
        sites = 0
        said_false = {name: True for name in names}
        for n, (caller, call, given) in enumerate(self.call_sites(func)):
            if n >= MAX_FLAG_SITES:
                break
            sites += 1
            for name in names:
                if not (name in given and given[name].all(lambda a: isinstance(a, Const) and a.value is False)):
                    said_false[name] = False
            passed = {
                name
                for name in names
                if name in given and given[name].all(lambda a: isinstance(a, Const) and a.value is True)
            }
            relayed = {}
            for name in names - passed:
                up = self.relayed_true(caller, call, func, name)
                if up is not None:
                    relayed[name] = up
            passed |= set(relayed)
            if not passed:
                continue
            argument = Step(
                "argument", call, f"the argument given to `{func.name}()` in `{caller.name}`", caller.module.src
            )
            given = {name: mark(value, argument, via=True) for name, value in given.items()}
            given.update({name: Value((Const(True),)) for name in relayed})
            key = ("flagged", id(func.node), purpose, id(call), self.left)
            found = self.evaluated(self.refined, key, func, given, purpose)
            if found is None:
                continue
            for call_id, copy in found.copies.items():
                flag = flags.get(call_id)
                if copy.non_blocking is not True or flag not in passed:
                    continue
                given_copy = copy.given(
                    relayed.get(flag)
                    or Step("argument", call, f"`{caller.name}()` passes `{flag}=True`", caller.module.src)
                )
                known = seen.get(call_id)
                if known is not None and (known.blocking or not given_copy.blocking):
                    known.merge(given_copy)  # the first call whose copy blocks names the way
                else:
                    if known is not None:
                        given_copy.merge(known)
                    seen[call_id] = given_copy
        # A default of `True` is what a user of the function runs, unless every call the project
        # shows passes `False` (calls that leave it out pass the default: found above).
        defaults = {
            p.name: p
            for p in func.params
            if p.name in names and isinstance(p.default, ast.Constant) and p.default.value is True
        }
        defaulted = {name for name, p in defaults.items() if not (sites and said_false[name])}
        if defaulted and not any(flags.get(call_id) in defaulted for call_id in seen):
            found = self.evaluated(
                self.refined,
                ("defaulted", id(func.node), purpose, self.left),
                func,
                self.parameters(func, None, None),
                purpose,
            )
            for call_id, copy in found.copies.items() if found is not None else ():
                flag = flags.get(call_id)
                if copy.non_blocking is True and flag in defaulted and call_id not in seen:
                    default = defaults[flag].default
                    seen[call_id] = copy.given(
                        Step("default", default, f"`{flag}` is `True` by default in `{func.name}()`", func.module.src)
                    )
        if not seen:
            return facts
        return facts.with_copies({**facts.copies, **seen})

    def relayed_true(
        self, caller: FunctionInfo, call: ast.Call, func: FunctionInfo, name: str, hops: int = 0
    ) -> Optional[Step]:
        """Where ``True`` comes from when ``call`` (in ``caller``) gives ``func``'s parameter
        ``name`` one of ``caller``'s own parameters, passed on unchanged: the call further up
        that gives that parameter ``True`` (followed at most :data:`MAX_FLAG_RELAY` calls up,
        each with at most :data:`MAX_FLAG_SITES` calls looked at, within the depth left)."""
        own = _passed_parameter(caller, call, func, name)
        if own is None or hops >= MAX_FLAG_RELAY or self.left <= 1:
            return None
        key = ("relay", id(caller.node), own, self.left)
        if key in self.relays:
            self.reused(key)
            return self.relays[key]
        self.relays[key] = None  # while asked: a recursive call passes nothing new
        found: Optional[Step] = None
        with self.recording(key), self.deeper():
            for n, (up, up_call, given) in enumerate(self.call_sites(caller)):
                if n >= MAX_FLAG_SITES:
                    break
                if own in given and given[own].all(lambda a: isinstance(a, Const) and a.value is True):
                    found = Step(
                        "argument",
                        up_call,
                        f"`{up.name}()` passes `{own}=True` to `{caller.name}()`, which passes it on",
                        up.module.src,
                    )
                else:
                    found = self.relayed_true(up, up_call, caller, own, hops + 1)
                if found is not None:
                    break
        self.relays[key] = found
        return found

    # --- attributes ------------------------------------------------------------------------

    def attribute(self, cls: ClassInfo, attr: str, seen: int = 0, reach: Optional[Reach] = None) -> Optional[Value]:
        """Every value stored to ``attr`` on objects of ``cls`` (in its methods and its
        class body), else in its project bases'; ``None`` where none is seen.

        The answer does not depend on the depth left where it is asked, only on its
        :class:`Reach` (what the searches of the project's text may add, decided by how
        far from the copy it is asked): the stores are evaluated from :data:`ATTRIBUTE_LEFT`
        (:data:`WIDE_LEFT` next to a copy) whatever the depth left, each answer once a run,
        and no search is made while they are (an attribute read there gets the narrow
        answer). So a chain of attributes is followed to its end, and an answer first asked
        far from a copy is the one a copy asks for later; each is worked out once, where
        the depth budget worked one out for each depth it was asked at."""
        if reach is None:
            reach = Reach.WIDE if self.wide() else Reach.RECORDS if self.wide(RECORD_DEPTH) else Reach.NARROW
        key = ("attribute", id(cls.node), attr, reach)
        if key in self.attributes:
            self.reused(key)
            return self.attributes[key]
        if key in self.active or seen > DEPTH * 4:
            return unknown(f"`{cls.name}.{attr}` is defined in terms of itself")
        self.active.add(key)
        try:
            with _Restarted(self, WIDE_LEFT if reach is Reach.WIDE else ATTRIBUTE_LEFT), self.recording(key):
                found = self._attribute(cls, attr, seen, reach)
        finally:
            self.active.discard(key)
        self.attributes[key] = found
        return found

    def _attribute(self, cls: ClassInfo, attr: str, seen: int, reach: Reach) -> Optional[Value]:
        found = self.stores(cls, attr, reach)
        if found is None:
            for base in self.bases(cls):
                found = self.attribute(base, attr, seen + 1, reach)
                if found is not None:
                    break
        return found

    def stores(self, cls: ClassInfo, attr: str, reach: Reach) -> Optional[Value]:
        """What the project stores to ``attr`` on objects of ``cls``: in its class body
        and methods; with :attr:`Reach.RECORDS`, what a record's constructor calls give
        the field; with :attr:`Reach.WIDE`, also its subclasses' methods, and ``obj.attr =
        ...`` in any function where pinfix knows ``obj`` is one of them, each storing
        function's parameters filled from the project's calls of it."""
        wide = reach is Reach.WIDE
        values: List[Value] = []
        # (Only a class body that binds the name is evaluated for it: one that does not would
        # run each of its defs for nothing, once for every attribute asked of the class.)
        binds = attr in cls.body_function.locals
        bound = self.context(cls.module).binding(cls.body_function, attr) if binds and self.left > 0 else None
        if bound is not None:
            node = next((s for s in cls.node.body if _assigns_name(s, attr)), cls.node)
            step = Step("attribute", node, f"the class attribute `{cls.name}.{attr}`", cls.module.src)
            values.append(mark(bound, step, via=True))
        if (
            cls.is_record
            and reach is not Reach.NARROW
            and any(name == attr for name, _ in self.record_fields(cls) or cls.fields())
        ):
            values.extend(self.given_to_field(cls, attr))
        family = [cls, *(self.subclasses(cls) if wide else ())]
        seen: Set[int] = set()
        for klass in family:
            for method in self.methods_storing(klass, attr):
                seen.add(id(method.node))
                values.extend(self.stored_by(method, attr, family, wide))
        if wide and not any(t.blocks for v in values for t in v.tensors):
            # Stores from outside the class: only while they can still change the
            # verdict (a path that blocks is already known otherwise).
            for func in self.storing(attr, cls.module):
                if id(func.node) not in seen:
                    values.extend(self.stored_by(func, attr, family, wide))
        return join(*values) if values else None

    def methods_storing(self, cls: ClassInfo, attr: str) -> List[FunctionInfo]:
        """The methods of ``cls`` that may store ``attr`` on an object, in order: each
        asked (its text first, :meth:`.scope.FunctionInfo.stores_attribute`) for the
        class's first few attributes, then from an index of the class made once (a class
        of n methods asked about each of its n attributes cost n * n looks)."""
        key = id(cls.node)
        index = self._storing_methods.get(key)
        if index is None:
            asked = self._attributes_asked[key] = self._attributes_asked.get(key, 0) + 1
            if asked <= ASKED_BEFORE_INDEX:
                return [method for method in cls.methods.values() if method.stores_attribute(attr)]
            index = self._storing_methods[key] = {}
            for method in cls.methods.values():
                for stored in method.attribute_stores:
                    index.setdefault(stored, []).append(method)
        return index.get(attr, [])

    def given_to_field(self, cls: ClassInfo, attr: str) -> List[Value]:
        """What the project's constructor calls of the record ``cls`` give its field
        ``attr`` (a call that leaves it out gives the default, the class body's value)."""
        makers = self.functions_calling(cls.name, cls.module)
        if makers is None:
            return [unknown(self.unfollowed(f"`{cls.name}.{attr}`"))]
        out: List[Value] = []
        for func in makers:
            # The read of the field is the step away from the copy, as for a store (stored_by).
            facts = self.facts(func, ("calls", cls.name))
            if facts is None:
                out.append(unknown(self.unfollowed(f"`{cls.name}.{attr}`")))
                continue
            for klass, call, fields in facts.made:
                value = dict(fields).get(attr) if klass is cls else None
                if value is not None:
                    step = Step(
                        "attribute",
                        call,
                        f"the field `{attr}` given to `{cls.name}(...)` in `{func.name}`",
                        func.module.src,
                    )
                    out.append(mark(value, step, via=True))
        return out

    def stored_by(self, func: FunctionInfo, attr: str, family: List[ClassInfo], wide: bool = False) -> List[Value]:
        """The values ``func`` stores to ``attr`` on an object of one of ``family`` (``wide``:
        with its parameters filled from the project's calls of it)."""
        purpose = ("stores", attr)
        facts = self.facts(func, purpose)
        if facts is not None and wide:
            with self.deeper():
                facts = self.refine(self.context(func.module), facts, purpose, wide=True)
        if facts is None:
            return [unknown(self.unfollowed(f"`{family[0].name}.{attr}`"))]
        out = []
        for receiver, name, value, node in facts.stores:
            if name == attr and receiver.any(lambda a: isinstance(a, Instance) and any(a.cls is k for k in family)):
                target = (
                    _target_text(node, attr, func) if func.cls is not None else f"{_receiver_text(node, attr)}.{attr}"
                )
                step = Step("attribute", node, f"the attribute `{target}` assigned in `{func.name}`", func.module.src)
                out.append(mark(value, step, via=True))
        return out

    def grep(
        self, pattern: "re.Pattern[bytes]", word: str, limit: int = MAX_CALLER_FILES
    ) -> Optional[List[Tuple[Path, List[int]]]]:
        """Project files whose text matches ``pattern``, with the lines it matches on
        (``None``: more than ``limit`` files match, too many to read them all)."""
        key = (pattern.pattern, word, limit)
        if key in self._greps:
            self.reused(("grep",) + key)
            out = self._greps[key]
        else:
            with self.recording(("grep",) + key):
                out = self._grep(pattern, word, limit)
            self._greps[key] = out
        # What the answer depends on: the files the search finds (each read: a file that
        # finds more, or another, may change it); where it found too many to read, only
        # that it still does (``t:``: a file that finds more cannot change it). The word is
        # in every text the pattern matches: a cheap test before the pattern's, both as their
        # UTF-8 bytes, one character a byte (the cache matches them against bytes).
        self.read(("t:" if out is None else "g:") + record(pattern, word))
        return out

    def _grep(self, pattern: "re.Pattern[bytes]", word: str, limit: int) -> Optional[List[Tuple[Path, List[int]]]]:
        hits = []
        for hit in self.corpus().matching(pattern, word.encode()):
            hits.append(hit)
            if len(hits) > limit:
                return None
        return [(path, Searcher.lines_matching(pattern, data)) for path, data in hits]

    def speaking(
        self, hits: Optional[List[Tuple[Path, List[int]]]], asker: Optional[ModuleInfo]
    ) -> Iterator[Tuple[ModuleInfo, List[int]]]:
        """The modules of a search's ``hits`` that speak for ``asker`` (:func:`speaks_for`;
        ``None``: a module of no test), with the lines found: the only ones a question of
        ``asker`` reads. A test module is not even parsed for a question of a module of no
        test (a third of the modules vLLM's searches found were tests)."""
        for path, lines in hits or ():
            if not speaks_for(self.real(path), asker.path if asker is not None else None):
                continue
            module = self.load(path)
            if module is not None:
                yield module, lines

    def subclasses(self, cls: ClassInfo) -> List[ClassInfo]:
        """The project's classes derived from ``cls`` (through their bases, transitively)."""
        key = id(cls.node)
        if key in self._subclasses:
            self.reused(("subclasses", key))
            return self._subclasses[key]
        self._subclasses[key] = []
        with self.recording(("subclasses", key)):
            found = self._subclasses_of(cls)
        self._subclasses[key] = found
        return found

    def _subclasses_of(self, cls: ClassInfo) -> List[ClassInfo]:
        found: List[ClassInfo] = []
        for module, _ in self.speaking(self.grep(subclasses_of(cls.name), cls.name, MAX_STORE_FILES), cls.module):
            for klass in module.classes.values():
                if klass is not cls and any(base is cls for base in self.bases(klass)):
                    found.append(klass)
                    found.extend(k for k in self.subclasses(klass) if k not in found)
        return found

    def storing(self, attr: str, asker: Optional[ModuleInfo], limit: int = MAX_STORE_FILES) -> List[FunctionInfo]:
        """Functions anywhere in the project whose text stores ``.attr`` (``None``-safe),
        in the modules that speak for ``asker`` (``None``: those of no test)."""
        out: List[FunctionInfo] = []
        for module, lines in self.speaking(self.grep(stores_to(attr), attr, limit), asker):
            out.extend(f for f in functions_at(module, lines) if f not in out)
        return out

    def agreed(self, attr: str) -> Optional[Value]:
        """For an object of a class pinfix cannot see: what the project stores to ``attr``
        on anything, when every store agrees (all pageable, or all pinned)."""
        if self.left < DEPTH:
            return None  # only in the copy's own function: it reads other files for a guess
        key = ("agreed", attr, self.left)
        if key in self.attributes:
            self.reused(key)
            return self.attributes[key]
        self.attributes[key] = None
        with self.recording(key):
            result = self._agreed(attr)
        self.attributes[key] = result
        return result

    def _agreed(self, attr: str) -> Optional[Value]:
        values: List[Value] = []
        for func in self.storing(attr, None, MAX_AGREED_FILES):
            facts = self.facts(func, ("stores", attr))
            for _, name, value, node in facts.stores if facts is not None else ():
                if name == attr:
                    step = Step(
                        "attribute",
                        node,
                        f"the attribute `{_receiver_text(node, attr)}.{attr}` assigned in `{func.name}`",
                        func.module.src,
                    )
                    values.append(mark(value, step, via=True))
        result = None
        if values:
            joined = join(*values)
            kinds = {_kind(a) for a in joined}
            if len(kinds) == 1 and kinds <= {"blocking", "pinned"}:
                result = joined
        return result


class DeepEvaluator(Evaluator):
    """The evaluator, with the project to ask."""

    @property
    def project(self) -> DeepProject:
        return cast(DeepProject, self.ctx.project)

    #: What each dotted name this evaluation asked about resolved to (its reads are recorded
    #: where it was first asked, in the same answer: every name is asked in one).
    _references: Optional[Dict[str, Optional[Value]]] = None

    def project_reference(self, qualified: str, node: ast.AST) -> Optional[Value]:
        if not self.deep_on:
            return None
        known = self._references
        if known is None:
            known = self._references = {}
        if qualified not in known:
            known[qualified] = self.project.resolve(qualified, near=self.project.near(self.ctx.module))
        return known[qualified]

    def exec_return(self, node: ast.Return, state: State) -> None:
        if node.value is None:
            return super().exec_return(node, state)
        value = self.fallback_value(RETURNED, self.eval(node.value, state))
        step = self.step("returned", node.value, f"returned by `{self.func.name}`")
        value = mark(value, step)
        self.escape_value(value, state)
        self.facts.add_return(value)
        state.dead = True

    def project_call(self, atom: Func, node: ast.Call, args: Arguments, state: State) -> Value:
        if not self.deep_on:
            return super().project_call(atom, node, args, state)
        self.escape(args, state)
        self.facts.sites.append((atom.info, node, args, atom.receiver))
        result = self.project.call(atom.info, atom.receiver, args, node)
        if result is None:
            return unknown(f"`{self.short(node.func)}()` calls itself, directly or not", node)
        what = f"the return value of `{self.short(node.func, 40)}()`"
        return mark(result, self.step("returned", node, what), via=True)

    def construct(self, atom: Class, node: ast.Call, args: Arguments, state: State) -> Value:
        """An object of a project class, with the fields the call gives it: a record's
        (dataclass, NamedTuple) from the arguments, any other class's from what its
        ``__init__`` stores on ``self`` given these arguments."""
        if not self.deep_on:
            return super().construct(atom, node, args, state)
        self.escape(args, state)
        init = self.project.method(atom.info, "__init__")
        if init is not None:
            self.facts.sites.append((init, node, args, Value((Instance(atom.info),))))
        fields = self.project.fields(atom.info, args, node)
        if atom.info.is_record and isinstance(node, ast.Call):
            self.facts.made.append((atom.info, node, tuple(fields)))
        step = self.step("made", node, f"`{self.short(node, 40)}` makes an object of `{atom.info.name}`")
        return Value((Instance(atom.info, tuple((name, mark(v, step)) for name, v in fields)),))

    def parameter_value(self, p: Any) -> Value:
        """A parameter a ``conftest.py``'s pytest fixture fills holds what it gives; one
        annotated with a project class holds an object of it."""
        found = super().parameter_value(p)
        if found.unknown is not None and asks_fixture(self.func, p.name) and filled_by(self.func, p.name) is None:
            fixture = self.project.conftest_fixture(self.module, p.name)
            given = self.fixture_value(fixture, p) if fixture is not None else None
            if given is not None:
                return given
        if found.unknown is None or p.annotation is None:
            return found
        if self.relevant is not None and not self.relevant.reads_name(p.name):
            return found
        annotation = p.annotation
        if isinstance(annotation, ast.Subscript) and last_name(annotation.value) == "Optional":
            annotation = annotation.slice
        cls = self.project.class_expression(self.module, annotation)
        return Value((Instance(cls),)) if cls is not None else found

    def fixture_value(self, fixture: FunctionInfo, p: Any) -> Optional[Value]:
        """What the pytest fixture gives, evaluated for what it returns (asking the project
        where that is reached); where it is too far from the copy, as plain mode has it."""
        facts = self.project.facts(fixture, RETURNS)
        if facts is None:
            return super().fixture_value(fixture, p) if fixture.module is self.module else None
        return fixture_given(fixture, facts, p.name)

    def object_method(self, atom: Any, method: str, node: ast.Call, args: Arguments, state: State) -> Value:
        assert isinstance(node.func, ast.Attribute)
        if not self.deep_on:
            return super().object_method(atom, method, node, args, state)
        self.escape(args, state)
        if isinstance(atom, Instance) and method == "register_buffer" and args.positional:
            return super().object_method(atom, method, node, args, state)
        if isinstance(atom, (Instance, Class)):
            found = self.project.method(atom.cls if isinstance(atom, Instance) else atom.info, method)
            if found is not None:
                if found.kind == "staticmethod":
                    receiver = None
                elif found.kind == "classmethod":
                    receiver = Value((Class(atom.cls if isinstance(atom, Instance) else atom.info),))
                else:
                    receiver = Value((atom,))
                return self.project_call(Func(found, receiver), node, args, state)
        self.kill_paths(node.func.value, state)
        return unknown(f"pinfix cannot see what `{self.short(node.func)}()` returns", node)

    def method_named(self, cls: Any, name: str) -> Any:
        if not self.deep_on:
            return super().method_named(cls, name)
        return self.project.method(cls, name)

    def record_field_names(self, cls: ClassInfo) -> Optional[List[str]]:
        if not self.deep_on:
            return super().record_field_names(cls)
        fields = self.project.record_fields(cls)
        return None if fields is None else [name for name, _ in fields]

    def attribute_of(self, atom: Any, node: ast.Attribute, state: State) -> Value:
        found = super().attribute_of(atom, node, state)
        if (
            self.deep_on
            and isinstance(atom, Unknown)
            and found.unknown is not None
            and node.attr not in ("device", "dtype", "shape")
        ):
            agreed = self.project.agreed(node.attr)
            if agreed is not None:
                return mark(agreed, self.step("read", node, f"read as `{self.short(node, 40)}`"))
        return found

    def instance_attribute(self, atom: Instance, attr: str, node: ast.AST) -> Value:
        if not self.deep_on:
            return super().instance_attribute(atom, attr, node)
        method = self.project.method(atom.cls, attr)
        if method is not None:
            if method.kind == "property":
                result = self.project.call(method, Value((atom,)), None, node)
                if result is None:
                    return unknown(self.project.unfollowed(f"`{self.short(node)}`"), node)
                return mark(result, self.step("returned", node, f"the property `{self.short(node, 40)}`"), via=True)
            return Value((Func(method, Value((atom,))),))
        found = self.project.attribute(atom.cls, attr)
        if found is None:
            return unknown(f"pinfix cannot see every assignment to `{self.short(node)}`", node)
        return mark(found, self.step("read", node, f"read as `{self.short(node, 40)}`"))

    def class_attribute(self, atom: Class, attr: str, node: ast.AST) -> Value:
        if not self.deep_on:
            return super().class_attribute(atom, attr, node)
        method = self.project.method(atom.info, attr)
        if method is not None:
            return Value((Func(method),))
        found = self.project.attribute(atom.info, attr)
        return (
            found if found is not None else unknown(f"pinfix cannot see every assignment to `{self.short(node)}`", node)
        )


def _undetermined(atom: Any) -> bool:
    """An atom of a copy's source that the function alone leaves open: an unknown
    made here or met on the way (not a parameter itself), or a tensor whose device
    depends on its inputs."""
    if isinstance(atom, Unknown):
        return not isinstance(atom.node, ast.arg)
    return isinstance(atom, Tensor) and atom.device == ANY_DEVICE


#: Bases that give a dataclass no fields of their own (``class B(Generic[T], ABC)``).
_FIELDLESS_BASES = frozenset({"object", "ABC", "Generic", "Protocol"})


def _fieldless_base(node: ast.expr) -> bool:
    if isinstance(node, ast.Subscript):
        node = node.value
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name in _FIELDLESS_BASES


def _flag_parameters(facts: FunctionFacts, params: Set[str]) -> Dict[int, str]:
    """The copies whose ``non_blocking`` is one of the function's parameters, as it
    came in (``id(call) -> name``)."""
    out: Dict[int, str] = {}
    for call_id, copy in facts.copies.items():
        node = copy.non_blocking_node
        if copy.non_blocking is None and isinstance(node, ast.Name) and node.id in params:
            out[call_id] = node.id
    return out


def _passed_parameter(caller: FunctionInfo, call: ast.Call, func: FunctionInfo, name: str) -> Optional[str]:
    """The parameter of ``caller`` that ``call`` gives ``func``'s parameter ``name`` as it
    is, by name (``_move(t, dev, non_blocking)``), where ``caller`` never rebinds it."""
    given: Optional[ast.expr] = None
    for k in call.keywords:
        if k.arg == name:
            given = k.value
    if given is None:
        positional = [p for p in func.params if p.kind in ("posonly", "positional")]
        if func.kind in ("method", "property", "classmethod") and isinstance(call.func, ast.Attribute):
            positional = positional[1:]
        index = next((i for i, p in enumerate(positional) if p.name == name), None)
        if index is None or index >= len(call.args) or any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
            return None
        given = call.args[index]
    if not isinstance(given, ast.Name) or given.id not in {p.name for p in caller.params}:
        return None
    if any(
        isinstance(n, ast.Name) and n.id == given.id and not isinstance(n.ctx, ast.Load) for n in caller.own_nodes()
    ):
        return None
    return given.id


def speaks_for(other: Optional[Path], module: Optional[Path]) -> bool:
    """Whether what the module file ``other`` passes or stores counts for the code of
    ``module``: a test calls library code with whatever it likes, which says nothing of
    how the library runs (a test's arguments count for tests)."""
    return not is_test_file(other) or is_test_file(module)


def _returned(facts: FunctionFacts) -> Value:
    """What a call of the evaluated function gives back (``None`` when it returns nothing)."""
    return facts.returns if facts.returns is not None else Value((NoneValue(),))


def _called_name(func: FunctionInfo) -> str:
    """The name a call of ``func`` says (a class's for ``__init__``)."""
    return func.cls.name if func.name == "__init__" and func.cls is not None else func.name


def _only_binding(module: ModuleInfo, name: str) -> bool:
    """Whether the def or class is the module's only top-level binding of ``name``."""
    return module.top_bindings.get(name, 0) == 1 and name not in module.rebound_globals


def _assigns_name(stmt: ast.AST, name: str) -> bool:
    """Whether the class-body statement ``stmt`` assigns ``name`` (not a local of a
    method or of a nested class: their bodies are not walked)."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    if isinstance(stmt, scopes):
        return getattr(stmt, "name", None) == name
    stack: List[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            if node.id == name and isinstance(node.ctx, ast.Store):
                return True
        elif not isinstance(node, scopes):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _target_text(node: ast.AST, attr: str, method: FunctionInfo) -> str:
    me = method.self_name or "self"
    return f"{me}.{attr}"


def _receiver_text(node: ast.AST, attr: str) -> str:
    """The receiver's code in a store ``obj.attr = value`` (``obj``), for messages."""
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    for t in targets:
        if isinstance(t, ast.Attribute) and t.attr == attr:
            return ast.unparse(t.value) if hasattr(ast, "unparse") else "obj"
    return "obj"


def _kind(atom: Any) -> str:
    if isinstance(atom, Tensor) and atom.blocks:
        return "blocking"
    if isinstance(atom, Tensor) and atom.device == "cpu" and atom.memory == "pinned":
        return "pinned"
    return "other"


def _literal(node: ast.AST) -> Value:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return unknown("is a parameter's default value pinfix does not evaluate", node)
    if value is None:
        return Value((NoneValue(),))
    if isinstance(value, (bool, int, float, str)):
        return Value((Const(value),))
    return unknown("is a parameter's default value", node)


class _Deeper:
    """One more call, attribute or store away from the copy (a context manager)."""

    def __init__(self, project: DeepProject):
        self.project = project

    def __enter__(self) -> None:
        self.project.left -= 1

    def __exit__(self, *exc: Any) -> None:
        self.project.left += 1


class _Restarted:
    """Questions whose answer does not depend on where they are asked, worked out from
    ``left`` calls and stores from the copy, with no search of the project's text (a
    context manager: what was left, and whether searches were allowed, come back after)."""

    def __init__(self, project: DeepProject, left: int):
        self.project = project
        self.left = left
        self.before = (project.left, project.narrow)

    def __enter__(self) -> None:
        self.project.left, self.project.narrow = self.left, True

    def __exit__(self, *exc: Any) -> None:
        self.project.left, self.project.narrow = self.before


_PROJECTS: Dict[Settings, DeepProject] = {}


def project_for(settings: Settings) -> DeepProject:
    """The process's project for ``settings`` (its answers are reused across files)."""
    found = _PROJECTS.get(settings)
    if found is None:
        found = _PROJECTS[settings] = DeepProject(settings)
    return found


def forget_projects() -> None:
    """Drop every project's answers: a new run in the same process (an editor, a test
    calling the CLI twice) must not answer from files as they were in an earlier one."""
    _PROJECTS.clear()


__all__ = ["DeepProject", "DeepEvaluator", "project_for", "forget_projects", "mark"]
