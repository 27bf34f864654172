"""Shared helpers for the checker's CPU tests.

``meta`` tensors stand in for accelerator tensors (``allow_meta=True``), and pinnedness is
injected: a CPU-only torch cannot pin, so tests register which storages count as pinned.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


class FakePinned:
    """An ``is_pinned`` predicate: a tensor is pinned when its storage was registered."""

    def __init__(self):
        self._ptrs: set[int] = set()

    def pin(self, tensor):
        self._ptrs.add(tensor.untyped_storage().data_ptr())
        return tensor

    def __call__(self, tensor) -> bool:
        return tensor.untyped_storage().data_ptr() in self._ptrs


@pytest.fixture
def pinned():
    return FakePinned()


@pytest.fixture
def check(pinned):
    """A record-mode check with meta as the device and the fake pinnedness."""
    from pinfix.runtime import pageable_copy_check

    return pageable_copy_check("record", is_pinned=pinned, allow_meta=True)


@pytest.fixture
def dev():
    """A stand-in device tensor (int64, 8 elements)."""
    return torch.empty(8, dtype=torch.int64, device="meta")
