"""The checker end to end on CPU, with meta tensors as the device side.

``.cuda()``/``.xpu()`` and D2H copies cannot run on a CPU-only torch (no accelerator; meta holds
no data).  For those the check fires before the call, so ``raise`` mode proves the
classification, and ``record`` mode is followed by torch's own error.
"""

from __future__ import annotations

import sys
import threading
import warnings

import pytest

torch = pytest.importorskip("torch")

from pinfix.runtime import (
    PageableCopyError,
    PageableCopyWarning,
    Violation,
    pageable_copy_check,
)
from pinfix.runtime.calls import describe

THIS_FILE = __file__


def _line_of(marker: str) -> int:
    with open(THIS_FILE) as f:
        for number, text in enumerate(f, 1):
            if marker in text and "_line_of" not in text:
                return number
    raise AssertionError(marker)


def _one(check) -> Violation:
    assert len(check.violations) == 1, check.violations
    return check.violations[0]


# --- H2D: every op and calling form ------------------------------------------------------


H2D_FORMS = {
    "copy_ kw": lambda d, s: d.copy_(s, non_blocking=True),
    "copy_ positional": lambda d, s: d.copy_(s, True),
    "copy_ function form": lambda d, s: torch.Tensor.copy_(d, s, non_blocking=True),
    "copy_ function positional": lambda d, s: torch.Tensor.copy_(d, s, True),
    "copy_ into slice": lambda d, s: d[: s.numel()].copy_(s, non_blocking=True),
    "to device kw": lambda d, s: s.to("meta", non_blocking=True),
    "to device kw device": lambda d, s: s.to(device="meta", non_blocking=True),
    "to device dtype positional": lambda d, s: s.to("meta", torch.int64, True),
    "to torch.device": lambda d, s: s.to(torch.device("meta"), non_blocking=True),
    "to other tensor positional": lambda d, s: s.to(d, True),
    "to other tensor kw": lambda d, s: s.to(d, non_blocking=True),
    "to with copy=True": lambda d, s: s.to("meta", non_blocking=True, copy=True),
    "to function form": lambda d, s: torch.Tensor.to(s, "meta", non_blocking=True),
}

OP_OF = {name: ("copy_" if name.startswith("copy_") else "to") for name in H2D_FORMS}


@pytest.mark.parametrize("form", sorted(H2D_FORMS))
def test_h2d_from_pageable_is_flagged(form, check, dev):
    with check:
        H2D_FORMS[form](dev, torch.arange(8))
    v = _one(check)
    assert (v.op, v.direction, v.reason, v.device) == (OP_OF[form], "H2D", "pageable", "meta")
    assert v.shape == (8,) and v.dtype == "int64"
    assert v.file == THIS_FILE  # the lambda above, not torch or pinfix


@pytest.mark.parametrize("form", sorted(H2D_FORMS))
def test_h2d_from_pinned_dense_is_clean(form, check, pinned, dev):
    with check:
        H2D_FORMS[form](dev, pinned.pin(torch.arange(8)))
    assert check.violations == []


@pytest.mark.parametrize("form", sorted(H2D_FORMS))
def test_h2d_from_gapped_pinned_view_is_non_dense(form, check, pinned, dev):
    base = pinned.pin(torch.arange(16))
    with check:
        H2D_FORMS[form](dev, base[::2])
    v = _one(check)
    assert (v.direction, v.reason, v.shape) == ("H2D", "non-dense", (8,))


@pytest.mark.parametrize("form", sorted(H2D_FORMS))
def test_blocking_copies_are_not_checked(form, check, dev):
    def blocking(d, s):
        # The same call with every non_blocking flag switched off.
        if "copy_" in form:
            d[: s.numel()].copy_(s)
        else:
            s.to(d)

    with check:
        blocking(dev, torch.arange(8))
    assert check.violations == []


