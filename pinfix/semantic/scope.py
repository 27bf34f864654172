"""Bindings and scopes, read from the stdlib ``ast``: our own, as pyflakes keeps its own.

- :class:`ModuleInfo`: one parsed module: its imports (local name -> qualified
  name), its top-level definitions, every function and class in it;
- :class:`FunctionInfo`: a function, method, lambda or the module body itself:
  its parameters, the names local to it (Python's rule: bound anywhere in the
  body, unless declared ``global`` / ``nonlocal``), its decorators;
- :class:`ClassInfo`: a class: its methods, bases, class-level statements.

Nothing here evaluates anything; :mod:`pinfix.semantic.flow` does.
"""

from __future__ import annotations

import ast
import bisect
import re
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

from ..effects import CPU_DEVICE_TYPES, DEFAULT_DEVICE_SETTERS, HOST_REGISTER_CALLS
from .bodies import UnreadBody
from .source import SourceText

FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: Statement lists of compound statements, in the order they are written.
STATEMENT_LISTS = ("body", "handlers", "orelse", "finalbody", "cases")


def child_nodes(node: ast.AST) -> List[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, in the same order, made without its two
    generators (a walk of every node of a module spent more in them than the parse
    took)."""
    out: List[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend([item for item in value if isinstance(item, ast.AST)])
    return out


def iter_nodes(root: ast.AST, enter_scopes: bool = False) -> Iterator[ast.AST]:
    """``root`` and every node below it, depth first in written order, without
    recursion. Nested functions, lambdas and classes are yielded but not entered
    (their decorators, defaults, bases and annotations are: they run here),
    unless ``enter_scopes``."""
    stack: List[ast.AST] = [root]
    while stack:
        node = stack.pop()
        yield node
        if node is not root and not enter_scopes and isinstance(node, SCOPE_NODES):
            stack.extend(reversed(_evaluated_outside(node)))
            continue
        stack.extend(reversed(child_nodes(node)))


def _evaluated_outside(node: ast.AST) -> List[ast.AST]:
    """The parts of a def, lambda or class evaluated in the enclosing scope."""
    out: List[ast.AST] = []
    if isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
        out.extend(node.decorator_list)
    if isinstance(node, (*FUNCTION_NODES, ast.Lambda)):
        args = node.args
        out.extend(d for d in args.defaults)
        out.extend(d for d in args.kw_defaults if d is not None)
    if isinstance(node, ast.ClassDef):
        out.extend(node.bases)
        out.extend(k.value for k in node.keywords)
    return out


def _may_store(node: ast.expr) -> bool:
    """An expression that may be (or hold) a store target, or a call (``register_buffer``)."""
    return isinstance(node, (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.Attribute, ast.Subscript, ast.Call))


def _may_bind(node: ast.expr) -> bool:
    """An expression child of a statement that may be a target binding names."""
    return isinstance(node, (ast.Name, ast.Tuple, ast.List, ast.Starred))


def target_names(target: ast.AST) -> Iterator[str]:
    """Names a store to ``target`` binds (``a, (b, *c)`` -> a, b, c)."""
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(reversed(node.elts))
        elif isinstance(node, ast.Starred):
            stack.append(node.value)


def _pattern_names(pattern: ast.AST) -> Iterator[str]:
    for node in ast.walk(pattern):
        name = getattr(node, "name", None) if isinstance(node, (ast.MatchAs, ast.MatchStar)) else None
        if isinstance(node, ast.MatchMapping):
            name = node.rest
        if name:
            yield name


class Param:
    __slots__ = ("name", "kind", "default", "annotation", "node", "index")

    def __init__(
        self,
        name: str,
        kind: str,
        default: Optional[ast.expr],
        annotation: Optional[ast.expr],
        node: ast.arg,
        index: int,
    ):
        self.name = name
        #: ``posonly``, ``positional``, ``vararg``, ``kwonly``, ``kwarg``.
        self.kind = kind
        self.default = default
        self.annotation = annotation
        self.node = node
        #: Position among the positional parameters (-1 for the others).
        self.index = index


def parameters(args: ast.arguments) -> List[Param]:
    positional = [*args.posonlyargs, *args.args]
    defaults: List[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = []
    for i, (a, d) in enumerate(zip(positional, defaults)):
        out.append(Param(a.arg, "posonly" if i < len(args.posonlyargs) else "positional", d, a.annotation, a, i))
    if args.vararg is not None:
        out.append(Param(args.vararg.arg, "vararg", None, args.vararg.annotation, args.vararg, -1))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append(Param(a.arg, "kwonly", d, a.annotation, a, -1))
    if args.kwarg is not None:
        out.append(Param(args.kwarg.arg, "kwarg", None, args.kwarg.annotation, args.kwarg, -1))
    return out


#: Where a ``global`` statement may start: a line's first word (after a line end, "\r"
#: alone included, which ``(?m)^`` does not know), or after ``;`` or ``:`` (``def f():
#: global x``). ``global`` is a keyword, spelt in ASCII as written.
GLOBAL_STATEMENT = re.compile(r"(?m)(?:^|(?<=\r)|[;:])[ \t\f]*global\b")


def last_name(node: ast.AST) -> str:
    """The last component of a dotted name (``torch.device`` -> ``device``); ``""`` for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def decorator_name(d: ast.expr) -> str:
    """The last dotted component a decorator is spelled with (``functools.lru_cache(8)`` -> ``lru_cache``)."""
    return last_name(d.func if isinstance(d, ast.Call) else d)


class FunctionInfo:
    """A function, method, lambda, class body or the module body."""

    def __init__(
        self,
        node: ast.AST,
        module: "ModuleInfo",
        parent: Optional["FunctionInfo"],
        cls: Optional["ClassInfo"],
        qualname: str,
    ):
        self.node = node
        self.module = module
        #: The function this one is nested in (its free names come from there).
        self.parent = parent
        #: The class this is a method of (or whose body this is).
        self.cls = cls
        self.qualname = qualname
        self.name = getattr(node, "name", "<lambda>" if isinstance(node, ast.Lambda) else "<module>")
        args = getattr(node, "args", None)
        self.params: List[Param] = parameters(args) if isinstance(args, ast.arguments) else []
        self.decorators: Tuple[str, ...] = tuple(decorator_name(d) for d in getattr(node, "decorator_list", ()))
        body = getattr(node, "body", None)
        #: The line its body starts on (a def's header, decorators and defaults, lies above).
        self.body_line: int = (
            body[0].lineno if isinstance(body, list) and body else getattr(body, "lineno", getattr(node, "lineno", 1))
        )
        self._locals: Optional[FrozenSet[str]] = None
        self._declared: Optional[Tuple[FrozenSet[str], FrozenSet[str]]] = None
        self._statements = 0
        self._generator = False
        #: Whether its text says ``yield`` (``None``: not looked at; ``False``: no generator).
        self.says_yield: Optional[bool] = None
        self._stores: Optional[FrozenSet[str]] = None
        #: How many attributes were looked for in its text (:meth:`stores_attribute`).
        self._text_lookups = 0
        #: The body's asserts that hold from its start (:func:`.flow.preconditions`), once the evaluator found them.
        self.entry_asserts: Optional[List[ast.stmt]] = None
        #: What it checks of its parameters on every way to a normal return (``narrowing.Checks``).
        self.exit_checks: Any = None

    def __repr__(self) -> str:
        return f"<FunctionInfo {self.qualname}>"

    @property
    def body(self) -> Sequence[ast.AST]:
        node = self.node
        if isinstance(node, ast.Lambda):
            return [node.body]
        return node.body  # type: ignore[attr-defined,no-any-return]

    @property
    def is_class_body(self) -> bool:
        return isinstance(self.node, ast.ClassDef)

    @property
    def is_module(self) -> bool:
        return isinstance(self.node, ast.Module)

    @property
    def kind(self) -> str:
        """``function``, ``method``, ``staticmethod``, ``classmethod`` or ``property``."""
        if self.cls is None or self.is_class_body:
            return "function"
        for d in self.decorators:
            if d in ("staticmethod", "classmethod", "property"):
                return d
        return "method"

    @property
    def self_name(self) -> Optional[str]:
        """The first parameter of a method (``self``), bound to the instance."""
        if self.kind in ("method", "property") and self.params and self.params[0].kind in ("posonly", "positional"):
            return self.params[0].name
        return None

    @property
    def is_generator(self) -> bool:
        if self._locals is None:
            if self.says_yield is False:
                return False
            self._scan()
        return self._generator

    def own_nodes(self) -> Iterator[ast.AST]:
        """Nodes of this function's own scope (not of nested functions or classes)."""
        for stmt in self.body:
            yield from iter_nodes(stmt)

    def binding_nodes(self) -> Iterator[ast.AST]:
        """The nodes of this function's own scope that may bind a name: statements,
        their targets, handlers and patterns, and the expressions only where a
        ``:=`` or a ``yield`` may hide in them (a walk of every expression node is
        the costly part of reading a long function)."""
        text = self.module.src.segment(self.node) if not self.is_module else self.module.src.text
        deep = ":=" in text or "yield" in text or "lambda" in text
        stack: List[ast.AST] = list(reversed(list(self.body)))
        while stack:
            node = stack.pop()
            yield node
            if node is not self.node and isinstance(node, SCOPE_NODES):
                if deep:
                    stack.extend(reversed(_evaluated_outside(node)))
                continue
            if deep or not isinstance(node, ast.expr) or _may_bind(node):
                children = child_nodes(node)
                if not deep:
                    children = [c for c in children if not isinstance(c, ast.expr) or _may_bind(c)]
                stack.extend(reversed(children))

    def _scan(self) -> None:
        """One walk of the function's own scope: the names it binds, declares
        ``global``/``nonlocal``, its statements, whether it yields."""
        bound: Set[str] = {p.name for p in self.params}
        outside: Set[str] = set(bound)  # bound other than as a comprehension's variable
        stored: List[ast.Name] = []
        globals_: Set[str] = set()
        nonlocals: Set[str] = set()
        comprehensions: List[ast.AST] = []
        statements = 0
        generator = False
        match_case = getattr(ast, "match_case", None)
        for node in self.binding_nodes():
            kind = type(node)
            if kind is ast.Name:
                if type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                    bound.add(node.id)  # type: ignore[attr-defined]
                    stored.append(node)  # type: ignore[arg-type]
                continue
            if isinstance(node, ast.stmt):
                statements += 1
            if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                bound.add(node.name)  # type: ignore[attr-defined]
                outside.add(node.name)  # type: ignore[attr-defined]
            elif kind in (ast.Import, ast.ImportFrom):
                for alias in node.names:  # type: ignore[attr-defined]
                    if alias.name != "*":
                        bound.add(alias.asname or alias.name.split(".", 1)[0])
            elif kind is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
                bound.add(node.name)  # type: ignore[attr-defined]
            elif match_case is not None and kind is match_case:
                bound.update(_pattern_names(node.pattern))  # type: ignore[attr-defined]
            elif kind is ast.Global:
                globals_.update(node.names)  # type: ignore[attr-defined]
            elif kind is ast.Nonlocal:
                nonlocals.update(node.names)  # type: ignore[attr-defined]
            elif kind in (ast.Yield, ast.YieldFrom):
                generator = True
            elif kind in COMPREHENSIONS:
                comprehensions.append(node)
        # Comprehension variables are the comprehension's own (walrus targets are ours: Store above).
        if comprehensions:
            inside = {id(n) for comp in comprehensions for gen in comp.generators for n in iter_nodes(gen.target)}  # type: ignore[attr-defined]
            outside.update(n.id for n in stored if id(n) not in inside)
            for comp in comprehensions:
                for gen in comp.generators:  # type: ignore[attr-defined]
                    bound.difference_update(n for n in target_names(gen.target) if n not in outside)
        self._locals = frozenset(bound - globals_ - nonlocals)
        self._declared = (frozenset(globals_), frozenset(nonlocals))
        self._statements = statements
        self._generator = generator

    @property
    def attribute_stores(self) -> FrozenSet[str]:
        """Attributes this function may store on an object (``x.attr = ...``,
        ``self.register_buffer("attr", ...)``), read from its statements (a body not
        read yet, :mod:`.bodies`, is parsed for the look and stays unread)."""
        if self._stores is None:
            unread = self.unread_body
            self._stores = _attribute_stores(unread.peek() if unread is not None else self.body)
        return self._stores

    @property
    def unread_body(self) -> Optional[UnreadBody]:
        """Its body, where it was dropped and not read since (:mod:`.bodies`)."""
        body = getattr(self.node, "body", None)
        return body if isinstance(body, UnreadBody) and not body.read else None

    def stores_attribute(self, attr: str) -> bool:
        """Whether ``attr`` is one of :attr:`attribute_stores`, answered from the text
        where the body is unread and its lines never say ``attr``."""
        if self._stores is None and self._text_lookups < MAX_TEXT_LOOKUPS and self.unread_body is not None:
            if not self._text_lookups and (
                not self.module.names_as_spelt or self.module.lines_say(self.node, "register_buffer")
            ):
                # No answer from the text: a name spelt otherwise (NFKC), or a buffer's
                # name, a string its text may spell otherwise (`"x" "y"`, `"\x78y"`).
                self._text_lookups = MAX_TEXT_LOOKUPS
            else:
                self._text_lookups += 1
                if not self.module.lines_say(self.node, attr):
                    return False
        return attr in self.attribute_stores

    @property
    def statements(self) -> int:
        if self._locals is None:
            self._scan()
        return self._statements

    @property
    def locals(self) -> FrozenSet[str]:
        """Names local to this function (for the module body: every top-level binding)."""
        if self._locals is None:
            self._scan()
        assert self._locals is not None
        return self._locals

    @property
    def declared_global(self) -> FrozenSet[str]:
        if self._declared is None:
            self._scan()
        assert self._declared is not None
        return self._declared[0]


#: Attributes looked for in an unread body's text before its stores are read from one
#: parse (each look scans its lines: many attributes asked of one method stay linear).
MAX_TEXT_LOOKUPS = 8


def _attribute_stores(body: Sequence[ast.AST]) -> FrozenSet[str]:
    found: Set[str] = set()
    stack: List[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPE_NODES):
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer"
        ):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
        if isinstance(node, (ast.stmt, ast.excepthandler, ast.withitem)) or (
            isinstance(node, ast.expr) and _may_store(node)
        ):
            stack.extend(child_nodes(node))
    return frozenset(found)


