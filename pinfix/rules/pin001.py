"""PIN001: a non_blocking host-to-device copy whose source is ``torch.from_numpy``."""

from __future__ import annotations

from typing import Iterable, List

from .base import Case, Finding, Rule, RuleContext
from .pageable import pageable_findings

H2D_SETTINGS = (("h2d-helper", "vllm.utils.torch_utils.async_tensor_h2d"),)

_HEADER = "import numpy as np\nimport torch\n\nINDEX = torch.int32\n\n\n"
_FIXED_HEADER = "import numpy as np\nimport torch\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\n\nINDEX = torch.int32\n\n\n"


class PageableNonBlockingCopy(Rule):
    """
    PIN001: pageable ``torch.from_numpy`` source of a non_blocking copy.

    ## What it does
    Finds host-to-device copies requested with ``non_blocking=True`` (``dst.copy_(src,
    non_blocking=True)``, ``src.to(device, non_blocking=True)``, ``src.cuda(...)``,
    ``src.xpu(...)``, keyword or positional) whose CPU source is ``torch.from_numpy(a)``,
    passed directly or bound to a local name earlier in the same function.

    ## Why is this bad?
    ``torch.from_numpy`` returns a tensor that shares the NumPy array's pageable memory.
    A DMA engine cannot read pageable memory asynchronously, so the CUDA, HIP and XPU
    runtimes stage it through a pinned bounce buffer first and the host thread blocks
    until that is done: ``non_blocking=True`` silently becomes a synchronous copy and
    the CPU/GPU overlap the code asked for is lost.

    ## Example
    ```python
    self.req_id_per_token_buffer[:n].copy_(
        torch.from_numpy(req_id_per_token), non_blocking=True
    )
    ```

    Use instead:
    ```python
    from vllm.utils.torch_utils import np_to_pinned_tensor

    self.req_id_per_token_buffer[:n].copy_(
        np_to_pinned_tensor(req_id_per_token), non_blocking=True
    )
    ```

    ## Fix safety
    The fix replaces ``torch.from_numpy(a)`` by the configured helper
    (``[tool.pinfix] helper``; unset, ``vllm.utils.torch_utils.np_to_pinned_tensor`` in a
    project that is vLLM or depends on it) and imports it in isort order, merged into an
    existing ``from`` import of that module. In any other project with no helper set, the
    fix appends ``.pin_memory()`` instead (no import), and is always unsafe: it raises where
    no accelerator is available, where vLLM's helper returns the plain tensor.
    The helper copies ``a`` into pinned memory, where ``from_numpy`` shares it. When the
    call is the copy's argument the copy reads the same values either way: the fix is
    safe. When the tensor is bound to a name first (``src = ...`` or ``(src := ...)``), it
    is safe only if nothing else uses that name and nothing may write the array between the
    binding and the copy: not the array's name, nor another reference to its memory (an
    alias ``b = a``, a view ``a[1:]`` / ``a.T`` / ``np.asarray(a)``, a container holding it,
    a second tensor on it, a nested function that sees it), nor a call that receives any of
    them, nor, for an array the caller or another object may hold (a parameter, a global, an
    array passed or stored elsewhere), any call pinfix cannot see into, nor a ``yield``,
    ``await`` or ``exec``. Otherwise it is unsafe (applied with ``--unsafe-fixes``) and the
    message says why. No fix is
    offered where the helper's name is already bound to something else (in the function, the
    module, or by a ``global`` statement in another function of the module), or in the module
    that defines the helper.

    With ``[tool.pinfix] h2d-helper`` set (vLLM: ``vllm.utils.torch_utils.async_tensor_h2d``),
    a ``.to(device[, dtype], non_blocking=True)`` sink is rewritten instead, as vLLM did by
    hand in 0.29.0: ``torch.from_numpy(a).to(dev, non_blocking=True)`` becomes
    ``async_tensor_h2d(a, device=dev)`` (``.to``'s dtype kept as ``dtype=``); a local pageable
    tensor ``x.to(dev, non_blocking=True)`` becomes ``async_tensor_h2d(x, dev)``. The helper
    pins what it is given when it is called, where ``.to`` reads it: the result's device,
    dtype and values are the same. But on a CPU device ``.to`` returns the tensor itself, the
    helper a pinned copy: for ``torch.from_numpy(a).to(dev, ...)`` (which shares ``a``'s memory)
    or a name used elsewhere, the fix is safe only where the device is known to be an
    accelerator (``"cuda"``, ``torch.device("cuda", 0)``, an index), and unsafe otherwise; so is
    the ``np_to_pinned_tensor`` fix of ``torch.from_numpy(a).to(dev, ...)`` (unless ``copy=True``). Sinks with
    ``copy=`` / ``memory_format=``, a ``.to(other_tensor)``, comments in the call, the helper's
    name taken or its own module keep the fix above.

    ## Not reported
    ``non_blocking=False`` or absent; ``.to("cpu", ...)``; a source made pinned
    (``.pin_memory()``, the helper); ``non_blocking=<expression>`` unless ``strict``; a path a
    test rules out (``x.is_pinned() and x.to(d, non_blocking=True)``, ``isinstance(a, np.ndarray)``
    of a tensor, the false branch of an availability flag, or, unless ``strict``, of a flag
    pinfix cannot see: see PIN002 for the flags that count).
    Suppress one line with ``# noqa: PIN001`` or ``# lint-ignore: PageableNonBlockingCopy``.
    """

    code = "PIN001"
    name = "PageableNonBlockingCopy"

    VALID = [
        # Narrowing: the tests rule the pageable path out.
        Case(
            _HEADER
            + "def f(a, d):\n    x = torch.from_numpy(a)\n    return x.to(d, non_blocking=True) if x.is_pinned() else x.to(d)\n"
        ),
        Case(
            _HEADER
            + "def f(a, d):\n    x = torch.from_numpy(a)\n    return x.is_pinned() and x.to(d, non_blocking=True)\n"
        ),
        Case(
            _HEADER + "from vllm.utils.platform_utils import is_pin_memory_available\n\n\ndef f(a, d):\n"
            "    x = torch.from_numpy(a)\n    if not is_pin_memory_available():\n        return x.to(d)\n"
            "    else:\n        return x.pin_memory().to(d, non_blocking=True)\n"
        ),
        Case(
            _HEADER + "def f(a, d):\n    x = torch.from_numpy(a).pin_memory()\n    if isinstance(x, np.ndarray):\n"
            "        x = torch.from_numpy(x)\n    return x.to(d, non_blocking=True)\n"
        ),
        # A flag pinfix cannot see (a parameter, a call it cannot follow, an attribute plain
        # mode does not read) is read as an availability flag, unless `strict`.
        Case(
            _HEADER
            + "def f(a, d, allowed):\n    x = torch.from_numpy(a)\n    if allowed(d):\n        x = x.pin_memory()\n"
            "    return x.to(d, non_blocking=True)\n"
        ),
        Case(
            _HEADER
            + "def f(self, a, dev):\n    x = torch.from_numpy(a)\n    if not self.pin_memory:\n        y = x\n    else:\n"
            "        y = x.pin_memory()\n    return y.to(dev, non_blocking=True)\n"
        ),
        Case(
            _HEADER
            + "def f(self, a, dev):\n    x = torch.from_numpy(a)\n    return (x.pin_memory() if self.pin else x).to(dev, non_blocking=True)\n"
        ),
        Case(_HEADER + "def f(dst, a):\n    dst.copy_(torch.from_numpy(a))\n"),
        Case(_HEADER + "def f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=False)\n"),
        Case(_HEADER + "def f(dst, a):\n    dst.copy_(torch.from_numpy(a), False)\n"),
        Case(_HEADER + "def f(a):\n    return torch.from_numpy(a).to('cpu', non_blocking=True)\n"),
        Case(_HEADER + "def f(a):\n    return torch.from_numpy(a).to(device='cpu:0', non_blocking=True)\n"),
        Case(_HEADER + "def f(a):\n    return torch.from_numpy(a).to(torch.device('cpu'), non_blocking=True)\n"),
        Case(_HEADER + "def f(a):\n    return torch.from_numpy(a).to(torch.float16, True)\n"),
        Case(_HEADER + "def f(a):\n    return torch.from_numpy(a).to(dtype=torch.float16, non_blocking=True)\n"),
        Case(_HEADER + "def f(dst, a):\n    dst.copy_(torch.from_numpy(a).pin_memory(), non_blocking=True)\n"),
        Case(_HEADER + "def f(a, dev):\n    return torch.from_numpy(a).pin_memory().to(dev, non_blocking=True)\n"),
        Case(
            _HEADER
            + "from vllm.utils.torch_utils import np_to_pinned_tensor\n\n"
            + "def f(dst, a):\n    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)\n"
        ),
        Case(_HEADER + "def f(dst, a, nb):\n    dst.copy_(torch.from_numpy(a), non_blocking=nb)\n"),
        Case(
            _HEADER + "def from_numpy(a):\n    return a\n\n"
            "def f(dst, a):\n    dst.copy_(from_numpy(a), non_blocking=True)\n"
        ),
        Case(_HEADER + "def f(dst, src):\n    dst.copy_(src, non_blocking=True)\n"),
        Case(
            _HEADER + "def f(dst, a):\n    src = torch.from_numpy(a)\n    src = src.pin_memory()\n"
            "    dst.copy_(src, non_blocking=True)\n"
        ),
        Case(_HEADER + "def f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)  # noqa: PIN001\n"),
        Case(
            _HEADER + "def f(dst, a):\n    # lint-ignore: PageableNonBlockingCopy\n"
            "    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
        ),
        Case(
            _HEADER + "def f(dst, a):\n    # lint-fixme: PIN001\n"
            "    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
        ),
    ]

    INVALID = [
        Case(
            _HEADER
            + "def f(a, d):\n    x = torch.from_numpy(a)\n    return x.is_pinned() or x.to(d, non_blocking=True)\n"
        ),
        # Pinned only when a flag pinfix cannot see is true: the other path is reported with `strict`.
        Case(
            _HEADER
            + "def f(a, d, allowed):\n    x = torch.from_numpy(a)\n    if allowed(d):\n        x = x.pin_memory()\n"
            "    return x.to(d, non_blocking=True)\n",
            settings=(("strict", True),),
        ),
        Case(
            _HEADER + "def f(a, n, dev):\n    x = torch.from_numpy(a)\n    if n:\n        x = x.pin_memory()\n"
            "    return x.to(dev, non_blocking=True)\n",
            settings=(("strict", True),),
        ),
        # Pinned only when a flag pinfix traces (and that is no availability flag) is true:
        # the other path blocks whenever it runs.
        Case(
            _HEADER
            + "def f(a, n, dev):\n    x = torch.from_numpy(a)\n    pin = len(a) > 8\n    if pin:\n        x = x.pin_memory()\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        Case(
            _HEADER
            + "def f(a, dev):\n    x = torch.from_numpy(a)\n    x = x.pin_memory() if len(a) > 8 else x\n    return x.to(dev, non_blocking=True)\n"
        ),
        # A module-level pageable tensor copied in a function (fixed where it is made: no fix here).
        Case(_HEADER + "src = torch.from_numpy(np.zeros(3))\n\ndef f(dst):\n    dst.copy_(src, non_blocking=True)\n"),
        Case(
            _HEADER + "def f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n",
            fixed=_FIXED_HEADER + "def f(dst, a):\n    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)\n",
        ),
        Case(
            _HEADER + "def f(dst, a):\n    dst.copy_(torch.from_numpy(a), True)\n",
            fixed=_FIXED_HEADER + "def f(dst, a):\n    dst.copy_(np_to_pinned_tensor(a), True)\n",
        ),
        Case(
            _HEADER + "def f(a):\n    return torch.from_numpy(a).to('cuda', non_blocking=True)\n",
            fixed=_FIXED_HEADER + "def f(a):\n    return np_to_pinned_tensor(a).to('cuda', non_blocking=True)\n",
        ),
        # Unsafe fix: `dev` may be the CPU, where `.to` returns the tensor on the array's memory itself.
        Case(_HEADER + "def f(a, dev):\n    return torch.from_numpy(a).to(dev, non_blocking=True)\n"),
        Case(
            _HEADER
            + "def f(a, dev):\n    return torch.from_numpy(a).to(device=dev, dtype=torch.int64, non_blocking=True)\n",
        ),
        Case(_HEADER + "def f(a, dev):\n    return torch.from_numpy(a).to(dev, torch.int64, True)\n"),
        Case(_HEADER + "def f(a):\n    return torch.from_numpy(a).to('cuda', non_blocking=True)\n"),
        Case(_HEADER + "def f(a):\n    return torch.from_numpy(a).cuda(non_blocking=True)\n"),
        Case(_HEADER + "def f(a):\n    return torch.from_numpy(a).cuda(0, True)\n"),
        Case(_HEADER + "def f(a):\n    return torch.from_numpy(a).xpu(non_blocking=True)\n"),
        Case(_HEADER + "def f(dst, a):\n    torch.Tensor.copy_(dst, torch.from_numpy(a), non_blocking=True)\n"),
        Case(
            _HEADER + "def f(dst, a):\n    src = torch.from_numpy(a)\n    dst.copy_(src, non_blocking=True)\n",
            fixed=_FIXED_HEADER
            + "def f(dst, a):\n    src = np_to_pinned_tensor(a)\n    dst.copy_(src, non_blocking=True)\n",
        ),
        # Unsafe fix: `src` is read again after the copy (reported, not fixed by default).
        Case(
            _HEADER + "def f(dst, a):\n    src = torch.from_numpy(a)\n    dst.copy_(src, non_blocking=True)\n"
            "    return src\n"
        ),
        Case(
            "import torch as th\n\n\ndef f(dst, a):\n    dst.copy_(th.from_numpy(a), non_blocking=True)\n"
            "    return th.int32\n",
            fixed="import torch as th\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\n\n\n"
            "def f(dst, a):\n    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)\n    return th.int32\n",
        ),
        Case(
            "from torch import from_numpy\n\ndef f(dst, a):\n    dst.copy_(from_numpy(a), non_blocking=True)\n",
            fixed="from vllm.utils.torch_utils import np_to_pinned_tensor\n\n\n"
            "def f(dst, a):\n    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)\n",
        ),
        Case(
            _HEADER + "def f(dst, a, nb):\n    dst.copy_(torch.from_numpy(a), non_blocking=nb)  # noqa: PIN002\n"
            "    dst.copy_(torch.from_numpy(a), non_blocking=True)  # noqa: PIN002\n"
        ),
        # No fix: the helper's name is taken by something else in this module.
        Case(
            _HEADER + "np_to_pinned_tensor = None\n\n"
            "def f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
        ),
    ]

    #: Cases with ``[tool.pinfix] h2d-helper = "vllm.utils.torch_utils.async_tensor_h2d"``.
    H2D_VALID = [
        Case(
            _HEADER + "from vllm.utils.torch_utils import async_tensor_h2d\n\n"
            "def f(a, dev):\n    return async_tensor_h2d(a, device=dev)\n"
        ),
        Case(_HEADER + "def f(a, dev):\n    return torch.from_numpy(a).to(dev)\n"),
    ]
    H2D_INVALID = [
        Case(
            _HEADER + "def f(a):\n    return torch.from_numpy(a).to('cuda', non_blocking=True)\n",
            fixed="import numpy as np\nimport torch\nfrom vllm.utils.torch_utils import async_tensor_h2d\n\n"
            "INDEX = torch.int32\n\n\ndef f(a):\n    return async_tensor_h2d(a, device='cuda')\n",
        ),
        Case(
            _HEADER
            + "def f(a):\n    return torch.from_numpy(a).to(device=torch.device('cuda', 0), dtype=INDEX, non_blocking=True)\n",
            fixed="import numpy as np\nimport torch\nfrom vllm.utils.torch_utils import async_tensor_h2d\n\n"
            "INDEX = torch.int32\n\n\ndef f(a):\n    return async_tensor_h2d(a, device=torch.device('cuda', 0), dtype=INDEX)\n",
        ),
        # Unsafe: on a CPU `dev`, `.to` returns the tensor on the array's memory, the helper a copy.
        Case(_HEADER + "def f(a, dev):\n    return torch.from_numpy(a).to(dev, non_blocking=True)\n"),
        # copy=: the np_to_pinned_tensor fix instead.
        Case(
            _HEADER + "def f(a, dev):\n    return torch.from_numpy(a).to(dev, copy=True, non_blocking=True)\n",
            fixed=_FIXED_HEADER
            + "def f(a, dev):\n    return np_to_pinned_tensor(a).to(dev, copy=True, non_blocking=True)\n",
        ),
        # Bound name used again: unsafe, reported without a fix.
        Case(
            _HEADER
            + "def f(a, dev):\n    x = torch.from_numpy(a)\n    y = x.to(dev, non_blocking=True)\n    return x, y\n"
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        return [f for f in pageable_findings(ctx) if f.code == self.code]


for _case in (*PageableNonBlockingCopy.H2D_VALID, *PageableNonBlockingCopy.H2D_INVALID):
    object.__setattr__(_case, "settings", H2D_SETTINGS)

__all__: List[str] = ["PageableNonBlockingCopy"]
