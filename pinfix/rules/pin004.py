"""PIN004: a non_blocking copy whose CPU side pinfix cannot tell pinned or pageable (informational)."""

from __future__ import annotations

import ast
from typing import Any, Iterable, List, Optional, Set

from ..semantic.values import ANY_DEVICE, ANY_MEMORY, CPU, Step, Tensor, Unknown, steps
from .base import Case, Finding, Rule, RuleContext
from .pageable import what_copies

_H = "import torch\n\n\n"


class UnknownPinnedness(Rule):
    """
    PIN004: the source of a non_blocking copy may be pageable; pinfix cannot tell (informational).

    ## What it does
    Only with ``--show-unknown`` (``show-unknown = true`` in ``[tool.pinfix]``), and most useful
    with ``--deep``: notes each host-to-device copy requested with ``non_blocking=True`` whose
    CPU source pinfix can show neither pinned nor pageable: a parameter, an attribute with an
    assignment it cannot read, the result of a call outside the project, a value it does not
    follow. The note says which of these stopped it.

    ## Why is this bad?
    It may not be. PIN001 and PIN002 report only sources that every path shows pageable, so
    their precision stays high; this note lists the rest, for a reviewer who wants to check
    each copy once (vLLM's runtime checker finds such sources only on the code paths a test
    runs). A note never fails a run: ``pinfix check`` exits 0 when notes are all it has.

    ## Example
    ```python
    def upload(host, dev):
        return host.to(dev, non_blocking=True)  # is `host` pinned? the caller decides
    ```

    ## Fix safety
    No fix: pin the tensor where it is made, or add the producer to
    ``[tool.pinfix] pinned-producers`` when it always returns pinned memory.
    """

    code = "PIN004"
    name = "UnknownPinnedness"
    opt_in = "show_unknown"

    # With the default settings (no ``show-unknown``) the rule stays silent.
    VALID = [
        Case(_H + "def f(host, dev):\n    return host.to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    return torch.zeros(n, pin_memory=True).to(dev, non_blocking=True)\n"),
    ]
    INVALID = []  # type: ignore[var-annotated]

    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        out = []
        for copy in ctx.facts.copies:
            if copy.direction != "h2d" or (copy.non_blocking is None and not ctx.settings.strict):
                continue
            source = copy.source
            if copy.blocking or not source.any(_unclear):
                continue
            why = _why(source, ctx.src.short(copy.source_node))
            what = what_copies(copy, ctx.src)
            message = (
                f"cannot tell whether `{ctx.src.short(copy.source_node)}` is pinned or pageable ({why}); if it is a "
                f"pageable CPU tensor, {what} blocks the host (informational)"
            )
            summary = f"cannot tell whether `{ctx.src.short(copy.source_node)}` is pinned; if pageable, {what} blocks the host"
            step = Step("copied", copy.call, f"copied with {what}", ctx.src)
            evidence = [*_unknown_steps(ctx, source.unknown), step]
            out.append(
                ctx.finding(
                    self.code,
                    copy.source_node,
                    message,
                    f"{copy.method}/unknown",
                    None,
                    None,
                    evidence,
                    severity="info",
                    summary=summary,
                )
            )
        return out


def _unclear(atom: Any) -> bool:
    """What pinfix cannot tell: an unknown value, a CPU tensor of unknown memory, a
    tensor on a device it cannot name (``x.to(dev)``: ``dev`` may be the CPU)."""
    if isinstance(atom, Unknown):
        return True
    return isinstance(atom, Tensor) and (
        atom.device == ANY_DEVICE or (atom.device == CPU and atom.memory == ANY_MEMORY)
    )


def _unknown_steps(ctx: RuleContext, found: Optional[Unknown]) -> List[Step]:
    """Where the unknown value came from (in this file) and what was computed from it."""
    if found is None:
        return []
    out: List[Step] = []
    node = found.node
    if isinstance(node, ast.expr) and id(node) in _node_ids(ctx):
        out.append(
            Step("unknown", node, f"`{ctx.src.short(node)}`: {_sentence(found.why, ctx.src.short(node))}", ctx.src)
        )
    return out + list(steps(found.route))


def _node_ids(ctx: RuleContext) -> Set[int]:
    found = ctx.cache.get("node ids")
    if found is None:
        found = ctx.cache["node ids"] = {id(n) for n in ast.walk(ctx.facts.module.tree)}
    return found  # type: ignore[no-any-return]


def _sentence(why: str, subject: str) -> str:
    """``why`` as a clause: a predicate (``is a module-level name``) gets its subject."""
    first = why.split(" ", 1)[0]
    return f"`{subject}` {why}" if first in _PREDICATES else why


#: First words of the reasons (:class:`~pinfix.semantic.values.Unknown`) that complete "`x` ...".
_PREDICATES = frozenset({"is", "comes", "changes"})


def _why(source: Any, subject: str) -> str:
    found = source.unknown
    if found is not None:
        return _sentence(str(found.why), subject)
    tensor = next(t for t in source.tensors if _unclear(t))
    if tensor.device == ANY_DEVICE:
        return "it is on a device pinfix cannot name, which may be the CPU"
    first = steps(tensor.route)
    return first[0].message if first else "its memory is not known"


__all__: List[str] = ["UnknownPinnedness"]
