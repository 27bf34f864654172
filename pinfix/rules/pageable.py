"""A non_blocking host-to-device copy from pageable memory: the analysis PIN001 and
PIN002 share (one finding per copy; its code says what made the memory).

For each copy the engine recorded, the CPU tensors that may reach it and block
the host (:attr:`pinfix.semantic.facts.Copy.blocking`) decide the finding; how
the first of them got here (its evidence chain) decides the message. The fix is
not planned here: the finding carries a :class:`PageableCopy`, from which
:mod:`pinfix.fixes.plan` plans it and completes the message with the remedy.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from ..effects import COPY_SINKS, NON_BLOCKING_KEYWORD, Makes
from ..findings import named, same_file
from ..semantic.facts import Copy, holds, is_demo_of, same_source
from ..semantic.values import PAGEABLE, PINNED, Step, Tensor, steps
from .base import AtCopy, Finding, RuleContext

__all__ = ["pageable_findings", "Judge", "PageableCopy", "Route", "what_copies", "origin_text", "is_computed"]


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
        where = f"line {given.line}" if same_source(given.src, src) else f"{named(given.src.path)}:{given.line}"
        if given.kind == "default":
            return (
                f"`{callee}(...)` with `non_blocking={src.short(copy.non_blocking_node)}` (`True` by default, {where})"
            )
        return (
            f"`{callee}(...)` with `non_blocking={src.short(copy.non_blocking_node)}` (`True` in the call at {where})"
        )
    if copy.method not in COPY_SINKS and not any(k.arg == NON_BLOCKING_KEYWORD for k in copy.call.keywords):
        return f"`{callee}(...)` (which copies with `non_blocking=True` to an accelerator)"
    if copy.method not in COPY_SINKS and not any(k.arg == NON_BLOCKING_KEYWORD for k in copy.call.keywords):
        return f"`{callee}(...)` (which copies with `non_blocking=True` to an accelerator)"
    return f"`{callee}(..., non_blocking=True)`"


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
            if s.name is not None and s.name not in out:
                out.append(s.name)
        return out


class PageableCopy:
    """What the rule found of one pageable copy, for the fixes to plan from
    (:mod:`pinfix.fixes.plan`): the tensors that block it (the one the message
    names first), how that one reached the copy, whether its memory was made in
    the copy's own expression or computed, and its origins by kind where they are
    several (each gets its own remedy)."""

    __slots__ = ("copy", "tensors", "route", "inline", "computed", "groups")

    def __init__(
        self,
        copy: Copy,
        tensors: List[Tensor],
        route: Route,
        inline: bool,
        computed: bool,
        groups: List[Tuple[str, List[int], List[Tensor]]],
    ):
        self.copy = copy
        self.tensors = tensors
        self.route = route
        self.inline = inline
        self.computed = computed
        self.groups = groups


class Judge(AtCopy):
    """One copy: is it a finding, and what does it say (its fix is planned by
    :mod:`pinfix.fixes.plan`, from the :class:`PageableCopy` the finding carries)."""

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
        reported = origin.node if inline and holds(copy.source_node, origin.node) else copy.source_node
        deep = primary.via is not None
        how = "deep" if deep else "inline" if inline else "bound"
        qualified = origin.qualified
        made_step = next((s for s in route.steps if s.node is origin.node), None)
        computed = is_computed(primary, made_step)
        label = origin.label
        quoted = origin_text(label)
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
                f"{origin_text(label)} (line {', '.join(map(str, at_lines))})" for label, at_lines, _ in groups
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
        given = [copy.given_by] if copy.given_by is not None else []
        evidence = [*route.steps, *given, Step("copied", copy.call, f"copied with {what}", self.src)]
        summary = f"{short}, so {what} blocks the host"
        finding = self.ctx.finding(code, reported, blocks, pattern, None, None, evidence, summary=summary)
        finding.pageable = PageableCopy(copy, tensors, route, inline, computed, groups if several else [])
        return finding


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


def origin_text(label: str) -> str:
    """How a message names an origin: ``the result of arithmetic`` as it is, a
    call in backticks (once)."""
    return label if label.startswith("the ") or label.startswith("`") else f"`{label}`"


def is_computed(tensor: Tensor, made: Optional[Step]) -> bool:
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
