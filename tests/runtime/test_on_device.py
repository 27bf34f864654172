"""The checker against a real accelerator: real pinnedness, real copies, both directions."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pinfix.runtime import pageable_copy_check

ACCELERATOR = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None

pytestmark = pytest.mark.skipif(
    ACCELERATOR is None, reason="device-only: needs an accelerator (torch.accelerator reports none)"
)


def test_real_h2d_pageable_flagged_pinned_clean():
    dst = torch.empty(1024, dtype=torch.int32, device=ACCELERATOR)
    with pageable_copy_check("record") as check:
        dst.copy_(torch.ones(1024, dtype=torch.int32), non_blocking=True)
        dst.copy_(torch.ones(1024, dtype=torch.int32).pin_memory(), non_blocking=True)
        torch.ones(8).pin_memory()[::2].to(ACCELERATOR, non_blocking=True)
    assert [(v.op, v.reason) for v in check.violations] == [("copy_", "pageable"), ("to", "non-dense")]


def test_real_d2h():
    src = torch.arange(1024, device=ACCELERATOR)
    with pageable_copy_check("record") as check:
        out = src.to("cpu", non_blocking=True)  # torch pins this destination itself
        pinned = torch.empty(1024, dtype=torch.int64).pin_memory()
        pinned.copy_(src, non_blocking=True)
        torch.empty(1024, dtype=torch.int64).copy_(src, non_blocking=True)
    torch.accelerator.synchronize()
    assert out.is_pinned() or ACCELERATOR.type == "mps"
    assert [(v.op, v.direction, v.reason) for v in check.violations] == [("copy_", "D2H", "pageable")]