class ClassInfo:
    """A class: its methods by name, its bases (expressions), its body as a scope."""

    def __init__(self, node: ast.ClassDef, module: "ModuleInfo", parent: Optional[FunctionInfo], qualname: str):
        self.node = node
        self.module = module
        self.parent = parent
        self.name = node.name
        self.qualname = qualname
        self.methods: Dict[str, FunctionInfo] = {}
        self.body_function = FunctionInfo(node, module, parent, self, qualname)
        self.decorators: Tuple[str, ...] = tuple(decorator_name(d) for d in node.decorator_list)

    def __repr__(self) -> str:
        return f"<ClassInfo {self.qualname}>"

    @property
    def bases(self) -> List[ast.expr]:
        return list(self.node.bases)

    @property
    def is_dataclass(self) -> bool:
        return "dataclass" in self.decorators

    @property
    def is_record(self) -> bool:
        """A dataclass or NamedTuple: its annotated class-level names are its fields."""
        if self.is_dataclass:
            return True
        return any(
            (isinstance(b, ast.Name) and b.id == "NamedTuple")
            or (isinstance(b, ast.Attribute) and b.attr == "NamedTuple")
            for b in self.bases
        )

    def fields(self) -> List[Tuple[str, Optional[ast.expr]]]:
        """A record's fields in order, with their defaults."""
        out = []
        for stmt in self.node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                annotation = stmt.annotation
                if isinstance(annotation, ast.Name) and annotation.id == "ClassVar":
                    continue
                if (
                    isinstance(annotation, ast.Subscript)
                    and getattr(annotation.value, "id", getattr(annotation.value, "attr", "")) == "ClassVar"
                ):
                    continue
                out.append((stmt.target.id, stmt.value))
        return out


