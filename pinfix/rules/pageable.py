"""A non_blocking host-to-device copy from pageable memory: the analysis PIN001 and
PIN002 share (one finding per copy; its code says what made the memory).

For each copy the engine recorded, the CPU tensors that may reach it and block
the host (:attr:`pinfix.semantic.facts.Copy.blocking`) decide the finding; how
the first of them got here (its evidence chain) decides the message and the fix.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from ..edits import SAFE, UNSAFE, Edit, Fix
from ..effects import COPY_SINKS, PINNABLE_LAYOUTS, Loads, Makes, ReadsFile
from ..findings import display, same_file
from ..semantic.facts import Copy, on_cpu, position
from ..semantic.modules import is_demo_of
from ..semantic.scope import FunctionInfo, ModuleInfo, iter_nodes, last_name
from ..semantic.source import same_source
from ..semantic.values import ACCEL, PAGEABLE, PINNED, Step, Tensor, steps
from .base import Finding, RuleContext

__all__ = ["pageable_findings", "Judge", "STAGING", "helper_local_name", "h2d_local", "what_copies"]

STAGING = (
    "stage it through a persistent pinned buffer instead (allocated once with `pin_memory=True`, as "
    "vLLM's `CpuGpuBuffer` does: fill its CPU side, then copy it non_blocking)"
)
_TO_KEYWORDS = frozenset({"device", "dtype", "non_blocking"})


def pageable_findings(ctx: RuleContext) -> List[Finding]:
    """Every PIN001/PIN002 finding of the module (computed once, shared by both rules)."""
    found = ctx.cache.get("pageable")
    if found is None:
        found = ctx.cache["pageable"] = []
        for c in ctx.facts.copies:
            try:
                finding = Judge(ctx, c).finding()
            except RecursionError:
                raise  # the whole file is too deep: the engine says so
            except Exception as e:  # noqa: BLE001  # a bug of ours loses this copy's finding only
                ctx.facts.problems.append((c.call.lineno, "this copy's finding is lost", e))
                continue
            if finding is not None:
                found.append(finding)
    return found  # type: ignore[no-any-return]


def what_copies(copy: Copy, src: Any) -> str:
    # A tensor method (`.to`), or a library helper called as a function (`send_to_device`).
    callee = f".{copy.method}" if copy.method in COPY_SINKS else copy.method
    if copy.non_blocking is None:
        if any(k.arg is None and k.value is copy.non_blocking_node for k in copy.call.keywords):
            return f"`{callee}(...)` with `**{src.short(copy.non_blocking_node)}` (maybe `non_blocking=True`)"
        return f"`{callee}(...)` with `non_blocking={src.short(copy.non_blocking_node)}`"
    if copy.given_by is not None:
        given = copy.given_by
        where = f"line {given.line}" if same_source(given.src, src) else f"{display(given.src.path)}:{given.line}"
        if given.kind == "default":
            return (
                f"`{callee}(...)` with `non_blocking={src.short(copy.non_blocking_node)}` (`True` by default, {where})"
            )
        return (
            f"`{callee}(...)` with `non_blocking={src.short(copy.non_blocking_node)}` (`True` in the call at {where})"
        )
    return f"`{callee}(..., non_blocking=True)`"


def helper_local_name(module: ModuleInfo, qualified: str) -> Optional[str]:
    """The local name of an existing top-level ``from M import name [as alias]``."""
    return module.top_from_imports.get(qualified)


def binding_line(module: ModuleInfo, func: Optional[FunctionInfo], name: str, qualified: str) -> Optional[int]:
    """Where ``name`` is bound to something other than an import of ``qualified``,
    in ``func`` or the functions around it or the module, or in any function of the
    module that declares it ``global`` (the name a fix inserts resolves to the module's
    binding, which such a function may replace); ``None``: it is free."""
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
        line = _binds_other(scope.own_nodes() if not scope.is_module else _module_level(module), name, qualified)
        if line is not None:
            return line
        if scope is not module.body and name in scope.locals:
            for p in scope.params:
                if p.name == name:
                    return p.node.lineno  # type: ignore[no-any-return]
    if name in module.rebound_globals and not any(name in s.locals for s in scopes if not s.is_module):
        for other in module.functions.values():
            if name in other.declared_global:
                line = _binds_other(other.own_nodes(), name, qualified)
                if line is not None:
                    return line
    return None


def _binds_other(nodes: Iterable[ast.AST], name: str, qualified: str) -> Optional[int]:
    """The line of the first of ``nodes`` that binds ``name`` to anything but an import of ``qualified``."""
    mod, _, member = qualified.rpartition(".")
    for node in nodes:
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return node.lineno
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return node.lineno
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".", 1)[0]
                if bound == name:
                    if (
                        isinstance(node, ast.ImportFrom)
                        and node.level == 0
                        and node.module == mod
                        and alias.name == member
                    ):
                        continue
                    return node.lineno
        if type(node).__name__ in ("MatchAs", "MatchStar") and getattr(node, "name", None) == name:
            return node.lineno  # type: ignore[attr-defined,no-any-return]
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return node.lineno
        if isinstance(node, ast.arg) and node.arg == name:
            return node.lineno
    return None


def _module_level(module: ModuleInfo) -> List[ast.AST]:
    return [n for stmt in module.tree.body for n in iter_nodes(stmt)]


def defines(path: Optional[Path], module: str) -> bool:
    """Whether ``path`` is ``module``'s own file."""
    if path is None or not module:
        return False
    expected = module.replace(".", "/")
    stem = path.as_posix()
    stem = stem[:-3] if stem.endswith(".py") else stem
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    return stem == expected or stem.endswith("/" + expected)


