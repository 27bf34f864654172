"""PIN002: a non_blocking host-to-device copy from another pageable CPU source."""

from __future__ import annotations

from typing import Iterable, List

from .base import Case, Finding, Rule, RuleContext
from .pageable import pageable_findings

_H = "import numpy as np\nimport torch\n\nfrom vllm.utils.platform_utils import is_pin_memory_available\n\n\n"


class PageableCpuSource(Rule):
    """
    PIN002: pageable CPU tensor (other than ``torch.from_numpy``) copied non_blocking.

    ## What it does
    Finds host-to-device copies requested with ``non_blocking=True`` (``dst.copy_(src, ...)``,
    ``src.to(device, ...)``, ``src.cuda(...)``, ``src.xpu(...)``) whose CPU source is made, in
    the same function, by one of:

    - ``torch.tensor(...)``, or a CPU factory ``torch.arange / zeros / ones / empty / full``,
      or ``torch.zeros_like / ones_like / empty_like / full_like`` of a CPU tensor, without an
      accelerator ``device=`` (``device=x.device`` of a CPU tensor pinfix can see counts as
      the CPU) and without a ``pin_memory=`` that may be true;
    - ``torch.as_tensor(...)`` / ``torch.asarray(...)`` of plain host data (a list or tuple, a
      number, a NumPy call, a ``.numpy()`` or ``.tolist()`` result);
    - a legacy constructor, ``torch.Tensor(data)``, ``torch.LongTensor(ids)`` and the other
      typed ``torch.*Tensor(...)`` (always a CPU copy; they take no ``pin_memory=``, so no fix);
    - ``t.cpu()``;
    - a tokenizer's or processor's output asked for with ``return_tensors="pt"``;
    - ``default_collate(items)`` of items that hold only host data, arrays and CPU tensors
      (pinned or not: the batch is stacked into fresh memory).

    The source may be the copy's argument or reach it through local names, dense slices and
    views (``x[:n]``, ``x[i, :k]``, ``.view``, ``.reshape``, ``.t()``...) and CPU conversions
    (``.long()``, ``.to(torch.int32)``, ``.contiguous()``...); anything pinfix cannot see
    through (a parameter, an attribute, an unknown call) stops the search. ``x += ...`` works
    in place (``xs += [t]`` extends a list pinfix reads). A plain assignment
    in the function's body overwrites a parameter (``x = x.cpu()``). When a name may hold
    tensors made in different ways, all pageable, it is reported as the computed one, without
    a fix (``x = torch.from_numpy(a)``, then in a branch ``x = torch.cat((x, pad))``).

    It also reports fresh tensors computed on the CPU from a CPU tensor pinfix can see, pinned
    or not: ``torch.cat`` / ``stack`` / ``concat`` of a list display or of a list grown with
    ``.append``, arithmetic and comparisons, advanced indexing (``x[idx]`` with a list, a CPU
    tensor or a NumPy array), ``.clone()``, ``.repeat_interleave()``, ``.cumsum()``,
    ``torch.nn.functional.pad`` and the like: torch allocates such results with the default
    (pageable) allocator. A 0-dim CPU operand (``x.sum()``, ``torch.tensor(n)``) is left alone:
    it combines with a device tensor on the device. With ``[tool.pinfix] cpu-tensor-names``
    (vLLM: ``["*_cpu", "*_cpu_tensor"]``) a variable or attribute so named counts as a CPU
    tensor of unknown memory: what is computed from it, or a gapped view of it, is reported.

    It also reports a gapped (non-dense) view of a CPU tensor copied non_blocking: a slice
    with a step (``x[::2]``) or a narrowed dimension after a wider one (``x[:, :k]``,
    ``x[:, 0]``), or a view that may not be dense (``expand``, ``narrow`` of a dimension other
    than the first, ``diagonal``, ``unfold``), of ``torch.empty(..., pin_memory=...)``,
    ``t.pin_memory()`` or any other CPU tensor pinfix can see.

    ## Why is this bad?
    The runtime cannot DMA from pageable memory asynchronously: it stages the data through a
    pinned bounce buffer while the host thread waits, so ``non_blocking=True`` silently becomes
    a synchronous copy. A gapped view is first gathered into a pageable temporary by torch,
    with the same effect, even when its base is pinned.

    ## Example
    ```python
    idx = torch.tensor(token_indices, dtype=torch.int32)
    out = idx.to(device, non_blocking=True)
    ```

    Use instead:
    ```python
    from vllm.utils.platform_utils import is_pin_memory_available

    idx = torch.tensor(token_indices, dtype=torch.int32, pin_memory=is_pin_memory_available())
    out = idx.to(device, non_blocking=True)
    ```

    ## Fix safety
    Only factories that take ``pin_memory=`` (``torch.tensor``, ``arange``, ``zeros``, ``ones``,
    ``empty``, ``full``, ``*_like``) get a fix: ``pin_memory=<expr>`` is added, with ``<expr>``
    from ``[tool.pinfix] pin-memory-expr`` and its import from ``pin-memory-import``
    (for vLLM: ``"is_pin_memory_available()"`` and
    ``"vllm.utils.platform_utils.is_pin_memory_available"``). Without that setting the fix
    writes ``pin_memory=True``, which fails on machines without an accelerator, so it is unsafe.
    It is also unsafe when the tensor is bound to a name that is used again after the copy, or
    the copy runs in a loop the binding is outside of: once pinned, the copy really is
    asynchronous, and a later host write to the tensor would race with it. No fix when
    ``pin_memory=False`` is written out, when a factory has a ``layout=`` other than
    ``torch.strided`` (torch refuses to pin a sparse tensor), when a conversion (``.long()``) or gapped view sits
    between the source and the copy (pinning the source would not help), or for sources with no
    ``pin_memory=`` (``as_tensor``, ``asarray``, ``.cpu()``): the message suggests a persistent
    pinned staging buffer (allocated once with ``pin_memory=True``, as vLLM's ``CpuGpuBuffer``).
    Computed results get no fix either (a fresh tensor cannot be allocated pinned); in deep
    mode neither do sources made in another function: the message names the origin to fix.

    With ``[tool.pinfix] h2d-helper`` set (vLLM: ``vllm.utils.torch_utils.async_tensor_h2d``),
    a ``.to(device[, dtype], non_blocking=True)`` sink is rewritten to the helper instead:
    ``x.to(dev, non_blocking=True)`` -> ``async_tensor_h2d(x, dev)`` for a traced CPU tensor
    (also after a conversion), ``torch.tensor(data, dtype=T).to(dev, non_blocking=True)`` ->
    ``async_tensor_h2d(data, device=dev, dtype=T)`` when ``data`` is plainly Python data and
    ``.to`` has no dtype of its own. Safe, unsafe when a traced name is used elsewhere (on a
    CPU device ``.to`` returns the tensor itself, the helper a pinned copy).

    ## Not reported
    An accelerator ``device=``; ``pin_memory=`` given (any value but ``False``); a copy whose
    destination is itself a CPU tensor pinfix can see; a dense slice of a pinned tensor;
    ``as_tensor`` of something that may already be a device tensor.
    Suppress one line with ``# noqa: PIN002`` or ``# lint-ignore: PageableCpuSource``.
    """

    code = "PIN002"
    name = "PageableCpuSource"

    VALID = [
        Case(_H + "def f(ids, dev):\n    return torch.tensor(ids, device=dev).to(dev, non_blocking=True)\n"),
        # A comprehension's own variable holds what its iterable holds: pinned here.
        Case(
            _H + "def f(rows, dev):\n    hosts = [torch.tensor(r).pin_memory() for r in rows]\n"
            "    return [h.to(dev, non_blocking=True) for h in hosts]\n"
        ),
        # Items on the device (or that pinfix cannot follow) collate on the device.
        Case(
            _H + "from torch.utils.data import default_collate\n\n\ndef f(n, dev):\n"
            "    return default_collate([torch.zeros(2, device=dev) for _ in range(n)]).to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(x, n, dev):\n    return torch.full((n,), 0, device=x.device).to(dev, non_blocking=True)\n"),
        # `part` may be 0-dim (an integer index): it would follow the other operand's device.
        Case(
            _H + "def f(t, i, x, dev):\n    part = t.cpu()[i]\n"
            "    return (part - x).to(dev, non_blocking=True)\n"
        ),
        # `x += 1` in place keeps pinned memory pinned.
        Case(
            _H + "def f(n, dev):\n    x = torch.zeros(n, pin_memory=True)\n    x += 1\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        # Empty: the copy moves nothing and cannot block.
        Case(_H + "def f(dev):\n    return torch.zeros(0).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(dev):\n    return torch.empty((4, 0), dtype=torch.int32).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(dev):\n    return torch.full([0], 1.0).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(ids, dev):\n    return torch.tensor(ids, pin_memory=True).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(ids, dev, pin):\n    return torch.tensor(ids, pin_memory=pin).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(ids, dev):\n    return torch.tensor(ids).to(dev)\n"),
        Case(_H + "def f(n, dev):\n    return torch.arange(n).to(dev, non_blocking=False)\n"),
        Case(_H + "def f(x, dev):\n    return torch.as_tensor(x).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(x, dev):\n    return torch.zeros_like(x).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    return torch.arange(n).to(torch.int32, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    return torch.arange(n).pin_memory().to(dev, non_blocking=True)\n"),
        Case(
            _H + "def f(n, dev):\n    buf = torch.empty(n, 8, pin_memory=True)\n"
            "    return buf[:n // 2].to(dev, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(n, dev):\n    buf = torch.empty(n, 8, pin_memory=True)\n"
            "    return buf.t().to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(dst, n):\n    torch.zeros(n, pin_memory=True).copy_(torch.arange(n), non_blocking=True)\n"),
        Case(_H + "def f(ids, dev):\n    return torch.tensor(ids).to(dev, non_blocking=True)  # noqa: PIN002\n"),
        Case(_H + "def f(buf, dev):\n    return buf[::2].to(dev, non_blocking=True)\n"),
        # Computed from tensors pinfix cannot see (maybe on the device): unknown.
        Case(_H + "def f(a, b, dev):\n    return torch.cat([a, b]).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(x, dev):\n    return (x * 2).to(dev, non_blocking=True)\n"),
        # Pinned on every way to the copy.
        Case(_H + "def f(n, dev):\n    x = torch.arange(n)\n    x = x.pin_memory()\n    return x.to(dev, non_blocking=True)\n"),
        # Unpinned only where pinned memory is unavailable: no accelerator there to block on.
        Case(
            _H + "def f(a, dev):\n    x = torch.from_numpy(a)\n    if is_pin_memory_available():\n        x = x.pin_memory()\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(n, pin_memory, dev):\n    x = torch.arange(n)\n    x = x.pin_memory() if pin_memory else x\n    return x.to(dev, non_blocking=True)\n"),
        # On later iterations `acc` is the device result: only the first copy reads host memory, and it is pinned.
        Case(
            _H + "def f(xs, dev):\n    acc = torch.zeros(4, pin_memory=True)\n    for s in xs:\n"
            "        acc = acc.to(dev, non_blocking=True) + s\n    return acc\n"
        ),
        # `out=`: the result is that (pinned) tensor.
        Case(
            _H + "def f(n, dev):\n    buf = torch.empty(2 * n, pin_memory=True)\n"
            "    return torch.cat([torch.arange(n), torch.arange(n)], out=buf).to(dev, non_blocking=True)\n"
        ),
        # A 0-dim CPU tensor combines with a device tensor on the device.
        Case(_H + "def f(x, dev):\n    return (torch.tensor(5) + x).to(dev, non_blocking=True)\n"),
        # An int index is a view of pinned memory; narrow(0, ...) too.
        Case(_H + "def f(i, n, dev):\n    buf = torch.zeros(n, 4, pin_memory=True)\n    return buf[i].to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    buf = torch.zeros(n, 4, pin_memory=True)\n    return buf.narrow(0, 0, 2).to(dev, non_blocking=True)\n"),
    ]

    INVALID = [
        # A sparse layout: reported, but no `pin_memory=` fix (torch refuses to pin it).
        Case(_H + "def f(n, dev):\n    x = torch.zeros(n, n, layout=torch.sparse_coo)\n    return x.to(dev, non_blocking=True)\n"),
        # A comprehension's own variable holds what its iterable holds.
        Case(
            _H + "def f(rows, dev):\n    hosts = [torch.tensor(r) for r in rows]\n"
            "    return [h.to(dev, non_blocking=True) for h in hosts]\n"
        ),
        # Some path delivers pageable memory: that path blocks whenever it runs.
        Case(_H + "def f(x, c, dev):\n    if c:\n        x = x.cpu()\n    return x.to(dev, non_blocking=True)\n"),
        Case(
            _H + "def f(n, c, dev):\n    x = torch.zeros(n, pin_memory=True)\n    if c:\n        x = torch.zeros(n)\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(gpu_t, c, v, dev):\n    return (gpu_t if c else torch.tensor(v)).to(dev, non_blocking=True)\n"),
        # Lists built up in a loop; conversions chained before the copy.
        Case(
            _H + "def f(n, dev):\n    a, b, c = [], [], 0\n    for i in range(n):\n        a.append(torch.arange(i))\n"
            "    return torch.cat(a).to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(v, x, dev):\n    return torch.tensor(v).to(x.dtype).to(dev, non_blocking=True)\n"),
        # The first iteration copies a pageable tensor; later ones a device tensor.
        Case(
            _H + "def f(xs, dev):\n    acc = torch.zeros(4)\n    for s in xs:\n"
            "        acc = acc.to(dev, non_blocking=True) + s\n    return acc\n"
        ),
        Case(_H + "def f(ids, dev):\n    return torch.tensor(ids).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(ids, dev):\n    return torch.LongTensor(ids).to(dev, non_blocking=True)\n"),
        # A batch collated from host items is stacked into fresh pageable memory.
        Case(
            _H + "from torch.utils.data import default_collate\n\n\ndef f(n, dev):\n"
            "    batch = default_collate([{'ids': torch.tensor([i])} for i in range(n)])\n"
            "    return batch['ids'].to(dev, non_blocking=True)\n"
        ),
        # A processor's `return_tensors="pt"` output is made on the host.
        Case(_H + "def f(tok, text, dev):\n    enc = tok(text, return_tensors='pt')\n    return enc['input_ids'].to(dev, non_blocking=True)\n"),
        Case(
            _H + "def f(a, n, dev):\n    x = torch.from_numpy(a)\n    if n:\n        x = torch.cat((x, torch.zeros(n)))\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(x, dev):\n    x = x.cpu()\n    return x.to(dev, non_blocking=True)\n"),
        # In place: `x += 1` keeps x's (pageable) memory; `xs += [t]` extends the list.
        Case(_H + "def f(n, dev):\n    x = torch.zeros(n)\n    x += 1\n    return x.to(dev, non_blocking=True)\n"),
        Case(_H + "def f(dev):\n    xs = []\n    xs += [torch.zeros(4)]\n    return torch.cat(xs).to(dev, non_blocking=True)\n"),
        Case(
            _H + "def f(t, n, dev):\n    s = slice(0, n)\n    part = t.cpu()[s]\n"
            "    return (part - torch.minimum(part, part)).to(dev, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(x, n, dev):\n    x = x.cpu()\n    pad = torch.full((n,), 0, device=x.device)\n"
            "    return pad.to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(dst):\n    dst.copy_(torch.Tensor([1.0, 2.0]), non_blocking=True)\n"),
        Case(_H + "def f(ids, dst):\n    dst.copy_(torch.tensor(ids, device='cpu'), non_blocking=True)\n"),
        Case(_H + "def f(ids, dst):\n    dst.copy_(torch.tensor(ids, pin_memory=False), non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    return torch.arange(n).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    return torch.zeros(n).cuda(non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    return torch.ones(n).xpu(non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    return torch.empty(n).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    return torch.full((n,), 1).to(dev, torch.int32, True)\n"),
        Case(_H + "def f(n, dev):\n    x = torch.zeros(n)\n    return torch.ones_like(x).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(dev):\n    return torch.as_tensor([1, 2]).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(a, dev):\n    return torch.asarray(np.arange(3)).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(t, dev):\n    return torch.as_tensor(t.numpy()).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(t, dev):\n    host = t.cpu()\n    return host.to(dev, non_blocking=True)\n"),
        Case(_H + "def f(ids, n, dst):\n    t = torch.tensor(ids)\n    part = t[:n]\n    dst.copy_(part, non_blocking=True)\n"),
        Case(_H + "def f(ids, dev):\n    t = torch.tensor(ids).view(-1, 2)\n    return t.to(dev, non_blocking=True)\n"),
        Case(_H + "def f(ids, dev):\n    t = torch.tensor(ids)\n    return t.long().to(dev, non_blocking=True)\n"),
        Case(_H + "def f(a, dev):\n    return torch.from_numpy(a).long().to(dev, non_blocking=True)\n"),
        # Gapped views of pinned memory (report only).
        Case(
            _H + "def f(n, dev):\n    buf = torch.empty(n, 8, pin_memory=True)\n"
            "    return buf[:, :4].to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(t, dev):\n    return t.pin_memory()[::2].to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    buf = torch.zeros(1, n, pin_memory=True)\n    return buf.expand(4, -1).to(dev, non_blocking=True)\n"),
        # A later plain assignment overwrites an earlier one; a conditional's tensor branch counts.
        Case(_H + "def f(n, dev):\n    x = torch.arange(n).pin_memory()\n    x = torch.zeros(n)\n    return x.to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    i = torch.arange(n)\n    i = i + 1\n    return i.to(dev, non_blocking=True)\n"),
        Case(_H + "def f(t, c, dev):\n    s = t.cpu() if c else None\n    return (s - 1).to(dev, non_blocking=True)\n"),
        # Fresh tensors computed on the CPU (report only).
        Case(_H + "def f(n, dev):\n    return torch.cat([torch.arange(n), torch.arange(n)]).to(dev, non_blocking=True)\n"),
        Case(
            _H + "def f(sizes, dev):\n    parts = list()\n    for n in sizes:\n        parts.append(torch.arange(n))\n"
            "    return torch.concat(parts, dim=0).to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(n, dev):\n    return (torch.arange(n) * 2).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, tag, dev):\n    mask = torch.arange(n) == tag\n    return mask.to(dev, non_blocking=True)\n"),
        Case(_H + "def f(ids, dev):\n    return torch.tensor(ids).repeat_interleave(2).to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    buf = torch.zeros(n, pin_memory=True)\n    return buf[[0, 2]].to(dev, non_blocking=True)\n"),
        Case(_H + "def f(n, dev):\n    buf = torch.zeros(n, pin_memory=True)\n    return buf.clone().to(dev, non_blocking=True)\n"),
        Case(
            _H + "def f(n, counts, dev):\n    buf = torch.zeros(n, pin_memory=True)\n    idx = np.repeat(np.arange(3), counts)\n"
            "    return buf[idx].to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(n, dev):\n    buf = torch.zeros(4, n, pin_memory=True)\n    return buf[:, :2].contiguous().to(dev, non_blocking=True)\n"),
        Case(
            _H + "def f(n, dst):\n    buf = torch.empty(n, 8, pin_memory=True)\n    col = buf[:, 0]\n"
            "    dst.copy_(col, non_blocking=True)\n"
        ),
    ]


    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        return [f for f in pageable_findings(ctx) if f.code == self.code]


__all__: List[str] = ["PageableCpuSource"]
