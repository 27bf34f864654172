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
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.metadata import QualifiedNameSource, ScopeProvider

from ..config import Config
from ..syntax import is_name, short, walk
from .modules import ModuleIndex, absolute_name, module_name
from .slices import ModuleText, read

if TYPE_CHECKING:
    from ..analysis import _ModuleAnalysis, _Trace

Definition = Union[cst.FunctionDef, cst.ClassDef]
Owner = Tuple["_ModuleAnalysis", cst.ClassDef]

#: How many re-exports (``from .impl import f`` in a package) are followed.
_MAX_HOPS = 4
#: How many attributes and calls one chain of evidence may pass through.
_MAX_CHAIN = 8
#: How much of an expression the resolver's evidence steps quote.
_SHORT = 40


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
    """``path`` relative to the working directory when it lies below it, else whole
    (``../../x`` would say less than ``/tmp/x``)."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def _first_param(func: cst.FunctionDef) -> Optional[str]:
    params = [*func.params.posonly_params, *func.params.params]
    if not params:
        return None
    if any(is_name(d.decorator, "staticmethod", "classmethod") for d in func.decorators):
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
    for node in walk(func, prune=(cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        if isinstance(node, cst.Yield):
            return None
        if isinstance(node, cst.Return) and node.value is not None and not is_name(node.value, "None"):
            found.append(node.value)
    return found or None


class ProjectResolver:
    """Deep-mode answers for one configuration, memoised per process."""

    def __init__(self, config: Config):
        self.config = config
        self.index = ModuleIndex()
        self._texts: Dict[Path, Optional[ModuleText]] = {}
        self._views: Dict[Tuple[Path, FrozenSet[int]], Optional["_ModuleAnalysis"]] = {}
        #: Per view: line of a def's name -> the def, to find it again by line.
        self._defs: Dict[int, Dict[int, Definition]] = {}
        self._memo: Dict[Tuple[Any, ...], Optional["_Trace"]] = {}
        self._active: Set[Tuple[Any, ...]] = set()

    # --- modules ------------------------------------------------------------

    def register(self, path: Optional[Path]) -> None:
        """Make the project around ``path`` (a file being checked) resolvable."""
        if path is not None:
            self.index.add_root_of(path)

    def _text(self, path: Path) -> Optional[ModuleText]:
        if path not in self._texts:
            self._texts[path] = read(path)
        return self._texts[path]

    def view(self, path: Path, keep: FrozenSet[int] = frozenset()) -> Optional["_ModuleAnalysis"]:
        """A project module with only the function bodies defined at the lines
        in ``keep`` (none: the skeleton, for definitions), parsed and analysed
        once; ``None`` when unreadable."""
        path = path.resolve()
        key = (path, keep)
        if key in self._views:
            return self._views[key]
        self._views[key] = None
        text = self._text(path)
        if text is None:
            return None
        self._views[key] = self._analyse(path, text.source(keep))
        return self._views[key]

    def _analyse(self, path: Path, code: bytes) -> Optional["_ModuleAnalysis"]:
        from ..analysis import _ModuleAnalysis, metadata_on_demand

        try:
            module = cst.parse_module(code)
        except Exception:  # what ast took but LibCST does not: its answers stay unknown
            return None

        analysis = _ModuleAnalysis(
            module, metadata_on_demand(module, tolerant=True), self.config, path, resolver=self, evidence_path=_display(path), source=code
        )
        self._defs[id(analysis)] = {analysis.def_line(node): node for node in analysis.tree.definitions}
        return analysis

    def _same_def(self, analysis: "_ModuleAnalysis", node: Definition, keep: FrozenSet[int] = frozenset()) -> Tuple["_ModuleAnalysis", Definition]:
        """``node`` (a def or class of ``analysis``) as it stands in the view of
        its module that keeps ``keep``; unchanged where there is no such view."""
        if analysis.path is None:
            return analysis, node  # a module with no file: analysed whole
        line = analysis.def_line(node)
        other = self.view(analysis.path, keep)
        found = self._defs.get(id(other), {}).get(line) if other is not None else None
        if other is None or type(found) is not type(node):
            return analysis, node
        return other, found  # type: ignore[return-value]

    def _with_body(self, analysis: "_ModuleAnalysis", func: cst.FunctionDef) -> Tuple["_ModuleAnalysis", cst.FunctionDef]:
        if analysis.path is None:
            return analysis, func
        return self._same_def(analysis, func, frozenset({analysis.def_line(func)}))  # type: ignore[return-value]

    def _class_view(self, analysis: "_ModuleAnalysis", cls: cst.ClassDef, keep: FrozenSet[int] = frozenset()) -> Owner:
        """``cls`` with its statements and members' headers (and the bodies at
        ``keep``): the one copy of a class that identity comparisons see."""
        if analysis.path is None:
            return analysis, cls
        return self._same_def(analysis, cls, keep | {analysis.def_line(cls)})  # type: ignore[return-value]

    def _skeleton(self, analysis: "_ModuleAnalysis") -> "_ModuleAnalysis":
        if analysis.path is None:
            return analysis
        return self.view(analysis.path) or analysis

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
        loaded = self.view(path)
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
                found = self._top_level(self._skeleton(analysis), q.name.split("."))
            elif q.source is QualifiedNameSource.IMPORT:
                name = absolute_name(q.name, current, package)
                found = self._qualified(name, []) if name else None
            else:
                continue
            if found is not None:
                return found
        return None

    def _method(self, analysis: "_ModuleAnalysis", cls: cst.ClassDef, name: str, seen: int = 0) -> Optional[Tuple["_ModuleAnalysis", Definition]]:
        analysis, cls = self._class_view(analysis, cls)
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
        analysis, cls = self._class_view(analysis, cls)
        for base in cls.bases:
            if base.keyword is not None:
                continue
            found = self.definition(analysis, base.value, 0)
            if found is not None and isinstance(found[1], cst.ClassDef):
                base_owner = self._class_view(found[0], found[1])
                if base_owner[1] is not cls:
                    yield base_owner

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
            found = analysis.reaching_values(expr)
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
                return self._class_view(mod, node)
            mod, node = self._with_body(mod, node)
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
                return self._class_view(analysis, cls) if _first_param(anc) == name.value else None
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
        key = self._key("attribute", analysis, cls, attr)
        if key is None:
            return self._find_class_attribute(analysis, cls, attr, seen)
        if key not in self._memo:
            self._memo[key] = self._find_class_attribute(analysis, cls, attr, seen)  # type: ignore[assignment]
        return self._memo[key]  # type: ignore[return-value]

    @staticmethod
    def _key(kind: str, analysis: "_ModuleAnalysis", node: Definition, *rest: str) -> Optional[Tuple[Any, ...]]:
        """A memo key that outlives the nodes: file and line; ``None`` for a module with no file."""
        if analysis.path is None:
            return None
        return (kind, analysis.path.resolve(), analysis.def_line(node), *rest)

    def _find_class_attribute(self, analysis: "_ModuleAnalysis", cls: cst.ClassDef, attr: str, seen: int) -> Optional[List[Tuple["_ModuleAnalysis", cst.CSTNode, cst.BaseExpression]]]:
        """Every value assigned to ``self.<attr>`` in ``cls``'s methods (or as a
        class attribute); the bases' when ``cls`` assigns none; ``None`` when one
        assignment cannot be read (a tuple target, an augmented one)."""
        analysis, cls = self._class_view(analysis, cls)
        out: List[Tuple["_ModuleAnalysis", cst.CSTNode, cst.BaseExpression]] = []
        for stmt in cls.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and any(is_name(t.target, attr) for t in small.targets):
                        out.append((analysis, small, small.value))
                    elif isinstance(small, cst.AnnAssign) and is_name(small.target, attr) and small.value is not None:
                        out.append((analysis, small, small.value))
        owner, with_bodies = analysis, cls
        if analysis.path is not None:
            # Only the methods that assign the attribute are parsed with bodies.
            text = self._text(analysis.path.resolve())
            lines = text.assigning_methods(analysis.def_line(cls), attr) if text is not None else frozenset()
            owner, with_bodies = self._class_view(analysis, cls, lines)
        for func in _body_functions(with_bodies) if with_bodies is not None else ():
            me = _first_param(func)
            if me is None:
                continue
            for node in walk(func):
                if isinstance(node, cst.Assign):
                    for t in node.targets:
                        if _is_attribute(t.target, me, attr):
                            out.append((owner, node, node.value))
                        elif _unpacks_into(t.target, me, attr):
                            return None  # `self.x, y = ...`: we cannot tell its part
                elif isinstance(node, cst.AnnAssign) and _is_attribute(node.target, me, attr):
                    if node.value is not None:
                        out.append((owner, node, node.value))
                elif isinstance(node, cst.AugAssign) and _is_attribute(node.target, me, attr):
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
            if key in self._active or len(self._active) >= _MAX_CHAIN:
                return None  # `self.x = self.x[1:]`: a cycle, unknown; or too far to follow
            self._active.add(key)
            try:
                # An attribute's value does not depend on where it is read: a fresh depth.
                inner = mod.trace(value, 0)
            finally:
                self._active.discard(key)
            if inner is not None:
                where = mod.step(node, f"the attribute `{short(expr, _SHORT)}` assigned{_in_function(mod, node)}")
                inner = replace(inner, steps=(*inner.steps, where), via=inner.via or where)
            traces.append(inner)
        joined = _join(traces)
        if joined is None:
            return None
        use = analysis.step(expr, f"read as `{short(expr, _SHORT)}`")
        return replace(joined, steps=(*joined.steps, use))

    # --- calls -------------------------------------------------------------------

    def call(
        self, analysis: "_ModuleAnalysis", call: cst.Call, depth: int, element: Optional[int] = None, elements: bool = False
    ) -> Optional["_Trace"]:
        """What ``f(...)`` / ``self.m(...)`` returns: the join over its returns
        (``element``: item ``element`` of the tuple every return builds;
        ``elements``: a CPU tensor among the items of the list every return
        builds, for ``torch.cat(f(...))``)."""
        from dataclasses import replace

        target = self.definition(analysis, call.func, depth + 1)
        if target is None or not isinstance(target[1], cst.FunctionDef):
            return None
        mod, func = target
        which = "items" if elements else str(element)
        lasting = self._key("returns", mod, func, which)
        key = lasting or ("returns", id(mod), id(func), which)
        if key in self._memo:
            summary = self._memo[key]
        elif key in self._active:
            return None  # recursion: unknown
        elif len(self._active) >= _MAX_CHAIN:
            return None  # too far to follow (not remembered: a shorter way in may reach it)
        else:
            self._active.add(key)
            try:
                # A summary does not depend on the caller: a fresh depth, so it can be remembered.
                summary = self._summarise(mod, func, 0, element, elements)
            finally:
                self._active.discard(key)
            if lasting is not None:
                self._memo[key] = summary  # keyed by file and line, not by a node that may go
        if summary is None:
            return None
        item = f"[{element}]" if element is not None else ""
        what = f"an item of the list `{short(call.func, _SHORT)}()` returns" if elements else f"the return value of `{short(call.func, _SHORT)}(){item}`"
        use = analysis.step(call, what)
        return replace(summary, steps=(*summary.steps, use), via=summary.via or use)

    def returned_values(
        self, analysis: "_ModuleAnalysis", call: cst.Call, element: Optional[int] = None, depth: int = 0
    ) -> Optional[List[Tuple["_ModuleAnalysis", cst.BaseExpression]]]:
        """What every return of the function ``call`` calls hands back (item
        ``element`` of the tuple it builds), in the view that holds its body."""
        target = self.definition(analysis, call.func, 0)
        if target is None or not isinstance(target[1], cst.FunctionDef):
            return None
        mod, func = self._with_body(*target)  # type: ignore[arg-type]
        returned = _returns(func)
        if not returned:
            return None
        if element is None:
            return [(mod, value) for value in returned]
        out: List[Tuple["_ModuleAnalysis", cst.BaseExpression]] = []
        for value in returned:
            item, delegate = _item_or_delegate(value, element)
            if delegate is not None and depth < _MAX_CHAIN:
                delegated = self.returned_values(mod, delegate, element, depth + 1)
                if delegated is None:
                    return None
                out += delegated
            elif item is None:
                return None
            else:
                out.append((mod, item))
        return out

    def _summarise(
        self, mod: "_ModuleAnalysis", func: cst.FunctionDef, depth: int, element: Optional[int] = None, elements: bool = False
    ) -> Optional["_Trace"]:
        from dataclasses import replace

        mod, func = self._with_body(mod, func)
        returned = _returns(func)
        if not returned:
            return None
        if elements:
            # Every return must hold a CPU tensor; what memory it has does not matter.
            found = [mod.cpu_element(value, depth + 1) for value in returned]
            if any(t is None for t in found):
                return None
            first = found[0]
            assert first is not None
            return replace(first, steps=(*first.steps, mod.step(returned[0], f"returned by `{func.name.value}` in a list")))
        traces = []
        for value in returned:
            if element is not None:
                item, delegate = _item_or_delegate(value, element)
                if delegate is not None:
                    traces.append(self.call(mod, delegate, depth + 1, element=element))
                    continue
                if item is None:
                    return None  # some return is no tuple display: `[i]` indexes a tensor
                value = item
            inner = mod.trace(value, depth + 1)
            if inner is not None:
                inner = replace(inner, steps=(*inner.steps, mod.step(value, f"returned by `{func.name.value}`")))
            traces.append(inner)
        return _join(traces)


def _item(value: cst.BaseExpression, index: int) -> Optional[cst.BaseExpression]:
    """Item ``index`` of a returned ``a, b`` / ``(a, b)`` / ``[a, b]`` display."""
    if not isinstance(value, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in value.elements):
        return None
    return value.elements[index].value if -len(value.elements) <= index < len(value.elements) else None


def _item_or_delegate(value: cst.BaseExpression, index: int) -> Tuple[Optional[cst.BaseExpression], Optional[cst.Call]]:
    """Item ``index`` of a returned tuple display, or else the call a delegating
    return hands the question on to (``return self._impl(...)``); neither for
    any other return."""
    item = _item(value, index)
    if item is None and isinstance(value, cst.Call):
        return None, value
    return item, None


def _is_attribute(node: cst.CSTNode, owner: str, attr: str) -> bool:
    """``owner.attr`` (``self.x``)."""
    return isinstance(node, cst.Attribute) and is_name(node.value, owner) and node.attr.value == attr


def _unpacks_into(target: cst.BaseAssignTargetExpression, owner: str, attr: str) -> bool:
    """``self.x, y = ...`` (not ``self.x.buf[:n] = ...``, which only fills ``self.x``)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(
            _is_attribute(e.value, owner, attr) or _unpacks_into(e.value, owner, attr)  # type: ignore[arg-type]
            for e in target.elements
        )
    return False


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
