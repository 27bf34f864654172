"""Find pageable sources of non_blocking copies in one parsed module.

This is the analysis the Fixit rule, the codemod and the CLI share. It reads
the tables in :mod:`pinfix.patterns`, uses LibCST's scope and qualified-name
metadata to resolve names, and returns :class:`Finding` objects that carry the
fix plan (which ``torch.from_numpy`` calls to rewrite, and how safe that is).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import (
    Assignment,
    ComprehensionScope,
    ImportAssignment,
    MetadataWrapper,
    PositionProvider,
    QualifiedNameSource,
    Scope,
    ScopeProvider,
)

from . import h2d as _h2d
from .config import Config
from .findings import Evidence, FindingFields
from .imports import imported_local_name
from .patterns import (
    ARITHMETIC_SOURCE,
    COMPUTED_FUNCTIONS,
    COMPUTED_METHODS,
    CONTIGUOUS_SOURCE,
    CONVERSION_METHODS,
    COPY_SINKS,
    CPU_DEVICE_STRINGS,
    GATHER_SOURCE,
    HOST_DATA_METHODS,
    HOST_DATA_MODULES,
    MAYBE_GAPPED_VIEW_METHODS,
    NON_BLOCKING_KEYWORD,
    NON_DENSE_SOURCE,
    NUMPY_ARRAY_FUNCTIONS,
    PAGEABLE_METHOD_SOURCES,
    PINNING_METHODS,
    SCALAR_METHODS,
    SOURCES_BY_NAME,
    TORCH_DTYPES,
    VIEW_METHODS,
    CopySink,
    PageableSource,
)
from .suppression import Suppressions
from .syntax import (
    TreeIndex,
    code_of,
    definition_lines,
    is_name,
    keyword_arg,
    literal_bool,
    positional_args,
    short,
    single_positional,
    string_value,
    walk,
)

if TYPE_CHECKING:
    from .deep.resolver import ProjectResolver

#: Metadata every front end must resolve before calling :func:`analyze`.
#: Qualified names are asked of the scope for the few nodes that need them:
#: QualifiedNameProvider would compute them for every node of the file.
#: Parents and written order come from :class:`pinfix.syntax.TreeIndex`.
REQUIRED_METADATA = (PositionProvider, ScopeProvider)

GetMetadata = Callable[..., Any]

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass
class Finding(FindingFields):
    """One pageable source feeding one non_blocking sink, with its fix plan."""

    #: The calls the fix rewrites: ``torch.from_numpy`` calls renamed to the
    #: helper (``fix_kind == "helper"``), or CPU factories that get
    #: ``pin_memory=<expr>`` (``fix_kind == "pin_memory"``).
    edits: Tuple[cst.Call, ...] = field(default=(), repr=False, compare=False)
    fix_kind: Optional[str] = field(default=None, compare=False)
    #: ``fix_kind == "h2d"``: how the ``.to`` call in ``edits`` is rewritten.
    h2d: Optional[_h2d.H2DPlan] = field(default=None, repr=False, compare=False)
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
class _Trace:
    """What a CPU tensor expression is, as far as the data flow shows.

    Either a pageable tensor made by ``source`` (``calls``: the calls that made
    it, one per reaching binding), or, with ``pinned``, a pinned (or maybe
    pinned) one, or (neither: ``source is None`` and not ``pinned``) a CPU
    tensor whose memory pinfix cannot tell (``x.to("cpu")``): not reported,
    but what is computed from it is pageable. The flow runs through local
    names (``names``, outermost first), dense views and slices (nothing
    recorded), CPU conversions that may allocate afresh (``converted``) and
    gapped views (``gapped``); ``steps`` is the evidence, origin first.
    """

    pinned: bool
    source: Optional[PageableSource]
    calls: Tuple[cst.Call, ...] = ()
    names: Tuple[str, ...] = ()
    bindings: Tuple[Assignment, ...] = ()
    converted: Optional[str] = None
    gapped: Optional[str] = None
    #: ``pin_memory=False`` written out: someone chose pageable memory.
    explicit_pageable: bool = False
    steps: Tuple[Evidence, ...] = ()
    #: The step that made the pageable tensor (its source call or computation).
    made: Optional[Evidence] = None
    #: Deep mode: the flow left the function (an attribute, a call's return);
    #: the step where it did.
    via: Optional[Evidence] = None


class _Step(Evidence):
    """A step of evidence whose place is read from the positions only when a
    finding shows it: most traces end in pinned memory or in no finding, and
    positions cost a code-generation pass over the whole module."""

    def __init__(self, path: Optional[str], message: str, locate: Callable[[], Any]):
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "_locate", locate)

    @property  # type: ignore[override]
    def line(self) -> int:
        return self._locate().line  # type: ignore[no-any-return]

    @property  # type: ignore[override]
    def column(self) -> int:
        return self._locate().column + 1  # type: ignore[no-any-return]


def _is_dotted(node: cst.BaseExpression) -> bool:
    """``a`` or ``a.b.c``."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _placed(steps: Sequence[Evidence]) -> Tuple[Evidence, ...]:
    """Plain evidence (what a finding keeps, pickles and prints)."""
    return tuple(Evidence(e.path, e.line, e.column, e.message) for e in steps)


def _merge(traces: Sequence[_Trace]) -> Optional[_Trace]:
    first = traces[0]
    if any(t.pinned != first.pinned for t in traces):
        return None
    if any(t.source is not first.source for t in traces):
        # Pageable every way but made in several: reported as a computed way,
        # which has no fix (`x = torch.from_numpy(a)`, then maybe `x = torch.cat((x, pad))`).
        computed = [t for t in traces if t.source is not None and t.source.computed]
        if first.pinned or not computed or any(t.source is None for t in traces):
            return None
        first = computed[0]
    return replace(
        first,
        calls=tuple(c for t in traces if t.source is first.source for c in t.calls),
        names=tuple(dict.fromkeys(n for t in traces for n in t.names)),
        bindings=tuple(b for t in traces for b in t.bindings),
        converted=next((t.converted for t in traces if t.converted), None),
        gapped=next((t.gapped for t in traces if t.gapped), None),
        explicit_pageable=any(t.explicit_pageable for t in traces),
        via=next((t.via for t in traces if t.via), None),
    )


#: How deep the flow is followed through names and calls. Each rebinding
#: (`x = x.reshape(...)`) costs two or three levels; vLLM's position-id code
#: rebinds a name four times after the factory.
_MAX_DEPTH = 24


@dataclass(frozen=True)
class _Origin:
    """Where the pageable tensor was made."""

    source: PageableSource
    calls: Tuple[cst.Call, ...]
    bound_name: Optional[str]
    unsafe_reason: Optional[str]
    trace: Optional[_Trace] = None


