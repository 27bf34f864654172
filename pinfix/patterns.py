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


#: Sources of PIN001. ``torch.from_numpy(a)`` shares ``a``'s (pageable) memory.
PAGEABLE_SOURCES: Tuple[PageableSource, ...] = (
    PageableSource(qualified_name="torch.from_numpy", code="PIN001", fixable=True),
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

#: Calls that return pinned memory; a chain through them is never a finding.
PINNING_METHODS: FrozenSet[str] = frozenset({"pin_memory"})

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
RULE_NAMES: Mapping[str, str] = {"PIN001": "PageableNonBlockingCopy"}
