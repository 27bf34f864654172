"""The pure rules: accelerator types, density, host temporaries, reasons."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pinfix.runtime import classify


@pytest.mark.parametrize("device_type", ["cuda", "xpu", "mps", "hpu", "privateuseone", "npu"])
def test_every_non_cpu_type_is_an_accelerator(device_type):
    assert classify.is_accelerator(device_type)


def test_cpu_is_never_and_meta_only_when_allowed():
    assert not classify.is_accelerator("cpu")
    assert not classify.is_accelerator("cpu", allow_meta=True)
    assert not classify.is_accelerator("meta")
    assert classify.is_accelerator("meta", allow_meta=True)


@pytest.mark.parametrize(
    "make, dense",
    [
        (lambda: torch.arange(12), True),
        (lambda: torch.arange(12).reshape(3, 4).t(), True),  # permuted but gap-free
        (lambda: torch.arange(24).reshape(2, 3, 4).permute(2, 0, 1), True),
        (lambda: torch.arange(12).reshape(3, 4)[:1], True),  # size-1 dims do not count
        (lambda: torch.arange(12)[::2], False),  # gapped
        (lambda: torch.arange(12).reshape(3, 4)[:, :2], False),  # column slice
        (lambda: torch.arange(4).expand(3, 4), False),  # broadcast, stride 0
    ],
)
def test_is_dense(make, dense):
    assert classify.is_dense(make()) is dense


def test_default_is_pinned_reads_no_runtime_as_not_pinned():
    # CPU-only torch raises from is_pinned(); with an accelerator, a fresh tensor is pageable.
    assert classify.default_is_pinned(torch.arange(3)) is False


def _pinned_all(_t):
    return True


def test_reason_order_non_dense_then_staged_then_pageable():
    gapped = torch.arange(8)[::2]
    assert classify.host_side_reason(gapped, is_pinned=_pinned_all) == classify.NON_DENSE
    dense = torch.arange(4)
    assert classify.host_side_reason(dense, staged=True, is_pinned=_pinned_all) == classify.STAGED
    assert classify.host_side_reason(dense, is_pinned=lambda t: False) == classify.PAGEABLE
    assert classify.host_side_reason(dense, is_pinned=_pinned_all) is None


def test_empty_and_non_cpu_hosts_have_no_reason():
    assert classify.host_side_reason(torch.empty(0), is_pinned=lambda t: False) is None
    assert classify.host_side_reason(torch.empty(3, device="meta")) is None


@pytest.mark.parametrize(
    "host, device_side, direction, staged",
    [
        # Same dtype and layout: one memcpy, nothing staged.
        (torch.zeros(4, 3), torch.empty(4, 3, device="meta"), "H2D", False),
        (torch.zeros(3, 4).t(), torch.empty(3, 4, device="meta").t(), "H2D", False),
        # H2D: contiguous source of the right dtype and size into a strided device view.
        (torch.zeros(4), torch.empty(8, device="meta")[::2], "H2D", False),
        # H2D: dtype conversion happens on the host.
        (torch.zeros(4, dtype=torch.int32), torch.empty(4, device="meta"), "H2D", True),
        # H2D: broadcasting expands and materialises the source.
        (torch.zeros(3), torch.empty(2, 3, device="meta"), "H2D", True),
        # H2D: permuted source into a contiguous destination is made contiguous first.
        (torch.zeros(3, 4).t(), torch.empty(4, 3, device="meta"), "H2D", True),
        # D2H: conversion happens on the device when the destination is contiguous.
        (torch.zeros(4), torch.empty(4, dtype=torch.int32, device="meta"), "D2H", False),
        # D2H: a non-contiguous destination of another layout gets a host temporary.
        (torch.zeros(4, 3).t(), torch.empty(3, 4, device="meta"), "D2H", True),
    ],
)
def test_needs_host_temporary(host, device_side, direction, staged):
    assert classify.needs_host_temporary(host, device_side, direction) is staged
