"""Find pageable sources of non_blocking copies in one parsed module.

This is the analysis the Fixit rule, the codemod and the CLI share. It reads
the tables in :mod:`pinfix.patterns`, uses LibCST's scope and qualified-name
metadata to resolve names, and returns :class:`Finding` objects that carry the
fix plan (which ``torch.from_numpy`` calls to rewrite, and how safe that is).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst
import libcst.matchers as m
from libcst.metadata import (
    Assignment,
    ComprehensionScope,
    ImportAssignment,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameSource,
    Scope,
    ScopeProvider,
)

from .config import Config
from .patterns import (
    COPY_SINKS,
    CPU_DEVICE_STRINGS,
    NON_BLOCKING_KEYWORD,
    SOURCES_BY_NAME,
    TORCH_DTYPES,
    CopySink,
    PageableSource,
)
from .suppression import Suppressions

#: Metadata every front end must resolve before calling :func:`analyze`.
#: Qualified names are asked of the scope for the few nodes that need them:
#: QualifiedNameProvider would compute them for every node of the file.
REQUIRED_METADATA = (PositionProvider, ParentNodeProvider, ScopeProvider)

GetMetadata = Callable[..., Any]

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass
class Finding:
    """One pageable source feeding one non_blocking sink."""

    code: str
    line: int
    column: int  # 1-based, like ruff and flake8
    end_line: int
    end_column: int
    message: str
    #: ``<sink>/<how the source reaches it>``, e.g. ``copy_/inline``, ``to/bound``.
    pattern: str
    #: ``"safe"``, ``"unsafe"`` or ``None`` (no fix offered).
    fix_safety: Optional[str]
    #: Why the fix is unsafe, or why there is none.
    fix_note: Optional[str]
    #: The ``torch.from_numpy`` calls the fix rewrites.
    edits: Tuple[cst.Call, ...] = field(default=(), repr=False, compare=False)
    #: The node the finding is reported on.
    node: Optional[cst.CSTNode] = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class _Sink:
    spec: CopySink
    source: cst.BaseExpression
    #: ``True`` for a literal ``True``; ``None`` for an expression we cannot evaluate.
    non_blocking: Optional[bool]
    non_blocking_node: Optional[cst.BaseExpression]


@dataclass(frozen=True)
class _Origin:
    """Where the pageable tensor was made."""

    source: PageableSource
    calls: Tuple[cst.Call, ...]
    bound_name: Optional[str]
    unsafe_reason: Optional[str]


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _positional(call: cst.Call) -> List[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def _keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a
    return None


def _literal_bool(expr: cst.BaseExpression) -> Optional[bool]:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def _string_value(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.SimpleString):
        try:
            value = expr.evaluated_value
        except Exception:  # a malformed literal is simply not a device string
            return None
        return value if isinstance(value, str) else None
    return None


class _ModuleAnalysis:
    def __init__(self, module: cst.Module, get_metadata: GetMetadata, config: Config, path: Optional[Path]):
        self.module = module
        self.md = get_metadata
        self.config = config
        self.path = path
        self.suppressions = Suppressions(module, get_metadata)

    # --- metadata helpers -------------------------------------------------

    def qualified_names(self, node: cst.CSTNode) -> Set[str]:
        scope = self.md(ScopeProvider, node, None)
        if scope is None:
            return set()
        return {
            q.name
            for q in scope.get_qualified_names_for(node)
            if q.source in (QualifiedNameSource.IMPORT, QualifiedNameSource.BUILTIN)
        }

    def pos(self, node: cst.CSTNode):
        return self.md(PositionProvider, node)

    def line(self, node: cst.CSTNode) -> int:
        return self.pos(node).start.line

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.md(ParentNodeProvider, node, None)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent = self.parent(node)
        while parent is not None:
            yield parent
            parent = self.parent(parent)

    # --- sinks ------------------------------------------------------------

    def sink(self, call: cst.Call) -> Optional[_Sink]:
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        spec = COPY_SINKS.get(func.attr.value)
        if spec is None:
            return None
        args = list(call.args)
        receiver: cst.BaseExpression = func.value
        # Function form: torch.Tensor.copy_(dst, src, ...) names the receiver first.
        if f"torch.Tensor.{spec.method}" in self.qualified_names(func):
            if not args or args[0].keyword is not None or args[0].star:
                return None
            receiver, args = args[0].value, args[1:]
        call_view = call.with_changes(args=args)
        positional = _positional(call_view)
        if any(a.star for a in args) and _keyword(call_view, NON_BLOCKING_KEYWORD) is None:
            return None  # *args / **kwargs could hold anything

        if spec.source == "receiver":
            source = receiver
        else:
            src_arg = positional[0] if positional else _keyword(call_view, spec.source_keyword or "")
            if src_arg is None:
                return None
            source = src_arg.value

        nb_node: Optional[cst.BaseExpression] = None
        kw = _keyword(call_view, NON_BLOCKING_KEYWORD)
        if kw is not None:
            nb_node = kw.value
        elif spec.method == "to":
            nb_node = self._to_positional_non_blocking(positional)
        else:
            for index in spec.non_blocking_index:
                if index < len(positional):
                    nb_node = positional[index].value
        if nb_node is None:
            return None
        value = _literal_bool(nb_node)
        if value is False:
            return None
        if spec.method == "to" and not self._to_moves_to_device(call_view, positional):
            return None
        return _Sink(spec, source, value, nb_node)

    def _to_positional_non_blocking(self, positional: Sequence[cst.Arg]) -> Optional[cst.BaseExpression]:
        # to(device, dtype, non_blocking) or to(dtype|other, non_blocking): a literal
        # bool in slot 1 or 2 can only be non_blocking.
        for index in (2, 1):
            if index < len(positional) and _literal_bool(positional[index].value) is not None:
                return positional[index].value
        return None

    def _is_dtype(self, expr: cst.BaseExpression) -> bool:
        return bool(self.qualified_names(expr) & TORCH_DTYPES)

    def _is_plainly_cpu(self, expr: cst.BaseExpression) -> bool:
        text = _string_value(expr)
        if text is not None:
            return text.split(":", 1)[0].strip() in CPU_DEVICE_STRINGS
        if isinstance(expr, cst.Call) and "torch.device" in self.qualified_names(expr.func):
            first = _positional(expr) or [a for a in expr.args if a.keyword and a.keyword.value == "type"]
            return bool(first) and self._is_plainly_cpu(first[0].value)
        return False

    def _to_moves_to_device(self, call: cst.Call, positional: Sequence[cst.Arg]) -> bool:
        device = _keyword(call, "device")
        if device is None and positional and _literal_bool(positional[0].value) is None:
            device = positional[0]
        if device is None:
            return False  # .to(dtype=...) or .to(non_blocking=True): no transfer
        if self._is_dtype(device.value):
            return False  # .to(torch.float16, True) converts in place
        return not self._is_plainly_cpu(device.value)

    # --- sources ----------------------------------------------------------

    def direct_source(self, expr: cst.BaseExpression) -> Optional[PageableSource]:
        if not isinstance(expr, cst.Call):
            return None
        for name in self.qualified_names(expr.func):
            source = SOURCES_BY_NAME.get(name)
            if source is not None:
                return source
        return None

    def origin(self, expr: cst.BaseExpression, sink_call: cst.Call) -> Optional[_Origin]:
        source = self.direct_source(expr)
        if source is not None:
            assert isinstance(expr, cst.Call)
            return _Origin(source, (expr,), None, None)
        if isinstance(expr, cst.Name):
            return self._bound_origin(expr, sink_call)
        return None

    def _bound_origin(self, name: cst.Name, sink_call: cst.Call) -> Optional[_Origin]:
        scope = self.md(ScopeProvider, name, None)
        if scope is None:
            return None
        access = next((a for a in scope.accesses[name.value] if a.node is name), None)
        if access is None or not access.referents:
            return None
        home = _home_scope(scope)
        sink_line = self.line(sink_call)
        sink_loops = set(self._loops(sink_call))
        reaching: List[Assignment] = []
        for ref in access.referents:
            if not isinstance(ref, Assignment) or isinstance(ref, ImportAssignment) or ref.scope is not home:
                return None  # a parameter, a global, an import: we cannot see through it
            after_sink = self.line(ref.node) > sink_line
            if after_sink and not (sink_loops & set(self._loops(ref.node))):
                continue  # assigned later, and no loop brings it back to the copy
            reaching.append(ref)
        if not reaching:
            return None
        calls: List[cst.Call] = []
        source: Optional[PageableSource] = None
        for ref in reaching:
            value = self._assigned_value(ref)
            found = self.direct_source(value) if value is not None else None
            if found is None or (source is not None and found is not source):
                return None
            source = found
            assert isinstance(value, cst.Call)
            calls.append(value)
        assert source is not None
        reason = self._bound_fix_hazard(name, reaching, calls, sink_call, sink_loops)
        return _Origin(source, tuple(calls), name.value, reason)

    def _assigned_value(self, ref: Assignment) -> Optional[cst.BaseExpression]:
        """The value bound by ``name = value`` / ``name: T = value``; None otherwise."""
        target = ref.node
        parent = self.parent(target)
        if isinstance(parent, cst.AssignTarget):
            assign = self.parent(parent)
            if isinstance(assign, cst.Assign) and assign.targets[-1] is parent and len(assign.targets) == 1:
                return assign.value
        if isinstance(parent, cst.AnnAssign) and parent.target is target:
            return parent.value
        return None

    def _loops(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.For, cst.While)):
                yield anc
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return

    def _bound_fix_hazard(
        self,
        name: cst.Name,
        reaching: Sequence[Assignment],
        calls: Sequence[cst.Call],
        sink_call: cst.Call,
        sink_loops: Set[cst.CSTNode],
    ) -> Optional[str]:
        """Why swapping the bound ``from_numpy`` for a pinned copy could change behaviour.

        ``from_numpy`` shares the array's memory; the pinned helper copies it.
        The swap is invisible only if nothing else reads or writes the tensor or
        the array between the binding and the copy.
        """
        helper = self.config.helper_name
        for ref in reaching:
            others = [a.node for a in ref.references if a.node is not name]
            if others:
                return (
                    f"`{name.value}` is also used at line {self.line(others[0])}; "
                    f"`{helper}` returns a copy, so that use would no longer share memory with the array"
                )
            if sink_loops - set(self._loops(ref.node)):
                return (
                    f"the copy runs in a loop but `{name.value}` is bound once before it (line {self.line(ref.node)}); "
                    "a pinned copy would not follow later writes to the array"
                )
        sink_start = self.pos(sink_call).start
        for call in calls:
            roots = {n.value for n in m.findall(call, m.Name()) if n is not call.func}
            scope = self.md(ScopeProvider, call, None)
            bind_end = self.pos(call).end
            if scope is None:
                continue
            for root in roots:
                for access in scope.accesses[root]:
                    at = self.pos(access.node).start
                    if (bind_end.line, bind_end.column) < (at.line, at.column) < (sink_start.line, sink_start.column):
                        return (
                            f"`{root}` is used at line {at.line}, between the binding and the copy; "
                            f"`{helper}` would snapshot the array at the binding"
                        )
        return None

    # --- fix availability ---------------------------------------------------

    def no_fix_reason(self, call: cst.Call, local: str) -> Optional[str]:
        helper = self.config.helper
        if self._defines_helper():
            return f"this module defines `{self.config.helper_name}` ({helper}); importing it here would be circular"
        scope = self.md(ScopeProvider, call, None)
        if scope is None:
            return None
        for assignment in scope[local]:
            if isinstance(assignment, ImportAssignment):
                if _imported_qualified_name(assignment) == helper:
                    continue
            where = self.md(PositionProvider, assignment.node, None)
            at = f" (line {where.start.line})" if where is not None else ""
            return f"`{local}` is already bound to something else here{at}; import `{helper}` under another name by hand"
        return None

    def _defines_helper(self) -> bool:
        """Whether this file is the helper's own module (by its path)."""
        if self.path is None:
            return False
        expected = self.config.helper_module.replace(".", "/")
        stem = self.path.as_posix()
        stem = stem[:-3] if stem.endswith(".py") else stem
        if stem.endswith("/__init__"):
            stem = stem[: -len("/__init__")]
        return stem == expected or stem.endswith("/" + expected)

    # --- driver ------------------------------------------------------------

    def findings(self) -> List[Finding]:
        out: List[Finding] = []
        local = helper_local_name(self.module, self.config) or self.config.helper_name
        for call in m.findall(self.module, m.Call()):
            sink = self.sink(call)
            if sink is None or (sink.non_blocking is None and not self.config.strict):
                continue
            origin = self.origin(sink.source, call)
            if origin is None:
                continue
            finding = self._finding(call, sink, origin, local)
            if not self.suppressions.suppressed(finding.node, finding.code, finding.line, finding.end_line):
                out.append(finding)
        return out

    def _finding(self, call: cst.Call, sink: _Sink, origin: _Origin, local: str) -> Finding:
        spec = sink.spec
        reported = origin.calls[0] if origin.bound_name is None else sink.source
        position = self.pos(reported)
        source_text = "torch." + origin.source.qualified_name.rsplit(".", 1)[-1] + "(...)"
        what = f"`.{spec.method}(..., non_blocking=True)`"
        if sink.non_blocking is None:
            what = f"`.{spec.method}(...)` with `non_blocking={_code(sink.non_blocking_node)}`"  # type: ignore[arg-type]
        if origin.bound_name is None:
            subject = f"`{source_text}` is pageable memory"
            pattern = f"{spec.method}/inline"
        else:
            lines = ", ".join(str(self.line(c)) for c in origin.calls)
            subject = f"`{origin.bound_name}` holds pageable `{source_text}` (line {lines})"
            pattern = f"{spec.method}/bound"
        message = (
            f"{subject}, so {what} blocks the host while the driver stages the copy; "
            f"make the source pinned with `{local}(...)`"
        )

        safety: Optional[str] = SAFE
        note: Optional[str] = None
        if not origin.source.fixable or any(not _fixable_call(c) for c in origin.calls):
            safety, note = None, "the call's arguments are not the plain `(array)` form the helper takes"
        else:
            reason = next((r for r in (self.no_fix_reason(c, local) for c in origin.calls) if r), None)
            if reason is not None:
                safety, note = None, reason
            elif origin.unsafe_reason is not None:
                safety, note = UNSAFE, origin.unsafe_reason
        if safety == UNSAFE:
            message += f" (unsafe fix: {note})"
        elif safety is None:
            message += f" (no fix: {note})"
        return Finding(
            code=origin.source.code,
            line=position.start.line,
            column=position.start.column + 1,
            end_line=position.end.line,
            end_column=position.end.column + 1,
            message=message,
            pattern=pattern,
            fix_safety=safety,
            fix_note=note,
            edits=origin.calls if safety is not None else (),
            node=reported,
        )


