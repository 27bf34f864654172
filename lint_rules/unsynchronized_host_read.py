"""PIN003: a non_blocking device-to-host copy read on the host before any wait."""

from __future__ import annotations

from typing import List

import libcst as cst
from fixit import Invalid, LintRule, Valid

from pinfix.analysis import REQUIRED_METADATA
from pinfix.config import load_config

from ._report import report_findings

_H = "import torch\n\n\n"


class UnsynchronizedHostRead(LintRule):
    """
    PIN003: the result of a non_blocking device-to-host copy is read before anything waits.

    ## What it does
    Finds, in one function:

    - ``y = t.to("cpu", non_blocking=True)`` (also ``device=``, ``torch.device("cpu")``, or
      the call used directly) followed by a host read of ``y``;
    - ``buf.copy_(dev_tensor, non_blocking=True)`` into a ``buf`` that local data flow shows is
      a pageable CPU tensor (``torch.zeros(n)``, ``torch.empty(...)``...), followed by a host
      read of ``buf``,

    with no synchronize or event wait in between. A host read is ``.tolist()``, ``.item()``,
    indexing, ``print(...)``, ``bool/int/float/str(...)``, a comparison or a truth test.
    ``.numpy()`` and ``list(t)`` are not reads (they make views: ``t.to("cpu",
    non_blocking=True).numpy()`` whose reader waits on an event later is a common idiom).
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
    a pinned buffer (``pin_memory=...``); a host-to-host copy.
    Suppress one line with ``# noqa: PIN003`` or ``# lint-ignore: UnsynchronizedHostRead``.
    """

    METADATA_DEPENDENCIES = REQUIRED_METADATA

    VALID = [
        Valid(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    torch.cuda.synchronize()\n    return y.tolist()\n"),
        Valid(_H + "def f(t, ev):\n    y = t.to('cpu', non_blocking=True)\n    ev.synchronize()\n    return y[0]\n"),
        Valid(_H + "def f(t):\n    return t.to('cpu', non_blocking=True)\n"),
        Valid(_H + "def f(t):\n    return t.to('cpu', non_blocking=True).numpy()\n"),
        Valid(_H + "def f(t):\n    return list(t.to('cpu', non_blocking=True))\n"),
        Valid(_H + "def f(t):\n    y = t.to('cpu')\n    return y.tolist()\n"),
        Valid(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    n = y.shape[0]\n    return n\n"),
        Valid(_H + "def f(t, dev):\n    y = t.to(dev, non_blocking=True)\n    return y.tolist()\n"),
        Valid(
            _H + "def f(t, n):\n    buf = torch.zeros(n, pin_memory=True)\n    buf.copy_(t, non_blocking=True)\n"
            "    torch.cuda.current_stream().synchronize()\n    return buf.tolist()\n"
        ),
        Valid(_H + "def f(t, n):\n    buf = torch.zeros(n)\n    buf.copy_(t, non_blocking=True)\n    return buf\n"),
        Valid(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    return y.tolist()  # noqa: PIN003\n"),
        Valid(_H + "def f(t, n):\n    buf = torch.zeros(n)\n    buf.copy_(torch.ones(n), non_blocking=True)\n    return buf[0]\n"),
    ]

    INVALID = [
        Invalid(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    return y.tolist()\n"),
        Invalid(_H + "def f(t):\n    y = t.to(device='cpu', non_blocking=True)\n    return y.item()\n"),
        Invalid(_H + "def f(t):\n    y = t.to(torch.device('cpu'), non_blocking=True)\n    print(y)\n"),
        Invalid(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    return y[0]\n"),
        Invalid(_H + "def f(t):\n    y = t.to('cpu', non_blocking=True)\n    if y == 0:\n        return 1\n"),
        Invalid(_H + "def f(t):\n    return t.to('cpu', non_blocking=True).tolist()\n"),
        Invalid(_H + "def f(t, n):\n    buf = torch.zeros(n)\n    buf.copy_(t, non_blocking=True)\n    return buf.tolist()\n"),
        Invalid(_H + "def f(t, n):\n    buf = torch.empty(n, 4)\n    buf[:2].copy_(t, True)\n    return int(buf[0, 0])\n"),
    ]

    def __init__(self) -> None:
        super().__init__()
        # Fixit gives rules no file path: settings come from the working directory's project.
        self.config = load_config()

    def visit_Module(self, node: cst.Module) -> None:
        report_findings(self, node, "PIN003")


__all__: List[str] = ["UnsynchronizedHostRead"]
