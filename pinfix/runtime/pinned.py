"""A local stand-in for vLLM's ``np_to_pinned_tensor``, for code run without vLLM installed.

It behaves like the original: wrap the array with ``torch.from_numpy`` (no copy), then copy it
into page-locked memory with ``.pin_memory()`` when the platform has pinned memory, else return
the plain tensor.  Pinned memory needs an accelerator runtime; without one ``pin_memory()``
raises, and a pageable tensor is all there is.  The extra host copy is cheap because torch
serves ``pin_memory()`` from its caching host allocator.
"""

from __future__ import annotations

import functools

import numpy as np
import torch


@functools.cache
def pin_memory_available() -> bool:
    """Whether this process can allocate pinned host memory (an accelerator is present)."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "is_available"):
        return bool(accelerator.is_available())
    return bool(torch.cuda.is_available())


def np_to_pinned_tensor(array: np.ndarray) -> torch.Tensor:
    """``torch.from_numpy(array)``, pinned when the platform supports pinned memory."""
    tensor = torch.from_numpy(array)
    return tensor.pin_memory() if pin_memory_available() else tensor
