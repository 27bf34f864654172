"""Choose each finding's fix: the rules say what is pageable and why the copy blocks
(:mod:`pinfix.rules.pageable`); here the kinds of fix (:mod:`.h2d`, :mod:`.helper`,
:mod:`.pin_method`, :mod:`.factory`, :mod:`.loader`) are tried in turn, and the
finding gets its remedy, its fix (or why there is none) and its fix title."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import List, Optional, Tuple

from ..edits import UNSAFE, Fix
from ..effects import Loads, Makes, Opens, ReadsFile
from ..rules import Finding, RuleContext, check_module
from ..rules.pageable import PageableCopy, Route, is_computed, origin_text
from ..semantic.facts import ModuleFacts
from ..semantic.source import same_source
from ..semantic.values import Tensor
from ..settings import Settings
from .factory import pin_memory_fix, unpinnable
from .h2d import h2d_fix, h2d_local
from .helper import helper_fix
from .loader import loader_fix
from .pin_method import pin_method_fix
from .site import FixSite, helper_local_name, literal_false

STAGING = (
    "stage it through a persistent pinned buffer instead (allocated once with `pin_memory=True`, as "
    "vLLM's `CpuGpuBuffer` does: fill its CPU side, then copy it non_blocking)"
)


def planned_findings(facts: ModuleFacts, settings: Settings, path: Optional[Path] = None) -> List[Finding]:
    """Every rule's findings in one module (:func:`pinfix.rules.check_module`), each
    with its fix planned; a bug of ours in a plan loses that finding only."""
    ctx = RuleContext(facts, settings, path)
    out: List[Finding] = []
    for finding in check_module(facts, settings, path):
        asked = finding.pageable
        if asked is None:
            out.append(finding)
            continue
        try:
            out.append(with_fix(ctx, finding, asked))
        except RecursionError:
            raise  # the whole file is too deep: the engine says so
        except Exception as e:  # noqa: BLE001  # a bug of ours loses this copy's finding only
            facts.problems.append((asked.copy.call.lineno, "this copy's finding is lost", e))
    return out


def with_fix(ctx: RuleContext, finding: Finding, asked: PageableCopy) -> Finding:
    """``finding`` with its remedy, fix and fix title."""
    site = FixSite(ctx, asked.copy)
    remedy, fix, note = plan(site, asked.tensors, asked.route, asked.inline, asked.computed)
    if asked.groups and fix is None:
        remedy = remedies(site, asked.groups, remedy)
    message = f"{finding.message}; {remedy}"
    if fix is not None and fix.applicability == UNSAFE:
        message += f" (unsafe fix: {fix.reason})"
    elif fix is None:
        message += f" (no fix: {note})"
    return replace(
        finding,
        message=message,
        fix=fix,
        fix_safety=fix.applicability.value if fix is not None else None,
        fix_note=fix.reason if fix is not None and fix.reason else note,
        fix_title=remedy[:1].upper() + remedy[1:] if fix is not None else None,
    )


def plan(
    site: FixSite, tensors: List[Tensor], route: Route, inline: bool, computed: bool
) -> Tuple[str, Optional[Fix], Optional[str]]:
    """``(remedy, fix, why no fix)``."""
    settings = site.settings
    h2d = h2d_fix(site, tensors, route, inline)
    if h2d is not None:
        local = h2d_local(site.module, settings.h2d_helper or "")
        return f"copy it with `{local}(...)`, which pins it first", h2d, None
    remedy, fix, note = origin_plan(site, tensors, route, inline, computed)
    if fix is not None and any(t.widened for t in tensors):
        # One of several origins stands for them all: a fix at it would leave the others.
        return remedy, None, "the copy is fed pageable memory from more paths than pinfix keeps apart"
    return remedy, fix, note


def remedies(site: FixSite, groups: List[Tuple[str, List[int], List[Tensor]]], shared: str) -> str:
    """The remedy of each origin, where they differ: ``for X (line a), ...; for Y (line b), ...``."""
    parts = []
    for label, at_lines, group in groups:
        route = Route(group[0])
        made = next((s for s in route.steps if group[0].origin is not None and s.node is group[0].origin.node), None)
        remedy = plan(site, group, route, not route.bindings and group[0].via is None, is_computed(group[0], made))[0]
        parts.append((f"{origin_text(label)} (line {', '.join(map(str, at_lines))})", remedy))
    if len({r for _, r in parts}) == 1:
        return shared
    return "; ".join(f"for {where}, {remedy}" for where, remedy in parts)


def origin_plan(
    site: FixSite, tensors: List[Tensor], route: Route, inline: bool, computed: bool
) -> Tuple[str, Optional[Fix], Optional[str]]:
    """``(remedy, fix, why no fix)`` at the memory's origins."""
    primary = tensors[0]
    origin = primary.origin
    assert origin is not None
    effect = origin.effect
    settings = site.settings
    label = origin.label
    if isinstance(effect, Loads) and not primary.converted and not primary.gapped:
        return loader_fix(site, tensors)
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
        at = site.ctx.where(made) if made is not None else f"line {origin.line}"
        if not (isinstance(effect, Makes) and effect.factory):
            return STAGING, None, "the source is made in another function; fix it there"
        sparse = unpinnable(site, tensors)
        if sparse is not None:
            return STAGING, None, sparse
        remedy = f"allocate it pinned at its origin ({at}) with `pin_memory={expr}`"
        if same_source(origin.src, site.src) and len(tensors) == 1 and not others:
            fix = pin_memory_fix(site, tensors, route, kept=True)
            if fix is not None:
                return remedy, fix, None
        return remedy, None, "the source is made in another function; fix it there"
    if isinstance(effect, Makes) and effect.helper_fix:
        local = (helper_local_name(site.module, settings.helper) or settings.helper_name) if settings.helper else None
        remedy = f"make the source pinned with `{local}(...)`" if local else "pin the source with `.pin_memory()`"
        if others or any(
            not (isinstance(t.origin.effect, Makes) and t.origin.effect.helper_fix) for t in tensors if t.origin
        ):
            return remedy, None, "the copy is fed pageable memory made in several ways"
        if local is None:
            return remedy, *pin_method_fix(site, tensors, route, inline)
        return remedy, *helper_fix(site, tensors, route, inline, local)
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
                if any(literal_false(t.origin.node) for t in tensors if t.origin)
                else "`pin_memory=`"
            )
            return remedy, None, f"{written} is written out; change it by hand if pageable memory was not intended"
        sparse = unpinnable(site, tensors)
        if sparse is not None:
            return STAGING, None, sparse
        fix = pin_memory_fix(site, tensors, route, kept=False)
        if isinstance(fix, str):
            return remedy, None, fix
        return remedy, fix, None
    if computed:
        return STAGING, None, "a computed result cannot be allocated pinned"
    if isinstance(effect, (ReadsFile, Opens)):
        remedy = f"pin what {origin_text(label)} reads once (`.pin_memory()`) where it is kept and copied again, or copy it with `non_blocking=False`"
        return remedy, None, f"{origin_text(label)} takes no `pin_memory=`"
    return STAGING, None, f"{origin_text(label)} takes no `pin_memory=`"