def helper_local_name(module: cst.Module, config: Config) -> Optional[str]:
    """Local name of an existing top-level ``from <helper module> import <helper>``."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (
                isinstance(small, cst.ImportFrom)
                and not small.relative
                and small.module is not None
                and _code(small.module) == config.helper_module
                and not isinstance(small.names, cst.ImportStar)
            ):
                for alias in small.names:
                    if _code(alias.name) == config.helper_name:
                        return alias.evaluated_alias or config.helper_name
    return None


def _home_scope(scope: Scope) -> Scope:
    """Comprehensions read the enclosing function's names: look through them."""
    while isinstance(scope, ComprehensionScope) and scope.parent is not None:
        scope = scope.parent
    return scope


def _fixable_call(call: cst.Call) -> bool:
    return len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star


def _imported_qualified_name(assignment: ImportAssignment) -> Optional[str]:
    node = assignment.node
    if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
        if isinstance(node.names, cst.ImportStar):
            return None
        for alias in node.names:
            if (alias.evaluated_alias or alias.evaluated_name) == assignment.name:
                return f"{_code(node.module)}.{alias.evaluated_name}"
    return None


def analyze(
    module: cst.Module, get_metadata: GetMetadata, config: Optional[Config] = None, path: Optional[Path] = None
) -> List[Finding]:
    """All findings in ``module``, in source order, suppressions applied.

    ``get_metadata`` is a resolved ``MetadataDependent.get_metadata`` that
    provides :data:`REQUIRED_METADATA` for ``module``.
    """
    return _ModuleAnalysis(module, get_metadata, config or Config(), path).findings()