@pytest.mark.parametrize(
    "call, op, device",
    [
        (lambda s: s.cuda(0, True), "cuda", "cuda:0"),
        (lambda s: s.cuda(non_blocking=True), "cuda", "cuda"),
        (lambda s: s.cuda("cuda:1", non_blocking=True), "cuda", "cuda:1"),
        (lambda s: s.cuda(device=torch.device("cuda", 2), non_blocking=True), "cuda", "cuda:2"),
        (lambda s: torch.Tensor.cuda(s, 0, True), "cuda", "cuda:0"),
        (lambda s: s.xpu(0, True), "xpu", "xpu:0"),
        (lambda s: s.xpu(non_blocking=True), "xpu", "xpu"),
        (lambda s: torch.Tensor.xpu(s, None, True), "xpu", "xpu"),
        (lambda s: s.to("cuda:0", non_blocking=True), "to", "cuda:0"),
        (lambda s: s.to("xpu", torch.int64, True), "to", "xpu"),
    ],
)
def test_device_methods_raise_before_the_copy(call, op, device):
    # Real device types need no allow_meta; the error comes before torch looks for the device.
    with pytest.raises(PageableCopyError) as err, pageable_copy_check("raise"):
        call(torch.arange(8))
    v = err.value.violation
    assert (v.op, v.direction, v.reason, v.device) == (op, "H2D", "pageable", device)
    assert f"Tensor.{op}(" in str(err.value) and "H2D" in str(err.value)


def _reaches_torch(call, *args):
    """Run ``call``; torch may fail for want of a device, but the checker must not object."""
    try:
        call(*args)
    except PageableCopyError:
        raise
    except (RuntimeError, AssertionError):
        pass  # no accelerator here, or torch built without this backend


@pytest.mark.parametrize("call", [lambda s: s.cuda(0), lambda s: s.xpu(), lambda s: s.cuda(0, False)])
def test_device_methods_blocking_are_not_checked(call):
    with pageable_copy_check("raise") as check:
        _reaches_torch(call, torch.arange(8))
    assert check.violations == []


# --- staged host temporaries ------------------------------------------------------------


def test_h2d_copy_with_dtype_change_is_staged_even_when_pinned(check, pinned, dev):
    with check:
        dev.copy_(pinned.pin(torch.arange(8, dtype=torch.int32)), non_blocking=True)
    assert _one(check).reason == "staged"


def test_h2d_to_with_dtype_change_is_staged(check, pinned):
    with check:
        pinned.pin(torch.arange(8)).to("meta", torch.float32, non_blocking=True)
        pinned.pin(torch.arange(8)).to("meta", torch.int64, non_blocking=True)  # no change
    assert [v.reason for v in check.violations] == ["staged"]


def test_h2d_broadcast_source_is_staged(check, pinned):
    dst = torch.empty(4, 8, dtype=torch.int64, device="meta")
    with check:
        dst.copy_(pinned.pin(torch.arange(8)), non_blocking=True)
    assert _one(check).reason == "staged"


def test_h2d_transposed_pinned_into_matching_layout_is_clean(check, pinned):
    src = pinned.pin(torch.zeros(3, 4)).t()
    with check:
        torch.empty(3, 4, device="meta").t().copy_(src, non_blocking=True)
        src.to("meta", non_blocking=True)  # .to preserves the dense layout
    assert check.violations == []


# --- D2H -------------------------------------------------------------------------------


def test_d2h_copy_into_pageable_destination_is_flagged(check, dev):
    dst = torch.empty(8, dtype=torch.int64)
    with check, pytest.raises(NotImplementedError):  # meta has no data to copy out
        dst.copy_(dev, non_blocking=True)
    v = _one(check)
    assert (v.op, v.direction, v.reason, v.device) == ("copy_", "D2H", "pageable", "meta")


def test_d2h_copy_into_gapped_destination_is_non_dense(pinned, dev):
    dst = pinned.pin(torch.empty(16, dtype=torch.int64))[::2]
    with pytest.raises(PageableCopyError) as err:
        with pageable_copy_check("raise", is_pinned=pinned, allow_meta=True):
            dst.copy_(dev, True)
    assert (err.value.violation.direction, err.value.violation.reason) == ("D2H", "non-dense")


