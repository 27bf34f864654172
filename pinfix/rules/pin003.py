"""PIN003: a non_blocking device-to-host copy read on the host before any wait."""

from __future__ import annotations

import ast
from typing import Any, Iterable, List, Optional

from .base import Case, Finding, Rule, RuleContext

_H = "import torch\n\n\n"


class UnsynchronizedHostRead(Rule):
    """
    PIN003: the result of a non_blocking device-to-host copy is read before anything waits.

    ## What it does
    Finds, in one function:

    - ``y = t.to("cpu", non_blocking=True)`` (also ``device=``, ``torch.device("cpu")``, or
      the call used directly) followed by a host read of ``y``;
    - ``buf.copy_(dev_tensor, non_blocking=True)`` into a ``buf`` that local data flow shows is
      a pageable CPU tensor (``torch.zeros(n)``, ``torch.empty(...)``...), followed by a host
      read of ``buf``,

    with no synchronize or event wait in between. What reads on the host comes from the
    effects table: ``.tolist()``, ``.item()``, ``print(...)``, ``bool/int/float/str(...)``, a
    truth test (``__bool__``), formatting (``f"{t}"``), handing it to a NumPy function
    (``np.asarray(t)``), and computing on it on the host (a comparison, arithmetic, advanced
    indexing). A view or slice of the destination (``y[0]``, ``buf[:n]``, ``.view(...)``, and
    ``.numpy()``, an array viewing it) is no read, and neither is another non_blocking copy
    into another part of it or sending it to the device; reading the view or the array later
    (``a.tolist()``, ``a[0]``, ``a.sum()``) is a read of the copy. Each copy is reported once,
    at its first read (whatever aliases and reads follow), naming the copy and the read.
    The search runs forward in source order and stops, without a report, at a
    ``synchronize()`` / ``wait()`` / ``wait_event()`` / ``wait_stream()``, at any call that may
    block on the device (``.item()``, ``.tolist()``, ``.cpu()`` of another tensor, a copy or
    ``.to`` without ``non_blocking=True``), and at any use of the name it cannot classify.

    ## Why is this bad?
    A non_blocking copy to the host only enqueues the copy. For ``.to("cpu",
    non_blocking=True)`` torch allocates the destination itself (pinned, on CUDA) and returns
    at once, so the host can read the tensor before the data has arrived: silently wrong
    values, not just lost overlap. For ``copy_`` into pageable memory, the copy gains no
    overlap (the driver stages it), and on a backend that does run it asynchronously the same
    stale read can happen.

    ## Example
    ```python
    lens = seq_lens_gpu.to("cpu", non_blocking=True)
    max_len = lens.max().item()
    ```

    Use instead:
    ```python
    lens = seq_lens_gpu.to("cpu", non_blocking=True)
    done = torch.cuda.Event()
    done.record()
    ...  # other host work overlaps the copy
    done.synchronize()
    max_len = lens.max().item()
    ```

    ## Fix safety
    Report only: where to wait (and which stream or event to use) is a design decision. Copy
    into a persistent pinned buffer and wait on an event recorded after the copy before
    reading, or drop ``non_blocking=True``.

    ## Not reported
    A read after a synchronize or event wait; a result only returned or passed on; a copy into
    a pinned buffer (``pin_memory=...``); a host-to-host copy; a copy into a buffer made on the
    default device where that is not known to be the CPU (``with torch.device(d):``), which is
    a device-to-device copy.
    Suppress one line with ``# noqa: PIN003`` or ``# lint-ignore: UnsynchronizedHostRead``.
    """

    code = "PIN003"
    name = "UnsynchronizedHostRead"

    VALID = [
        Case(
            _H
            + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    torch.cuda.synchronize()\n    return y.tolist()\n"
        ),
        Case(_H + "def f(t, ev):\n    y = t.to('cpu', non_blocking=True)\n    ev.synchronize()\n    return y[0]\n"),
        Case(_H + "def f(t):\n    return t.to('cpu', non_blocking=True)\n"),
        Case(_H + "def f(t):\n    return list(t.to('cpu', non_blocking=True))\n"),
        Case(_H + "def f(t):\n    y = t.to('cpu')\n    return y.tolist()\n"),
        Case(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    n = y.shape[0]\n    return n\n"),
        Case(_H + "def f(t, dev):\n    y = t.to(dev, non_blocking=True)\n    return y.tolist()\n"),
        Case(
            _H + "def f(t, n):\n    buf = torch.zeros(n, pin_memory=True)\n    buf.copy_(t, non_blocking=True)\n"
            "    torch.cuda.current_stream().synchronize()\n    return buf.tolist()\n"
        ),
        Case(_H + "def f(t, n):\n    buf = torch.zeros(n)\n    buf.copy_(t, non_blocking=True)\n    return buf\n"),
        Case(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    return y.tolist()  # noqa: PIN003\n"),
        Case(
            _H
            + "def f(t, n):\n    buf = torch.zeros(n)\n    buf.copy_(torch.ones(n), non_blocking=True)\n    return buf[0]\n"
        ),
        # `.numpy()` views the destination: the array is read later, after a wait.
        Case(_H + "def f(t):\n    return t.to('cpu', non_blocking=True).numpy()\n"),
        Case(
            _H
            + "def f(t, ev):\n    a = t.to('cpu', non_blocking=True).numpy()\n    ev.synchronize()\n    return a.tolist()\n"
        ),
        # A view or slice of the destination reads nothing; nor does another non_blocking
        # copy into another part of it, or sending it to the device.
        Case(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    return y[0]\n"),
        Case(
            _H + "def f(a, b, n):\n    buf = torch.empty(2 * n)\n    buf[:n].copy_(a, non_blocking=True)\n"
            "    buf[n:].copy_(b, non_blocking=True)\n    torch.cuda.synchronize()\n    return buf.tolist()\n"
        ),
        Case(
            _H + "def f(a, n):\n    buf = torch.empty(2 * n)\n    buf.copy_(a, non_blocking=True)\n    head = buf[:n]\n"
            "    rows = buf.view(2, n)\n    torch.cuda.synchronize()\n    return head.tolist(), rows\n"
        ),
        Case(
            _H + "def f(a, n, dev):\n    buf = torch.empty(n)\n    buf.copy_(a, non_blocking=True)\n"
            "    back = buf.to(dev, non_blocking=True)\n    torch.cuda.synchronize()\n    return buf.tolist(), back\n"
        ),
        # Made on the default device (not the CPU here): a device-to-device copy.
        Case(
            _H
            + "def f(t, n, dev):\n    with torch.device(dev):\n        buf = torch.zeros(n)\n    buf.copy_(t, non_blocking=True)\n    return buf.tolist()\n"
        ),
        Case(
            _H
            + "def f(t, n, dev):\n    torch.set_default_device(dev)\n    buf = torch.empty(n)\n    buf.copy_(t, non_blocking=True)\n    return buf.tolist()\n"
        ),
    ]

    INVALID = [
        Case(
            _H
            + "def f(t, n):\n    with torch.device('cpu'):\n        buf = torch.zeros(n)\n    buf.copy_(t, non_blocking=True)\n    return buf.tolist()\n"
        ),
        Case(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    return y.tolist()\n"),
        Case(_H + "def f(t):\n    y = t.to(device='cpu', non_blocking=True)\n    return y.item()\n"),
        Case(_H + "def f(t):\n    y = t.to(torch.device('cpu'), non_blocking=True)\n    print(y)\n"),
        Case(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    if y == 0:\n        return 1\n"),
        Case(_H + "def f(t):\n    return t.to('cpu', non_blocking=True).tolist()\n"),
        Case(
            _H
            + "def f(t, n):\n    buf = torch.zeros(n)\n    buf.copy_(t, non_blocking=True)\n    return buf.tolist()\n"
        ),
        Case(_H + "def f(t, n):\n    buf = torch.empty(n, 4)\n    buf[:2].copy_(t, True)\n    return int(buf[0, 0])\n"),
        # A truth test calls `__bool__`, which the effects table says reads on the host.
        Case(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    while not y:\n        return 1\n"),
        # Formatted, read through a view, read through the array that views it, handed to NumPy.
        Case(_H + "def f(t):\n    a = t.to('cpu', non_blocking=True).numpy()\n    return a.tolist()\n"),
        Case(_H + "def f(t):\n    a = t.to('cpu', non_blocking=True).numpy()\n    return int(a[0])\n"),
        Case(
            "import numpy as np\n" + _H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    return np.cumsum(y)\n"
        ),
        Case(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    return f'{y}'\n"),
        Case(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    head = y[:2]\n    return head.tolist()\n"),
    ]

    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        out = []
        seen = set()
        # In source order: each copy is reported once, at its first read, whatever
        # aliases and reads follow.
        for read in ctx.facts.reads:
            copy = read.pending.copy
            if id(copy) in seen:
                continue
            seen.add(id(copy))
            src = ctx.src
            node = read.node
            line = copy.lineno
            read_text = src.short(read.node, 50)
            if read.pending.name:
                root = read.pending.name
                message = (
                    f"`{root}` is pageable memory filled by `{src.short(copy, 50)}` from the device (line {line}) "
                    f"and read on the host by `{read_text}` with no synchronize or event wait in between: a pageable "
                    "destination gains no overlap, and where the backend runs the copy asynchronously the host may read "
                    "data that has not arrived yet; copy into a pinned buffer and wait on an event before reading, or drop "
                    "`non_blocking=True`"
                )
                summary = f"`{root}` is read on the host before its non_blocking copy from the device (line {line}) is waited on"
                pattern = "copy_/d2h"
            else:
                device = _device_text(copy, src)
                what = f"the result of `.to({device}, non_blocking=True)` (line {line})"
                if read.direct:
                    message = f"{what} is read on the host right away by `{read_text}`; {WHY}"
                    summary = f"{what} is read on the host before anything waits for it"
                    pattern = "to-cpu/inline"
                else:
                    held = _held_name(read.node)
                    subject = f"`{held.id}` holds {what}" if held is not None else what.capitalize()
                    message = (
                        f"{subject} and is read by `{read_text}` with no synchronize or event wait in between; {WHY}"
                    )
                    summary = f"{subject} and is read before anything waits for it"
                    pattern = "to-cpu/bound"
                    if held is not None:
                        node = held  # the name read, not the call or comparison around it
            out.append(ctx.finding(self.code, node, message, pattern, None, "report only", summary=summary))
        return out


WHY = (
    "torch returns it before the device-to-host copy has finished (on CUDA into pinned memory it "
    "allocates itself), so the host may read data that has not arrived yet; record an event after the "
    "copy and wait on it (`event.synchronize()`, or `torch.cuda.synchronize()`) before reading, or drop "
    "`non_blocking=True`"
)


def _device_text(copy: ast.Call, src: Any) -> str:
    for k in copy.keywords:
        if k.arg == "device":
            return src.segment(k.value)  # type: ignore[no-any-return]
    if copy.args:
        return src.segment(copy.args[0])  # type: ignore[no-any-return]
    return "cpu"


def _held_name(node: ast.AST) -> Optional[ast.Name]:
    """The name whose data ``node`` reads (``y`` of ``y.tolist()``, ``print(y)``)."""
    callees = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and id(n) not in callees:
            return n
    return None


__all__: List[str] = ["UnsynchronizedHostRead"]