class Route:
    """How one tensor reached the copy: the names it passed through after it was
    made (closest to the copy first), the steps of its evidence."""

    def __init__(self, tensor: Tensor):
        self.tensor = tensor
        self.steps: List[Step] = list(steps(tensor.route))
        origin = tensor.origin
        after: List[Step] = []
        for s in reversed(self.steps):
            if origin is not None and s.node is origin.node and s.kind in ("made", "computed", "pinned", "named"):
                break
            after.append(s)
        #: "bound" steps after the origin, closest to the copy first.
        self.bindings: List[Step] = [s for s in after if s.kind == "bound"]

    @property
    def names(self) -> List[str]:
        out: List[str] = []
        for s in self.bindings:
            name = s.message.split("`")[1] if "`" in s.message else s.message
            if name not in out:
                out.append(name)
        return out


class Judge:
    """One copy: is it a finding, what does it say, what fixes it."""

    def __init__(self, ctx: RuleContext, copy: Copy):
        self.ctx = ctx
        self.copy = copy
        self.src = ctx.src
        self.settings = ctx.settings
        self.module = ctx.facts.module
        self.func = copy.function

    def finding(self) -> Optional[Finding]:
        copy = self.copy
        if copy.direction != "h2d":
            return None
        if copy.non_blocking is None and not self.settings.strict:
            return None
        here = self.src.path
        blocking = sorted(copy.blocking, key=lambda t: _origin_position(t, here))
        if not blocking:
            return None
        pageable = [t for t in blocking if t.memory == PAGEABLE]
        if not pageable:
            return self.non_dense(blocking[0])
        return self.pageable(pageable)

    # --- gapped views of pinned memory ---------------------------------------------------------

    def non_dense(self, tensor: Tensor) -> Finding:
        copy = self.copy
        route = Route(tensor)
        what = what_copies(copy, self.src)
        view = tensor.gapped or self.src.short(copy.source_node)
        bound = route.names[0] if route.names else None
        held = f" (held by `{bound}`)" if bound and bound not in view else ""
        kind = "pinned" if tensor.memory == PINNED else "CPU"
        message = (
            f"`{view}`{held} is a gapped (non-dense) view of a {kind} tensor, so {what} is staged through "
            "a pageable temporary and blocks the host; copy a dense block (whole rows) and slice it on the "
            "device, or gather it into a contiguous pinned buffer first (no fix)"
        )
        summary = f"`{view}`{held} is a gapped view, so {what} is staged through pageable memory"
        evidence = [*route.steps, Step("copied", copy.call, f"copied with {what}", self.src)]
        return self.ctx.finding(
            "PIN002",
            copy.source_node,
            message,
            f"{copy.method}/non-dense",
            None,
            "gapped view",
            evidence,
            summary=summary,
        )

    # --- pageable memory ------------------------------------------------------------------------------

    def pageable(self, tensors: List[Tensor]) -> Finding:
        copy = self.copy
        primary = tensors[0]
        route = Route(primary)
        origin = primary.origin
        assert origin is not None
        code = "PIN001" if all(_is_pin001(t) for t in tensors) else "PIN002"
        what = what_copies(copy, self.src)
        inline = not route.bindings and primary.via is None
        reported = origin.node if inline and _holds(copy.source_node, origin.node) else copy.source_node
        deep = primary.via is not None
        how = "deep" if deep else "inline" if inline else "bound"
        qualified = origin.qualified
        made_step = next((s for s in route.steps if s.node is origin.node), None)
        computed = _computed(primary, made_step)
        label = origin.label
        quoted = _quoted(label)
        lines = sorted({t.origin.line for t in tensors if t.origin is not None and same_source(t.origin.src, self.src)})
        at = "line " + ", ".join(map(str, lines)) if lines else ""
        if deep:
            at = self.ctx.where(made_step) if made_step is not None else at
        at_text = f" ({at})" if at else ""
        bound = route.names[0] if route.names else None
        # Origins of different kinds (`torch.from_numpy` on one path, `torch.cat` on another): each named.
        groups = (
            []
            if deep
            else _origin_groups([t for t in tensors if t.origin is not None and same_source(t.origin.src, self.src)])
        )
        several = len(groups) > 1
        # `subject` is the whole account of where the memory comes from; `short` names only what is pageable.
        if several:
            listed = ", ".join(
                f"{_quoted(label)} (line {', '.join(map(str, at_lines))})" for label, at_lines, _ in groups
            )
            holder = f"`{bound}` holds" if bound else f"`{self.src.short(copy.source_node)}` holds"
            subject = f"{holder} pageable memory from {len(groups)} origins: {listed}"
            short = f"{holder} pageable memory from {len(groups)} origins"
        elif deep:
            via = primary.via
            assert via is not None
            subject = f"`{self.src.short(copy.source_node)}` is pageable: {quoted} made at {at} reaches the copy through {via.message} ({self.ctx.where(via)})"
            short = f"`{self.src.short(copy.source_node)}` is pageable ({quoted}, made in another function)"
        elif inline and not computed:
            subject = short = f"{quoted} is pageable memory"
        elif inline:
            subject = f"{quoted}{at_text} is a fresh pageable CPU tensor"
            short = f"{quoted} is a fresh pageable CPU tensor"
        elif computed:
            subject = f"`{bound}` holds {quoted}{at_text}, a fresh pageable CPU tensor"
            short = f"`{bound}` holds {quoted}, a fresh pageable CPU tensor"
        else:
            subject = f"`{bound}` holds pageable {quoted}{at_text}"
            short = f"`{bound}` holds pageable {quoted}"
        if primary.cond and not several and not copy.source.all(lambda a: isinstance(a, Tensor) and a.blocks):
            subject += f" when {primary.cond}"
        if code == "PIN001" and not primary.converted:
            pattern = f"{copy.method}/{how}"
        else:
            pattern = f"{copy.method}/{how}/{qualified}"
        if primary.converted:
            pattern += "/converted"
        if primary.gapped:
            pattern += "/gapped"
        blocks = f"{subject}, so {what} blocks the host while the driver stages the copy"
        remedy, fix, note = self.plan(tensors, route, inline, computed)
        if several and fix is None:
            remedy = self.remedies(groups, remedy)
        message = f"{blocks}; {remedy}"
        if fix is not None and fix.applicability == UNSAFE:
            message += f" (unsafe fix: {fix.reason})"
        elif fix is None:
            message += f" (no fix: {note})"
        given = [copy.given_by] if copy.given_by is not None else []
        evidence = [*route.steps, *given, Step("copied", copy.call, f"copied with {what}", self.src)]
        summary = f"{short}, so {what} blocks the host"
        title = remedy[:1].upper() + remedy[1:]
        return self.ctx.finding(code, reported, message, pattern, fix, note, evidence, summary=summary, fix_title=title)

    def remedies(self, groups: List[Tuple[str, List[int], List[Tensor]]], shared: str) -> str:
        """The remedy of each origin, where they differ: ``for X (line a), ...; for Y (line b), ...``."""
        parts = []
        for label, at_lines, group in groups:
            route = Route(group[0])
            made = next(
                (s for s in route.steps if group[0].origin is not None and s.node is group[0].origin.node), None
            )
            remedy = self.plan(group, route, not route.bindings and group[0].via is None, _computed(group[0], made))[0]
            parts.append((f"{_quoted(label)} (line {', '.join(map(str, at_lines))})", remedy))
        if len({r for _, r in parts}) == 1:
            return shared
        return "; ".join(f"for {where}, {remedy}" for where, remedy in parts)

    # --- fixes ------------------------------------------------------------------------------------------

    def plan(
        self, tensors: List[Tensor], route: Route, inline: bool, computed: bool
    ) -> Tuple[str, Optional[Fix], Optional[str]]:
        """``(remedy, fix, why no fix)``."""
        settings = self.settings
        h2d = self.h2d_plan(tensors, route, inline)
        if h2d is not None:
            local = h2d_local(self.module, settings.h2d_helper or "")
            return f"copy it with `{local}(...)`, which pins it first", h2d, None
        remedy, fix, note = self.origin_plan(tensors, route, inline, computed)
        if fix is not None and any(t.widened for t in tensors):
            # One of several origins stands for them all: a fix at it would leave the others.
            return remedy, None, "the copy is fed pageable memory from more paths than pinfix keeps apart"
        return remedy, fix, note

    def origin_plan(
        self, tensors: List[Tensor], route: Route, inline: bool, computed: bool
    ) -> Tuple[str, Optional[Fix], Optional[str]]:
        """``(remedy, fix, why no fix)`` at the memory's origins."""
        primary = tensors[0]
        origin = primary.origin
        assert origin is not None
        effect = origin.effect
        settings = self.settings
        label = origin.label
        if isinstance(effect, Loads) and not primary.converted and not primary.gapped:
            return self.loader_plan(tensors)
        if primary.converted:
            remedy = (
                f"`{primary.converted}` makes a fresh pageable tensor on the way; build the data in its final "
                f"dtype and shape first and pin that, or {STAGING}"
            )
            return remedy, None, f"`{primary.converted}` allocates a new pageable tensor after the source"
        if primary.gapped:
            remedy = f"`{primary.gapped}` is also a gapped view; copy dense rows and slice on the device"
            return (
                remedy,
                None,
                f"`{primary.gapped}` is a gapped view: pinning the base would not make the copy asynchronous",
            )
        others = [
            t
            for t in tensors
            if t.origin is None or t.origin.effect is not effect and type(t.origin.effect) is not type(effect)
        ]
        if primary.via is not None:
            expr = settings.pin_memory_expr or "True"
            made = next((s for s in route.steps if s.node is origin.node), None)
            at = self.ctx.where(made) if made is not None else f"line {origin.line}"
            if not (isinstance(effect, Makes) and effect.factory):
                return STAGING, None, "the source is made in another function; fix it there"
            sparse = self.unpinnable(tensors)
            if sparse is not None:
                return STAGING, None, sparse
            remedy = f"allocate it pinned at its origin ({at}) with `pin_memory={expr}`"
            if same_source(origin.src, self.src) and len(tensors) == 1 and not others:
                fix = self.pin_memory_fix(tensors, route, kept=True)
                if fix is not None:
                    return remedy, fix, None
            return remedy, None, "the source is made in another function; fix it there"
        if isinstance(effect, Makes) and effect.helper_fix:
            local = (
                (helper_local_name(self.module, settings.helper) or settings.helper_name) if settings.helper else None
            )
            remedy = f"make the source pinned with `{local}(...)`" if local else "pin the source with `.pin_memory()`"
            if others or any(
                not (isinstance(t.origin.effect, Makes) and t.origin.effect.helper_fix) for t in tensors if t.origin
            ):
                return remedy, None, "the copy is fed pageable memory made in several ways"
            if local is None:
                return remedy, *self.pin_method_fix(tensors, route, inline)
            return remedy, *self.helper_fix(tensors, route, inline, local)
        if isinstance(effect, Makes) and effect.factory:
            expr = settings.pin_memory_expr or "True"
            remedy = f"allocate it pinned with `pin_memory={expr}`"
            if (
                any(not (isinstance(t.origin.effect, Makes) and t.origin.effect.factory) for t in tensors if t.origin)
                or others
            ):
                return remedy, None, "the copy is fed pageable memory made in several ways"
            if any(t.explicit for t in tensors):
                written = (
                    "`pin_memory=False`"
                    if any(_literal_false(t.origin.node) for t in tensors if t.origin)
                    else "`pin_memory=`"
                )
                return remedy, None, f"{written} is written out; change it by hand if pageable memory was not intended"
            sparse = self.unpinnable(tensors)
            if sparse is not None:
                return STAGING, None, sparse
            fix = self.pin_memory_fix(tensors, route, kept=False)
            if isinstance(fix, str):
                return remedy, None, fix
            return remedy, fix, None
        if computed:
            return STAGING, None, "a computed result cannot be allocated pinned"
        if isinstance(effect, ReadsFile):
            remedy = f"pin what {_quoted(label)} reads once (`.pin_memory()`) where it is kept and copied again, or copy it with `non_blocking=False`"
            return remedy, None, f"{_quoted(label)} takes no `pin_memory=`"
        return STAGING, None, f"{_quoted(label)} takes no `pin_memory=`"

    def loader_plan(self, tensors: List[Tensor]) -> Tuple[str, Optional[Fix], Optional[str]]:
        """Batches of a ``DataLoader`` built without ``pin_memory=True``: ``pin_memory=True`` where it is
        built. Safe: the loader pins each fresh batch in its own thread, and where no accelerator
        exists torch warns and skips pinning."""
        origin = tensors[0].origin
        assert origin is not None
        call = origin.node
        at = (
            self.ctx.where(next(s for s in steps(tensors[0].route) if s.node is call))
            if tensors[0].via is not None
            else f"line {call.lineno}"
        )
        remedy = f"build the loader ({at}) with `pin_memory=True`, so that it hands out pinned batches"
        if any(t.origin is None or t.origin.node is not call for t in tensors):
            return remedy, None, "the copy is fed pageable memory made in several ways"
        if tensors[0].explicit:
            return remedy, None, "`pin_memory=` is written out; change it by hand if pageable batches were not intended"
        if origin.src is not self.src:
            return remedy, None, "the loader is built in another file; fix it there"
        assert isinstance(call, ast.Call)
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return remedy, None, "the call passes `*args`/`**kwargs`"
        return remedy, Fix(SAFE, None, (self.add_keyword(call, "pin_memory", "True"),)), None

    def helper_fix(
        self, tensors: List[Tensor], route: Route, inline: bool, local: str
    ) -> Tuple[Optional[Fix], Optional[str]]:
        settings = self.settings
        calls = _unique([t.origin.node for t in tensors if t.origin is not None])
        if any(t.origin is not None and not same_source(t.origin.src, self.src) for t in tensors):
            return None, "the source is made in another file; fix it there"
        if any(len(c.args) != 1 or c.keywords or isinstance(c.args[0], ast.Starred) for c in calls):
            return None, "the call's arguments are not the plain `(array)` form the helper takes"
        if defines(self.ctx.path, settings.helper_module):
            return (
                None,
                f"this module defines `{settings.helper_name}` ({settings.helper}); importing it here would be circular",
            )
        line = binding_line(self.module, self.func, local, settings.helper)
        if line is not None:
            return (
                None,
                f"`{local}` is already bound to something else here (line {line}); import `{settings.helper}` under another name by hand",
            )
        drops = tuple(_unique([_root(c.func) for c in calls if _root(c.func)]))
        reason = (
            self.to_itself()
            or self.exported_by_call(drops)
            or (None if inline else self.bound_hazard(tensors, route, calls, f"`{settings.helper_name}`"))
        )
        edits = tuple(Edit(*self.src.span(c.func), local) for c in calls)
        imports = (
            () if helper_local_name(self.module, settings.helper) else ((settings.helper_module, settings.helper_name),)
        )
        return Fix(UNSAFE if reason else SAFE, reason, edits, imports, drops), None

    def pin_method_fix(self, tensors: List[Tensor], route: Route, inline: bool) -> Tuple[Optional[Fix], Optional[str]]:
        """No helper configured: ``torch.from_numpy(a)`` -> ``torch.from_numpy(a).pin_memory()``,
        which needs no import. The same values, dtype and shape in pinned memory, a copy
        as a helper's is; but ``.pin_memory()`` raises where no accelerator is available,
        where vLLM's helper gives the plain tensor: always unsafe."""
        calls = _unique([t.origin.node for t in tensors if t.origin is not None])
        if any(t.origin is not None and t.origin.src is not self.src for t in tensors):
            return None, "the source is made in another file; fix it there"
        hazard = None if inline else self.bound_hazard(tensors, route, calls, "`.pin_memory()`")
        reason = hazard or (
            "`.pin_memory()` raises where no accelerator is available; set `helper` to a function that pins "
            "only where it can (vLLM: `vllm.utils.torch_utils.np_to_pinned_tensor`) to make this fix safe"
        )
        edits = tuple(Edit(self.src.span(c)[1], self.src.span(c)[1], ".pin_memory()") for c in calls)
        return Fix(UNSAFE, reason, edits), None

    def exported_by_call(self, drops: Sequence[str]) -> Optional[str]:
        """A name the fix may leave unused that the module exports with ``__all__.append``
        / ``.extend``: its import stays (the export needs it), but ruff reports it unused."""
        exported = [d for d in drops if d in self.module.exported_by_calls]
        if not exported:
            return None
        return (
            f"`{exported[0]}` is exported with `__all__.append`/`.extend`, which ruff does not count as a use: "
            "its import must stay, and ruff would call it unused"
        )

    def to_itself(self) -> Optional[str]:
        """``.to(dev)`` returns its receiver itself when ``dev`` is the CPU: a tensor on the
        array's memory, where the pinned helper's result is a copy (only an accelerator
        target, as far as the engine can tell, makes both a fresh device tensor)."""
        copy = self.copy
        if copy.method != "to" or copy.target == ACCEL:
            return None
        if any(k.arg == "copy" and _bool(k.value) is True for k in copy.call.keywords):
            return None  # `.to(..., copy=True)` copies on the CPU too
        device = self.src.short(copy.device_node) if copy.device_node is not None else "the device"
        return (
            f"`{device}` may be the CPU, where `.to` returns the tensor itself (sharing the array's memory) "
            "and the fixed code a copy"
        )

    def bound_hazard(
        self, tensors: List[Tensor], route: Route, calls: Sequence[ast.Call], helper: str
    ) -> Optional[str]:
        """Why swapping the bound ``from_numpy`` for a pinned copy could change behaviour:
        ``from_numpy`` shares the array's memory, ``helper`` (as a message names it) copies it."""
        names = route.names
        copy = self.copy
        if len(names) > 1:
            return "the tensor reaches the copy through several names (" + ", ".join(f"`{n}`" for n in names) + ")"
        carrier = copy.source_node.target if isinstance(copy.source_node, ast.NamedExpr) else copy.source_node
        if not (isinstance(carrier, ast.Name) and names and carrier.id == names[0]):
            if names:
                return f"`{names[0]}` reaches the copy through a view; check that nothing else uses it"
        name = names[0] if names else None
        if name is None:
            return None
        binding = route.bindings[0].node
        others = [
            n
            for n in self.ctx.facts.reached_uses(self.func, binding, name)
            if n is not copy.source_node
            and n is not binding
            and isinstance(n.ctx, ast.Load)
            and not _holds(copy.call, n)
        ]
        if others:
            return (
                f"`{name}` is also used at line {others[0].lineno}; "
                f"{helper} returns a copy, so that use would no longer share memory with the array"
            )
        sink_loops = set(map(id, self.ctx.facts.loops(self.func, copy.call)))
        if sink_loops - set(map(id, self.ctx.facts.loops(self.func, binding))):
            return (
                f"the copy runs in a loop but `{name}` is bound once before it (line {binding.lineno}); "
                "a pinned copy would not follow later writes to the array"
            )
        for call in calls:
            roots = sorted({n.id for a in call.args for n in ast.walk(a) if isinstance(n, ast.Name)})
            hazard = self.ctx.facts.may_change(self.func, roots, call, copy.call)
            if hazard is not None:
                return f"{hazard.reason}, between the binding and the copy; {helper} would snapshot the array at the binding"
        return None

    def pin_memory_fix(self, tensors: List[Tensor], route: Route, kept: bool) -> Any:
        """The ``pin_memory=<expr>`` fix at the factories; a string says why there is none."""
        settings = self.settings
        if any(t.origin is not None and not same_source(t.origin.src, self.src) for t in tensors):
            return "the source is made in another file; fix it there"
        calls = _unique([t.origin.node for t in tensors if t.origin is not None])
        if any(isinstance(a, ast.Starred) for c in calls for a in c.args) or any(
            k.arg is None for c in calls for k in c.keywords
        ):
            return "the call passes `*args`/`**kwargs`"
        imports: Tuple[Tuple[str, str], ...] = ()
        expr = settings.pin_memory_expr or "True"
        if settings.pin_memory_import is not None:
            module, _, name = settings.pin_memory_import.rpartition(".")
            existing = helper_local_name(self.module, settings.pin_memory_import)
            if existing is None:
                for c in calls:
                    func = self.function_at(c)
                    line = binding_line(self.module, func, name, settings.pin_memory_import)
                    if line is not None:
                        return f"`{name}` is already bound to something else here (line {line}); import `{settings.pin_memory_import}` under another name by hand"
                imports = ((module, name),)
        edits = tuple(self.add_keyword(c, "pin_memory", expr) for c in calls)
        if kept:
            made = calls[0]
            reason = (
                f"the tensor is made at line {made.lineno} in another function and kept; once pinned, the "
                "copy is truly asynchronous, so a host write to it before the copy has finished would race"
            )
            return Fix(UNSAFE, reason, edits, imports)
        reason = self.race(route)
        if reason is None and settings.pin_memory_expr is None:
            reason = (
                "`pin_memory=True` fails where no accelerator is available; set `[tool.pinfix] pin-memory-expr` "
                "(vLLM: `is_pin_memory_available()`) to make this fix safe"
            )
        return Fix(UNSAFE if reason else SAFE, reason, edits, imports)

    def unpinnable(self, tensors: List[Tensor]) -> Optional[str]:
        """Why the factories that made ``tensors`` cannot allocate pinned memory: torch pins
        only dense tensors (:data:`pinfix.effects.PINNABLE_LAYOUTS`)."""
        for t in tensors:
            call = t.origin.node if t.origin is not None else None
            layout = (
                next((k.value for k in call.keywords if k.arg == "layout"), None)
                if isinstance(call, ast.Call)
                else None
            )
            if layout is not None and last_name(layout) not in PINNABLE_LAYOUTS:
                return (
                    f"`layout={t.origin.src.short(layout)}` may not be dense: torch refuses to pin a sparse "  # type: ignore[union-attr]
                    'tensor (`pin_memory=True` raises "Only dense CPU tensors can be pinned")'
                )
        return None

    def race(self, route: Route) -> Optional[str]:
        """Once pinned, the copy no longer waits for the host: a later host write would race."""
        copy = self.copy
        end = (copy.call.end_lineno, copy.call.end_col_offset)
        sink_loops = set(map(id, self.ctx.facts.loops(self.func, copy.call)))
        for step in route.bindings:
            name = step.message.split("`")[1] if "`" in step.message else None
            if name is None or "." in name:
                continue
            later = [
                n
                for n in self.ctx.facts.reached_uses(self.func, step.node, name)
                if position(n) > end and not _holds(copy.call, n)
            ]
            if later:
                return (
                    f"`{name}` is used again at line {later[0].lineno}; once pinned the copy no longer "
                    "waits for the host, so a write there would race with it"
                )
            if sink_loops - set(map(id, self.ctx.facts.loops(self.func, step.node))):
                return (
                    f"the copy runs in a loop but `{name}` is bound once before it (line {step.node.lineno}); "
                    "once pinned, a write to it in the next iteration would race with the copy"
                )
        return None

    def function_at(self, node: ast.AST) -> FunctionInfo:
        best = self.module.body
        for f in self.module.functions.values():
            if position(f.node) <= position(node) and (f.node.end_lineno, f.node.end_col_offset) >= (
                node.end_lineno,
                node.end_col_offset,
            ):  # type: ignore[attr-defined]
                if position(f.node) >= position(best.node) if not best.is_module else True:
                    best = f
        return best

    def add_keyword(self, call: ast.Call, keyword: str, value: str) -> Edit:
        """``f(a, b)`` -> ``f(a, b, keyword=value)``: inserted after the last argument,
        so a trailing comma (and a line break) stays last."""
        parts: List[ast.AST] = [*call.args, *(k.value for k in call.keywords)]
        text = f"{keyword}={value}"
        if parts:
            last = max(parts, key=lambda n: (n.end_lineno, n.end_col_offset))  # type: ignore[attr-defined]
            end = self.src.offset(last.end_lineno, last.end_col_offset)  # type: ignore[attr-defined]
            # A parenthesised last argument ends at its closing parenthesis.
            body = self.src.text
            close = self.src.span(call)[1] - 1
            while end < close and body[end] == ")":
                end += 1
            return Edit(end, end, ", " + text)
        close = self.src.span(call)[1] - 1
        return Edit(close, close, text)

    # --- the h2d-helper fix --------------------------------------------------------------------------

    def h2d_plan(self, tensors: List[Tensor], route: Route, inline: bool) -> Optional[Fix]:
        settings = self.settings
        qualified = settings.h2d_helper
        copy = self.copy
        call = copy.call
        if qualified is None or copy.method != "to" or copy.non_blocking is not True or copy.function_form:
            return None
        primary = tensors[0]
        if primary.via is not None or primary.gapped or any(t.via is not None for t in tensors):
            return None
        # The helper pins what it is given: every way here must bring a CPU tensor.
        if not on_cpu(copy.source):
            return None
        if defines(self.ctx.path, qualified.rpartition(".")[0]):
            return None
        parsed = self.to_arguments(call)
        if parsed is None:
            return None
        device, device_keyword, dtype = parsed
        source = copy.source_node
        origin = primary.origin
        # The copy's receiver is the very call that made the memory (not arithmetic,
        # an index or a view written inline: those are passed to the helper as they are).
        direct = (
            inline
            and origin is not None
            and origin.node is source
            and isinstance(source, ast.Call)
            and len(tensors) == 1
        )
        dropped: List[str] = []
        if direct and origin is not None and isinstance(source, ast.Call):
            if origin.qualified == "torch.from_numpy":
                if len(source.args) != 1 or source.keywords or isinstance(source.args[0], ast.Starred):
                    return None
                data: ast.AST = source.args[0]
            elif origin.qualified == "torch.tensor":
                found = self.tensor_data(source, dtype)
                if found is None:
                    return None
                data, dtype = found
            else:
                return None  # a factory keeps its own `pin_memory=` fix
            root = _root(source.func)
            if root:
                dropped.append(root)
            keyword = True
        else:
            data = source
            keyword = False
        if self.loses_comments(call, [data, device] + ([dtype] if dtype is not None else [])):
            return None
        local = h2d_local(self.module, qualified)
        if binding_line(self.module, self.func, local, qualified) is not None:
            return None
        reason = None
        if direct and origin is not None and isinstance(origin.effect, Makes) and origin.effect.shares_argument:
            reason = self.to_itself()
        elif not direct and copy.target != ACCEL:
            reason = self.other_use(route)
        seg = self.src.segment
        args = [seg(data), (f"device={seg(device)}" if keyword else seg(device))]
        if dtype is not None:
            args.append(f"dtype={seg(dtype)}")
        start, end = self.src.span(call)
        new = f"{local}({', '.join(args)})"
        imports = () if helper_local_name(self.module, qualified) else (tuple(qualified.rsplit(".", 1)),)  # type: ignore[assignment]
        return Fix(UNSAFE if reason else SAFE, reason, (Edit(start, end, new),), imports, tuple(dropped))  # type: ignore[arg-type]

    def to_arguments(self, call: ast.Call) -> Optional[Tuple[ast.AST, bool, Optional[ast.AST]]]:
        """``(device, by keyword, dtype)`` of ``.to(device[, dtype][, non_blocking])``;
        ``None`` for any other signature (``copy=``, ``memory_format=``, ``to(other)``)."""
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None or k.arg not in _TO_KEYWORDS for k in call.keywords
        ):
            return None
        keywords = {k.arg: k.value for k in call.keywords}
        dtype = keywords.get("dtype")
        positional = list(call.args)
        if "device" in keywords:
            if positional:
                return None
            return keywords["device"], True, dtype
        if not positional or len(positional) > 3 or not self.plainly_device(positional[0]):
            return None
        rest = positional[1:]
        if rest and _bool(rest[-1]) is not None:
            rest = rest[:-1]
        if len(rest) > 1 or any(_bool(v) is not None for v in rest):
            return None
        if rest:
            if dtype is not None:
                return None
            dtype = rest[0]
        return positional[0], False, dtype

    def plainly_device(self, node: ast.AST) -> bool:
        """A positional ``.to`` argument that is a device, not a tensor (``to(other)``
        would also take the other tensor's dtype)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)) and not isinstance(node.value, bool):
            return True
        if isinstance(node, ast.Call):
            return last_name(node.func) == "device"
        if isinstance(node, ast.Attribute):
            return node.attr == "device" or node.attr.endswith("_device")
        if isinstance(node, ast.Name):
            return "device" in node.id or node.id in ("dev", "target_dev")
        return False

    def tensor_data(self, source: ast.Call, to_dtype: Optional[ast.AST]) -> Optional[Tuple[ast.AST, Optional[ast.AST]]]:
        """``torch.tensor(DATA[, dtype=T])`` the helper would make the same way."""
        if len(source.args) != 1 or isinstance(source.args[0], ast.Starred):
            return None
        dtype_kw = None
        for k in source.keywords:
            if k.arg == "dtype":
                dtype_kw = k.value
            elif (
                k.arg == "device"
                and isinstance(k.value, ast.Constant)
                and isinstance(k.value.value, str)
                and k.value.value.split(":")[0] == "cpu"
            ):
                continue
            else:
                return None  # requires_grad=, pin_memory=, an accelerator device=
        if to_dtype is not None and (dtype_kw is None or ast.dump(dtype_kw) != ast.dump(to_dtype)):
            return None  # `.to(T)` converts after torch.tensor inferred its own dtype
        data = source.args[0]
        if not self.python_data(data):
            return None
        return data, dtype_kw

    def python_data(self, node: ast.AST) -> bool:
        """Plainly a Python list, tuple or number (not an ndarray, not a tensor)."""
        if isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return True
        if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
            return True
        if isinstance(node, ast.Call):
            return isinstance(node.func, ast.Attribute) and node.func.attr == "tolist" and not node.args
        if isinstance(node, ast.Name):
            origin = self.copy.blocking[0].origin if self.copy.blocking else None
            value = origin.data if origin is not None else None
            return value is not None and value.all(_plain_data)
        return False

    def loses_comments(self, call: ast.Call, kept: Sequence[ast.AST]) -> bool:
        text = self.src.segment(call)
        if "#" not in text:
            return False
        start = self.src.span(call)[0]
        spans = [self.src.span(k) for k in kept]
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, SyntaxError):
            return True
        lines = [0]
        for line in text.splitlines(keepends=True):
            lines.append(lines[-1] + len(line))
        for tok in tokens:
            if tok.type == tokenize.COMMENT:
                at = start + lines[tok.start[0] - 1] + tok.start[1]
                if not any(s <= at < e for s, e in spans):
                    return True
        return False

    def other_use(self, route: Route) -> Optional[str]:
        """A use of a name on the way to the copy, other than the way itself."""
        copy = self.copy
        for step in route.bindings:
            name = step.message.split("`")[1] if "`" in step.message else None
            if name is None or "." in name:
                continue
            for use in self.ctx.facts.reached_uses(self.func, step.node, name):
                if not isinstance(use.ctx, ast.Load) or _holds(copy.call, use):
                    continue
                if any(_holds(_statement_value(b, self.func), use) for b in route.bindings):
                    continue
                return (
                    f"`{name}` is also used at line {use.lineno}; the helper returns a pinned copy, where "
                    f"`.to` returns the tensor itself if the device is the CPU"
                )
        return None


def h2d_local(module: ModuleInfo, qualified: str) -> str:
    return helper_local_name(module, qualified) or qualified.rpartition(".")[2]


def _statement_value(step: Step, func: FunctionInfo) -> ast.AST:
    """The value assigned at a binding step (its statement's right-hand side)."""
    target = step.node
    for stmt in func.own_nodes():
        if isinstance(stmt, ast.Assign) and any(t is target or _holds(t, target) for t in stmt.targets):
            return stmt.value
        if (
            isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr))
            and stmt.target is target
            and stmt.value is not None
        ):
            return stmt.value
    return target