Definition = Union[FunctionInfo, ClassInfo]


class ModuleInfo:
    """One parsed module: imports, definitions, scopes."""

    def __init__(
        self,
        src: SourceText,
        tree: ast.Module,
        path: Optional[Path] = None,
        name: Optional[str] = None,
        is_package: bool = False,
    ):
        self.src = src
        self.tree = tree
        self.path = path
        #: The dotted module name where known (deep mode); ``None`` otherwise.
        self.name = name
        self.is_package = is_package
        self.functions: Dict[int, FunctionInfo] = {}
        self.classes: Dict[int, ClassInfo] = {}
        self.body = FunctionInfo(tree, self, None, None, "<module>")
        #: Top-level definitions by name (the last one written wins, as at run time).
        self.top: Dict[str, Definition] = {}
        self._rebound: Optional[Set[str]] = None
        self._says_global: Optional[bool] = None
        self._global_lines: Optional[List[int]] = None
        #: Whether its defs' bodies were dropped, to be read when first used (:mod:`.bodies`).
        self.bodies_deferred = False
        self._ascii: Optional[bool] = None
        self._call_exports: Optional[FrozenSet[str]] = None
        #: What :func:`.module.functions_at` found of every line, with how many scopes it knew.
        self.scope_table: Optional[Tuple[int, Any]] = None
        self._top_bindings: Optional[Dict[str, int]] = None
        self._from_imports: Optional[Dict[str, str]] = None
        self._registers: Optional[bool] = None
        self._sets_device: Optional[bool] = None
        self._global_imports: Dict[str, Optional[str]] = {}
        self._index(tree.body, self.body, None, "")

    @property
    def registers_host_memory(self) -> bool:
        """Whether the module calls a function that page-locks host memory it is given
        (:data:`~pinfix.effects.HOST_REGISTER_CALLS`)."""
        if self._registers is None:
            self._registers = (
                any(
                    isinstance(node, ast.Call) and last_name(node.func) in HOST_REGISTER_CALLS
                    for node in ast.walk(self.tree)
                )
                if any(name in self.src.text for name in HOST_REGISTER_CALLS)
                else False
            )
        return self._registers

    @property
    def sets_default_device(self) -> bool:
        """Whether the module sets the default device (``torch.set_default_device(d)``,
        :data:`~pinfix.effects.DEFAULT_DEVICE_SETTERS`) to anything but a literal CPU
        device: then a function's factories given no device, before it sets one itself,
        allocate where pinfix cannot tell."""
        if self._sets_device is None:
            self._sets_device = (
                any(
                    isinstance(node, ast.Call)
                    and last_name(node.func) in DEFAULT_DEVICE_SETTERS
                    and not _sets_cpu(node)
                    for node in ast.walk(self.tree)
                )
                if any(name in self.src.text for name in DEFAULT_DEVICE_SETTERS)
                else False
            )
        return self._sets_device

    @property
    def top_from_imports(self) -> Dict[str, str]:
        """``M.name`` -> local name of each top-level ``from M import name [as alias]``
        (the first one written counts)."""
        if self._from_imports is None:
            names: Dict[str, str] = {}
            for stmt in self.tree.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module is not None:
                    for alias in stmt.names:
                        names.setdefault(f"{stmt.module}.{alias.name}", alias.asname or alias.name)
            self._from_imports = names
        return self._from_imports

    @property
    def top_bindings(self) -> Dict[str, int]:
        """How many top-level statements bind each name."""
        if self._top_bindings is None:
            counts: Dict[str, int] = {}
            for stmt in self.tree.body:
                names: Set[str] = set()
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(stmt.name)
                elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    names.update(a.asname or a.name.split(".")[0] for a in stmt.names if a.name != "*")
                else:
                    for node in ast.walk(stmt) if not isinstance(stmt, (ast.Expr,)) else ():
                        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                            names.add(node.id)
                        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                            names.add(node.name)
                for name in names:
                    counts[name] = counts.get(name, 0) + 1
            self._top_bindings = counts
        return self._top_bindings

    @property
    def exported_by_calls(self) -> FrozenSet[str]:
        """Names the module adds to ``__all__`` with ``__all__.append("x")`` /
        ``.extend([...])`` at its top level: ruff does not count those as uses of an import."""
        if self._call_exports is None:
            found: Set[str] = set()
            for stmt in self.tree.body:
                value = export_value(stmt.value) if isinstance(stmt, ast.Expr) else None
                if value is not None:
                    found.update(
                        n.value for n in ast.walk(value) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    )
            self._call_exports = frozenset(found)
        return self._call_exports

    @property
    def says_global(self) -> bool:
        """Whether the module's text says ``global`` at all (else no scope of it declares
        a name global, and none need be scanned to know it)."""
        if self._says_global is None:
            text = self.src.text
            self._says_global = "global" in text and GLOBAL_STATEMENT.search(text) is not None
        return self._says_global

    @property
    def rebound_globals(self) -> Set[str]:
        """Names declared ``global`` in some function: their module value is not known."""
        if self._rebound is None:
            found = [f for f in self.functions.values() if self.may_say_global(f)]
            self._rebound = {n for f in found for n in f.declared_global}
        return self._rebound

    def may_say_global(self, func: FunctionInfo) -> bool:
        """Whether a line of ``func`` holds a ``global`` statement's text (only those
        scopes are scanned for one: a module saying it once scanned every scope)."""
        if self._global_lines is None:
            starts = self.src.line_starts  # (lines as CPython counts them: "\r" ends one too)
            text = self.src.text
            self._global_lines = (
                [bisect.bisect_right(starts, m.start()) for m in GLOBAL_STATEMENT.finditer(text)]
                if self.says_global
                else []
            )
        node = func.node
        first = getattr(node, "lineno", 1)
        last = getattr(node, "end_lineno", first)
        at = bisect.bisect_left(self._global_lines, first)  # (in order: found in the text's order)
        return at < len(self._global_lines) and self._global_lines[at] <= last

    @property
    def names_as_spelt(self) -> bool:
        """Whether every identifier is spelt as its name (all ASCII text: elsewhere
        ``ﬁle`` is the name ``file``, as Python reads identifiers in NFKC form)."""
        if self._ascii is None:
            self._ascii = self.src.text.isascii()
        return self._ascii

    def lines_say(self, node: ast.AST, word: str) -> bool:
        """Whether the lines ``node`` spans say ``word`` as written (also in comments
        and strings: a superset of what its code says)."""
        text = self.src.text
        starts = self.src.line_starts
        first = getattr(node, "lineno", 1)
        last = getattr(node, "end_lineno", first)
        end = starts[last] if last < len(starts) else len(text)
        return text.find(word, starts[first - 1], end) >= 0

    def defer_bodies(self) -> int:
        """Drop the bodies of the defs that hold no def or class, each replaced by an
        :class:`~.bodies.UnreadBody` that parses it again when first looked into (a
        nested def is indexed by its node, which a new parse would not give back; a
        ``lambda`` is indexed only when evaluated, so one may be inside); how many were
        dropped. Once a module: a body read since may be what an answer's node is (a
        node dropped then could leave its identity to another)."""
        if self.bodies_deferred:
            return 0
        self.bodies_deferred = True
        owners = {id(f.parent.node) for f in self.functions.values() if f.parent is not None}
        owners.update(id(c.parent.node) for c in self.classes.values() if c.parent is not None)
        deferred = 0
        for func in list(self.functions.values()):
            node = func.node
            if not isinstance(node, FUNCTION_NODES) or id(node) in owners or not node.body:
                continue
            # Asked of every function a call reaches, answered without reading the body
            # (a keyword is spelt in ASCII).
            func.says_yield = self.lines_say(node, "yield")
            node.body = UnreadBody(node, self.src, node.body[0].col_offset)
            deferred += 1
        return deferred

    def global_import(self, name: str) -> Optional[str]:
        """What the module-level ``name`` is when every binding of it, at the top
        level and in every scope that declares it ``global``, imports the same thing
        (``global fnp`` then ``from torch import from_numpy as fnp`` in a function);
        ``None`` when some binding is anything else or they disagree."""
        if name in self._global_imports:
            return self._global_imports[name]
        scopes = [self.body] + [
            f
            for f in (*self.functions.values(), *(c.body_function for c in self.classes.values()))
            if self.may_say_global(f) and name in f.declared_global
        ]
        found: Set[str] = set()
        other = False
        for scope in scopes:
            for node in scope.binding_nodes():
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found.update(q for local, q, _ in self.import_bindings(node) if local == name)
                elif not isinstance(node, ast.alias) and binds(node, name):
                    other = True
        qualified = found.pop() if len(found) == 1 and not other else None
        if qualified is not None and qualified.startswith("."):
            qualified = None  # a relative import this module cannot resolve
        self._global_imports[name] = qualified
        return qualified

    def _index(self, body: Sequence[ast.AST], parent: FunctionInfo, cls: Optional[ClassInfo], prefix: str) -> None:
        stack: List[Tuple[ast.AST, FunctionInfo, Optional[ClassInfo], str]] = [
            (s, parent, cls, prefix) for s in reversed(list(body))
        ]
        while stack:
            node, owner, klass, pre = stack.pop()
            if isinstance(node, FUNCTION_NODES):
                info = FunctionInfo(node, self, owner, klass, pre + node.name)
                self.functions[id(node)] = info
                if klass is not None and owner is klass.body_function:
                    klass.methods[node.name] = info
                if owner is self.body:
                    self.top[node.name] = info
                inner = [(s, info, None, pre + node.name + ".<locals>.") for s in node.body]
                stack.extend(reversed(inner))
                continue
            if isinstance(node, ast.ClassDef):
                klass_info = ClassInfo(node, self, owner, pre + node.name)
                self.classes[id(node)] = klass_info
                if owner is self.body:
                    self.top[node.name] = klass_info
                inner = [(s, klass_info.body_function, klass_info, pre + node.name + ".") for s in node.body]
                stack.extend(reversed(inner))
                continue
            # Defs nested in compound statements (if/try/with bodies) belong to the same owner.
            if isinstance(node, ast.stmt):
                held = [s for name in STATEMENT_LISTS for s in getattr(node, name, ()) or ()]
                if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
                    held = (
                        list(node.body)
                        + [s for h in node.handlers for s in h.body]
                        + list(node.orelse)
                        + list(node.finalbody)
                    )  # type: ignore[attr-defined]
                if type(node).__name__ == "Match":
                    held = [s for case in node.cases for s in case.body]  # type: ignore[attr-defined]
                stack.extend(reversed([(s, owner, klass, pre) for s in held]))

    def function_at(self, node: ast.AST) -> FunctionInfo:
        """The innermost function (or lambda) whose span holds ``node``; the module
        body where none does (class bodies are not functions: names there do not
        reach the functions inside)."""
        best = self.body
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        for f in self.functions.values():
            here = (f.node.lineno, f.node.col_offset)
            holds = here <= start and (f.node.end_lineno, f.node.end_col_offset) >= end  # type: ignore[attr-defined]
            # Functions do not overlap but nest: the one that starts last is the innermost.
            if holds and (best.is_module or here >= (best.node.lineno, best.node.col_offset)):
                best = f
        return best

    def class_at(self, node: ast.AST) -> Optional[ClassInfo]:
        return self.classes.get(id(node))

    def resolve_relative(self, module: Optional[str], level: int) -> Optional[str]:
        """The absolute module of ``from <level dots><module> import ...``."""
        if level == 0:
            return module
        if self.name is None:
            return None
        package = self.name.split(".") if self.is_package else self.name.split(".")[:-1]
        if level - 1 > len(package):
            return None
        base = package[: len(package) - (level - 1)]
        parts = [*base, module] if module else base
        return ".".join(parts) or None

    def import_bindings(self, node: ast.AST) -> List[Tuple[str, str, bool]]:
        """``(local name, qualified name, is a module)`` bound by an import statement;
        a relative import this module cannot resolve is spelled with its dots."""
        out: List[Tuple[str, str, bool]] = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out.append((alias.asname, alias.name, True))
                else:
                    top = alias.name.split(".", 1)[0]
                    out.append((top, top, True))
        elif isinstance(node, ast.ImportFrom):
            base = self.resolve_relative(node.module, node.level)
            if base is None:
                base = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    continue
                out.append((alias.asname or alias.name, f"{base}.{alias.name}" if base else alias.name, False))
        return out


