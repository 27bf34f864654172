"""Turn one intercepted call (``func, args, kwargs``) into a description of the transfer it makes.

The watched entry points and their signatures (method form ``t.op(...)`` and function form
``torch.Tensor.op(t, ...)`` reach the checker identically, ``self`` first):

* ``copy_(self, src, non_blocking=False)``
* ``to(self, device=None, dtype=None, non_blocking=False, copy=False, memory_format=...)``,
  ``to(self, dtype, non_blocking=False, copy=False, ...)``,
  ``to(self, other_tensor, non_blocking=False, copy=False)``
* ``cuda(self, device=None, non_blocking=False, memory_format=...)``, same for ``xpu``

``Tensor.to``'s overloads are resolved with torch's own parser (the one ``nn.Module.to`` uses),
so every positional/keyword spelling torch accepts is understood the way torch understands it.
Anything that does not parse is left alone: torch will raise its own error for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from .classify import is_accelerator, needs_host_temporary


@dataclass(frozen=True)
class Transfer:
    """One ``non_blocking`` transfer between the host and an accelerator.

    ``host`` is the CPU side when it is known before the call.  For ``Tensor.to`` towards the
    CPU it is ``None`` and ``check_result`` is set: torch allocates the destination itself, so
    only the returned tensor can tell whether it is pinned.
    """

    op: str
    direction: str  # "H2D" or "D2H"
    device: torch.device  # the accelerator side
    host: Optional[torch.Tensor]
    staged: bool = False
    check_result: bool = False


def _flag(args: tuple, kwargs: dict, position: int) -> bool:
    value = args[position] if len(args) > position else kwargs.get("non_blocking", False)
    return bool(value)


def _as_device(device: Any, default_type: str) -> torch.device:
    """The device ``Tensor.cuda``/``Tensor.xpu`` would target for their ``device`` argument."""
    if device is None:
        return torch.device(default_type)
    if isinstance(device, int):
        return torch.device(default_type, device)
    return torch.device(device)


def _describe_copy_(args: tuple, kwargs: dict, allow_meta: bool) -> Optional[Transfer]:
    dst, src = args[0], (args[1] if len(args) > 1 else kwargs.get("src"))
    if not isinstance(src, torch.Tensor) or not _flag(args, kwargs, 2):
        return None
    if dst.numel() == 0:
        return None
    dst_type, src_type = dst.device.type, src.device.type
    if src_type == "cpu" and is_accelerator(dst_type, allow_meta=allow_meta):
        staged = needs_host_temporary(src, dst, "H2D")
        return Transfer("copy_", "H2D", dst.device, src, staged)
    if dst_type == "cpu" and is_accelerator(src_type, allow_meta=allow_meta):
        staged = needs_host_temporary(dst, src, "D2H")
        return Transfer("copy_", "D2H", src.device, dst, staged)
    return None


def _parse_to(args: tuple, kwargs: dict):
    """``(device, dtype, non_blocking)`` as torch resolves them; ``copy`` is irrelevant here."""
    kwargs = {k: v for k, v in kwargs.items() if k != "copy"}
    try:
        device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)
    except TypeError:
        # A trailing positional ``copy`` flag, which the parser does not accept.
        device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args[:-1], **kwargs)
    return device, dtype, non_blocking


def _describe_to(args: tuple, kwargs: dict, allow_meta: bool) -> Optional[Transfer]:
    self = args[0]
    device, dtype, non_blocking = _parse_to(args[1:], kwargs)
    if not non_blocking or device is None or self.numel() == 0:
        return None
    here, there = self.device.type, device.type
    if here == "cpu" and is_accelerator(there, allow_meta=allow_meta):
        staged = dtype is not None and dtype != self.dtype
        return Transfer("to", "H2D", device, self, staged)
    if there == "cpu" and is_accelerator(here, allow_meta=allow_meta):
        return Transfer("to", "D2H", self.device, None, check_result=True)
    return None


def _describe_device_method(op: str):
    def describe(args: tuple, kwargs: dict, allow_meta: bool) -> Optional[Transfer]:
        self = args[0]
        if self.device.type != "cpu" or self.numel() == 0 or not _flag(args, kwargs, 2):
            return None
        device = args[1] if len(args) > 1 else kwargs.get("device")
        return Transfer(op, "H2D", _as_device(device, op), self)

    return describe


DESCRIBERS = {
    torch.Tensor.copy_: _describe_copy_,
    torch.Tensor.to: _describe_to,
    torch.Tensor.cuda: _describe_device_method("cuda"),
    torch.Tensor.xpu: _describe_device_method("xpu"),
}


def describe(func: Any, args: tuple, kwargs: dict, *, allow_meta: bool = False) -> Optional[Transfer]:
    """The host/accelerator transfer ``func(*args, **kwargs)`` would make, if it is one we check.

    Returns ``None`` for everything else: other functions, blocking copies, CPU-to-CPU and
    device-to-device copies, empty tensors, and argument lists torch itself would reject.
    """
    describer = DESCRIBERS.get(func)
    if describer is None or not args or not isinstance(args[0], torch.Tensor):
        return None
    try:
        return describer(args, kwargs, allow_meta)
    except (TypeError, ValueError, RuntimeError, IndexError):
        return None