def _plain_data(atom: Any) -> bool:
    from ..semantic.values import Const, Host, Seq

    if isinstance(atom, (Const, Host)):
        return not isinstance(atom, Const) or isinstance(atom.value, (int, float))
    if isinstance(atom, Seq) and atom.kind in ("list", "tuple"):
        return atom.elements.all(_plain_data) or not atom.elements
    return False


def _origin_groups(tensors: Sequence[Tensor]) -> List[Tuple[str, List[int], List[Tensor]]]:
    """The tensors by how their memory was made (``(label, lines, tensors)``, in the
    order of their first origin)."""
    groups: List[Tuple[str, List[int], List[Tensor]]] = []
    for t in tensors:
        assert t.origin is not None
        label = t.origin.label
        group = next((g for g in groups if g[0] == label), None)
        if group is None:
            group = (label, [], [])
            groups.append(group)
        if t.origin.line not in group[1]:
            group[1].append(t.origin.line)
        group[2].append(t)
    for _, at_lines, _ in groups:
        at_lines.sort()
    return groups


def _quoted(label: str) -> str:
    """How a message names an origin: ``the result of arithmetic`` as it is, a
    call in backticks (once)."""
    return label if label.startswith("the ") or label.startswith("`") else f"`{label}`"


def _computed(tensor: Tensor, made: Optional[Step]) -> bool:
    """Whether the tensor's memory is a fresh result computed from another tensor
    (arithmetic, ``torch.cat``, ``.contiguous()`` of a gapped view), not made by a factory."""
    origin = tensor.origin
    if origin is None:
        return False
    if origin.qualified.startswith("<") or type(origin.effect).__name__ == "Computes":
        return True
    return made is not None and made.kind == "computed"