def test_d2h_copy_into_pinned_destination_is_clean(pinned, dev):
    dst = pinned.pin(torch.empty(8, dtype=torch.int64))
    with pageable_copy_check("raise", is_pinned=pinned, allow_meta=True):
        with pytest.raises(NotImplementedError):  # reached torch: our check let it through
            torch.Tensor.copy_(dst, dev, non_blocking=True)


def test_d2h_to_is_checked_on_the_result_torch_allocated():
    # torch pins the destination of a non_blocking .to("cpu") itself; only its result tells.
    src = torch.empty(4, device="meta")
    transfer = describe(torch.Tensor.to, (src, "cpu"), {"non_blocking": True}, allow_meta=True)
    assert (transfer.op, transfer.direction, transfer.host, transfer.check_result) == ("to", "D2H", None, True)
    assert describe(torch.Tensor.to, (src, "cpu"), {}, allow_meta=True) is None


# --- never flagged ------------------------------------------------------------------------


def test_cpu_to_cpu_is_never_flagged():
    a, b = torch.arange(8), torch.empty(8, dtype=torch.int64)
    with pageable_copy_check("raise") as check:
        b.copy_(a, non_blocking=True)
        b[::2].copy_(a[::2], True)
        a.to("cpu", non_blocking=True)
        a.to(torch.float32, non_blocking=True)
        a.to(b, True)
    assert check.violations == []


def test_empty_tensors_are_never_flagged(dev):
    with pageable_copy_check("raise", allow_meta=True) as check:
        dev[:0].copy_(torch.empty(0, dtype=torch.int64), non_blocking=True)
        torch.empty(0, 3).to("meta", non_blocking=True)
    assert check.violations == []


def test_empty_tensor_to_a_real_device_reaches_torch_unflagged():
    with pageable_copy_check("raise") as check:
        _reaches_torch(lambda: torch.empty(0).cuda(0, True))
    assert check.violations == []


def test_meta_is_not_a_device_unless_allowed(dev):
    with pageable_copy_check("raise") as check:
        dev.copy_(torch.arange(8), non_blocking=True)
        torch.arange(8).to("meta", non_blocking=True)
    assert check.violations == []


def test_unparsable_arguments_reach_torch_untouched():
    with pageable_copy_check("raise"), pytest.raises(TypeError):
        torch.arange(3).to("meta", "not a dtype", non_blocking=True)


# --- modes ------------------------------------------------------------------------------


def test_raise_names_op_direction_reason_and_caller(dev):
    with pytest.raises(PageableCopyError) as err:
        with pageable_copy_check("raise", allow_meta=True):
            dev.copy_(torch.arange(8), non_blocking=True)  # RAISE-LINE
    text = str(err.value)
    assert f"{THIS_FILE}:{_line_of('# RAISE-LINE')}" in text
    for part in ("Tensor.copy_(", "H2D", "not pinned", "meta", "int64", "np_to_pinned_tensor"):
        assert part in text


def test_raise_happens_before_the_h2d_copy():
    src = torch.arange(8)
    with pytest.raises(PageableCopyError), pageable_copy_check("raise"):
        src.cuda(0, True)  # torch would raise RuntimeError (no device) if it got here


def test_warn_points_at_the_caller_and_continues(dev):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pageable_copy_check("warn", allow_meta=True) as check:
            dev.copy_(torch.arange(8), non_blocking=True)  # WARN-LINE
            dev.copy_(torch.arange(8), non_blocking=True)
    ours = [w for w in caught if issubclass(w.category, PageableCopyWarning)]
    assert len(ours) == 2 and len(check.violations) == 2
    assert (ours[0].filename, ours[0].lineno) == (THIS_FILE, _line_of("# WARN-LINE"))
    assert "H2D" in str(ours[0].message)


def test_record_collects_in_order_and_clear_empties(check, dev):
    with check:
        dev.copy_(torch.arange(8), non_blocking=True)
        torch.arange(8)[::2].to("meta", non_blocking=True)
    assert [(v.op, v.reason) for v in check.violations] == [("copy_", "pageable"), ("to", "non-dense")]
    check.clear()
    assert check.violations == []