class _ModuleAnalysis:
    def __init__(
        self,
        module: cst.Module,
        get_metadata: GetMetadata,
        config: Config,
        path: Optional[Path],
        resolver: Optional["ProjectResolver"] = None,
        evidence_path: Optional[str] = None,
        source: Optional[bytes] = None,
    ):
        self.module = module
        #: The bytes ``module`` was parsed from, when known (lines of defs).
        self.source = source
        self._def_lines: Optional[Dict[int, int]] = None
        self.md = get_metadata
        self.config = config
        self.path = path
        #: Deep mode: answers what the function cannot see (attributes, calls).
        self.resolver = resolver
        #: How evidence in this module names its file (``None``: the finding's own).
        self.evidence_path = evidence_path
        self.tree = TreeIndex(module)
        self.suppressions = Suppressions(self.tree, get_metadata)
        self._d2h: Optional[Any] = None
        #: Stand-ins for the items of ``a, b = f(...)`` (see :meth:`_unpacked_item`).
        self._items: Dict[Tuple[int, int], cst.Subscript] = {}
        self._unpacked: Dict[int, Tuple[cst.Call, int]] = {}

    def step(self, node: cst.CSTNode, message: str) -> Evidence:
        return _Step(self.evidence_path, message, lambda: self.pos(node).start)

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

    def def_line(self, node: "cst.FunctionDef | cst.ClassDef") -> int:
        """The line of a def or class's name, by which deep mode finds it
        again in another view of its module (from the stdlib's parse when the
        source is known: positions cost a pass over the whole module)."""
        if self._def_lines is None:
            self._def_lines = definition_lines(self.tree.definitions, self.source) if self.source is not None else {}
        line = self._def_lines.get(id(node))
        return line if line is not None else self.line(node.name)

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.tree.parent(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        return self.tree.ancestors(node)

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
        # Function form: torch.Tensor.copy_(dst, src, ...) names the receiver first
        # (only a dotted name can name the class).
        if _is_dotted(receiver) and f"torch.Tensor.{spec.method}" in self.qualified_names(func):
            if not args or args[0].keyword is not None or args[0].star:
                return None
            receiver, args = args[0].value, args[1:]
        call_view = call.with_changes(args=args)
        positional = positional_args(call_view)
        if any(a.star for a in args) and keyword_arg(call_view, NON_BLOCKING_KEYWORD) is None:
            return None  # *args / **kwargs could hold anything

        if spec.source == "receiver":
            source = receiver
        else:
            src_arg = positional[0] if positional else keyword_arg(call_view, spec.source_keyword or "")
            if src_arg is None:
                return None
            source = src_arg.value

        nb_node: Optional[cst.BaseExpression] = None
        kw = keyword_arg(call_view, NON_BLOCKING_KEYWORD)
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
        value = literal_bool(nb_node)
        if value is False:
            return None
        if spec.method == "to" and not self._to_moves_to_device(call_view, positional):
            return None
        return _Sink(spec, source, value, nb_node)

    def _to_positional_non_blocking(self, positional: Sequence[cst.Arg]) -> Optional[cst.BaseExpression]:
        # to(device, dtype, non_blocking) or to(dtype|other, non_blocking): a literal
        # bool in slot 1 or 2 can only be non_blocking.
        for index in (2, 1):
            if index < len(positional) and literal_bool(positional[index].value) is not None:
                return positional[index].value
        return None

    def _is_dtype(self, expr: cst.BaseExpression) -> bool:
        return bool(self.qualified_names(expr) & TORCH_DTYPES)

    def is_plainly_cpu(self, expr: cst.BaseExpression) -> bool:
        text = string_value(expr)
        if text is not None:
            return text.split(":", 1)[0].strip() in CPU_DEVICE_STRINGS
        if isinstance(expr, cst.Call) and "torch.device" in self.qualified_names(expr.func):
            first = positional_args(expr) or [a for a in expr.args if a.keyword and a.keyword.value == "type"]
            return bool(first) and self.is_plainly_cpu(first[0].value)
        return False

    @staticmethod
    def _to_device(call: cst.Call, positional: Sequence[cst.Arg]) -> Optional[cst.BaseExpression]:
        """What a ``.to(...)`` names first: a device or a dtype (``None``:
        ``.to(dtype=...)``, ``.to(non_blocking=True)``)."""
        device = keyword_arg(call, "device")
        if device is None and positional and literal_bool(positional[0].value) is None:
            device = positional[0]
        return device.value if device is not None else None

    def _cpu_tensor_device(self, expr: cst.BaseExpression, depth: int) -> bool:
        """``x.device`` of a CPU tensor pinfix can see (``torch.full(n, 0, device=x.device)``)."""
        return (
            isinstance(expr, cst.Attribute)
            and expr.attr.value == "device"
            and depth < _MAX_DEPTH
            and self.trace(expr.value, depth + 1) is not None
        )

    def _to_moves_to_device(self, call: cst.Call, positional: Sequence[cst.Arg]) -> bool:
        device = self._to_device(call, positional)
        if device is None:
            return False  # .to(dtype=...) or .to(non_blocking=True): no transfer
        if self._is_dtype(device):
            return False  # .to(torch.float16, True) converts in place
        return not self.is_plainly_cpu(device)

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
        trace = self.trace(expr)
        if trace is None or trace.source is None and not trace.gapped:
            return None  # unknown, pinned, or a CPU tensor of unknown memory: no finding
        if trace.source is None:  # a gapped view of pinned (or unknown) CPU memory
            return _Origin(NON_DENSE_SOURCE, (), trace.names[0] if trace.names else None, None, trace)
        assert trace.source is not None
        if trace.via is not None:
            # Made in another function (maybe another file): nothing here to edit.
            return _Origin(trace.source, (), trace.names[0] if trace.names else None, None, trace)
        reason: Optional[str] = None
        if len(trace.names) == 1 and isinstance(expr, cst.Name) and trace.source.fixable:
            reaching = [b for b in trace.bindings if b.name == expr.value]
            sink_loops = set(self._loops(sink_call))
            reason = self._bound_fix_hazard(expr, reaching, trace.calls, sink_call, sink_loops)
        elif len(trace.names) > 1:
            reason = "the tensor reaches the copy through several names (" + ", ".join(f"`{n}`" for n in trace.names) + ")"
        elif trace.names and trace.source.fixable:
            reason = f"`{trace.names[0]}` reaches the copy through a view; check that nothing else uses it"
        return _Origin(trace.source, trace.calls, trace.names[0] if trace.names else None, reason, trace)

    # --- local data flow --------------------------------------------------

    def trace(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[_Trace]:
        """Follow ``expr`` back to where its CPU tensor was made; ``None`` at
        anything unclear (a parameter, an attribute, an unknown call)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Subscript):
            element = self._element(expr)
            if element is not None and self.resolver is not None:
                # `f()[0]`, or `a` of `a, b = f()`: one item of what a project function returns.
                found = self.resolver.call(self, element[0], depth, element=element[1])
                if found is not None or id(expr) in self._unpacked:
                    return found
            inner = self.trace(expr.value, depth + 1)
            if inner is None:
                return None
            kind = _subscript_kind(expr)
            if kind == "gapped":
                step = self.step(expr, f"`{short(expr)}` is a gapped view")
                return replace(inner, gapped=inner.gapped or code_of(expr), steps=(*inner.steps, step))
            if kind == "unknown":
                if self._gathers(expr, depth):
                    return self._computed(GATHER_SOURCE, expr, inner, "gathers (advanced indexing)")
                # Maybe advanced indexing: a fresh (pageable) gather, or a view.
                return None if inner.pinned else replace(inner, converted=inner.converted or code_of(expr))
            return inner
        if isinstance(expr, cst.Name):
            return self._trace_name(expr, depth) or self._cpu_by_name(expr, expr.value)
        if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
            return self._arithmetic(expr, depth)
        if isinstance(expr, cst.IfExp):
            # `t.cpu() if c else None`: only a tensor branch can reach a copy.
            branches = [b for b in (expr.body, expr.orelse) if not is_name(b, "None")]
            traces = [self.trace(b, depth + 1) for b in branches]
            if not traces or any(t is None for t in traces):
                return None
            return _merge(traces)  # type: ignore[arg-type]
        if isinstance(expr, cst.Attribute):
            found = self.resolver.attribute(self, expr, depth) if self.resolver is not None else None
            return found or self._cpu_by_name(expr, expr.attr.value)
        if not isinstance(expr, cst.Call):
            return None
        source = self.direct_source(expr)
        if source is not None:
            return self._source_trace(source, expr, depth)
        if any(a.star for a in expr.args):
            return None
        qualified = self.qualified_names(expr.func)
        if qualified & self.config.pinned_producers:
            return self._pinned(expr, "returns pinned memory")
        computed = next((COMPUTED_FUNCTIONS[q] for q in qualified if q in COMPUTED_FUNCTIONS), None)
        if computed is not None:
            return self._computed_call(computed[0], computed[1], expr, depth)
        func = expr.func
        if not isinstance(func, cst.Attribute):
            return self.resolver.call(self, expr, depth) if self.resolver is not None else None
        method = func.attr.value
        if method in PINNING_METHODS:
            return self._pinned(expr, "pins it")
        if method in PAGEABLE_METHOD_SOURCES and not positional_args(expr):
            step = self.step(expr, f"`{short(expr)}` makes a pageable CPU tensor")
            return _Trace(pinned=False, source=PAGEABLE_METHOD_SOURCES[method], calls=(expr,), steps=(step,), made=step)
        if method in VIEW_METHODS:
            return self.trace(func.value, depth + 1)
        if method in MAYBE_GAPPED_VIEW_METHODS:
            inner = self.trace(func.value, depth + 1)
            args = positional_args(expr)
            dense = method == "narrow" and bool(args) and isinstance(args[0].value, cst.Integer) and args[0].value.value == "0"
            if inner is None or not inner.pinned or dense:
                return inner
            step = self.step(expr, f"`{short(expr)}` may be a non-dense view")
            return replace(inner, gapped=inner.gapped or code_of(expr), steps=(*inner.steps, step))
        if method in COMPUTED_METHODS:
            inner = self.trace(func.value, depth + 1)
            return None if inner is None else self._computed(COMPUTED_METHODS[method], expr, inner, "computes a fresh tensor")
        if method in CONVERSION_METHODS:
            moves = method == "to" and self._to_moves_to_device(expr, positional_args(expr))
            if moves:
                return None
            inner = self.trace(func.value, depth + 1)
            if inner is None:
                if method == "to" and self._to_plainly_cpu(expr):
                    # `x.to("cpu")`: a CPU tensor, pinned only if `x` was.
                    return _Trace(pinned=False, source=None, steps=(self.step(expr, f"`{short(expr)}` is on the CPU"),))
                return None
            if method == "contiguous" and inner.gapped:
                return self._computed(CONTIGUOUS_SOURCE, expr, inner, "copies the gapped view into a fresh tensor")
            if inner.pinned:
                return None  # a conversion of pinned memory may or may not copy
            return replace(inner, converted=inner.converted or f".{method}()")
        return self.resolver.call(self, expr, depth) if self.resolver is not None else None

    def _pinned(self, node: cst.CSTNode, what: str) -> _Trace:
        """Pinned memory, made at ``node`` (``what`` says how, for the evidence)."""
        return _Trace(pinned=True, source=None, steps=(self.step(node, f"`{short(node)}` {what}"),))

    def _cpu_by_name(self, node: cst.BaseExpression, name: str) -> Optional[_Trace]:
        """A tensor the project's naming convention puts on the CPU
        (``[tool.pinfix] cpu-tensor-names``, vLLM: ``*_cpu``): its memory is
        unknown, but what is computed from it, or a gapped view of it, is not
        dense pinned memory."""
        if not any(fnmatchcase(name, pattern) for pattern in self.config.cpu_tensor_names):
            return None
        return _Trace(pinned=False, source=None, steps=(self.step(node, f"`{short(node)}` is a CPU tensor by its name"),))

    def _computed(self, source: PageableSource, expr: cst.BaseExpression, inner: _Trace, what: str) -> _Trace:
        """A fresh tensor computed on the CPU from ``inner``'s (CPU) tensor."""
        step = self.step(expr, f"`{short(expr)}` {what}: a fresh pageable CPU tensor")
        calls = (expr,) if isinstance(expr, cst.Call) else ()
        # Made here: how its inputs arrived no longer matters to the finding.
        return _Trace(pinned=False, source=source, calls=calls, steps=(*inner.steps, step), made=step)

    def _computed_call(self, source: PageableSource, inputs: str, call: cst.Call, depth: int) -> Optional[_Trace]:
        out = keyword_arg(call, "out")
        if out is not None:
            return self.trace(out.value, depth + 1)  # the result is the `out=` tensor itself
        args = positional_args(call)
        if not args:
            return None
        first = args[0].value
        if inputs == "sequence":
            inner = self.cpu_element(first, depth)
        else:
            inner = self.trace(first, depth + 1)
            if inner is not None and self._maybe_scalar(first) and len(args) > 1:
                inner = None  # a 0-dim CPU input follows the other's device
        if inner is None:
            return None
        return self._computed(source, call, inner, "computes a fresh tensor")

    def cpu_element(self, sequence: cst.BaseExpression, depth: int) -> Optional[_Trace]:
        """A CPU tensor among ``sequence``'s items: ``torch.cat`` needs every
        tensor on one device, so one settles it. Deep mode also reads the list
        a call returns (``torch.cat(self.pos_ids(grid))``)."""
        for element in self._sequence_elements(sequence):
            found = self.trace(element, depth + 1)
            if found is not None:
                return found
        if self.resolver is None:
            return None
        call = sequence if isinstance(sequence, cst.Call) else None
        if isinstance(sequence, cst.Name):
            values = self.reaching_values(sequence) or []
            call = values[0][1] if len(values) == 1 and isinstance(values[0][1], cst.Call) else None  # type: ignore[assignment]
        return self.resolver.call(self, call, depth, elements=True) if call is not None else None

    def _sequence_elements(self, expr: cst.BaseExpression) -> List[cst.BaseExpression]:
        """The tensors of a list/tuple display, a comprehension's element, or a
        local name bound to a display and grown with ``.append(x)``."""
        if isinstance(expr, (cst.List, cst.Tuple)):
            return [e.value for e in expr.elements if not isinstance(e, cst.StarredElement)]
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return [expr.elt]
        if not isinstance(expr, cst.Name):
            return []
        found = self.reaching_values(expr)
        if not found:
            return []
        out: List[cst.BaseExpression] = []
        for ref, value in found:
            if isinstance(value, cst.Call) and is_name(value.func, "list", "tuple") and not value.args:
                value = cst.List([])  # `list()`: an empty display, grown below
            if not isinstance(value, (cst.List, cst.Tuple)):
                return []
            out += self._sequence_elements(value)
            for grown in self._extensions(ref):
                if not isinstance(grown, (cst.List, cst.Tuple)):
                    return []  # `xs += other`: items pinfix does not list
                out += self._sequence_elements(grown)
            for access in ref.references:
                call = self.parent(self.parent(access.node) or access.node)
                func = self.parent(access.node)
                if (
                    isinstance(func, cst.Attribute)
                    and func.attr.value == "append"
                    and isinstance(call, cst.Call)
                    and len(call.args) == 1
                ):
                    out.append(call.args[0].value)
        return out

    def _arithmetic(self, expr: cst.BaseExpression, depth: int) -> Optional[_Trace]:
        """``a - b``, ``-a``, ``a == b`` on CPU tensors: a fresh pageable tensor.

        A 0-dim CPU tensor combines with a device tensor on the device, so the
        result is on the CPU only when an operand is a CPU tensor that may not
        be 0-dim, or every operand is a CPU tensor or a number."""
        if isinstance(expr, cst.UnaryOperation):
            if not isinstance(expr.operator, (cst.Minus, cst.BitInvert)):
                return None
            operands = [expr.expression]
        elif isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, cst.MatrixMultiply):
                return None
            operands = [expr.left, expr.right]
        else:
            assert isinstance(expr, cst.Comparison)
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return None
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
        traces = [self.trace(o, depth + 1) for o in operands]
        known = [(o, t) for o, t in zip(operands, traces) if t is not None]
        if not known:
            return None
        settled = any(not self._maybe_scalar(o) for o, _ in known) or all(
            t is not None or isinstance(o, (cst.Integer, cst.Float)) for o, t in zip(operands, traces)
        )
        if not settled:
            return None
        return self._computed(ARITHMETIC_SOURCE, expr, known[0][1], "computes a fresh tensor")

    def _maybe_scalar(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Could ``expr`` be a 0-dim tensor (``x[i]``, ``x.sum()``, ``torch.tensor(n)``)?"""
        if depth > _MAX_DEPTH:
            return True
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in VIEW_METHODS | CONVERSION_METHODS:
            expr = expr.func.value
        if isinstance(expr, cst.Subscript):
            element = self._element(expr)
            if element is not None and self.resolver is not None:
                # `a, b = f(...)`: what `f` puts in the tuple, not an indexing.
                returned = self.resolver.returned_values(self, element[0], element[1])
                if returned is not None:
                    return any(mod._maybe_scalar(value, depth + 1) for mod, value in returned)
            return all(not self._keeps_a_dim(el) for el in expr.slice)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in SCALAR_METHODS:
                return True
            if "torch.tensor" in self.qualified_names(func) or "torch.as_tensor" in self.qualified_names(func):
                data = positional_args(expr)
                return not data or not isinstance(data[0].value, (cst.List, cst.Tuple, cst.ListComp))
            return False
        if isinstance(expr, cst.Name):
            found = self.reaching_values(expr)
            return not found or any(v is None or self._maybe_scalar(v, depth + 1) for _, v in found)
        if isinstance(expr, cst.BinaryOperation):
            return self._maybe_scalar(expr.left, depth + 1) and self._maybe_scalar(expr.right, depth + 1)
        return True

    def _keeps_a_dim(self, element: cst.SubscriptElement) -> bool:
        """``x[a:b]``, ``x[s]`` with ``s`` bound only to ``slice(...)``, or a
        boolean mask ``x[x != -1]``: the result keeps a dimension."""
        if isinstance(element.slice, cst.Slice):
            return True
        index = element.slice.value if isinstance(element.slice, cst.Index) else None
        if isinstance(index, cst.Comparison):
            return not any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in index.comparisons)
        if not isinstance(index, cst.Name):
            return False
        return self.bound_only_to(index, lambda v: isinstance(v, cst.Call) and "builtins.slice" in self.qualified_names(v.func))

    def _gathers(self, sub: cst.Subscript, depth: int) -> bool:
        """``x[idx]`` with a list display or a CPU tensor index: advanced
        indexing, which gathers into a fresh tensor."""
        for el in sub.slice:
            index = el.slice
            if not isinstance(index, cst.Index) or isinstance(index.value, (cst.Integer, cst.Ellipsis)):
                continue
            if isinstance(index.value, (cst.List, cst.ListComp)) or self.trace(index.value, depth + 1) is not None:
                return True
            if self._numpy_array(index.value):
                return True
        return False

    def _numpy_array(self, expr: cst.BaseExpression) -> bool:
        """A NumPy array for sure: a call of an array-making NumPy function, or
        a local name only ever bound to one."""
        if isinstance(expr, cst.Call):
            return bool(self.qualified_names(expr.func) & NUMPY_ARRAY_FUNCTIONS)
        if isinstance(expr, cst.Name):
            return self.bound_only_to(expr, lambda v: isinstance(v, cst.Call) and self._numpy_array(v))
        return False

    def _to_plainly_cpu(self, call: cst.Call) -> bool:
        device = self._to_device(call, positional_args(call))
        return device is not None and self.is_plainly_cpu(device)

    def _source_trace(self, source: PageableSource, call: cst.Call, depth: int) -> Optional[_Trace]:
        if any(a.star for a in call.args):
            # `torch.zeros(*size, pin_memory=flag)`: *size cannot override a keyword.
            pin = keyword_arg(call, "pin_memory")
            if source.factory and pin is not None and literal_bool(pin.value) is not False:
                if not any(a.star == "**" for a in call.args):
                    return self._pinned(call, "is pinned")
            return None  # *args / **kwargs could carry device= or pin_memory=
        explicit = False
        if source.sized and _literally_empty(call, varargs=not source.qualified_name.endswith("full")):
            return None  # an empty tensor: its copy moves nothing and cannot block
        if source.factory:
            device = keyword_arg(call, "device")
            if device is not None and not (self.is_plainly_cpu(device.value) or self._cpu_tensor_device(device.value, depth)):
                return None
            pin = keyword_arg(call, "pin_memory")
            if pin is not None:
                if literal_bool(pin.value) is not False:
                    return self._pinned(call, "is pinned")
                explicit = True
            if source.like and device is None:
                data = positional_args(call)
                inner = self.trace(data[0].value, depth + 1) if data else None
                if inner is None:
                    return None  # *_like follows its argument's device
        if source.host_data_only:
            data_arg = (positional_args(call) or [None])[0] or keyword_arg(call, "data") or keyword_arg(call, "obj")
            if data_arg is None:
                return None
            if keyword_arg(call, "device") is not None and not self.is_plainly_cpu(keyword_arg(call, "device").value):  # type: ignore[union-attr]
                return None
            inner = self.trace(data_arg.value, depth + 1)
            if inner is not None and (inner.pinned or inner.source is None):
                return None  # as_tensor returns its argument, pinned or maybe pinned
            if inner is None and not self._host_data(data_arg.value, depth + 1):
                return None
        step = self.step(call, f"`{short(call)}` makes a pageable CPU tensor")
        return _Trace(pinned=False, source=source, calls=(call,), explicit_pageable=explicit, steps=(step,), made=step)

    def _host_data(self, expr: cst.BaseExpression, depth: int) -> bool:
        """Plainly host data: a display, a number, a NumPy call, ``.numpy()``."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp, cst.Integer, cst.Float)):
            return True
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in HOST_DATA_METHODS:
                return True
            return any(q.startswith(HOST_DATA_MODULES) for q in self.qualified_names(expr.func))
        if isinstance(expr, cst.Name):
            return self.bound_only_to(expr, lambda v: self._host_data(v, depth + 1))
        return False

    def _trace_name(self, name: cst.Name, depth: int) -> Optional[_Trace]:
        found = self.reaching_values(name)
        if not found:
            return None
        traces: List[_Trace] = []
        for ref, value in found:
            inner = self.trace(value, depth + 1) if value is not None else None
            if inner is None:
                return None
            traces.append(replace(inner, names=(name.value, *inner.names), bindings=(ref, *inner.bindings)))
        merged = _merge(traces)
        if merged is None:
            return None
        # The binding of a way the finding reports (the computed one, when several).
        ref = next(ref for (ref, _), t in zip(found, traces) if t.source is merged.source)
        where = self.step(ref.node, f"bound to `{name.value}`")
        return replace(merged, steps=(*merged.steps, where))

    def bound_only_to(self, name: cst.Name, test: Callable[[cst.BaseExpression], bool]) -> bool:
        """Whether every local binding of ``name`` that reaches it is a plain
        assignment of a value that passes ``test``."""
        found = self.reaching_values(name)
        return bool(found) and all(v is not None and test(v) for _, v in found)  # type: ignore[union-attr]

    def reaching_values(self, name: cst.Name) -> Optional[List[Tuple[Assignment, Optional[cst.BaseExpression]]]]:
        """The local assignments of ``name`` that can reach this use, with their
        values; ``None`` when one of them is not a local ``name = value``."""
        scope = self.md(ScopeProvider, name, None)
        if scope is None:
            return None
        access = next((a for a in scope.accesses[name.value] if a.node is name), None)
        if access is None or not access.referents:
            return None
        home = _home_scope(scope)
        use_loops = set(self._loops(name))
        found: List[Tuple[Assignment, Optional[cst.BaseExpression]]] = []
        for ref in access.referents:
            if not isinstance(ref, Assignment) or isinstance(ref, ImportAssignment) or ref.scope is not home:
                return None  # a parameter, a global, an import: we cannot see through it
            if self._in_place(ref):
                continue  # `x += 1` changes x's own memory; `xs += [t]` is read by _sequence_elements
            value = self.assigned_value(ref)
            if value is not None and any(a is value for a in self.ancestors(name)):
                continue  # `x = f(x)`: this binding runs after the use it holds
            if self.tree.before(name, ref.node) and not (use_loops & set(self._loops(ref.node))):
                continue  # assigned later, and no loop brings it back to the use
            found.append((ref, value))
        found.sort(key=lambda item: self.tree.start(item[0].node))  # referents come as a set
        out: List[Tuple[Assignment, Optional[cst.BaseExpression]]] = []
        for ref, value in self._not_overwritten(found, name):
            if value is None:
                return None
            out.append((ref, value))
        return out or None

    def _not_overwritten(
        self, found: List[Tuple[Assignment, Optional[cst.BaseExpression]]], use: cst.Name
    ) -> List[Tuple[Assignment, Optional[cst.BaseExpression]]]:
        """Drop the bindings a later one surely overwrites before ``use``:
        ``x = a; x = b; use(x)`` sees only ``b``. A plain ``x = b`` does, when
        its statement stands in a block that holds the use (so it runs on every
        way to the use) and the earlier binding sits in that block before it,
        or is a parameter and the block is the function's body (``x = x.cpu()``)."""
        blocks = {id(a) for a in self.ancestors(use)}
        killers = []
        for ref, value in found:
            statement = next((a for a in self.ancestors(ref.node) if isinstance(a, cst.SimpleStatementLine)), None)
            block = self.parent(statement) if statement is not None else None
            if value is not None and block is not None and id(block) in blocks and self.tree.before(ref.node, use):
                killers.append((block, ref.node))
        if not killers:
            return found
        kept = []
        for ref, value in found:
            if isinstance(ref.node, cst.Param):
                func = self.parent(self.parent(ref.node))  # Param -> Parameters -> def
                if isinstance(func, cst.FunctionDef) and any(block is func.body for block, _ in killers):
                    continue
                kept.append((ref, value))
                continue
            inside = {id(a) for a in self.ancestors(ref.node)}
            if any(id(block) in inside and self.tree.before(ref.node, killer) for block, killer in killers):
                continue
            kept.append((ref, value))
        return kept

    def _extensions(self, ref: Assignment) -> List[cst.BaseExpression]:
        """What ``xs += ...`` adds to the list ``ref`` binds, in its scope."""
        name = ref.node
        if not isinstance(name, cst.Name) or ref.scope is None:
            return []
        return [
            aug.value
            for other in ref.scope.assignments[name.value]
            if isinstance(other, Assignment)
            and self._in_place(other)
            and isinstance((aug := self.parent(other.node)), cst.AugAssign)
            and isinstance(aug.operator, cst.AddAssign)
        ]

    def _in_place(self, ref: Assignment) -> bool:
        """``x += ...``: in place for a tensor or a list (a number it would rebind,
        but a number was never followed to begin with)."""
        parent = self.parent(ref.node)
        return isinstance(parent, cst.AugAssign) and parent.target is ref.node

    def assigned_value(self, ref: Assignment) -> Optional[cst.BaseExpression]:
        """The value bound by ``name = value`` / ``name: T = value`` (for
        ``a, b = f(...)``, a stand-in for ``f(...)[i]``); None otherwise."""
        target = ref.node
        parent = self.parent(target)
        if isinstance(parent, cst.AssignTarget):
            assign = self.parent(parent)
            if isinstance(assign, cst.Assign) and assign.targets[-1] is parent and len(assign.targets) == 1:
                return assign.value
        if isinstance(parent, cst.Element) and isinstance(target, cst.Name):
            return self._unpacked_item(parent)
        if isinstance(parent, cst.AnnAssign) and parent.target is target:
            return parent.value
        return None

    def _unpacked_item(self, element: cst.Element) -> Optional[cst.BaseExpression]:
        """``a, b = f(...)`` (a single target, no starred item): ``f(...)[i]`` for
        ``element``, made once and remembered as a stand-in (it has no place
        in the file; :meth:`trace` only hands its call to the resolver)."""
        display = self.parent(element)
        target = self.parent(display) if isinstance(display, (cst.Tuple, cst.List)) else None
        assign = self.parent(target) if isinstance(target, cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.value, cst.Call):
            return None
        items = display.elements  # type: ignore[union-attr]
        if any(isinstance(e, cst.StarredElement) for e in items):
            return None
        index = next(i for i, e in enumerate(items) if e is element)
        key = (id(assign), index)
        if key not in self._items:
            item = cst.Subscript(assign.value, [cst.SubscriptElement(cst.Index(cst.Integer(str(index))))])
            self._items[key] = item
            self._unpacked[id(item)] = (assign.value, index)
        return self._items[key]

    def _element(self, sub: cst.Subscript) -> Optional[Tuple[cst.Call, int]]:
        """``f(...)[i]`` with a literal ``i`` (or an unpacking's stand-in)."""
        if id(sub) in self._unpacked:
            return self._unpacked[id(sub)]
        if len(sub.slice) != 1 or not isinstance(sub.value, cst.Call):
            return None
        index = sub.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
            return sub.value, int(index.value.value, 0)
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
            roots = {n.value for n in walk(call) if isinstance(n, cst.Name) and n is not call.func}
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
        return self.name_taken(call, local, helper)

    def name_taken(self, call: cst.Call, local: str, qualified: str) -> Optional[str]:
        scope = self.md(ScopeProvider, call, None)
        if scope is None:
            return None
        for assignment in scope[local]:
            if isinstance(assignment, ImportAssignment):
                if _imported_qualified_name(assignment) == qualified:
                    continue
            where = self.md(PositionProvider, assignment.node, None)
            at = f" (line {where.start.line})" if where is not None else ""
            return f"`{local}` is already bound to something else here{at}; import `{qualified}` under another name by hand"
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
        for call in self.tree.calls:
            found: List[Finding] = []
            sink = self.sink(call)
            if sink is None:
                found += self.d2h.findings_for(call)
            elif sink.non_blocking is not None or self.config.strict:
                origin = self.origin(sink.source, call)
                if origin is not None and not self._cpu_destination(call, sink):
                    found.append(self._finding(call, sink, origin, local))
                elif sink.spec.method == "copy_" and origin is None:
                    found += self.d2h.findings_for(call)
                if origin is None and self.config.show_unknown and not found:
                    unknown = self._unknown(call, sink)
                    if unknown is not None:
                        found.append(unknown)
            for finding in found:
                if not self.suppressions.suppressed(finding.node, finding.code, finding.line, finding.end_line):
                    out.append(finding)
        out.sort(key=lambda f: (f.line, f.column, f.code))
        return out

    @property
    def d2h(self) -> "Any":
        if self._d2h is None:
            from .d2h import DeviceToHost

            self._d2h = DeviceToHost(self)
        return self._d2h

    def _cpu_destination(self, call: cst.Call, sink: _Sink) -> bool:
        """``cpu_dst.copy_(cpu_src, ...)``: a host-to-host copy, nothing to stage."""
        if sink.spec.method != "copy_":
            return False
        func = call.func
        assert isinstance(func, cst.Attribute)
        receiver = func.value
        if f"torch.Tensor.{sink.spec.method}" in self.qualified_names(func):
            receiver = call.args[0].value
        return self.trace(receiver) is not None

    def _finding(self, call: cst.Call, sink: _Sink, origin: _Origin, local: str) -> Finding:
        spec = sink.spec
        trace = origin.trace
        assert trace is not None
        reported: cst.CSTNode = origin.calls[0] if origin.bound_name is None and origin.calls else sink.source
        position = self.pos(reported)
        what = f"`.{spec.method}(..., non_blocking=True)`"
        if sink.non_blocking is None:
            what = f"`.{spec.method}(...)` with `non_blocking={code_of(sink.non_blocking_node)}`"  # type: ignore[arg-type]
        how = "inline" if origin.bound_name is None else "bound"
        if trace.via is not None:
            how = "deep"
        source = origin.source
        if source is NON_DENSE_SOURCE:
            view = trace.gapped or code_of(sink.source)
            held = f" (held by `{origin.bound_name}`)" if origin.bound_name and origin.bound_name not in view else ""
            message = (
                f"`{view}`{held} is a gapped (non-dense) view of a {'pinned' if trace.pinned else 'CPU'} tensor, so {what} is staged through "
                "a pageable temporary and blocks the host; copy a dense block (whole rows) and slice it on the "
                "device, or gather it into a contiguous pinned buffer first (no fix)"
            )
            finding = self.make_finding(source.code, position, message, f"{spec.method}/non-dense", None, "gapped view", (), None, reported)
            finding.evidence = _placed((*trace.steps, self.step(call, f"copied with {what}")))
            return finding

        source_text = _source_text(source)
        quoted = f"`{source_text}`" if not source.qualified_name.startswith("<") else f"the result of {source_text}"
        made = trace.made
        here = self.evidence_path or (self.path.as_posix() if self.path else "<module>")
        if made is not None and (trace.via is not None or made.path not in (None, here)):
            at = made.where(here)
        elif origin.calls:
            at = "line " + ", ".join(str(self.line(c)) for c in origin.calls)
        else:
            at = f"line {made.line}" if made is not None else ""
        at_text = f" ({at})" if at else ""
        if trace.via is not None:
            # Deep mode: name the origin and the hop out of this function.
            subject = (
                f"`{short(sink.source)}` is pageable: {quoted} made at {at} reaches the copy through "
                f"{trace.via.message} ({trace.via.where(here)})"
            )
        elif origin.bound_name is None and not source.computed:
            subject = f"{quoted} is pageable memory"
        elif origin.bound_name is None:
            subject = f"{quoted}{at_text} is a fresh pageable CPU tensor"
        elif source.computed:
            subject = f"`{origin.bound_name}` holds {quoted}{at_text}, a fresh pageable CPU tensor"
        else:
            subject = f"`{origin.bound_name}` holds pageable {quoted}{at_text}"
        pattern = f"{spec.method}/{how}" if source.code == "PIN001" and not trace.converted else f"{spec.method}/{how}/{source.qualified_name}"
        if trace.converted:
            pattern += "/converted"
        if trace.gapped:
            pattern += "/gapped"
        blocks = f"{subject}, so {what} blocks the host while the driver stages the copy"
        staging = (
            "stage it through a persistent pinned buffer instead (allocated once with `pin_memory=True`, as "
            "vLLM's `CpuGpuBuffer` does: fill its CPU side, then copy it non_blocking)"
        )

        safety: Optional[str] = SAFE
        note: Optional[str] = None
        kind: Optional[str] = None
        edits: Tuple[cst.Call, ...] = origin.calls
        h2d = _h2d.plan(self, call, sink, origin) if self.config.h2d_helper else None
        if h2d is not None:
            assert self.config.h2d_helper is not None
            remedy = f"copy it with `{_h2d.local_name(self.module, self.config.h2d_helper)}(...)`, which pins it first"
            kind = "h2d"
            edits = (call,)
            if h2d[1] is not None:
                safety, note = UNSAFE, h2d[1]
        elif trace.converted:
            remedy = (
                f"`{trace.converted}` makes a fresh pageable tensor on the way; build the data in its final "
                f"dtype and shape first and pin that, or {staging}"
            )
            safety, note = None, f"`{trace.converted}` allocates a new pageable tensor after the source"
        elif trace.gapped:
            remedy = f"`{trace.gapped}` is also a gapped view; copy dense rows and slice on the device"
            safety, note = None, f"`{trace.gapped}` is a gapped view: pinning the base would not make the copy asynchronous"
        elif trace.via is not None:
            expr = self.config.pin_memory_expr or "True"
            remedy = staging if not source.factory else f"allocate it pinned at its origin ({at}) with `pin_memory={expr}`"
            safety, note = None, "the source is made in another function; fix it there"
            if source.factory and len(trace.calls) == 1 and self._in_this_file(made):
                # Pinning an allocation changes no value; but the tensor lives on
                # past this copy, and once pinned the copy really is asynchronous.
                # (A slice of this file may not hold the origin: then the engine
                # finds it when it analyses the whole file to fix it.)
                origin_call = self._call_at(made)  # type: ignore[arg-type]
                edits = (origin_call,) if origin_call is not None else ()
                kind = "pin_memory"
                safety, note = UNSAFE, (
                    f"the tensor is made at line {made.line} in another function and kept; once pinned, the "  # type: ignore[union-attr]
                    "copy is truly asynchronous, so a host write to it before the copy has finished would race"
                )
        elif source.fixable:
            remedy = f"make the source pinned with `{local}(...)`"
            kind = "helper"
            if any(single_positional(c) is None for c in origin.calls):
                safety, note = None, "the call's arguments are not the plain `(array)` form the helper takes"
            else:
                reason = next((r for r in (self.no_fix_reason(c, local) for c in origin.calls) if r), None)
                if reason is not None:
                    safety, note = None, reason
                elif origin.unsafe_reason is not None:
                    safety, note = UNSAFE, origin.unsafe_reason
        elif source.factory:
            expr = self.config.pin_memory_expr or "True"
            remedy = f"allocate it pinned with `pin_memory={expr}`"
            kind = "pin_memory"
            safety, note = self._pin_memory_safety(trace, call)
            if trace.via is not None and safety == SAFE:
                safety, note = UNSAFE, f"the tensor is made in another function ({at}); check its other uses there"
        elif source.computed:
            remedy = staging
            safety, note = None, "a computed result cannot be allocated pinned"
        else:
            remedy = staging
            safety, note = None, f"`{source_text}` takes no `pin_memory=`"
        message = f"{blocks}; {remedy}"
        if safety == UNSAFE:
            message += f" (unsafe fix: {note})"
        elif safety is None:
            message += f" (no fix: {note})"
        # A conversion's fresh tensor is the pageable source then (even of `from_numpy`).
        code = "PIN002" if trace.converted else source.code
        finding = self.make_finding(
            code, position, message, pattern, safety, note, edits if safety is not None else (), kind, reported
        )
        finding.h2d = h2d[0] if h2d is not None else None
        finding.evidence = _placed((*trace.steps, self.step(call, f"copied with {what}")))
        return finding

    def _unknown(self, call: cst.Call, sink: _Sink) -> Optional[Finding]:
        """PIN004 (``--show-unknown``): a non_blocking copy whose CPU side pinfix
        cannot tell pinned or pageable. Informational: it never fails a run."""
        source = sink.source
        trace = self.trace(source)
        if trace is not None and (trace.pinned or trace.source is not None) or self._cpu_destination(call, sink):
            return None  # pinned, or a CPU destination: a host-to-host or D2H copy
        root = source
        # Down to what the tensor comes from: through subscripts and method calls,
        # stopping at a call of a function (`f(...)`, `torch.cat(...)`).
        while isinstance(root, (cst.Subscript, cst.Call)) and not (
            isinstance(root, cst.Call) and (not isinstance(root.func, cst.Attribute) or self.qualified_names(root.func))
        ):
            root = root.value if isinstance(root, cst.Subscript) else root.func.value  # type: ignore[union-attr]
        if isinstance(root, cst.Name) and not self.reaching_values(root):
            why = f"`{root.value}` {self._binding_kind(root)}"
        elif isinstance(root, cst.Attribute):
            why = f"pinfix cannot see every assignment to `{short(root)}`" + ("" if self.resolver else " (try --deep)")
        elif isinstance(root, cst.Call):
            why = f"pinfix cannot see what `{short(root.func)}()` returns" + ("" if self.resolver else " (try --deep)")
        else:
            why = "pinfix does not follow how it is made"
        what = f"`.{sink.spec.method}(..., non_blocking=True)`"
        message = (
            f"cannot tell whether `{short(source)}` is pinned or pageable ({why}); if it is a pageable CPU "
            f"tensor, {what} blocks the host (informational)"
        )
        finding = self.make_finding("PIN004", self.pos(source), message, f"{sink.spec.method}/unknown", None, None, (), None, source)
        finding.severity = "info"
        finding.evidence = _placed((self.step(call, f"copied with {what}"),))
        return finding

    def _in_this_file(self, made: Optional[Evidence]) -> bool:
        if made is None or self.path is None:
            return False
        return made.path is None or Path(made.path).resolve() == self.path.resolve()

    def _call_at(self, made: Evidence) -> Optional[cst.Call]:
        """The source call of this module that ``made`` (deep evidence) names."""
        for call in self.tree.calls:
            start = self.pos(call).start
            if (start.line, start.column + 1) == (made.line, made.column):
                return call if self.direct_source(call) is not None else None
        return None

    def _binding_kind(self, name: cst.Name) -> str:
        """How ``name`` is bound, where :meth:`_reaching_values` cannot follow it."""
        scope = self.md(ScopeProvider, name, None)
        access = next((a for a in scope.accesses[name.value] if a.node is name), None) if scope is not None else None
        referents = list(access.referents) if access is not None else []
        if any(isinstance(r, Assignment) and isinstance(r.node, cst.Param) for r in referents):
            return "is a parameter"
        if not referents or any(r.scope is not _home_scope(scope) for r in referents):  # type: ignore[arg-type]
            return "comes from outside the function"
        return "is bound in a way pinfix does not follow (unpacking, a loop or a `with`)"

    def _pin_memory_safety(self, trace: _Trace, sink_call: cst.Call) -> Tuple[Optional[str], Optional[str]]:
        if trace.explicit_pageable:
            return None, "`pin_memory=False` is written out; change it by hand if pageable memory was not intended"
        imported = self.config.pin_memory_import
        if imported is not None:
            local = imported.rpartition(".")[2]
            existing = imported_local_name(self.module, imported.rpartition(".")[0], local)
            for call in trace.calls:
                reason = None if existing is not None else self.name_taken(call, local, imported)
                if reason is not None:
                    return None, reason
        sink_start = self.pos(sink_call).start
        sink_loops = set(self._loops(sink_call))
        for ref in trace.bindings:
            later = [
                a.node
                for a in ref.references
                if (self.pos(a.node).start.line, self.pos(a.node).start.column) > (sink_start.line, sink_start.column)
                and not any(anc is sink_call for anc in self.ancestors(a.node))
            ]
            if later:
                return UNSAFE, (
                    f"`{ref.name}` is used again at line {self.line(later[0])}; once pinned the copy no longer "
                    "waits for the host, so a write there would race with it"
                )
            if sink_loops - set(self._loops(ref.node)):
                return UNSAFE, (
                    f"the copy runs in a loop but `{ref.name}` is bound once before it (line {self.line(ref.node)}); "
                    "once pinned, a write to it in the next iteration would race with the copy"
                )
        if self.config.pin_memory_expr is None:
            return UNSAFE, (
                "`pin_memory=True` fails where no accelerator is available; set `[tool.pinfix] pin-memory-expr` "
                "(vLLM: `is_pin_memory_available()`) to make this fix safe"
            )
        return SAFE, None

    def make_finding(self, code, position, message, pattern, safety, note, edits, kind, node) -> Finding:  # type: ignore[no-untyped-def]
        return Finding(
            code=code,
            line=position.start.line,
            column=position.start.column + 1,
            end_line=position.end.line,
            end_column=position.end.column + 1,
            message=message,
            pattern=pattern,
            fix_safety=safety,
            fix_note=note,
            edits=tuple(edits),
            fix_kind=kind if edits else None,
            node=node,
        )


def _source_text(source: PageableSource) -> str:
    if source.qualified_name.startswith("<"):
        return source.qualified_name.strip("<>")
    if source.qualified_name.startswith("torch.Tensor."):
        return "." + source.qualified_name.rsplit(".", 1)[-1] + "()"
    return source.qualified_name + "(...)"


def helper_local_name(module: cst.Module, config: Config) -> Optional[str]:
    """Local name of an existing top-level ``from <helper module> import <helper>``."""
    return imported_local_name(module, config.helper_module, config.helper_name)


def _literally_empty(call: cst.Call, varargs: bool) -> bool:
    """``zeros(0)``, ``empty(0, 4)``, ``zeros((4, 0))``, ``full([0], 1.0)``, ``zeros(size=[0])``.

    ``varargs``: the sizes may be passed one by one (not ``full``, whose second
    argument is the fill value)."""
    keyword = keyword_arg(call, "size")
    positional = [a.value for a in positional_args(call)]
    first = keyword.value if keyword is not None else (positional[0] if positional else None)
    if isinstance(first, (cst.Tuple, cst.List)):
        dims = [e.value for e in first.elements]
    elif keyword is None and varargs:
        dims = positional
    else:
        dims = [first] if first is not None else []
    return any(isinstance(d, cst.Integer) and d.evaluated_value == 0 for d in dims)


def _home_scope(scope: Scope) -> Scope:
    """Comprehensions read the enclosing function's names: look through them."""
    while isinstance(scope, ComprehensionScope) and scope.parent is not None:
        scope = scope.parent
    return scope


def _full_slice(el: cst.SubscriptElement) -> bool:
    s = el.slice
    return isinstance(s, cst.Slice) and s.lower is None and s.upper is None and _no_step(s)


def _no_step(s: cst.Slice) -> bool:
    return s.step is None or (isinstance(s.step, cst.Integer) and s.step.value == "1")


def _int_index(el: cst.SubscriptElement) -> bool:
    s = el.slice
    if not isinstance(s, cst.Index):
        return False
    value = s.value
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return isinstance(value, cst.Integer)


def _subscript_kind(sub: cst.Subscript) -> str:
    """``"dense"`` for ``x[i]``, ``x[:n]``, ``x[i, a:b]``, ``x[:n, :]`` (a
    contiguous block of a contiguous tensor); ``"gapped"`` for a step or a
    narrowed dimension after a wider one (``x[::2]``, ``x[:, :k]``,
    ``x[:, 0]``); ``"unknown"`` for anything else (a tensor or name index,
    ``None``, ``...``)."""
    elements = list(sub.slice)
    narrowed = False  # a dimension after this one no longer spans the base
    for el in elements:
        s = el.slice
        if isinstance(s, cst.Slice):
            if not _no_step(s):
                return "gapped"
            if _full_slice(el):
                continue
            if narrowed or any(_full_slice(e) for e in elements[: elements.index(el)]):
                return "gapped"
            narrowed = True
        elif _int_index(el):
            if narrowed or any(_full_slice(e) for e in elements[: elements.index(el)]):
                return "gapped"
        else:
            return "unknown"
    return "dense"


def _imported_qualified_name(assignment: ImportAssignment) -> Optional[str]:
    node = assignment.node
    if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
        if isinstance(node.names, cst.ImportStar):
            return None
        for alias in node.names:
            if (alias.evaluated_alias or alias.evaluated_name) == assignment.name:
                return f"{code_of(node.module)}.{alias.evaluated_name}"
    return None


_MISSING = object()


def metadata_on_demand(module: cst.Module, tolerant: bool = False) -> GetMetadata:
    """A ``get_metadata`` for ``module`` that resolves each provider the first
    time it is asked: a file whose copies all turn out pinned, or whose sources
    are not names, never pays for positions or scopes. ``tolerant`` (another
    module, read by deep mode): a provider that fails answers nothing, so what
    depends on it stays unknown."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    tables: Dict[Any, Any] = {}

    def get_metadata(provider: Any, node: cst.CSTNode, default: Any = _MISSING) -> Any:
        table = tables.get(provider)
        if table is None:
            try:
                table = wrapper.resolve(provider)
            except Exception:
                if not tolerant:
                    raise
                table = {}
            tables[provider] = table
        if default is _MISSING:
            return table[node]
        return table.get(node, default)

    return get_metadata


def analyze(
    module: cst.Module,
    get_metadata: Optional[GetMetadata] = None,
    config: Optional[Config] = None,
    path: Optional[Path] = None,
    source: Optional[bytes] = None,
) -> List[Finding]:
    """All findings in ``module``, in source order, suppressions applied.

    ``get_metadata`` is a resolved ``MetadataDependent.get_metadata`` that
    provides :data:`REQUIRED_METADATA` for ``module`` (by default each is
    resolved when first needed). ``source``: the bytes ``module`` was parsed
    from, if at hand (it saves deep mode a pass over the module).
    """
    get_metadata = get_metadata or metadata_on_demand(module)
    config = config or Config()
    resolver = None
    if config.deep:
        from .deep import project_resolver

        resolver = project_resolver(config)
        resolver.register(path)
    return _ModuleAnalysis(module, get_metadata, config, path, resolver=resolver, source=source).findings()