def _is_pin001(t: Tensor) -> bool:
    return (
        t.origin is not None
        and isinstance(t.origin.effect, Makes)
        and t.origin.effect.code == "PIN001"
        and not t.converted
    )


def _origin_position(t: Tensor, here: str) -> Tuple[int, int, int, int]:
    """Which path a message names first: one made in library code before one made in a
    test, benchmark or example; then one made in this function; then the first made."""
    if t.origin is None:
        return (1, 1, 0, 0)
    demo = 1 if not same_file(t.origin.src.path, here) and is_demo_of(t.origin.src.path, here) else 0
    return (demo, 0 if t.via is None else 1, t.origin.node.lineno, t.origin.node.col_offset)


def _holds(outer: ast.AST, inner: ast.AST) -> bool:
    if outer is inner:
        return True
    try:
        return (outer.lineno, outer.col_offset) <= (inner.lineno, inner.col_offset) and (
            inner.end_lineno,
            inner.end_col_offset,
        ) <= (outer.end_lineno, outer.end_col_offset)  # type: ignore[attr-defined]
    except AttributeError:
        return False


def _unique(items: Sequence[Any]) -> List[Any]:
    out: List[Any] = []
    for i in items:
        if not any(i is o for o in out):
            out.append(i)
    return out


def _root(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _bool(node: ast.AST) -> Optional[bool]:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    return None


def _literal_false(call: ast.AST) -> bool:
    """Whether a factory call says ``pin_memory=False`` in so many words."""
    return any(k.arg == "pin_memory" and _bool(k.value) is False for k in getattr(call, "keywords", ()))
