"""What a pageable source and a non_blocking sink are: the one place that knows.

The lint rule, the codemod, the CLI's text pre-filter and the docs all read
these tables. To teach pinfix a new pattern, add an entry here (and a VALID /
INVALID case to the rule); nothing else should hard-code a spelling.

Everything here is plain data about spellings and qualified names, so the
module imports nothing heavy: the pre-commit fast path uses it without LibCST.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Mapping, Optional, Tuple


@dataclass(frozen=True)
class PageableSource:
    """A call whose result is a CPU tensor in pageable (unpinned) memory."""

    #: Fully qualified name of the callable, as LibCST's QualifiedNameProvider spells it.
    qualified_name: str
    #: Rule code reported when this source feeds a non_blocking sink.
    code: str
    #: Whether the configured helper (``[tool.pinfix] helper``) is a drop-in
    #: pinned replacement for this call; ``False``: report only, no fix.
    fixable: bool
    #: The call takes ``device=`` and ``pin_memory=``: with an accelerator
    #: ``device=`` or a ``pin_memory=`` that is not literally ``False`` its result
    #: is not a pageable CPU tensor; without them the fix adds
    #: ``pin_memory=<[tool.pinfix] pin-memory-expr>``.
    factory: bool = False
    #: ``*_like(x)``: on the CPU only when ``x`` is a CPU tensor pinfix can see.
    like: bool = False
    #: ``as_tensor`` / ``asarray`` return their argument when it is already a
    #: tensor (possibly on a device): a source only when the data argument is
    #: plainly host data (a list or tuple display, a number, a NumPy call, a
    #: ``.numpy()`` / ``.tolist()`` result, or a CPU tensor pinfix can see).
    host_data_only: bool = False
    #: The size comes first (``zeros(0)``, ``empty((0, 4))``): a literally empty
    #: size makes an empty tensor, whose copy moves nothing and never blocks.
    sized: bool = False
    #: An operation whose result is a fresh tensor on its inputs' device
    #: (``torch.cat``, arithmetic, ``.cumsum()``): pageable when an input is a
    #: CPU tensor pinfix can see, pinned or not; report only.
    computed: bool = False


def _pin002(name: str, **kw: bool) -> PageableSource:
    return PageableSource(qualified_name=name, code="PIN002", fixable=False, **kw)


LEGACY_CONSTRUCTORS = (
    "Tensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor",
)

#: Sources of the pageable-source rules.
#: PIN001: ``torch.from_numpy(a)`` shares ``a``'s (pageable) memory.
#: PIN002: every other call that makes a fresh pageable CPU tensor.
PAGEABLE_SOURCES: Tuple[PageableSource, ...] = (
    PageableSource(qualified_name="torch.from_numpy", code="PIN001", fixable=True),
    # torch.tensor(data, *, dtype, device, requires_grad, pin_memory): always copies.
    _pin002("torch.tensor", factory=True),
    # No pin_memory= parameter: report only.
    _pin002("torch.as_tensor", host_data_only=True),
    _pin002("torch.asarray", host_data_only=True),
    # CPU factories (device= and pin_memory= are keyword-only).
    _pin002("torch.arange", factory=True),
    *(_pin002("torch." + n, factory=True, sized=True) for n in ("zeros", "ones", "empty", "full")),
    *(_pin002("torch." + n, factory=True, like=True) for n in ("zeros_like", "ones_like", "empty_like", "full_like")),
    # Legacy constructors (`torch.Tensor(data)`, `torch.LongTensor(ids)`): always a
    # fresh CPU tensor, and no pin_memory= to ask for: report only.
    *(_pin002("torch." + n) for n in LEGACY_CONSTRUCTORS),
)

SOURCES_BY_NAME: Mapping[str, PageableSource] = {s.qualified_name: s for s in PAGEABLE_SOURCES}


@dataclass(frozen=True)
class CopySink:
    """A tensor method that copies between devices and accepts ``non_blocking``.

    ``source``: where the CPU tensor is (``"receiver"`` for ``x.to(...)``, or the
    index of the positional argument, with its keyword name).
    ``non_blocking_index``: the positional slots where a bare ``True`` means
    ``non_blocking=True``.
    ``device_args``: positional index and keyword of the destination device, used
    to recognise a copy that plainly stays on the CPU.
    """

    method: str
    source: str  # "receiver" or "arg"
    source_keyword: Optional[str]
    non_blocking_index: Tuple[int, ...]
    device_args: Tuple[Tuple[int, str], ...]


COPY_SINKS: Mapping[str, CopySink] = {
    # dst.copy_(src, non_blocking=False)
    "copy_": CopySink("copy_", "arg", "src", non_blocking_index=(1,), device_args=()),
    # t.to(device, dtype, non_blocking, copy) / t.to(dtype, non_blocking) / t.to(other, non_blocking)
    "to": CopySink("to", "receiver", None, non_blocking_index=(1, 2), device_args=((0, "device"),)),
    # t.cuda(device=None, non_blocking=False)
    "cuda": CopySink("cuda", "receiver", None, non_blocking_index=(1,), device_args=()),
    # t.xpu(device=None, non_blocking=False)
    "xpu": CopySink("xpu", "receiver", None, non_blocking_index=(1,), device_args=()),
}

NON_BLOCKING_KEYWORD = "non_blocking"

def _computed(name: str) -> PageableSource:
    return PageableSource(qualified_name=name, code="PIN002", fixable=False, computed=True)


#: Functions that compute a fresh tensor from tensor inputs, on their device:
#: name -> how the inputs are passed (``"sequence"``: the first argument is a
#: list or tuple of tensors, as for ``torch.cat``; ``"first"``: the first
#: argument is the input tensor). A CPU input makes a pageable CPU result,
#: even of pinned inputs (torch allocates results with the default allocator).
COMPUTED_FUNCTIONS: Mapping[str, Tuple[PageableSource, str]] = {
    **{
        "torch." + n: (_computed("torch." + n), "sequence")
        for n in ("cat", "concat", "concatenate", "stack", "hstack", "vstack", "column_stack")
    },
    **{
        "torch." + n: (_computed("torch." + n), "first")
        for n in (
            "repeat_interleave", "cumsum", "cumprod", "diff", "flip", "nonzero", "argsort", "clone",
            "bucketize", "abs", "neg", "clamp", "masked_select", "index_select", "gather", "tril", "triu",
        )
    },
    "torch.nn.functional.pad": (_computed("torch.nn.functional.pad"), "first"),
}

#: Tensor methods that compute a fresh tensor on the receiver's device
#: (``x.repeat_interleave(n)``, ``x.cumsum(0)``, ``x.clone()``).
COMPUTED_METHODS: Mapping[str, PageableSource] = {
    n: _computed("torch.Tensor." + n)
    for n in (
        "repeat_interleave", "cumsum", "cumprod", "diff", "flip", "nonzero", "argsort", "clone", "repeat",
        "prod", "sum", "abs", "neg", "clamp", "masked_fill", "masked_select", "index_select", "gather",
        "tril", "triu", "add", "sub", "mul", "div", "floor_divide", "remainder", "pow",
    )
}

#: Arithmetic on CPU tensors (``a - b``, ``-a``, ``a == b``) makes a fresh
#: pageable tensor.
ARITHMETIC_SOURCE = _computed("<arithmetic>")
#: Advanced indexing (``x[idx]`` with a tensor or list index) gathers into a
#: fresh pageable tensor, even from a pinned ``x``.
GATHER_SOURCE = _computed("<advanced indexing>")
#: ``.contiguous()`` of a gapped view copies it into a fresh pageable tensor.
CONTIGUOUS_SOURCE = _computed("torch.Tensor.contiguous")

#: Reductions whose result may be a 0-dim tensor: arithmetic with one is
#: on the other operand's device (a 0-dim CPU tensor mixes with CUDA ones).
SCALAR_METHODS: FrozenSet[str] = frozenset({"sum", "prod", "max", "min", "mean", "amax", "amin", "item"})

#: Calls that return pinned memory; a chain through them is never a finding.
PINNING_METHODS: FrozenSet[str] = frozenset({"pin_memory"})

#: PIN002: methods whose result is a fresh pageable CPU tensor: ``t.cpu()``
#: (for a device ``t``; no ``pin_memory=``, so report only).
PAGEABLE_METHOD_SOURCES: Mapping[str, PageableSource] = {
    "cpu": _pin002("torch.Tensor.cpu"),
}

#: PIN002 also reports a gapped view (``x[::2]``, a column slice ``x[:, :k]``)
#: of a pinned tensor copied non_blocking: torch stages it through a pageable
#: temporary. Report only (copy dense rows and slice on the device instead).
NON_DENSE_SOURCE = _pin002("<gapped view of a pinned tensor>")

#: Methods whose result shares its receiver's storage and stays dense (a
#: permuted view is served by a pitched copy): a view of a pinned tensor is
#: pinned, so the data flow follows them and a fix of the base still helps.
VIEW_METHODS: FrozenSet[str] = frozenset(
    {"view", "reshape", "squeeze", "unsqueeze", "flatten", "t", "transpose", "permute", "view_as", "reshape_as"}
)

#: Views that may not be dense: ``expand`` (stride 0), ``narrow`` of a
#: dimension other than the first, ``diagonal``, ``unfold``, ``as_strided``.
#: Of pageable memory they stay pageable; of pinned memory they are reported
#: as gapped (torch stages a non-dense copy), except ``narrow(0, ...)``.
MAYBE_GAPPED_VIEW_METHODS: FrozenSet[str] = frozenset({"expand", "expand_as", "narrow", "diagonal", "unfold", "as_strided"})

#: Methods that stay on the CPU but may allocate a fresh (pageable) tensor:
#: the flow follows them, but pinning the base no longer helps (no fix).
#: ``.to(...)`` without a device (a dtype only, or ``"cpu"``) counts too.
CONVERSION_METHODS: FrozenSet[str] = frozenset(
    {
        "long", "int", "short", "char", "byte", "bool", "float", "double", "half", "bfloat16",
        "contiguous", "type", "type_as", "to",
    }
)

#: Calls whose result is plainly host data (for ``as_tensor`` / ``asarray``).
HOST_DATA_METHODS: FrozenSet[str] = frozenset({"numpy", "tolist"})
HOST_DATA_MODULES: Tuple[str, ...] = ("numpy.",)
#: NumPy functions that return an array (never a scalar): indexing a tensor
#: with one is advanced indexing, which gathers into a fresh tensor.
NUMPY_ARRAY_FUNCTIONS: FrozenSet[str] = frozenset(
    "numpy." + n
    for n in (
        "arange", "array", "asarray", "repeat", "tile", "concatenate", "cumsum", "flatnonzero", "argsort", "sort",
        "unique", "zeros", "ones", "empty", "full", "take", "diff", "clip", "stack", "hstack", "argwhere",
    )
)

#: PIN003: reading a D2H destination on the host. ``.numpy()`` and
#: ``list(t)`` are not reads: they make views (``t.to("cpu",
#: non_blocking=True).numpy()`` is vLLM's idiom for an async copy whose reader
#: waits on an event later).
HOST_READ_METHODS: FrozenSet[str] = frozenset({"tolist", "item", "__bool__", "__int__", "__float__"})
HOST_READ_BUILTINS: FrozenSet[str] = frozenset({"print", "bool", "int", "float", "str", "repr"})
#: Calls that (may) wait for the device: a read after one of them is fine.
#: Any ``.item()`` / ``.tolist()`` / blocking copy on another tensor may
#: synchronize the stream too, so the search stops there as well.
SYNC_METHODS: FrozenSet[str] = frozenset({"synchronize", "wait", "wait_event", "wait_stream", "item", "tolist", "cpu"})

#: Device spellings that plainly mean the host.
CPU_DEVICE_STRINGS: FrozenSet[str] = frozenset({"cpu"})

#: ``torch.<dtype>`` names: ``t.to(torch.float16, True)`` converts, it does not move.
TORCH_DTYPES: FrozenSet[str] = frozenset(
    "torch." + n
    for n in (
        "float float16 float32 float64 bfloat16 half double cfloat cdouble complex64 complex128 "
        "int int8 int16 int32 int64 long short uint8 uint16 uint32 uint64 bool "
        "float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz"
    ).split()
)

#: Default replacement helper (vLLM's); configurable with ``[tool.pinfix] helper``.
DEFAULT_HELPER = "vllm.utils.torch_utils.np_to_pinned_tensor"


#: Rule code -> the Fixit rule's class name (both work in suppression comments).
RULE_NAMES: Mapping[str, str] = {
    "PIN001": "PageableNonBlockingCopy",
    "PIN002": "PageableCpuSource",
    "PIN003": "UnsynchronizedHostRead",
    "PIN004": "UnknownPinnedness",
}
