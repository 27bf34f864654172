"""Answer what one function cannot see: attributes and calls, project-wide.

The analysis (:class:`pinfix.analysis._ModuleAnalysis`) asks this resolver
when its data flow reaches ``self.x`` / ``obj.x`` or a call it does not know.
The resolver finds the definitions (the class and its project bases, the
function in this or another project module, through imports and re-exports),
runs the same analysis on the assigned values or returned expressions there,
and joins the answers: pinned only if every one is pinned, pageable only if
every one is pageable, unknown otherwise. Parsed modules and summaries are
memoised for the life of the process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, QualifiedNameSource, ScopeProvider

from ..config import Config
from .modules import ModuleIndex, absolute_name, module_name

if TYPE_CHECKING:
    from ..analysis import _ModuleAnalysis, _Trace

Definition = Union[cst.FunctionDef, cst.ClassDef]
Owner = Tuple["_ModuleAnalysis", cst.ClassDef]

#: How many re-exports (``from .impl import f`` in a package) are followed.
_MAX_HOPS = 4
_MISSING = object()


def _short(node: cst.CSTNode) -> str:
    from ..analysis import _short as short

    return short(node, 40)


def _join(traces: Sequence[Optional["_Trace"]]) -> Optional["_Trace"]:
    """Pinned if all are, pageable if all are, else unknown (``None``)."""
    if not traces or any(t is None for t in traces):
        return None
    first = traces[0]
    assert first is not None
    if all(t is not None and t.pinned for t in traces):
        return first
    if all(t is not None and not t.pinned and t.source is not None for t in traces):
        return first
    return None


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def _first_param(func: cst.FunctionDef) -> Optional[str]:
    params = [*func.params.posonly_params, *func.params.params]
    if not params:
        return None
    if any(m.matches(d.decorator, m.Name("staticmethod") | m.Name("classmethod")) for d in func.decorators):
        return None
    return params[0].name.value


def _body_functions(cls: cst.ClassDef) -> Iterator[cst.FunctionDef]:
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef):
            yield stmt


def _returns(func: cst.FunctionDef) -> Optional[List[cst.BaseExpression]]:
    """The returned expressions of ``func`` itself (not of nested functions);
    ``None`` for a generator or a function without a tensor return."""
    found: List[cst.BaseExpression] = []

    class Returns(cst.CSTVisitor):
        generator = False

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is func

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Yield(self, node: cst.Yield) -> None:
            self.generator = True

        def visit_Return(self, node: cst.Return) -> None:
            if node.value is not None and not m.matches(node.value, m.Name("None")):
                found.append(node.value)

    visitor = Returns()
    func.visit(visitor)
    return found if found and not visitor.generator else None


class ProjectResolver:
    """Deep-mode answers for one configuration, memoised per process."""

    def __init__(self, config: Config):
        self.config = config
        self.index = ModuleIndex()
        self._loaded: Dict[Path, Optional["_ModuleAnalysis"]] = {}
        self._memo: Dict[Tuple[Any, ...], Optional["_Trace"]] = {}
        self._active: Set[Tuple[Any, ...]] = set()

    # --- modules ------------------------------------------------------------

    def register(self, path: Optional[Path]) -> None:
        """Make the project around ``path`` (a file being checked) resolvable."""
        if path is not None:
            self.index.add_root_of(path)

    def load(self, path: Path, module: Optional[cst.Module] = None) -> Optional["_ModuleAnalysis"]:
        """A project module, parsed (or ``module``, already parsed from it) and
        analysed once; ``None`` when unreadable."""
        path = path.resolve()
        if path in self._loaded:
            return self._loaded[path]
        from ..analysis import REQUIRED_METADATA, _ModuleAnalysis

        self._loaded[path] = None
        try:
            module = module if module is not None else cst.parse_module(path.read_bytes())
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            resolved = wrapper.resolve_many(REQUIRED_METADATA)
        except Exception:  # unreadable or unparsable: its answers stay unknown
            return None

        def get_metadata(key: Any, node: cst.CSTNode, default: Any = _MISSING) -> Any:
            value = resolved[key].get(node, default)
            if value is _MISSING:
                raise KeyError(node)
            return value

        analysis = _ModuleAnalysis(wrapper.module, get_metadata, self.config, path, resolver=self, evidence_path=_display(path))
        self._loaded[path] = analysis
        return analysis

    def _full(self, analysis: "_ModuleAnalysis") -> "_ModuleAnalysis":
        """The whole module behind ``analysis`` (in deep mode the engine
        analyses whole files, which :meth:`register` adopts)."""
        if analysis.path is None:
            return analysis
        return self.load(analysis.path) or analysis

    def _unsliced(self, analysis: "_ModuleAnalysis", cls: cst.ClassDef) -> Owner:
        """``cls`` as it stands in the whole module (same name, same line)."""
        full = self._full(analysis)
        if full is analysis or full.module is analysis.module:
            return analysis, cls
        line = analysis.line(cls)
        for node in m.findall(full.module, m.ClassDef(name=m.Name(cls.name.value))):
            if full.line(node) == line:
                return full, node  # type: ignore[return-value]
        return analysis, cls

    def _module_of(self, analysis: "_ModuleAnalysis") -> Tuple[Optional[str], bool]:
        path = analysis.path
        if path is None:
            return None, False
        root = self.index.add_root_of(path)
        return module_name(path, root), path.name == "__init__.py"

    # --- definitions -------------------------------------------------------------

    def _top_level(self, analysis: "_ModuleAnalysis", names: List[str], hops: int = 0) -> Optional[Tuple["_ModuleAnalysis", Definition]]:
        """``names`` (``["f"]``, ``["C", "m"]``) defined at the top of ``analysis``'s
        module, following ``from x import name`` re-exports."""
        found: Optional[Any] = None
        for stmt in analysis.module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value == names[0]:
                found = stmt
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                        for alias in small.names:
                            if (alias.evaluated_alias or alias.evaluated_name) == names[0]:
                                found = (small, alias.evaluated_name)
        if isinstance(found, tuple):
            if hops >= _MAX_HOPS:
                return None
            node, name = found
            dotted = "." * len(node.relative) + (cst.Module([]).code_for_node(node.module) if node.module else "")
            current, package = self._module_of(analysis)
            target = absolute_name(dotted, current, package) if dotted else None
            return self._qualified(f"{target}.{name}", names[1:], hops + 1) if target else None
        if found is None:
            return None
        if len(names) == 1:
            return analysis, found
        if isinstance(found, cst.ClassDef) and len(names) == 2:
            method = self._method(analysis, found, names[1])
            return method if method is not None else None
        return None

    def _qualified(self, qualified: str, rest: List[str], hops: int = 0) -> Optional[Tuple["_ModuleAnalysis", Definition]]:
        split = self.index.split(qualified)
        if split is None:
            return None
        path, names = split
        loaded = self.load(path)
        return self._top_level(loaded, [*names, *rest], hops) if loaded is not None else None

    def definition(self, analysis: "_ModuleAnalysis", func: cst.BaseExpression, depth: int) -> Optional[Tuple["_ModuleAnalysis", Definition]]:
        """The project function or class that ``func`` (a callee) names."""
        if isinstance(func, cst.Attribute):
            owner = self.class_of(analysis, func.value, depth)
            if owner is not None:
                return self._method(owner[0], owner[1], func.attr.value)
        scope = analysis.md(ScopeProvider, func, None)
        if scope is None:
            return None
        current, package = self._module_of(analysis)
        for q in scope.get_qualified_names_for(func):
            if q.source is QualifiedNameSource.LOCAL and "<locals>" not in q.name:
                found = self._top_level(self._full(analysis), q.name.split("."))
            elif q.source is QualifiedNameSource.IMPORT:
                name = absolute_name(q.name, current, package)
                found = self._qualified(name, []) if name else None
            else:
                continue
            if found is not None:
                return found
        return None

    def _method(self, analysis: "_ModuleAnalysis", cls: cst.ClassDef, name: str, seen: int = 0) -> Optional[Tuple["_ModuleAnalysis", Definition]]:
        for stmt in _body_functions(cls):
            if stmt.name.value == name:
                return analysis, stmt
        for base_analysis, base in self._bases(analysis, cls, seen):
            found = self._method(base_analysis, base, name, seen + 1)
            if found is not None:
                return found
        return None

    def _bases(self, analysis: "_ModuleAnalysis", cls: cst.ClassDef, seen: int) -> Iterator[Owner]:
        if seen > _MAX_HOPS:
            return
        for base in cls.bases:
            if base.keyword is not None:
                continue
            found = self.definition(analysis, base.value, 0)
            if found is not None and isinstance(found[1], cst.ClassDef) and found[1] is not cls:
                yield found[0], found[1]

    # --- what an expression's class is ---------------------------------------

    def class_of(self, analysis: "_ModuleAnalysis", expr: cst.BaseExpression, depth: int) -> Optional[Owner]:
        """The project class of the object ``expr`` evaluates to, when one is plain."""
        from ..analysis import _MAX_DEPTH

        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Name):
            owner = self._self_class(analysis, expr)
            if owner is not None:
                return owner
            found = analysis._reaching_values(expr)
            if not found:
                return None
            owners = [self.class_of(analysis, v, depth + 1) if v is not None else None for _, v in found]
            return owners[0] if owners and all(o is not None and o[1] is owners[0][1] for o in owners) else None  # type: ignore[index]
        if isinstance(expr, cst.Call):
            target = self.definition(analysis, expr.func, depth + 1)
            if target is None:
                return None
            mod, node = target
            if isinstance(node, cst.ClassDef):
                return mod, node
            returned = _returns(node)
            if not returned:
                return None
            owners = [self.class_of(mod, r, depth + 1) for r in returned]
            return owners[0] if all(o is not None and o[1] is owners[0][1] for o in owners) else None  # type: ignore[index]
        if isinstance(expr, cst.Attribute):
            assigned = self._attribute_values(analysis, expr, depth)
            if not assigned:
                return None
            owners = [self.class_of(mod, v, depth + 1) for mod, _, v in assigned]
            return owners[0] if all(o is not None and o[1] is owners[0][1] for o in owners) else None  # type: ignore[index]
        return None

    def _self_class(self, analysis: "_ModuleAnalysis", name: cst.Name) -> Optional[Owner]:
        """``self`` in a method (or in a function nested in one): its class."""
        for anc in analysis.ancestors(name):
            if not isinstance(anc, cst.FunctionDef):
                continue
            params = {p.name.value for p in (*anc.params.posonly_params, *anc.params.params, *anc.params.kwonly_params)}
            parent = analysis.parent(anc)
            cls = analysis.parent(parent) if isinstance(parent, cst.IndentedBlock) else None
            if isinstance(cls, cst.ClassDef):
                return self._unsliced(analysis, cls) if _first_param(anc) == name.value else None
            if name.value in params:
                return None  # a parameter of a plain (nested) function
        return None

    # --- attributes --------------------------------------------------------------

    def _attribute_values(self, analysis: "_ModuleAnalysis", expr: cst.Attribute, depth: int) -> Optional[List[Tuple["_ModuleAnalysis", cst.CSTNode, cst.BaseExpression]]]:
        owner = self.class_of(analysis, expr.value, depth + 1)
        if owner is None:
            return None
        return self._class_attribute(owner[0], owner[1], expr.attr.value, 0)

    def _class_attribute(self, analysis: "_ModuleAnalysis", cls: cst.ClassDef, attr: str, seen: int) -> Optional[List[Tuple["_ModuleAnalysis", cst.CSTNode, cst.BaseExpression]]]:
        if not self._lives(analysis):
            return self._find_class_attribute(analysis, cls, attr, seen)
        key = ("attribute", id(cls), attr)
        if key not in self._memo:
            self._memo[key] = self._find_class_attribute(analysis, cls, attr, seen)  # type: ignore[assignment]
        return self._memo[key]  # type: ignore[return-value]

    def _lives(self, analysis: "_ModuleAnalysis") -> bool:
        """Whether ``analysis`` is held for the process's life, so its nodes'
        ids are safe memo keys."""
        return analysis.path is not None and self._loaded.get(analysis.path.resolve()) is analysis

    def _find_class_attribute(self, analysis: "_ModuleAnalysis", cls: cst.ClassDef, attr: str, seen: int) -> Optional[List[Tuple["_ModuleAnalysis", cst.CSTNode, cst.BaseExpression]]]:
        """Every value assigned to ``self.<attr>`` in ``cls``'s methods (or as a
        class attribute); the bases' when ``cls`` assigns none; ``None`` when one
        assignment cannot be read (a tuple target, an augmented one)."""
        out: List[Tuple["_ModuleAnalysis", cst.CSTNode, cst.BaseExpression]] = []
        for stmt in cls.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and any(m.matches(t.target, m.Name(attr)) for t in small.targets):
                        out.append((analysis, small, small.value))
                    elif isinstance(small, cst.AnnAssign) and m.matches(small.target, m.Name(attr)) and small.value is not None:
                        out.append((analysis, small, small.value))
        for func in _body_functions(cls):
            me = _first_param(func)
            if me is None:
                continue
            target = m.Attribute(value=m.Name(me), attr=m.Name(attr))
            for node in m.findall(func, m.Assign() | m.AnnAssign() | m.AugAssign()):
                if isinstance(node, cst.Assign):
                    for t in node.targets:
                        if m.matches(t.target, target):
                            out.append((analysis, node, node.value))
                        elif m.findall(t.target, target):
                            return None  # `self.x, y = ...`: we cannot tell its part
                elif isinstance(node, cst.AnnAssign) and m.matches(node.target, target):
                    if node.value is not None:
                        out.append((analysis, node, node.value))
                elif isinstance(node, cst.AugAssign) and m.matches(node.target, target):
                    return None
        if out:
            return out
        for base_analysis, base in self._bases(analysis, cls, seen):
            found = self._class_attribute(base_analysis, base, attr, seen + 1)
            if found:
                return found
        return None

    def attribute(self, analysis: "_ModuleAnalysis", expr: cst.Attribute, depth: int) -> Optional["_Trace"]:
        """What ``self.x`` / ``obj.x`` holds: the join over every assignment."""
        from dataclasses import replace

        assigned = self._attribute_values(analysis, expr, depth)
        if not assigned:
            return None
        traces = []
        for mod, node, value in assigned:
            key = ("value", id(mod), id(value))
            if key in self._active:
                return None  # `self.x = self.x[1:]`: a cycle, unknown
            self._active.add(key)
            try:
                inner = mod.trace(value, depth + 1)
            finally:
                self._active.discard(key)
            if inner is not None:
                where = mod.step(node, f"the attribute `{_short(expr)}` assigned{_in_function(mod, node)}")
                inner = replace(inner, steps=(*inner.steps, where), via=inner.via or where)
            traces.append(inner)
        joined = _join(traces)
        if joined is None:
            return None
        use = analysis.step(expr, f"read as `{_short(expr)}`")
        return replace(joined, steps=(*joined.steps, use))

    # --- calls -------------------------------------------------------------------

    def call(self, analysis: "_ModuleAnalysis", call: cst.Call, depth: int) -> Optional["_Trace"]:
        """What ``f(...)`` / ``self.m(...)`` returns: the join over its returns."""
        from dataclasses import replace

        target = self.definition(analysis, call.func, depth + 1)
        if target is None or not isinstance(target[1], cst.FunctionDef):
            return None
        mod, func = target
        key = ("returns", id(mod), id(func))
        if key in self._memo:
            summary = self._memo[key]
        elif key in self._active:
            return None  # recursion: unknown
        else:
            self._active.add(key)
            try:
                summary = self._summarise(mod, func, depth)
            finally:
                self._active.discard(key)
            if self._lives(mod):
                self._memo[key] = summary  # only loaded modules live long enough to key by id
        if summary is None:
            return None
        use = analysis.step(call, f"the return value of `{_short(call.func)}()`")
        return replace(summary, steps=(*summary.steps, use), via=summary.via or use)

    def _summarise(self, mod: "_ModuleAnalysis", func: cst.FunctionDef, depth: int) -> Optional["_Trace"]:
        from dataclasses import replace

        returned = _returns(func)
        if not returned:
            return None
        traces = []
        for value in returned:
            inner = mod.trace(value, depth + 1)
            if inner is not None:
                inner = replace(inner, steps=(*inner.steps, mod.step(value, f"returned by `{func.name.value}`")))
            traces.append(inner)
        return _join(traces)


def _in_function(mod: "_ModuleAnalysis", node: cst.CSTNode) -> str:
    for anc in mod.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            return f" in `{anc.name.value}`"
    return ""


_RESOLVERS: Dict[Config, ProjectResolver] = {}


def project_resolver(config: Config) -> ProjectResolver:
    """The process's resolver for ``config`` (its summaries are reused across files)."""
    resolver = _RESOLVERS.get(config)
    if resolver is None:
        resolver = _RESOLVERS[config] = ProjectResolver(config)
    return resolver
