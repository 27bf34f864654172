"""PIN002: a non_blocking host-to-device copy from another pageable CPU source."""

from __future__ import annotations

from typing import Iterable, List

from .base import Case, Finding, Rule, RuleContext
from .pageable import pageable_findings

_H = "import numpy as np\nimport torch\n\nfrom vllm.utils.platform_utils import is_pin_memory_available\n\n\n"
_L = "import torch\nfrom torch.utils.data import DataLoader\n\n\n"
_F = "import torch\nfrom safetensors.torch import load_file\n\n\n"
_S = "import torch\nfrom safetensors import safe_open\n\n\n"
_M = "import torch\nfrom lightning.fabric.utilities import move_data_to_device\nfrom torch.utils.data import DataLoader\n\n\n"
_P = "import torch\nfrom accelerate import Accelerator\nfrom accelerate.data_loader import prepare_data_loader\nfrom torch.utils.data import DataLoader\n\n\n"
_A = "import torch\nfrom accelerate.utils import send_to_device\nfrom torch.utils.data import DataLoader\n\n\n"


def _picks(pinned: int, pageable: bool) -> str:
    """A function that picks one of ``pinned`` pinned allocations (and a pageable one)."""
    lines = [
        f"    {'if' if i == 0 else 'elif'} k == {i}:\n        x = torch.zeros({i + 1}, pin_memory=True)\n"
        for i in range(pinned)
    ]
    last = "        x = torch.zeros(n)\n" if pageable else "        x = torch.zeros(n, pin_memory=True)\n"
    return (
        _H + "def f(k, n, dev):\n" + "".join(lines) + "    else:\n" + last + "    return x.to(dev, non_blocking=True)\n"
    )


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
      (pinned or not: the batch is stacked into fresh memory);
    - a batch of a ``torch.utils.data.DataLoader(...)`` built without ``pin_memory=`` (or with
      ``pin_memory=False``): each batch is collated afresh in pageable memory. A ``collate_fn``
      of the project's own is read as a function given a list of the dataset's items (host data
      and CPU tensors of unknown memory): the batches are what it returns, pageable where it
      returns fresh tensors (``torch.stack``, ``torch.tensor``, ``torch.from_numpy``), pinned
      where it pins them, unknown where it hands the items on as they are (in plain mode a
      function or lambda of the same module, in deep mode of any module). A batch is read in every spelling of iteration (``for``,
      ``enumerate``, ``zip``, ``next(iter(loader))``, ``list(loader)``, comprehensions, through
      ``tqdm(loader)`` or ``itertools.islice`` / ``cycle``) and
      through what the default collate makes of the dataset's items: the tensor itself, or a
      tuple, list or dict of them (unpacking, indexing, ``.items()``, ``.values()``). In deep mode
      the loader may be built in another function, stored on ``self`` or returned by a
      ``*_dataloader()`` method. Wrappers keep the loader's pinning: ``accelerate``'s
      ``prepare_data_loader(loader)`` yields its batches as they are (with
      ``put_on_device=True``: on the device), an ``Accelerator(...)``'s ``prepare(model, opt,
      loader)`` (tuple unpacking too) and ``prepare_data_loader(loader)`` put them on the device
      unless the object or the call says ``device_placement=False`` (``cpu=`` or a list of flags:
      unknown); ``loader.set_epoch(...)`` and ``loader.sampler.set_epoch(...)`` change nothing;
    - tensors read from a checkpoint or file onto the CPU: ``torch.load(f, map_location="cpu")``
      (``mmap=True`` too: memory mapped from the file is no pinned memory), safetensors'
      ``load_file(f)`` (``device="cpu"``, its default), what a ``safe_open(f, framework="pt")``
      handle reads onto the CPU (its default device: ``f.get_tensor(name)``, ``f.get_slice(name)[...]``,
      also as ``with safe_open(...) as f:``), ``torch.frombuffer(buf)``, and
      ``torch.from_numpy`` / ``torch.as_tensor`` of an array from ``np.load`` / ``np.fromfile`` /
      ``np.memmap``. ``torch.load`` without ``map_location`` puts each tensor back on the device
      it was saved from, so pinfix does not know where it is;
    - ``t.share_memory_()`` of a CPU tensor, pinned or not: its data moves into shared (pageable)
      memory, in place (the name it is called on holds that memory afterwards);
    - in a test's parameter, what the pytest fixture of its name returns or yields (the test
      class's own fixture, else the module's; in deep mode, else the nearest ``conftest.py``'s),
      where pytest's choice is plain: a function named
      ``test...`` or a fixture, a parameter with no default that no ``parametrize`` names, no
      ``mock.patch`` decorator, no ``pytest_generate_tests`` hook in the module.

    Besides the tensor methods, library copies are sinks: ``accelerate.utils.send_to_device(
    batch, device, non_blocking=True)`` (``non_blocking`` by keyword), which copies every tensor
    of its tuples, lists and dicts; Lightning's ``move_data_to_device(batch, device)``, which
    does the same with ``non_blocking=True`` unasked wherever ``device`` is a string or
    ``torch.device`` other than ``cpu`` / ``mps`` (an int index copies blocking); and the ``.to(device, non_blocking=True)`` of a Hugging Face
    ``BatchEncoding`` / ``BatchFeature`` (a tokenizer's ``return_tensors="pt"`` output), which
    copies each of its tensors.

    In deep mode the copy's ``non_blocking`` may be a parameter: it counts as ``True`` where a
    project call passes ``True`` for it, directly or through helpers that pass their own
    parameter on unchanged (up to four calls up), and where its default is ``True``
    (``def plan(..., non_blocking: bool = True)``: what users of the function run) unless
    every project call passes ``False``; the message names the call or says it is the default.

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
    ``pin_memory=False`` (or a flag that is no availability flag, below) is written out, when a factory has a ``layout=`` other than
    ``torch.strided`` (torch refuses to pin a sparse tensor), when a conversion (``.long()``) or gapped view sits
    between the source and the copy (pinning the source would not help), or for sources with no
    ``pin_memory=`` (``as_tensor``, ``asarray``, ``.cpu()``): the message suggests a persistent
    pinned staging buffer (allocated once with ``pin_memory=True``, as vLLM's ``CpuGpuBuffer``).
    A ``DataLoader`` batch's fix adds ``pin_memory=True`` to the ``DataLoader(...)`` call where it
    is built (in deep mode too, when that is in the same file): safe, since the loader pins each
    fresh batch in a thread of its own before handing it out, and where no accelerator exists
    torch only warns and skips the pinning. No fix when ``pin_memory=False`` is written out or the
    loader is built in another file. Tensors read from files get no fix (the loaders take no
    ``pin_memory=``).
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
    A ``DataLoader`` given ``pin_memory=`` that may be true (a variable or setting counts as true),
    ``**kwargs`` that may set it (a parameter, a dict given ``update(...)`` or a key computed at
    run time, ``setdefault``, a dict handed to other code; a dict display or ``dict(...)`` of
    keywords built in the function and stored into only by literal keys is read: no
    ``pin_memory`` key is the default, ``False``), or a ``collate_fn`` pinfix cannot read (a parameter, or in
    plain mode a function of another module); ``torch.load`` without
    ``map_location`` or with an accelerator one; safetensors loaded onto an accelerator;
    ``safe_open`` onto an accelerator or a device pinfix cannot tell; ``pickle`` / ``cloudpickle``
    loads (an unpickled tensor goes back to the device it was pickled from, so pinfix never calls
    it pageable); sources pinfix does not know: tensors from
    ``torch.multiprocessing`` queues, loaders wrapped by a library trainer or by an ``Accelerator``
    pinfix cannot see made (``self.accelerator.prepare(...)``), a loader rebuilt with
    ``pin_memory=loader.pin_memory`` (a flag pinfix does not trace counts as pinned).
    An accelerator ``device=``; ``pin_memory=True`` or an availability flag given; a copy whose
    destination is itself a CPU tensor pinfix can see; a dense slice of a pinned tensor;
    ``as_tensor`` of something that may already be a device tensor; a path a test rules out
    (``x.to(d, non_blocking=True) if x.is_pinned() else x.to(d)``, ``x.is_pinned() and ...``,
    ``isinstance(x, DTensor)`` of a tensor torch made, ``x is None`` of a tensor; in ``if``,
    ``while``, ``assert``, comprehension ``if``s and ``match`` guards alike); a factory given no device
    where the default device is not known to be the CPU (inside ``with torch.device(d):``, after
    ``torch.set_default_device(d)``, ``device=torch.get_default_device()``, or anywhere in a
    module that sets the default device to anything but ``"cpu"``).

    An *availability flag* is false only where pinned memory (an accelerator) is unavailable,
    where no copy can block, so what runs only where it is false is not reported, whether it
    is spelled ``pin_memory=flag`` or ``if flag: x = x.pin_memory()`` (or ``if not flag:``). A
    value is one when it comes from a known availability source (``is_pin_memory_available()``,
    ``torch.cuda.is_available()``, ``torch.xpu.is_available()``, ``torch.accelerator.is_available()``,
    vLLM's ``PIN_MEMORY``), is the configured ``pin-memory-expr``, or is a parameter named
    ``pin_memory`` (``use_pin_memory``, ...) whose default is ``True``. Any other flag may be
    false where an accelerator is present, and what pinfix does with it depends on whether it
    can see the flag's value:

    - a flag whose value pinfix traces (a comparison or boolean operation it reads, ``pin = n >
      0``, ``os.environ.get("PIN") == "1"`` in another module in deep mode, ``self.pin_memory =
      not v2 and PIN_MEMORY`` read in deep mode): the path where it is false is reported,
      without a fix, naming the flag;
    - a flag whose value pinfix cannot see (a parameter no caller it follows passes, or known
      only by its annotation, ``is_pin_memory: bool``; ``self.pin_memory`` in plain mode, which
      does not read ``__init__``; a call it cannot follow, ``allowed(dev)``; a library value),
      alone or with availability flags (``v2 and PIN_MEMORY`` of a parameter ``v2``): read as
      an availability flag, so its false path is reported only with ``strict``. A parameter
      whose default is false (``pin: bool = False``) is what callers that pass nothing get,
      and is reported.

    The flag is the ``pin_memory=`` value, or the test of an ``if`` / conditional expression
    whose one arm pins with ``.pin_memory()`` what the other leaves pageable (``if flag: x =
    x.pin_memory()``, ``x.pin_memory() if flag else x``, ``if not flag:``). A test that picks
    other memory (``torch.zeros(n, pin_memory=True)`` in one arm, ``torch.arange(n)`` in the
    other) is no flag of pinning: both paths are kept.

    A pinned allocation with a fallback, ``try: buf = torch.empty(n, pin_memory=True)``
    ``except RuntimeError: buf = torch.empty(n)`` (also inside a retry loop that shrinks the
    request), is pinned unless pinning is impossible, and counts as pinned: what the handler
    gives the name the ``try`` pinned stands for that pinned allocation. The handler must catch
    what a failed allocation raises (``RuntimeError``, ``Exception``, ``MemoryError``,
    ``torch.OutOfMemoryError``, a bare ``except``).
    Suppress one line with ``# noqa: PIN002`` or ``# lint-ignore: PageableCpuSource``.
    """

    code = "PIN002"
    name = "PageableCpuSource"

    VALID = [
        # A parametrized argument is not the fixture of that name.
        Case(
            "import pytest\nimport torch\n\n\n@pytest.fixture\ndef host():\n    return torch.arange(4)\n\n\n"
            "@pytest.mark.parametrize('host', [torch.arange(4).pin_memory()])\n"
            "def test_copy(host, dev):\n    assert host.to(dev, non_blocking=True).sum() == 6\n"
        ),
        # Factories given no device allocate on the default device, which these set.
        Case(
            _H
            + "def f(n, dev):\n    with torch.device(dev):\n        x = torch.zeros(n)\n    return x.to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(ids, dev):\n    torch.set_default_device(dev)\n    return torch.tensor(ids).to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, dev):\n    return torch.empty(n, device=torch.get_default_device()).to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "torch.set_default_device('cuda')\n\n\ndef f(n, dev):\n    return torch.ones(n).to(dev, non_blocking=True)\n"
        ),
        # A flag pinfix cannot see (a parameter, a call it cannot follow, an attribute plain
        # mode does not read) is read as an availability flag, unless `strict`, in every spelling.
        Case(_H + "def f(ids, dev, pin):\n    return torch.tensor(ids, pin_memory=pin).to(dev, non_blocking=True)\n"),
        Case(
            _H
            + "def f(self, n, dev):\n    pin = self.pin_memory\n    return torch.zeros(n, pin_memory=pin).to(dev, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(self, n, dev):\n    x = torch.arange(n)\n    if self.pin_memory:\n        x = x.pin_memory()\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, dev, allowed):\n    x = torch.arange(n)\n    return (x.pin_memory() if allowed(dev) else x).to(dev, non_blocking=True)\n"
        ),
        # A parameter known only by its annotation, in deep mode across methods (vLLM 0.28.0's
        # min-p logits processor: its callers are built through a registry pinfix cannot follow).
        Case(
            _H
            + "class K:\n    def __init__(self, n, is_pin_memory: bool):\n        self.buf = torch.zeros(n, pin_memory=is_pin_memory)\n\n"
            "    def step(self, dst):\n        dst.copy_(self.buf, non_blocking=True)\n",
            settings=(("deep", True),),
        ),
        # Fifteen pinned allocations: merged past the bound, they stay pinned.
        Case(_picks(14, pageable=False)),
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
        Case(_H + "def f(t, i, x, dev):\n    part = t.cpu()[i]\n    return (part - x).to(dev, non_blocking=True)\n"),
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
        Case(
            _H
            + "def f(ids, dev, pin_memory=True):\n    return torch.tensor(ids, pin_memory=pin_memory).to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(ids, dev):\n    return torch.tensor(ids, pin_memory=is_pin_memory_available()).to(dev, non_blocking=True)\n"
        ),
        Case(
            "import torch\nfrom vllm.utils.torch_utils import PIN_MEMORY\n\n\n"
            "def f(ids, dev):\n    return torch.tensor(ids, pin_memory=PIN_MEMORY).to(dev, non_blocking=True)\n"
        ),
        # Narrowing: a test rules the pageable path out, in every construct that branches.
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    return x.to(d, non_blocking=True) if x.is_pinned() else x.to(d)\n"
        ),
        Case(_H + "def f(n, d):\n    x = torch.arange(n)\n    return x.is_pinned() and x.to(d, non_blocking=True)\n"),
        Case(
            _H + "def f(n, d):\n    x = torch.arange(n)\n    return not x.is_pinned() or x.to(d, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(n, d):\n    x = torch.arange(n)\n    if not is_pin_memory_available():\n        y = x\n"
            "    else:\n        y = x.pin_memory()\n    return y.to(d, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    if not is_pin_memory_available():\n        return x.to(d, non_blocking=False)\n"
            "    elif x.is_pinned():\n        return x.to(d, non_blocking=True)\n    return x.pin_memory().to(d, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    y = x if not is_pin_memory_available() else x.pin_memory()\n"
            "    return y.to(d, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    while not x.is_pinned():\n        x = x.pin_memory()\n    return x.to(d, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(n, d):\n    xs = [torch.arange(n), torch.zeros(n, pin_memory=True)]\n"
            "    return [x.to(d, non_blocking=True) for x in xs if x.is_pinned()]\n"
        ),
        Case(
            _H + "def f(n, d, k):\n    x = torch.arange(n)\n    match k:\n        case 1 if x.is_pinned():\n"
            "            return x.to(d, non_blocking=True)\n    return None\n"
        ),
        Case(
            _H + "from torch.distributed.tensor import DTensor\n\n\ndef f(n, d):\n    x = torch.arange(n)\n"
            "    if isinstance(x, DTensor):\n        return x.to(d, non_blocking=True)\n    return x\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    if type(x) is not torch.Tensor:\n        return x.to(d, non_blocking=True)\n    return x\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    if isinstance(x, (np.ndarray, list)):\n        return x.to(d, non_blocking=True)\n    return x\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    if x is None:\n        return x.to(d, non_blocking=True)\n    return x\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    if not hasattr(x, 'is_pinned'):\n        return x.to(d, non_blocking=True)\n    return x\n"
        ),
        # A pinned allocation with a fallback where pinning is impossible counts as pinned.
        Case(
            _H + "def f(n, d):\n    try:\n        buf = torch.empty(n, pin_memory=True)\n    except RuntimeError:\n"
            "        buf = torch.empty(n)\n    return buf.to(d, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    while True:\n        try:\n            buf = torch.empty(n, pin_memory=True)\n            break\n"
            "        except (RuntimeError, MemoryError):\n            if n <= 1:\n                buf = torch.empty(n)\n                break\n"
            "            n //= 2\n    return buf.to(d, non_blocking=True)\n"
        ),
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
        Case(
            _H
            + "def f(n, dev):\n    x = torch.arange(n)\n    x = x.pin_memory()\n    return x.to(dev, non_blocking=True)\n"
        ),
        # Unpinned only where pinned memory is unavailable: no accelerator there to block on.
        Case(
            _H
            + "def f(a, dev):\n    x = torch.from_numpy(a)\n    if is_pin_memory_available():\n        x = x.pin_memory()\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, dev, pin_memory=True):\n    x = torch.arange(n)\n    x = x.pin_memory() if pin_memory else x\n    return x.to(dev, non_blocking=True)\n"
        ),
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
        Case(
            _H
            + "def f(i, n, dev):\n    buf = torch.zeros(n, 4, pin_memory=True)\n    return buf[i].to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, dev):\n    buf = torch.zeros(n, 4, pin_memory=True)\n    return buf.narrow(0, 0, 2).to(dev, non_blocking=True)\n"
        ),
        # A loader that pins its batches (a flag counts as pinned, as `pin_memory=` of a factory does).
        Case(
            _L
            + "def f(ds, dev):\n    for x, y in DataLoader(ds, batch_size=8, pin_memory=True):\n        x.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, pin, dev):\n    loader = DataLoader(ds, pin_memory=pin)\n    return next(iter(loader)).to(dev, non_blocking=True)\n"
        ),
        # Batches are what a collate_fn of the project's own returns; **kwargs may set pin_memory.
        Case(
            _L
            + "def f(ds, fn, dev):\n    for b in DataLoader(ds, collate_fn=fn):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(_L + "def f(ds, kw, dev):\n    for b in DataLoader(ds, **kw):\n        b.to(dev, non_blocking=True)\n"),
        # `**cfg` of a dict that sets pin_memory, or may hold keys pinfix does not know.
        Case(
            _L
            + "def f(ds, dev):\n    cfg = dict(batch_size=4, pin_memory=True)\n    for b in DataLoader(ds, **cfg):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, dev, extra):\n    cfg = {'batch_size': 4}\n    cfg.update(extra)\n    for b in DataLoader(ds, **cfg):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, dev, key):\n    cfg = {'shuffle': True}\n    cfg[key] = True\n    for b in DataLoader(ds, **cfg):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, dev):\n    cfg = {'shuffle': True}\n    cfg.update(pin_memory=True)\n    for b in DataLoader(ds, **cfg):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, dev, base):\n    for b in DataLoader(ds, **{**base, 'batch_size': 4}):\n        b.to(dev, non_blocking=True)\n"
        ),
        # A dict given `setdefault`, or handed to other code, may gain keys the flow does not see.
        Case(
            _L
            + "def f(ds, dev):\n    cfg = {'batch_size': 4}\n    cfg.setdefault('pin_memory', True)\n    for b in DataLoader(ds, **cfg):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, dev, tune):\n    cfg = {'batch_size': 4}\n    tune(cfg)\n    for b in DataLoader(ds, **cfg):\n        b.to(dev, non_blocking=True)\n"
        ),
        # A collate_fn of the module's own that pins what it returns, or hands the items on as they
        # are (a dataset's items may be pinned or not: unknown), or a loader that pins it all.
        Case(
            _L + "def pin_collate(items):\n    return torch.stack(items).pin_memory()\n\n\n"
            "def f(ds, dev):\n    for b in DataLoader(ds, collate_fn=pin_collate):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, dev):\n    for b in DataLoader(ds, collate_fn=lambda items: items):\n        b[0].to(dev, non_blocking=True)\n"
        ),
        Case(
            _L + "def pad(items):\n    return torch.tensor([len(i) for i in items])\n\n\n"
            "def f(ds, dev):\n    for b in DataLoader(ds, collate_fn=pad, pin_memory=True):\n        b.to(dev, non_blocking=True)\n"
        ),
        # torch.load without map_location restores each tensor where it was saved; onto a device: not the host.
        Case(_L + "def f(path, dev):\n    return torch.load(path)['w'].to(dev, non_blocking=True)\n"),
        Case(
            _L + "def f(path, dev):\n    return torch.load(path, map_location='cuda')['w'].to(dev, non_blocking=True)\n"
        ),
        Case(_F + "def f(path, dev):\n    return load_file(path, device='cuda:0')['w'].to(dev, non_blocking=True)\n"),
        # safe_open onto an accelerator (or a device pinfix cannot tell); a read pinned before the copy.
        Case(
            _S
            + "def f(path, dev):\n    with safe_open(path, framework='pt', device='cuda:0') as f:\n        return f.get_tensor('w').to(dev, non_blocking=True)\n"
        ),
        Case(
            _S
            + "def f(path, dev):\n    with safe_open(path, framework='pt', device=dev) as f:\n        return f.get_tensor('w').to(dev, non_blocking=True)\n"
        ),
        Case(
            _S
            + "def f(path, dev):\n    with safe_open(path, 'pt') as f:\n        return f.get_slice('w')[:4].pin_memory().to(dev, non_blocking=True)\n"
        ),
        # Unpickled tensors go back to the device they were pickled from: never known to be host memory.
        Case(
            "import pickle\n\n"
            + _L
            + "def f(path, dev):\n    with open(path, 'rb') as fh:\n        state = pickle.load(fh)\n    return state['w'].to(dev, non_blocking=True)\n"
        ),
        # share_memory_() of a device tensor leaves it there.
        Case(
            _L
            + "def f(n, dev):\n    t = torch.zeros(n, device=dev).share_memory_()\n    return t.to(dev, non_blocking=True)\n"
        ),
        # accelerate's send_to_device: of pinned batches, to the host, or blocking.
        Case(
            _A
            + "def f(ds, dev):\n    for b in DataLoader(ds, pin_memory=True):\n        send_to_device(b, dev, non_blocking=True)\n"
        ),
        Case(_A + "def f(ds):\n    for b in DataLoader(ds):\n        send_to_device(b, 'cpu', non_blocking=True)\n"),
        Case(_A + "def f(ds, dev):\n    for b in DataLoader(ds):\n        send_to_device(b, dev)\n"),
        # accelerate: an Accelerator places batches on the device by default; a pinned loader stays pinned;
        # device placement pinfix cannot tell (`cpu=`, a flag per object) is unknown.
        Case(
            _P
            + "def f(ds, dev):\n    acc = Accelerator()\n    model, loader = acc.prepare(torch.nn.Linear(2, 2), DataLoader(ds))\n    for b in loader:\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _P
            + "def f(ds, dev):\n    acc = Accelerator(device_placement=False)\n    for b in acc.prepare(DataLoader(ds, pin_memory=True)):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _P
            + "def f(ds, dev, flag):\n    acc = Accelerator(cpu=flag, device_placement=False)\n    for b in acc.prepare(DataLoader(ds)):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _P
            + "def f(ds, dev):\n    m, loader = Accelerator().prepare(ds, DataLoader(ds), device_placement=[True, False])\n    for b in loader:\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _P
            + "def f(ds, dev):\n    for b in prepare_data_loader(DataLoader(ds), put_on_device=True):\n        b.to(dev, non_blocking=True)\n"
        ),
        # A loader rebuilt from another's pin_memory: a flag pinfix does not trace counts as pinned.
        Case(
            _L
            + "def f(loader, dev):\n    again = DataLoader(loader.dataset, batch_size=8, pin_memory=loader.pin_memory)\n    for b in again:\n        b.to(dev, non_blocking=True)\n"
        ),
        # Lightning's move_data_to_device: of pinned batches, to the CPU, or to an int index (blocking).
        Case(
            _M
            + "def f(ds):\n    for b in DataLoader(ds, pin_memory=True):\n        b = move_data_to_device(b, torch.device('cuda'))\n"
        ),
        Case(_M + "def f(ds):\n    for b in DataLoader(ds):\n        b = move_data_to_device(b, 'cpu')\n"),
        Case(_M + "def f(ds):\n    for b in DataLoader(ds):\n        b = move_data_to_device(b, 0)\n"),
        # Deep mode: a flag that is False by default, with no call passing True.
        Case(
            _L
            + "def plan(ids, dev, non_blocking: bool = False):\n    return torch.tensor(ids).to(dev, non_blocking=non_blocking)\n",
            settings=(("deep", True),),
        ),
    ]

    INVALID = [
        # A pytest fixture fills the test's parameter of its name.
        Case(
            "import pytest\nimport torch\n\n\n@pytest.fixture\ndef host():\n    return torch.arange(4)\n\n\n"
            "def test_copy(host, dev):\n    assert host.to(dev, non_blocking=True).sum() == 6\n"
        ),
        # DataLoader batches without pin_memory=True: fresh pageable memory, in every spelling of iteration.
        Case(
            _L
            + "def f(ds, dev):\n    for x, y in DataLoader(ds, batch_size=8):\n        x.to(dev, non_blocking=True)\n",
            fixed=_L
            + "def f(ds, dev):\n    for x, y in DataLoader(ds, batch_size=8, pin_memory=True):\n        x.to(dev, non_blocking=True)\n",
        ),
        Case(
            _L + "def f(ds, dev):\n    loader = torch.utils.data.DataLoader(ds, batch_size=4)\n"
            "    for step, batch in enumerate(loader):\n"
            "        batch = {k: v.to(dev, non_blocking=True) for k, v in batch.items()}\n"
        ),
        # `batch['ids']` of a dict batch is that batch's tensor, no conversion: the loader's fix applies.
        Case(
            _L
            + "def f(ds, dev):\n    batch = next(iter(DataLoader(ds)))\n    return batch['ids'].cuda(non_blocking=True)\n",
            fixed=_L
            + "def f(ds, dev):\n    batch = next(iter(DataLoader(ds, pin_memory=True)))\n    return batch['ids'].cuda(non_blocking=True)\n",
        ),
        Case(_L + "def f(ds, dev):\n    return [b[0].to(dev, non_blocking=True) for b in list(DataLoader(ds))]\n"),
        Case(
            _L
            + "def f(a, b, dev):\n    for x, y in zip(DataLoader(a), DataLoader(b, pin_memory=True)):\n        x.to(dev, non_blocking=True)\n"
        ),
        # Through a progress bar.
        Case(
            _L
            + "from tqdm import tqdm\n\n\ndef f(ds, dev):\n    for x in tqdm(DataLoader(ds), desc='train'):\n        x.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, dev):\n    for b in DataLoader(ds, pin_memory=False):\n        for t in b.values():\n            t.to(dev, non_blocking=True)\n"
        ),
        # `pin_memory=None` (positional here) is no pinning; written out, so no fix adds a second one.
        Case(
            _L
            + "def f(ds, dev):\n    for b in DataLoader(ds, 4, False, None, None, 0, None, None):\n        b.to(dev, non_blocking=True)\n"
        ),
        # A collate_fn of the module's own (a function or a lambda) that stacks or makes fresh
        # tensors: the batches are pageable; the fix pins them in the loader.
        Case(
            _L
            + "def pad(items):\n    return torch.stack([i[0] for i in items]), torch.tensor([i[1] for i in items])\n\n\n"
            "def f(ds, dev):\n    for x, y in DataLoader(ds, collate_fn=pad):\n        x.to(dev, non_blocking=True)\n",
            fixed=_L
            + "def pad(items):\n    return torch.stack([i[0] for i in items]), torch.tensor([i[1] for i in items])\n\n\n"
            "def f(ds, dev):\n    for x, y in DataLoader(ds, collate_fn=pad, pin_memory=True):\n        x.to(dev, non_blocking=True)\n",
        ),
        Case(
            "import numpy as np\n" + _L + "def f(ds, dev):\n"
            "    for b in DataLoader(ds, collate_fn=lambda items: {'x': torch.from_numpy(np.stack(items))}):\n"
            "        b['x'].to(dev, non_blocking=True)\n"
        ),
        # `**cfg` of a dict whose keys pinfix knows: no `pin_memory` key, or a false one (no fix: the
        # call passes `**`).
        Case(
            _L
            + "def f(ds, dev):\n    cfg = {'batch_size': 4, 'shuffle': True}\n    for b in DataLoader(ds, **cfg):\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, dev):\n    cfg = {'batch_size': 4}\n    cfg['pin_memory'] = False\n    for b in DataLoader(ds, **cfg):\n        b.to(dev, non_blocking=True)\n"
        ),
        # Checkpoints and files read onto the host.
        Case(
            _L
            + "def f(path, dev):\n    state = torch.load(path, map_location='cpu', mmap=True)\n    return state['w'].to(dev, non_blocking=True)\n"
        ),
        Case(
            _F + "def f(path, dev):\n    return {k: v.to(dev, non_blocking=True) for k, v in load_file(path).items()}\n"
        ),
        # safe_open: a read (`get_tensor`, an indexed `get_slice`) onto the CPU, its default.
        Case(
            _S
            + "def f(path, dev):\n    out = {}\n    with safe_open(path, framework='pt') as f:\n        for k in f.keys():\n"
            "            out[k] = f.get_tensor(k).to(dev, non_blocking=True)\n    return out\n"
        ),
        Case(
            _S
            + "def f(path, dev):\n    f = safe_open(path, framework='pt', device='cpu')\n    return f.get_slice('w')[:, :4].to(dev, non_blocking=True)\n"
        ),
        Case(
            _L + "def f(blob, dev):\n    return torch.frombuffer(blob, dtype=torch.uint8).to(dev, non_blocking=True)\n"
        ),
        # NumPy arrays read from files are host memory (built before: NumPy calls make arrays).
        Case(
            _H
            + "def f(path, n, dev):\n    return torch.as_tensor(np.memmap(path, dtype=np.int64, shape=(n,))).to(dev, non_blocking=True)\n"
        ),
        # share_memory_() moves a CPU tensor (pinned or not) into shared pageable memory, in place.
        Case(
            _L
            + "def f(n, dev):\n    t = torch.zeros(n, pin_memory=True)\n    t.share_memory_()\n    return t.to(dev, non_blocking=True)\n"
        ),
        # Library helpers that copy a whole batch: accelerate's send_to_device, a BatchEncoding's `.to`.
        Case(
            _A
            + "def f(ds, dev):\n    for b in DataLoader(ds):\n        b = send_to_device(b, dev, non_blocking=True)\n"
        ),
        Case(_A + "def f(tok, text, dev):\n    return tok(text, return_tensors='pt').to(dev, non_blocking=True)\n"),
        # accelerate keeps a loader's pinning: without device placement its batches are the loader's
        # (the fix goes to the loader), as are prepare_data_loader's (no placement by default);
        # sampler changes leave the loader as it is.
        Case(
            _P + "def f(ds, net, opt, dev):\n    acc = Accelerator(device_placement=False)\n"
            "    net, opt, loader = acc.prepare(net, opt, DataLoader(ds))\n    for b in loader:\n        b.to(dev, non_blocking=True)\n",
            fixed=_P + "def f(ds, net, opt, dev):\n    acc = Accelerator(device_placement=False)\n"
            "    net, opt, loader = acc.prepare(net, opt, DataLoader(ds, pin_memory=True))\n    for b in loader:\n        b.to(dev, non_blocking=True)\n",
        ),
        Case(
            _P
            + "def f(ds, dev):\n    loader = prepare_data_loader(DataLoader(ds))\n    loader.set_epoch(1)\n    for b in loader:\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _P
            + "def f(ds, dev):\n    loader = Accelerator().prepare_data_loader(DataLoader(ds), device_placement=False)\n    for b in loader:\n        b.to(dev, non_blocking=True)\n"
        ),
        Case(
            _L
            + "def f(ds, dev):\n    loader = DataLoader(ds)\n    loader.sampler.set_epoch(1)\n    for b in loader:\n        b.to(dev, non_blocking=True)\n"
        ),
        # Lightning's move_data_to_device copies non_blocking to an accelerator without being asked.
        Case(
            _M + "def f(ds, dev):\n    for b in DataLoader(ds):\n        b = move_data_to_device(b, dev)\n",
            fixed=_M
            + "def f(ds, dev):\n    for b in DataLoader(ds, pin_memory=True):\n        b = move_data_to_device(b, dev)\n",
        ),
        Case(_M + "def f(ids):\n    return move_data_to_device({'ids': torch.tensor(ids)}, 'cuda:0')\n"),
        # Deep mode: a flag True by default is what users of `plan` run.
        Case(
            _L
            + "def plan(ids, dev, non_blocking: bool = True):\n    return torch.tensor(ids).to(dev, non_blocking=non_blocking)\n",
            settings=(("deep", True),),
        ),
        # The default device is the CPU there: inside `with torch.device('cpu')`, after a
        # `with` block ends, after `set_default_device('cpu')`.
        Case(
            _H
            + "def f(n, dev):\n    with torch.device('cpu'):\n        x = torch.zeros(n)\n    return x.to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, dev):\n    with torch.device(dev):\n        pass\n    x = torch.zeros(n)\n    return x.to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(ids, dev):\n    torch.set_default_device('cpu')\n    return torch.tensor(ids).to(dev, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(n, dev):\n    torch.set_default_device('cpu')\n"
            "    return torch.empty(n, device=torch.get_default_device()).to(dev, non_blocking=True)\n"
        ),
        # Past the atoms a value keeps apart, paths that agree are merged, never dropped:
        # the one pageable allocation among fourteen still reports.
        Case(_picks(13, pageable=True)),
        # Flags pinfix traces and that are no availability flag: the path where they are false
        # is reported, in every spelling.
        Case(
            _H + "def f(ids, dev):\n    return torch.tensor(ids, pin_memory=len(ids) > 8).to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, dev, v2):\n    pin = not v2 and PIN_MEMORY\n    return torch.zeros(n, pin_memory=pin).to(dev, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(n, dev):\n    x = torch.arange(n)\n    if n > 8:\n        x = x.pin_memory()\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, dev):\n    x = torch.arange(n)\n    return (x.pin_memory() if n > 8 else x).to(dev, non_blocking=True)\n"
        ),
        # A comparison pinfix reads makes a traced flag, whatever it cannot tell of `n`.
        Case(
            _H + "def f(n, dev):\n    x = torch.arange(n)\n    pin = n > 0\n    if pin:\n        x = x.pin_memory()\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        # Flags pinfix cannot see: the path where they are false is reported with `strict`, in
        # every spelling.
        Case(
            _H + "def f(ids, dev, pin):\n    return torch.tensor(ids, pin_memory=pin).to(dev, non_blocking=True)\n",
            settings=(("strict", True),),
        ),
        Case(
            _H
            + "def f(n, dev, allowed):\n    x = torch.zeros(n, pin_memory=allowed(dev))\n    return x.to(dev, non_blocking=True)\n",
            settings=(("strict", True),),
        ),
        Case(
            _H + "def f(n, dev, allowed):\n    x = torch.arange(n)\n    if allowed(dev):\n        x = x.pin_memory()\n"
            "    return x.to(dev, non_blocking=True)\n",
            settings=(("strict", True),),
        ),
        Case(
            _H + "def f(self, n, dev):\n    x = torch.arange(n)\n    if self.pin_memory:\n        x = x.pin_memory()\n"
            "    return x.to(dev, non_blocking=True)\n",
            settings=(("strict", True),),
        ),
        Case(
            _H
            + "class K:\n    def __init__(self, n, is_pin_memory: bool):\n        self.buf = torch.zeros(n, pin_memory=is_pin_memory)\n\n"
            "    def step(self, dst):\n        dst.copy_(self.buf, non_blocking=True)\n",
            settings=(("deep", True), ("strict", True)),
        ),
        # A parameter whose default is false: what callers that pass nothing get.
        Case(
            _H
            + "def f(ids, dev, pin: bool = False):\n    return torch.tensor(ids, pin_memory=pin).to(dev, non_blocking=True)\n"
        ),
        # A test that picks other memory (not `.pin_memory()` of what is there) is no flag of
        # pinning: both paths are kept, seen or not.
        Case(
            _H + "def f(self, n, dev):\n    if self.reuse:\n        x = torch.zeros(n, pin_memory=True)\n    else:\n"
            "        x = torch.arange(n)\n    return x.to(dev, non_blocking=True)\n"
        ),
        # What a test leaves open.
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    return x.to(d, non_blocking=True) if not x.is_pinned() else x.to(d)\n"
        ),
        Case(_H + "def f(n, d):\n    x = torch.arange(n)\n    return x.is_pinned() or x.to(d, non_blocking=True)\n"),
        Case(
            _H + "def f(n, d):\n    xs = [torch.arange(n), torch.zeros(n, pin_memory=True)]\n"
            "    return [x.to(d, non_blocking=True) for x in xs if not x.is_pinned()]\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    if isinstance(x, torch.Tensor):\n        return x.to(d, non_blocking=True)\n    return x\n"
        ),
        Case(
            _H
            + "def f(n, d):\n    x = torch.arange(n)\n    if x is not None:\n        return x.to(d, non_blocking=True)\n    return x\n"
        ),
        # A handler of another error is no allocation fallback; another name is not the pinned one.
        Case(
            _H + "def f(n, d):\n    try:\n        buf = torch.empty(n, pin_memory=True)\n    except ValueError:\n"
            "        buf = torch.empty(n)\n    return buf.to(d, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(n, d):\n    try:\n        buf = torch.empty(n, pin_memory=True)\n    except RuntimeError:\n"
            "        other = torch.empty(n)\n        return other.to(d, non_blocking=True)\n    return buf\n"
        ),
        # A sparse layout: reported, but no `pin_memory=` fix (torch refuses to pin it).
        Case(
            _H
            + "def f(n, dev):\n    x = torch.zeros(n, n, layout=torch.sparse_coo)\n    return x.to(dev, non_blocking=True)\n"
        ),
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
        Case(
            _H + "def f(gpu_t, c, v, dev):\n    return (gpu_t if c else torch.tensor(v)).to(dev, non_blocking=True)\n"
        ),
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
        Case(
            _H
            + "def f(tok, text, dev):\n    enc = tok(text, return_tensors='pt')\n    return enc['input_ids'].to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(a, n, dev):\n    x = torch.from_numpy(a)\n    if n:\n        x = torch.cat((x, torch.zeros(n)))\n"
            "    return x.to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(x, dev):\n    x = x.cpu()\n    return x.to(dev, non_blocking=True)\n"),
        # In place: `x += 1` keeps x's (pageable) memory; `xs += [t]` extends the list.
        Case(_H + "def f(n, dev):\n    x = torch.zeros(n)\n    x += 1\n    return x.to(dev, non_blocking=True)\n"),
        Case(
            _H
            + "def f(dev):\n    xs = []\n    xs += [torch.zeros(4)]\n    return torch.cat(xs).to(dev, non_blocking=True)\n"
        ),
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
        Case(
            _H
            + "def f(ids, n, dst):\n    t = torch.tensor(ids)\n    part = t[:n]\n    dst.copy_(part, non_blocking=True)\n"
        ),
        Case(_H + "def f(ids, dev):\n    t = torch.tensor(ids).view(-1, 2)\n    return t.to(dev, non_blocking=True)\n"),
        Case(_H + "def f(ids, dev):\n    t = torch.tensor(ids)\n    return t.long().to(dev, non_blocking=True)\n"),
        Case(_H + "def f(a, dev):\n    return torch.from_numpy(a).long().to(dev, non_blocking=True)\n"),
        # Gapped views of pinned memory (report only).
        Case(
            _H + "def f(n, dev):\n    buf = torch.empty(n, 8, pin_memory=True)\n"
            "    return buf[:, :4].to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(t, dev):\n    return t.pin_memory()[::2].to(dev, non_blocking=True)\n"),
        Case(
            _H
            + "def f(n, dev):\n    buf = torch.zeros(1, n, pin_memory=True)\n    return buf.expand(4, -1).to(dev, non_blocking=True)\n"
        ),
        # A later plain assignment overwrites an earlier one; a conditional's tensor branch counts.
        Case(
            _H
            + "def f(n, dev):\n    x = torch.arange(n).pin_memory()\n    x = torch.zeros(n)\n    return x.to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(n, dev):\n    i = torch.arange(n)\n    i = i + 1\n    return i.to(dev, non_blocking=True)\n"),
        Case(_H + "def f(t, c, dev):\n    s = t.cpu() if c else None\n    return (s - 1).to(dev, non_blocking=True)\n"),
        # Fresh tensors computed on the CPU (report only).
        Case(
            _H + "def f(n, dev):\n    return torch.cat([torch.arange(n), torch.arange(n)]).to(dev, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(sizes, dev):\n    parts = list()\n    for n in sizes:\n        parts.append(torch.arange(n))\n"
            "    return torch.concat(parts, dim=0).to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(n, dev):\n    return (torch.arange(n) * 2).to(dev, non_blocking=True)\n"),
        Case(
            _H + "def f(n, tag, dev):\n    mask = torch.arange(n) == tag\n    return mask.to(dev, non_blocking=True)\n"
        ),
        Case(_H + "def f(ids, dev):\n    return torch.tensor(ids).repeat_interleave(2).to(dev, non_blocking=True)\n"),
        Case(
            _H
            + "def f(n, dev):\n    buf = torch.zeros(n, pin_memory=True)\n    return buf[[0, 2]].to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, dev):\n    buf = torch.zeros(n, pin_memory=True)\n    return buf.clone().to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, counts, dev):\n    buf = torch.zeros(n, pin_memory=True)\n    idx = np.repeat(np.arange(3), counts)\n"
            "    return buf[idx].to(dev, non_blocking=True)\n"
        ),
        Case(
            _H
            + "def f(n, dev):\n    buf = torch.zeros(4, n, pin_memory=True)\n    return buf[:, :2].contiguous().to(dev, non_blocking=True)\n"
        ),
        Case(
            _H + "def f(n, dst):\n    buf = torch.empty(n, 8, pin_memory=True)\n    col = buf[:, 0]\n"
            "    dst.copy_(col, non_blocking=True)\n"
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        return [f for f in pageable_findings(ctx) if f.code == self.code]


__all__: List[str] = ["PageableCpuSource"]
