"""What one module says, from one parse, depending on no other module: plain data.

A :class:`ModuleSummary` holds the facts deep mode's project indexes are built
from: the module's imports (local name -> absolute dotted target, relative ones
resolved from the module's own name), ``__all__``, its classes and functions,
every call site (which parameter of the calling function each argument passes on
unchanged, bool literals, ``non_blocking=``), every attribute store and the
identifiers it says. Nothing in it is a syntax node: every field is a ``str``, an
``int``, a ``bool`` or a tuple of them, so a summary is kept in the cache
(:mod:`.store`, with :func:`to_data` / :func:`from_data`) and compared for
equality as it is.
"""

from __future__ import annotations

import ast
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

from ..roots import absolute_name
from ..scope import child_nodes, last_name

#: Bumped whenever a field is added, removed or changes meaning: a kept summary of
#: another format is never read.
FORMAT = 1


class FunctionSummary(NamedTuple):
    """A ``def`` or ``async def`` (``qualname``: ``Class.method``, ``outer.inner``)."""

    qualname: str
    params: Tuple[str, ...]
    line: int
    end_line: int
    generator: bool
    decorators: Tuple[str, ...]


class ClassSummary(NamedTuple):
    qualname: str
    line: int
    #: Each base as dotted text (``nn.Module``; ``Generic[T]`` as ``Generic``).
    bases: Tuple[str, ...]
    decorators: Tuple[str, ...]
    methods: Tuple[str, ...]
    #: Annotated names of the class body (a dataclass's or a NamedTuple's fields).
    fields: Tuple[str, ...]
    #: Attributes its methods store on their first parameter (``self.x = ...``).
    self_attributes: Tuple[str, ...]
    #: Names its body binds (class attributes, methods included).
    body_attributes: Tuple[str, ...]


class CallSite(NamedTuple):
    """A call: in ``scope`` (a function's or class's qualname; ``""``: the module)."""

    scope: str
    #: The callee as dotted text (``self.buf.to``, ``make``; ``""`` when it is no name).
    callee: str
    #: Its last name (``to``; ``""`` when it has none).
    name: str
    #: The absolute dotted name the module's imports make of the callee (``""``: none).
    target: str
    #: The line and column of the callee's last name (where the call's text says ``name(``).
    line: int
    col: int
    #: ``(argument, parameter)``: the argument (``"0"``, ``"1"``: positions; else a
    #: keyword) is the enclosing function's parameter, which it never rebinds.
    passed: Tuple[Tuple[str, str], ...]
    #: ``(argument, value)`` of each ``True`` or ``False`` literal argument.
    bools: Tuple[Tuple[str, bool], ...]
    #: ``non_blocking=``'s text (``""``: not given).
    non_blocking: str


class AttributeStore(NamedTuple):
    """``receiver.attr = ...`` (or ``receiver.attr[...] = ...``) in ``scope``."""

    scope: str
    receiver: str
    attr: str
    line: int
    #: Made on something other than the enclosing method's own ``self``.
    outside: bool


class ModuleSummary(NamedTuple):
    name: str
    is_package: bool
    imports: Tuple[Tuple[str, str], ...]
    #: ``__all__`` when the module gives it as a literal (``None``: it does not).
    exports: Optional[Tuple[str, ...]]
    classes: Tuple[ClassSummary, ...]
    functions: Tuple[FunctionSummary, ...]
    calls: Tuple[CallSite, ...]
    stores: Tuple[AttributeStore, ...]
    #: Every identifier the module says (names, attributes, definitions, parameters, imports).
    words: Tuple[str, ...]


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a chain of names and attributes (``""``: something else)."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def _base_text(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        node = node.value
    return dotted(node)