def export_value(node: ast.AST) -> Optional[ast.AST]:
    """What a statement or call adds to ``__all__``: the value of ``__all__ = [...]``
    (also annotated) and ``__all__ += [...]``, the arguments of ``__all__.append("x")``
    / ``.extend([...])`` / ``.insert(i, "x")``; ``None`` for anything else."""
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
        return node.value
    if (
        isinstance(node, (ast.AugAssign, ast.AnnAssign))
        and isinstance(node.target, ast.Name)
        and node.target.id == "__all__"
    ):
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "__all__"
        and node.func.attr in ("append", "extend", "insert")
    ):
        return ast.Tuple(elts=list(node.args), ctx=ast.Load())
    return None


def binds(node: ast.AST, name: str) -> bool:
    """Whether ``node`` binds ``name``: a target stored or deleted, a def or class, an
    ``except ... as``, a match capture, a parameter, or an import's alias (``import
    name``, ``from m import *``: that one may bind any name)."""
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.alias):
        return node.name == "*" or (node.asname or node.name).split(".")[0] == name
    if isinstance(node, ast.arg):
        return node.arg == name
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)) or type(
        node
    ).__name__ in ("MatchAs", "MatchStar", "MatchMapping"):
        return name in (getattr(node, "name", None), getattr(node, "rest", None))
    return False


