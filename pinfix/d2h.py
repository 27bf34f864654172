"""PIN003, the device-to-host twin: a ``non_blocking`` copy to the host whose
result is read on the host before anything waits for the device.

Part of the shared analysis (:mod:`pinfix.analysis` calls it for every call
that is not a host-to-device sink); it reuses that module's sink parsing and
local data flow, and reads its spellings from :mod:`pinfix.patterns`.

Two shapes:

* ``y = t.to("cpu", non_blocking=True)`` (or the call used directly): torch
  allocates ``y`` itself (pinned, on CUDA) and returns before the copy has
  finished, so reading ``y`` needs a synchronize or event wait first;
* ``buf.copy_(dev, non_blocking=True)`` into a ``buf`` that local flow shows is
  a pageable CPU tensor: no overlap is gained, and where the backend does run
  it asynchronously the host may read ``buf`` before the data arrives.

A read is ``.tolist()``, ``.item()``, indexing, ``print(...)``,
``bool``/``int``/``float``/``str``, a comparison or a truth test (``.numpy()``
and ``list(t)`` only make views). The search
runs forward in source order through the same function and stops at a wait
(``synchronize``, ``wait``...), at any call that may block on the device
(``.item()``, ``.tolist()``, ``.cpu()`` of another tensor, a blocking
``.to("cpu")``), and at any use of the name it cannot classify.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple

import libcst as cst
from libcst.metadata import Assignment, ScopeProvider

from .patterns import (
    HOST_READ_BUILTINS,
    HOST_READ_METHODS,
    NON_BLOCKING_KEYWORD,
    SYNC_METHODS,
)
from .syntax import code_of

if TYPE_CHECKING:  # pragma: no cover
    from .analysis import Finding, _ModuleAnalysis

CODE = "PIN003"
#: Uses of a tensor that read no data (metadata), so the search goes on past them.
_METADATA_ATTRS = frozenset({"shape", "dtype", "device", "size", "numel", "dim", "ndim", "is_pinned", "stride"})


def _literal_true(call: cst.Call, slots: Tuple[int, ...]) -> bool:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == NON_BLOCKING_KEYWORD:
            return isinstance(a.value, cst.Name) and a.value.value == "True"
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return any(
        i < len(positional) and isinstance(positional[i].value, cst.Name) and positional[i].value.value == "True"
        for i in slots
    )


class DeviceToHost:
    def __init__(self, analysis: "_ModuleAnalysis"):
        self.a = analysis
        self._calls: Optional[List[Tuple[Tuple[int, int], cst.Call]]] = None

    # --- the two shapes ---------------------------------------------------

    def findings_for(self, call: cst.Call) -> List["Finding"]:
        func = call.func
        if not isinstance(func, cst.Attribute) or any(a.star for a in call.args):
            return []
        method = func.attr.value
        if method == "to" and _literal_true(call, (1, 2)):
            return self._to_cpu(call, func)
        if method == "copy_" and _literal_true(call, (1,)):
            return self._copy_into_pageable(call, func)
        return []

    def _to_cpu(self, call: cst.Call, func: cst.Attribute) -> List["Finding"]:
        a = self.a
        device = next((x for x in call.args if x.keyword is not None and x.keyword.value == "device"), None)
        positional = [x for x in call.args if x.keyword is None]
        if device is None and positional:
            device = positional[0]
        if device is None or not a.is_plainly_cpu(device.value):
            return []
        if a.trace(func.value) is not None:
            return []  # already a CPU tensor: a no-op
        line = a.line(call)
        what = f"the result of `.to({code_of(device.value)}, non_blocking=True)` (line {line})"
        why = (
            "torch returns it before the device-to-host copy has finished (on CUDA into pinned memory it "
            "allocates itself), so the host may read data that has not arrived yet; record an event after the "
            "copy and wait on it (`event.synchronize()`, or `torch.cuda.synchronize()`) before reading, or drop "
            "`non_blocking=True`"
        )
        read = self._direct_read(call)
        if read is not None:
            return [self._finding(read, f"{what} is read on the host right away; {why}", "to-cpu/inline")]
        target = self._bound_name(call)
        if target is None:
            return []
        return self._reads_after(target, call, lambda r: (f"`{target.value}` holds {what} and is read here with no "
                                                          f"synchronize or event wait in between; {why}"), "to-cpu/bound")

    def _copy_into_pageable(self, call: cst.Call, func: cst.Attribute) -> List["Finding"]:
        a = self.a
        receiver = func.value
        source = next((x for x in call.args if x.keyword is None and not x.star), None)
        if source is None:
            source = next((x for x in call.args if x.keyword is not None and x.keyword.value == "src"), None)
        root = receiver
        while isinstance(root, cst.Subscript):
            root = root.value
        if not isinstance(root, cst.Name):
            return []  # only a local name's later reads can be followed
        if source is None or a.trace(source.value) is not None:
            return []  # host-to-host (or a host-to-device copy PIN001/PIN002 judge)
        trace = a.trace(receiver)
        if trace is None or trace.pinned or trace.source is None:
            return []
        line = a.line(call)
        message = (
            f"`{root.value}` is pageable memory filled by `.copy_(..., non_blocking=True)` from the device (line "
            f"{line}) and read on the host here with no synchronize or event wait in between: a pageable "
            "destination gains no overlap, and where the backend runs the copy asynchronously the host may read "
            "data that has not arrived yet; copy into a pinned buffer and wait on an event before reading, or drop "
            "`non_blocking=True`"
        )
        return self._reads_after(root, call, lambda r: message, "copy_/d2h")

    # --- reads ------------------------------------------------------------

    def _direct_read(self, call: cst.Call) -> Optional[cst.CSTNode]:
        kind = self._use_kind(call)
        return call if kind == "read" else None

    def _bound_name(self, call: cst.Call) -> Optional[cst.Name]:
        parent = self.a.parent(call)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            return parent.targets[0].target
        if isinstance(parent, cst.AnnAssign) and isinstance(parent.target, cst.Name) and parent.value is call:
            return parent.target
        return None

    def _use_kind(self, node: cst.CSTNode) -> str:
        """``"read"``, ``"meta"`` (reads no data) or ``"other"`` for one use."""
        a = self.a
        parent = a.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            grand = a.parent(parent)
            called = isinstance(grand, cst.Call) and grand.func is parent
            if parent.attr.value in HOST_READ_METHODS and called:
                return "read"
            if parent.attr.value in _METADATA_ATTRS:
                return "meta"
            return "other"
        if isinstance(parent, cst.Subscript) and parent.value is node:
            return "read"
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return "read"
        if isinstance(parent, (cst.If, cst.While, cst.IfExp)) and getattr(parent, "test", None) is node:
            return "read"
        if isinstance(parent, cst.Arg):
            grand = a.parent(parent)
            if isinstance(grand, cst.Call) and isinstance(grand.func, cst.Name):
                if grand.func.value in HOST_READ_BUILTINS and a.qualified_names(grand.func) & {
                    f"builtins.{grand.func.value}"
                }:
                    return "read"
                if grand.func.value == "len":
                    return "meta"
        return "other"

    def _reads_after(self, name: cst.Name, call: cst.Call, message, pattern: str) -> List["Finding"]:  # type: ignore[no-untyped-def]
        a = self.a
        scope = a.md(ScopeProvider, name, None)
        if scope is None:
            return []
        binding = next((b for b in scope.assignments[name.value] if b.node is name), None)
        start = a.pos(call).end
        uses: List[Tuple[Tuple[int, int], cst.CSTNode]] = []
        if isinstance(binding, Assignment):
            uses = [(self._at(r.node), r.node) for r in binding.references]
        else:  # the copy_ receiver: every later access of the name in this scope
            uses = [(self._at(x.node), x.node) for x in scope.accesses[name.value]]
        uses = sorted((u for u in uses if u[0] > (start.line, start.column)), key=lambda u: u[0])
        for at, use in uses:
            if a.md(ScopeProvider, use, None) is not scope:
                return []  # used in a nested function or comprehension: unclear
            if self._waits_between((start.line, start.column), at, call):
                return []
            kind = self._use_kind(use)
            if kind == "read":
                return [self._finding(use, message(use), pattern)]
            if kind == "other":
                return []
        return []

    @staticmethod
    def _at_pos(pos) -> Tuple[int, int]:  # type: ignore[no-untyped-def]
        return (pos.line, pos.column)

    def _at(self, node: cst.CSTNode) -> Tuple[int, int]:
        return self._at_pos(self.a.pos(node).start)

    def _waits_between(self, start: Tuple[int, int], end: Tuple[int, int], copy: cst.Call) -> bool:
        if self._calls is None:
            self._calls = [
                (self._at(c), c)
                for c in self.a.tree.calls
                if isinstance(c.func, cst.Attribute) and self._may_wait(c)
            ]
        return any(start < at < end and c is not copy for at, c in self._calls)

    def _may_wait(self, call: cst.Call) -> bool:
        assert isinstance(call.func, cst.Attribute)
        method = call.func.attr.value
        if method in SYNC_METHODS:
            return True
        if method in ("to", "copy_"):
            return not _literal_true(call, (1, 2) if method == "to" else (1,))
        return False

    def _finding(self, node: cst.CSTNode, message: str, pattern: str) -> "Finding":
        position = self.a.pos(node)
        return self.a.make_finding(CODE, position, message, pattern, None, "report only", (), None, node)