class _Summarizer:
    def __init__(self, name: str, is_package: bool):
        self.name = name
        self.is_package = is_package
        self.imports: Dict[str, str] = {}
        self.exports: Optional[Tuple[str, ...]] = None
        self.classes: List[ClassSummary] = []
        self.functions: List[FunctionSummary] = []
        self.calls: List[CallSite] = []
        self.stores: List[AttributeStore] = []
        self.words: Set[str] = set()
        #: What the methods of the class being summarised store on their ``self``.
        self.own_attributes: Set[str] = set()

    def absolute(self, target: str) -> str:
        return absolute_name(target, self.name or None, self.is_package) or ""

    def module(self, tree: ast.Module) -> ModuleSummary:
        for stmt in tree.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                    try:
                        value = ast.literal_eval(stmt.value) if stmt.value is not None else None
                    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                        value = None
                    names = tuple(v for v in value if isinstance(v, str)) if isinstance(value, (list, tuple)) else None
                    self.exports = names
        self.scope(tree, "", None, (), False)
        return ModuleSummary(
            self.name,
            self.is_package,
            tuple(sorted(self.imports.items())),
            self.exports,
            tuple(self.classes),
            tuple(self.functions),
            tuple(self.calls),
            tuple(self.stores),
            tuple(sorted(self.words)),
        )

    def scope(self, node: ast.AST, qualname: str, me: Optional[str], params: Tuple[str, ...], in_class: bool) -> bool:
        """The nodes of one scope (the module, a function, a class body), in one pass,
        then the scopes in it; whether the scope yields (a generator). ``me``: a
        method's first parameter; ``in_class``: the scope is a class body."""
        rebound: Set[str] = set()
        calls: List[ast.Call] = []
        inner: List[ast.AST] = []
        generator = False
        words = self.words
        stack = child_nodes(node)
        while stack:
            n = stack.pop()
            kind = type(n)
            if kind is ast.Name:
                words.add(n.id)  # type: ignore[attr-defined]
                if type(n.ctx) is not ast.Load:  # type: ignore[attr-defined]
                    rebound.add(n.id)  # type: ignore[attr-defined]
            elif kind is ast.Attribute:
                words.add(n.attr)  # type: ignore[attr-defined]
                if type(n.ctx) is not ast.Load:  # type: ignore[attr-defined]
                    self.store(n, qualname, me)  # type: ignore[arg-type]
            elif kind is ast.Subscript:
                if type(n.ctx) is not ast.Load:  # type: ignore[attr-defined]
                    target = n.value  # type: ignore[attr-defined]
                    while isinstance(target, ast.Subscript):
                        target = target.value
                    if isinstance(target, ast.Attribute):
                        self.store(target, qualname, me)
            elif kind is ast.Call:
                calls.append(n)  # type: ignore[arg-type]
            elif kind is ast.Import or kind is ast.ImportFrom:
                self.import_(n)
            elif kind is ast.arg or kind is ast.keyword:
                if n.arg:  # type: ignore[attr-defined]
                    words.add(n.arg)  # type: ignore[attr-defined]
            elif kind is ast.Yield or kind is ast.YieldFrom:
                generator = True
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.ClassDef or kind is ast.Lambda:
                inner.append(n)
                # Its header (decorators, defaults, bases) is evaluated here; its body is its own.
                continue
            stack.extend(child_nodes(n))
        unchanged = {p for p in params if p not in rebound}
        for call in calls:
            self.call(call, qualname, unchanged)
        for n in inner:
            if isinstance(n, ast.Lambda):
                lambda_params = tuple(a.arg for a in _arguments(n.args))
                self.scope(n, f"{qualname}.<lambda>" if qualname else "<lambda>", None, lambda_params, False)
                continue
            assert isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            words.add(n.name)
            name = f"{qualname}.{n.name}" if qualname else n.name
            decorators = tuple(dotted(d.func if isinstance(d, ast.Call) else d) for d in n.decorator_list)
            if isinstance(n, ast.ClassDef):
                outer, self.own_attributes = self.own_attributes, set()
                self.scope(n, name, None, (), True)
                self.class_(n, name, decorators)
                self.own_attributes = outer
            else:
                names = tuple(a.arg for a in _arguments(n.args))
                first = names[0] if names and (n.args.posonlyargs or n.args.args) else None
                method = in_class and "staticmethod" not in decorators
                at = len(self.functions)
                self.functions.append(
                    FunctionSummary(name, names, n.lineno, n.end_lineno or n.lineno, False, decorators)
                )
                own = self.own_attributes
                yields = self.scope(n, name, first if method else None, names, False)
                self.own_attributes = own
                if yields:
                    self.functions[at] = self.functions[at]._replace(generator=True)
        return generator

    def class_(self, node: ast.ClassDef, qualname: str, decorators: Tuple[str, ...]) -> None:
        methods = tuple(s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
        fields = tuple(
            s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        )
        body: Set[str] = set(methods)
        for s in node.body:
            if isinstance(s, ast.Assign):
                body.update(t.id for t in s.targets if isinstance(t, ast.Name))
            elif isinstance(s, (ast.AnnAssign, ast.AugAssign)) and isinstance(s.target, ast.Name):
                body.add(s.target.id)
            elif isinstance(s, ast.ClassDef):
                body.add(s.name)
        self.classes.append(
            ClassSummary(
                qualname,
                node.lineno,
                tuple(_base_text(b) for b in node.bases),
                decorators,
                methods,
                fields,
                tuple(sorted(self.own_attributes)),
                tuple(sorted(body)),
            )
        )

    def store(self, node: ast.Attribute, scope: str, me: Optional[str]) -> None:
        receiver = dotted(node.value)
        outside = not (me is not None and receiver == me)
        if not outside:
            self.own_attributes.add(node.attr)
        self.stores.append(AttributeStore(scope, receiver, node.attr, node.lineno, outside))

    def call(self, node: ast.Call, scope: str, unchanged: Set[str]) -> None:
        callee = dotted(node.func)
        name = last_name(node.func)
        target = ""
        if callee:
            head, _, rest = callee.partition(".")
            bound = self.imports.get(head)
            if bound:
                target = f"{bound}.{rest}" if rest else bound
        passed: List[Tuple[str, str]] = []
        bools: List[Tuple[str, bool]] = []
        flag = ""
        arguments: List[Tuple[str, ast.expr]] = []
        for i, a in enumerate(node.args):
            if isinstance(a, ast.Starred):
                break  # the positions after it are not known
            arguments.append((str(i), a))
        arguments.extend((k.arg, k.value) for k in node.keywords if k.arg)
        for slot, value in arguments:
            if isinstance(value, ast.Name) and value.id in unchanged:
                passed.append((slot, value.id))
            elif isinstance(value, ast.Constant) and isinstance(value.value, bool):
                bools.append((slot, value.value))
            if slot == "non_blocking":
                flag = ast.unparse(value)
        at = node.func
        line = at.end_lineno if isinstance(at, ast.Attribute) and at.end_lineno else at.lineno
        col = (at.end_col_offset or 0) - len(name) if isinstance(at, ast.Attribute) else at.col_offset
        self.calls.append(CallSite(scope, callee, name, target, line, col, tuple(passed), tuple(bools), flag))

    def import_(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports[alias.asname] = alias.name
                    self.words.add(alias.asname)
                else:
                    head = alias.name.partition(".")[0]
                    self.imports.setdefault(head, head)
                    self.words.add(head)
        elif isinstance(node, ast.ImportFrom):
            base = self.absolute("." * node.level + (node.module or ""))
            for alias in node.names:
                if alias.name == "*":
                    continue
                local = alias.asname or alias.name
                self.words.update((local, alias.name))
                if base:
                    self.imports[local] = f"{base}.{alias.name}"


def _arguments(args: ast.arguments) -> List[ast.arg]:
    found = [*args.posonlyargs, *args.args]
    if args.vararg:
        found.append(args.vararg)
    found.extend(args.kwonlyargs)
    if args.kwarg:
        found.append(args.kwarg)
    return found


def summarize(tree: ast.Module, name: str = "", is_package: bool = False) -> ModuleSummary:
    """The summary of the module ``name`` (``""``: not known; relative imports then
    stay unresolved) parsed as ``tree``. Raises ``RecursionError`` on a tree nested
    deeper than the interpreter follows."""
    return _Summarizer(name, is_package).module(tree)


def to_data(summary: ModuleSummary) -> tuple:
    """Plain tuples (for :mod:`marshal`), with the format first."""
    return (
        FORMAT,
        summary.name,
        summary.is_package,
        summary.imports,
        summary.exports,
        tuple(tuple(c) for c in summary.classes),
        tuple(tuple(f) for f in summary.functions),
        tuple(tuple(c) for c in summary.calls),
        tuple(tuple(s) for s in summary.stores),
        summary.words,
    )


def from_data(data: object) -> Optional[ModuleSummary]:
    """What :func:`to_data` gave (``None``: another format, or not a summary)."""
    try:
        assert isinstance(data, tuple) and data[0] == FORMAT
        _, name, package, imports, exports, classes, functions, calls, stores, words = data
        return ModuleSummary(
            name,
            package,
            imports,
            exports,
            tuple(ClassSummary(*c) for c in classes),
            tuple(FunctionSummary(*f) for f in functions),
            tuple(CallSite(*c) for c in calls),
            tuple(AttributeStore(*s) for s in stores),
            words,
        )
    except (AssertionError, TypeError, ValueError):
        return None


__all__ = [
    "FORMAT",
    "AttributeStore",
    "CallSite",
    "ClassSummary",
    "FunctionSummary",
    "ModuleSummary",
    "from_data",
    "summarize",
    "to_data",
]