def other_binding(module: ModuleInfo, func: Optional[FunctionInfo], name: str, qualified: str) -> Optional[int]:
    """Where ``name`` is bound to something other than ``from M import name`` of
    ``qualified`` (``M.name``), in ``func`` or the functions around it or the module,
    or in any function of the module that declares it ``global`` (a name a fix
    inserts resolves to the module's binding, which such a function may replace);
    ``None``: it is free."""
    scopes: List[FunctionInfo] = []
    f = func
    while f is not None:
        if not f.is_class_body:
            scopes.append(f)
        f = f.parent
    if module.body not in scopes:
        scopes.append(module.body)
    for scope in scopes:
        if name not in scope.locals and not (scope is module.body and name in scope.locals):
            continue
        nodes = scope.own_nodes() if not scope.is_module else (n for stmt in module.tree.body for n in iter_nodes(stmt))
        line = _first_other_binding(nodes, name, qualified)
        if line is not None:
            return line
        if scope is not module.body and name in scope.locals:
            for p in scope.params:
                if p.name == name:
                    return p.node.lineno  # type: ignore[no-any-return]
    if name in module.rebound_globals and not any(name in s.locals for s in scopes if not s.is_module):
        for other in module.functions.values():
            if name in other.declared_global:
                line = _first_other_binding(other.own_nodes(), name, qualified)
                if line is not None:
                    return line
    return None