def test_unknown_mode_is_rejected_with_the_choices():
    with pytest.raises(ValueError, match="raise.*warn.*record"):
        pageable_copy_check("loud")


def test_disabled_check_installs_nothing(dev):
    before = torch._C._len_torch_function_stack()
    with pageable_copy_check("raise", enabled=False, allow_meta=True) as check:
        assert torch._C._len_torch_function_stack() == before
        dev.copy_(torch.arange(8), non_blocking=True)
    assert check.violations == []


# --- scoping and restoration --------------------------------------------------------------

WATCHED = ("copy_", "to", "cuda", "xpu")


def _torch_state():
    return (
        torch._C._len_torch_function_stack(),
        tuple(getattr(torch.Tensor, name) for name in WATCHED),
        torch._C._is_torch_function_mode_enabled(),
    )


def test_torch_is_untouched_while_active_and_restored_after(dev):
    before = _torch_state()
    with pageable_copy_check("record", allow_meta=True):
        inside = _torch_state()
        assert inside[1] == before[1]  # no method was replaced
        assert inside[0] == before[0] + 1  # only our mode, on this thread
    assert _torch_state() == before


def test_restored_after_an_exception_in_the_body():
    before = _torch_state()
    with pytest.raises(KeyError), pageable_copy_check("record"):
        raise KeyError("body failed")
    assert _torch_state() == before


def test_restored_after_a_raised_violation(dev):
    before = _torch_state()
    with pytest.raises(PageableCopyError):
        with pageable_copy_check("raise", allow_meta=True):
            dev.copy_(torch.arange(8), non_blocking=True)
    assert _torch_state() == before
    dev.copy_(torch.arange(8), non_blocking=True)  # no longer checked


def test_nested_checks_both_see_inner_copies(dev):
    outer = pageable_copy_check("record", allow_meta=True)
    inner = pageable_copy_check("record", allow_meta=True)
    with outer:
        dev.copy_(torch.arange(8), non_blocking=True)
        with inner:
            dev.copy_(torch.arange(8), True)
        with inner:  # re-entering the same object
            with inner:
                dev.copy_(torch.arange(8), True)
    assert len(outer.violations) == 3
    assert len(inner.violations) == 3  # 1, then the last copy once per nested entry (2)
    assert _torch_state()[0] == 0


def test_decorator_form_checks_each_call_and_exposes_the_check(dev):
    @pageable_copy_check("record", allow_meta=True)
    def build(n):
        dev[:n].copy_(torch.arange(n), non_blocking=True)
        return n

    assert build(3) == 3 and build(0) == 0 and build(5) == 5
    check = build.pageable_copy_check
    assert [v.shape for v in check.violations] == [(3,), (5,)]
    assert build.__name__ == "build"
    dev.copy_(torch.arange(8), non_blocking=True)  # outside calls: unchecked
    assert len(check.violations) == 2


def test_decorator_raise_mode_restores_torch(dev):
    @pageable_copy_check("raise", allow_meta=True)
    def build():
        dev.copy_(torch.arange(8), non_blocking=True)

    with pytest.raises(PageableCopyError):
        build()
    assert _torch_state()[0] == 0


def test_other_threads_are_not_checked(dev):
    seen_in_thread = []

    def worker():
        seen_in_thread.append(torch._C._len_torch_function_stack())
        dev.copy_(torch.arange(8), non_blocking=True)

    with pageable_copy_check("raise", allow_meta=True) as check:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert seen_in_thread == [0] and check.violations == []


def test_one_check_entered_on_two_threads_collects_both(dev):
    check = pageable_copy_check("record", allow_meta=True)
    barrier = threading.Barrier(2)

    def worker(n):
        with check:
            barrier.wait()
            dev[:n].copy_(torch.arange(n), non_blocking=True)
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(n,)) for n in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(v.shape for v in check.violations) == [(2,), (3,)]


def test_package_exports_resolve_lazily():
    from pinfix import runtime

    assert runtime.pageable_copy_check is pageable_copy_check
    with pytest.raises(AttributeError, match="no attribute"):
        runtime.not_a_name  # noqa: B018
    assert "pinfix.runtime.checker" in sys.modules
