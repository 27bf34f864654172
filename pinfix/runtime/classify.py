"""Decide whether one ``non_blocking`` copy between host and accelerator is really asynchronous.

This module is pure policy: it looks at tensors and device types and returns a reason, or
``None``.  It never dispatches a copy and never asks a driver anything, so every rule can be
unit-tested on a CPU-only machine.

Two things are injectable for that reason:

* which device types count as an accelerator: every type except ``cpu`` and ``meta`` (so CUDA,
  ROCm/HIP, which torch exposes as ``cuda``, XPU, MPS, and any ``privateuseone`` backend under
  its renamed type); tests pass ``allow_meta=True`` so that ``meta`` tensors stand in for
  device tensors;
* how pinnedness is read: ``Tensor.is_pinned()`` needs an accelerator runtime and raises on a
  machine without one (torch 2.13: "Cannot access accelerator device when none is available"),
  so the default treats "cannot ask" as "not pinned" (there is no pinned memory without an
  accelerator), and tests pass their own predicate.

What torch does, which the rules mirror (ATen's cross-device copy, as shipped for CUDA/ROCm and
followed by the other in-tree backends):

* A copy goes straight from/to the CPU tensor's memory with one async memcpy only when both
  sides have the same dtype and the same dense layout.  Otherwise torch first builds a
  contiguous, converted temporary of the CPU side with an ordinary (pageable) allocation, and
  the transfer from/to that temporary blocks the host no matter whether the original was
  pinned.  Gapped views (``x[::2]``, a column slice), broadcasts (stride 0) and dtype
  conversions therefore all stage through pageable memory.
* The direct transfer is asynchronous only when the CPU memory is page-locked (pinned).
* ``Tensor.to("cpu", non_blocking=True)`` from an accelerator allocates its CPU result pinned
  by itself (every accelerator except MPS in current torch; only CUDA in older releases).  That
  direction is therefore checked after the call, on the result it actually produced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import torch

PAGEABLE = "pageable"
NON_DENSE = "non-dense"
STAGED = "staged"

REASON_TEXT = {
    PAGEABLE: "the CPU tensor is not pinned, so the driver copies it synchronously",
    NON_DENSE: "the CPU tensor is not densely laid out (a gapped or broadcast view), so torch "
    "stages it through a pageable temporary",
    STAGED: "the CPU tensor's dtype or layout differs from the device side, so torch converts "
    "it through a pageable temporary first",
}

PinnedPredicate = Callable[[torch.Tensor], bool]


def default_is_pinned(tensor: torch.Tensor) -> bool:
    """``tensor.is_pinned()``, reading "no accelerator runtime to ask" as "not pinned"."""
    try:
        return bool(tensor.is_pinned())
    except RuntimeError:
        return False


def is_accelerator(device_type: str, *, allow_meta: bool = False) -> bool:
    """Whether a device type is the accelerator side of a host/device copy.

    ``meta`` is excluded unless ``allow_meta``: real code copies to and from meta only in
    shape-inference passes, where nothing is transferred.
    """
    if device_type == "cpu":
        return False
    if device_type == "meta":
        return allow_meta
    return True


def is_dense(tensor: torch.Tensor) -> bool:
    """Whether the elements fill one gap-free block of storage, in any dimension order.

    A transposed matrix is dense (it can be copied as one block); ``x[::2]`` and an expanded
    (stride-0) view are not.  Dimensions of size 1 do not constrain the layout.
    """
    if tensor.is_contiguous():
        return True
    expected = 1
    for size, stride in sorted(zip(tensor.shape, tensor.stride()), key=lambda p: p[1]):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def _significant_strides(tensor: torch.Tensor) -> tuple[int, ...]:
    """Strides of the dimensions longer than 1 (size-1 strides are arbitrary)."""
    return tuple(st for sz, st in zip(tensor.shape, tensor.stride()) if sz != 1)


def same_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape and the same element order in memory, so one block memcpy suffices."""
    if a.shape != b.shape:
        return False
    if a.is_contiguous() and b.is_contiguous():
        return True
    return _significant_strides(a) == _significant_strides(b)


def needs_host_temporary(host: torch.Tensor, device_side: torch.Tensor, direction: str) -> bool:
    """Whether a ``copy_`` between these two builds a temporary copy of the host side.

    When dtypes and layouts match, one memcpy moves the data and nothing is staged.  Otherwise:

    * H2D: torch converts and broadcasts on the host (``src.to(dtype).expand_as(dst)
      .contiguous()``), a new tensor unless the source already is contiguous, of the target
      dtype and of the target's element count;
    * D2H: torch converts on the device and lands the data in a fresh contiguous host buffer
      unless the destination itself is contiguous.
    """
    if host.dtype == device_side.dtype and same_layout(host, device_side):
        return False
    if direction == "H2D":
        return not (host.is_contiguous() and host.dtype == device_side.dtype and host.numel() == device_side.numel())
    return not host.is_contiguous()


def host_side_reason(
    host: torch.Tensor,
    *,
    staged: bool = False,
    is_pinned: Optional[PinnedPredicate] = None,
) -> Optional[str]:
    """Why a ``non_blocking`` transfer from/to ``host`` would block, or ``None``.

    ``staged`` says that the caller already knows torch will make a host temporary (see
    ``needs_host_temporary``).  Empty tensors never block: torch issues no transfer at all.
    """
    if host.device.type != "cpu" or host.numel() == 0:
        return None
    if not is_dense(host):
        return NON_DENSE
    if staged:
        return STAGED
    if not (is_pinned or default_is_pinned)(host):
        return PAGEABLE
    return None