def _first_other_binding(nodes: Iterable[ast.AST], name: str, qualified: str) -> Optional[int]:
    """The line of the first of ``nodes`` that binds ``name`` to anything but ``from M import name`` of ``qualified``."""
    mod, _, member = qualified.rpartition(".")
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*" or not binds(alias, name):
                    continue
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == mod and alias.name == member:
                    continue
                return node.lineno
        elif not isinstance(node, ast.alias) and binds(node, name):
            return node.lineno  # type: ignore[attr-defined,no-any-return]
    return None


def enclosing_loops(func: FunctionInfo) -> Dict[int, Tuple[ast.AST, ...]]:
    """For every node of ``func``'s own scope: the loops (``for``/``while``, and
    comprehensions) it sits in, outermost first."""
    out: Dict[int, Tuple[ast.AST, ...]] = {}
    stack: List[Tuple[ast.AST, Tuple[ast.AST, ...]]] = [(s, ()) for s in reversed(list(func.body))]
    while stack:
        node, loops = stack.pop()
        out[id(node)] = loops
        if isinstance(node, SCOPE_NODES):
            children = _evaluated_outside(node)
        else:
            children = child_nodes(node)
        inner = loops
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            inner = (*loops, node)
        for child in reversed(children):
            if isinstance(node, (ast.For, ast.AsyncFor)) and child is node.iter:
                stack.append((child, loops))  # the iterable is evaluated once, before the loop
            elif isinstance(node, COMPREHENSIONS) and child is not getattr(node, "generators", [None])[0]:
                stack.append((child, (*loops, node)))
            else:
                stack.append((child, inner))
    return out


def _sets_cpu(call: ast.Call) -> bool:
    """Whether a call's only argument is a literal CPU device (``"cpu"``)."""
    if len(call.args) != 1 or call.keywords:
        return False
    arg = call.args[0]
    return (
        isinstance(arg, ast.Constant)
        and isinstance(arg.value, str)
        and arg.value.split(":", 1)[0].strip() in CPU_DEVICE_TYPES
    )
