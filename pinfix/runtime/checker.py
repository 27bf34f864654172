"""Flag ``non_blocking`` host/accelerator copies that silently block the host.

``non_blocking=True`` is only a request.  When the CPU side of the copy is pageable (not
pinned), or has to be staged through a pageable temporary (gapped views, broadcasts, dtype
conversions), the driver performs the copy synchronously and the host waits: no error, no
warning, just lost overlap.  This checker makes those copies visible:

    from pinfix.runtime import pageable_copy_check

    with pageable_copy_check(mode="record") as check:
        builder.build(batch)
    assert not check.violations

Why a ``TorchFunctionMode`` and not patched ``torch.Tensor`` methods: a mode is pushed on the
calling thread's torch-function stack only for the duration of the ``with`` block.  Other
threads, code outside the block and other libraries never see it, nothing in ``torch`` is
reassigned, and with no block active there is nothing installed at all, so it costs nothing
when off.  The block's exit pops the mode also when the body raises.  Copies issued from C++
(inside compiled graphs, custom ops) are not seen; while ``torch.compile`` traces, the check
stands aside.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
from torch.overrides import TorchFunctionMode

from .calls import Transfer, describe
from .classify import (
    PAGEABLE,
    REASON_TEXT,
    PinnedPredicate,
    default_is_pinned,
    host_side_reason,
)

MODES = ("raise", "warn", "record")

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_SKIPPED_DIRS = (_TORCH_DIR, _RUNTIME_DIR)


@dataclass(frozen=True)
class Violation:
    """One ``non_blocking`` copy that blocks the host, and where it was issued."""

    op: str  # "copy_", "to", "cuda" or "xpu"
    direction: str  # "H2D" or "D2H"
    reason: str  # "pageable", "non-dense" or "staged"
    device: str  # the accelerator side, e.g. "cuda:0"
    shape: tuple[int, ...]  # of the CPU side
    dtype: str  # of the CPU side
    file: str
    line: int

    @property
    def caller(self) -> str:
        return f"{self.file}:{self.line}"

    def message(self) -> str:
        return (
            f"{self.caller}: Tensor.{self.op}(..., non_blocking=True), a {self.direction} copy "
            f"{'to' if self.direction == 'H2D' else 'from'} {self.device}, blocks the host: "
            f"{REASON_TEXT[self.reason]} "
            f"(CPU side: shape {list(self.shape)}, {self.dtype}). Use a pinned, densely laid out "
            f"CPU tensor of the device side's dtype, e.g. np_to_pinned_tensor(array) or "
            f"tensor.pin_memory()."
        )


class PageableCopyError(RuntimeError):
    """Raised in ``mode="raise"`` for the first blocking ``non_blocking`` copy."""

    def __init__(self, violation: Violation):
        super().__init__(violation.message())
        self.violation = violation


class PageableCopyWarning(UserWarning):
    """Emitted in ``mode="warn"``, attributed to the caller's file and line."""


def _caller() -> tuple[str, int]:
    """The innermost frame outside torch and this package: the line that asked for the copy."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_SKIPPED_DIRS):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


class _CopyMode(TorchFunctionMode):
    """The per-``with``-block mode; it forwards every finding to its ``PageableCopyCheck``."""

    def __init__(self, check: PageableCopyCheck):
        super().__init__()
        self._check = check

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        transfer = describe(func, args, kwargs, allow_meta=self._check.allow_meta)
        if transfer is None or torch.compiler.is_compiling():
            return func(*args, **kwargs)
        if transfer.host is not None:
            reason = host_side_reason(transfer.host, staged=transfer.staged, is_pinned=self._check.is_pinned)
            if reason:
                self._check._report(transfer, reason, transfer.host)
        result = func(*args, **kwargs)
        if transfer.check_result and isinstance(result, torch.Tensor):
            if result.device.type == "cpu" and not self._check.is_pinned(result):
                self._check._report(transfer, PAGEABLE, result)
        return result


class PageableCopyCheck:
    """Context manager and decorator; see ``pageable_copy_check``.

    One object may be entered on several threads at once and re-entered (nesting, recursion of
    a decorated function): every entry pushes its own mode on the entering thread only.  All
    entries report into the same ``violations`` list.
    """

    def __init__(
        self,
        mode: str = "raise",
        *,
        enabled: bool = True,
        is_pinned: Optional[PinnedPredicate] = None,
        allow_meta: bool = False,
    ):
        if mode not in MODES:
            raise ValueError(f"pageable_copy_check: mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.enabled = enabled
        self.is_pinned = is_pinned or default_is_pinned
        self.allow_meta = allow_meta
        self._violations: list[Violation] = []
        self._lock = threading.Lock()
        self._local = threading.local()

    @property
    def violations(self) -> list[Violation]:
        """A snapshot of everything found so far, in order."""
        with self._lock:
            return list(self._violations)

    def clear(self) -> None:
        with self._lock:
            self._violations.clear()

    def _report(self, transfer: Transfer, reason: str, host: torch.Tensor) -> None:
        file, line = _caller()
        violation = Violation(
            op=transfer.op,
            direction=transfer.direction,
            reason=reason,
            device=str(transfer.device),
            shape=tuple(host.shape),
            dtype=str(host.dtype).replace("torch.", ""),
            file=file,
            line=line,
        )
        with self._lock:
            self._violations.append(violation)
        if self.mode == "raise":
            raise PageableCopyError(violation)
        if self.mode == "warn":
            warnings.warn_explicit(violation.message(), PageableCopyWarning, file, line)

    def __enter__(self) -> PageableCopyCheck:
        stack = self._local.__dict__.setdefault("modes", [])
        mode = _CopyMode(self) if self.enabled else None
        if mode is not None:
            mode.__enter__()
        stack.append(mode)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        mode = self._local.modes.pop()
        if mode is not None:
            mode.__exit__(exc_type, exc, tb)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def checked(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        checked.pageable_copy_check = self  # type: ignore[attr-defined]
        return checked


def pageable_copy_check(
    mode: str = "raise",
    *,
    enabled: bool = True,
    is_pinned: Optional[PinnedPredicate] = None,
    allow_meta: bool = False,
) -> PageableCopyCheck:
    """Check every ``non_blocking`` CPU/accelerator copy made on this thread inside the scope.

    Use it as ``with pageable_copy_check(...) as check:`` or as a decorator
    ``@pageable_copy_check(...)`` (the decorated function gets ``.pageable_copy_check``).

    mode:
        ``"raise"``: raise ``PageableCopyError`` (op, direction, reason, caller file:line) at
        the first offending copy, before it runs (after it, for ``Tensor.to`` towards the CPU,
        whose destination only exists afterwards).
        ``"warn"``: emit a ``PageableCopyWarning`` pointing at the caller, and go on.
        ``"record"``: only collect; read ``check.violations``.
        Every mode also records into ``check.violations``.
    enabled:
        ``False`` makes the scope a no-op, so call sites can keep the ``with`` in hot code.
    is_pinned:
        How to tell a pinned CPU tensor; defaults to ``Tensor.is_pinned()`` with "no
        accelerator runtime" read as "not pinned".  Tests inject their own.
    allow_meta:
        Treat ``meta`` tensors as accelerator tensors (for tests on CPU-only machines).
    """
    return PageableCopyCheck(mode, enabled=enabled, is_pinned=is_pinned, allow_meta=allow_meta)
