"""The one table of torch and NumPy effects: what a call does to host/device memory.

Every fact pinfix knows about a library function or method is one entry here,
keyed by its qualified name (``torch.from_numpy``) or, for tensor and array
methods, by the method's name. The engine (:mod:`pinfix.semantic`) derives its
transfer functions from the entries' *kind*; the byte pre-filter
(:mod:`pinfix.prefilter`) derives the spellings it looks for from the same
entries. Teaching pinfix a new torch function is one entry, nothing else.

The kinds (each a small frozen class below):

``Makes``      a fresh CPU tensor, pageable unless ``device=`` / ``pin_memory=`` say otherwise
``MakesBatch`` a mapping of fresh pageable CPU tensors (``tokenizer(..., return_tensors="pt")``)
``Collates``   a batch of fresh tensors stacked from its items (``default_collate``): pageable when they are on the host
``Loads``      a data loader (``DataLoader``): each batch it yields is collated afresh, pageable unless ``pin_memory=`` may be true
``Iterates``   yields what its first argument yields (``tqdm(loader)``, ``itertools.islice``)
``Shares``     ``.share_memory_()``: a CPU tensor's data moved into shared (pageable) memory, in place
``ReadsFile``  tensors read from a file or checkpoint (``torch.load``, safetensors' ``load_file``): pageable CPU memory
``Prepares``  a wrapper of data loaders that keeps their pinning (``accelerate``'s ``Accelerator`` and its ``prepare``, ``prepare_data_loader``), maybe putting batches on the device
``Restores``   unpickled objects (``pickle.load``): tensors back on the device they were pickled from (unknown)
``Opens``      an open file of tensors (safetensors' ``safe_open``): its reads (``get_tensor``, ``get_slice(...)[...]``) as ``ReadsFile``
``Pins``       pinned CPU memory (``.pin_memory()``, a pinned helper)
``View``       shares its input's memory: dense, dense only along the first dimension, or maybe gapped
``Converts``   same device, maybe a fresh tensor (``.long()``, ``.contiguous()``, ``.to(dtype)``)
``Computes``   a fresh tensor on its inputs' device (``torch.cat``, ``x.cumsum()``, arithmetic)
``CopiesTo``   a copy that accepts ``non_blocking`` (``copy_``, ``to``, ``cuda``, ``xpu``): a sink
``ToHost``     a device tensor's data on the host (``.cpu()``: a fresh pageable tensor)
``MakesArray`` a NumPy array (host memory); ``t.numpy()`` views ``t``, NumPy functions read their arguments
``HostData``   plain host data (``len``, ``.tolist()``, ``.item()``)
``Waits``      waits for the device (``synchronize``, ``wait_event``): pending host reads are safe after it
``ReadsOnHost`` reads tensor data on the host (``.tolist()``, ``print``): PIN003 checks these
``Metadata``   reads no data (``.shape``, ``.device``, ``.dtype``)
``Constant``   a value: a dtype (``torch.float16``) or a device constructor (``torch.device``)
``Availability`` true only when pinned memory / an accelerator is available
``RecordFields`` a dataclass's fields (``dataclasses.fields``): read back with ``getattr(obj, f.name)``
``DefaultDevice`` the device factories allocate on when given none (``torch.get_default_device()``,
               set by ``torch.set_default_device(d)`` and, inside its block, ``with torch.device(d):``)
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict, FrozenSet, Mapping, Optional, Tuple


class Effect:
    """Base of every table entry: a frozen record of the fields its classes annotate
    (each with its default in the class body), given by position or by name, equal to
    another of its class with the same values, hashable, written back as it is made.
    (As ``@dataclass(frozen=True)`` would make them, without generating and compiling
    five methods a class: 12 ms of every start, for the 26 kinds.)"""

    #: The fields, the base's first (each class's annotations, in order).
    fields: ClassVar[Tuple[str, ...]] = ("code",)

    #: The rule a pageable result of this entry is reported under.
    code: str = "PIN002"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [name for name in cls.__dict__.get("__annotations__", {}) if name != "fields"]
        for name in own:
            if name not in cls.__dict__:
                raise TypeError(f"{cls.__name__}.{name} has no default")
        cls.fields = tuple(dict.fromkeys((*cls.fields, *own)))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self.fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__} takes at most {len(fields)} values")
        given = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields or name in given:
                raise TypeError(f"{type(self).__name__}: unexpected or repeated field {name!r}")
            given[name] = value
        for name in fields:
            object.__setattr__(self, name, given.get(name, getattr(type(self), name)))

    def _values(self) -> Tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.fields)})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: an effect is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: an effect is frozen")


class Makes(Effect):
    """A fresh CPU tensor, pageable unless the call says otherwise."""

    #: The configured pinned helper (``np_to_pinned_tensor``) is a drop-in for it.
    helper_fix: bool = False
    #: Takes ``device=`` and ``pin_memory=`` (keyword-only): an accelerator device, or
    #: ``pin_memory=`` true or an availability flag, makes it no pageable source (another
    #: flag: pageable where it is false); without them the fix adds ``pin_memory=<expr>``.
    factory: bool = False
    #: ``*_like(x)``: on ``x``'s device unless ``device=`` is given.
    like: bool = False
    #: The size comes first: a literally empty size makes an empty tensor (its copy moves nothing).
    sized: bool = False
    #: The sizes may be passed one by one (``zeros(2, 3)``; not ``full``, whose second argument is the fill value).
    varargs_size: bool = True
    #: ``as_tensor`` / ``asarray`` return their argument when it is a tensor already:
    #: a fresh CPU tensor only of host data (a display, a number, an ndarray).
    host_data_only: bool = False
    #: Shares its argument's memory (``from_numpy``): the helper fix copies it instead.
    shares_argument: bool = False


#: The ``layout=`` values a ``pin_memory=`` fix may keep, by last name: the default dense
#: (strided) layout. torch refuses to pin others (``torch.zeros(n, layout=torch.sparse_coo,
#: pin_memory=True)`` raises "Only dense CPU tensors can be pinned"); the sparse compressed
#: ones pass that check on a CPU-only build but pinfix does not rely on them.
PINNABLE_LAYOUTS: FrozenSet[str] = frozenset({"strided"})


#: Functions that register existing host memory with the accelerator's driver (page-lock
#: it), by the called name (``cudart().cudaHostRegister(ptr, n, 0)``, ``hipHostRegister``,
#: CuPy's ``cuda.runtime.hostRegister``): in a module that calls one, a tensor viewing a host
#: buffer (``torch.from_numpy``) may be pinned, so pinfix cannot call it pageable.
HOST_REGISTER_CALLS = frozenset({"cudaHostRegister", "hipHostRegister", "hostRegister", "cuMemHostRegister"})


class Pins(Effect):
    """Pinned CPU memory."""


class View(Effect):
    """Shares its input's storage.

    ``dense``: ``"always"`` (``view``, ``reshape``, ``t``: a view of pinned memory is
    pinned and dense), ``"first-dim"`` (``narrow``: dense when it narrows dimension 0)
    or ``"maybe"`` (``expand``, ``diagonal``: may be a gapped view, which torch stages
    through a pageable temporary).
    """

    dense: str = "always"


class Converts(Effect):
    """Stays on its input's device, maybe as a fresh tensor (pinning the base no longer helps)."""

    #: ``.contiguous()``: of a gapped view, a fresh dense pageable tensor.
    contiguous: bool = False


class Computes(Effect):
    """A fresh tensor on its inputs' device, allocated by the default (pageable) allocator.

    ``inputs``: ``"sequence"`` (the first argument is a sequence of tensors:
    ``torch.cat``), ``"first"`` (the first argument: ``torch.cumsum(x)``),
    ``"receiver"`` (a method's receiver: ``x.cumsum()``), ``"tensors"`` (every
    tensor argument: ``torch.where(c, a, b)``).
    """

    inputs: str = "first"
    #: The result may be a 0-dim tensor (a reduction), which follows other operands' device.
    scalar: bool = False


class CopiesTo(Effect):
    """A tensor method that copies between devices and accepts ``non_blocking``.

    ``source``: ``"receiver"`` (``x.to(...)``) or ``"arg"`` (``dst.copy_(src)``, keyword
    ``source_keyword``). ``non_blocking_slots``: the positional indexes where a bare
    ``True`` means ``non_blocking=True``. ``device_slot``: the positional index and keyword of
    the destination device (``None``: the method names it, ``cuda``/``xpu``).
    """

    method: str = ""
    #: ``"receiver"``, ``"arg"``; a library function (``send_to_device(batch, dev, non_blocking=True)``)
    #: has ``"arg"``: its first argument, whose containers it recurses into (``non_blocking`` by keyword only).
    source: str = "receiver"
    source_keyword: Optional[str] = None
    non_blocking_slots: Tuple[int, ...] = ()
    device_slot: Optional[Tuple[int, str]] = None
    #: A library helper that copies non_blocking without being asked, to any device given as a
    #: string or ``torch.device`` but these types (Lightning's ``move_data_to_device``: not to
    #: ``cpu`` or ``mps``; an int device index it copies blocking).
    implied_except: Optional[Tuple[str, ...]] = None


class ToHost(Effect):
    """``t.cpu()``: a device tensor's data in a fresh pageable CPU tensor (a CPU tensor itself)."""


class MakesArray(Effect):
    """A NumPy array (host memory). A NumPy function handed a tensor (``np.asarray(t)``)
    reads its data on the host; ``t.numpy()`` (``of_tensor``) views it, so reading the array
    reads the tensor."""

    #: ``t.numpy()``: an array that shares a CPU tensor's memory.
    of_tensor: bool = False


class HostData(Effect):
    """Plain host data (a Python number or list)."""


class Waits(Effect):
    """Waits for the device: host reads of earlier non_blocking device-to-host copies are safe after it."""


class ReadsOnHost(Effect):
    """Reads a tensor's data on the host (and waits for it, blocking)."""


class Metadata(Effect):
    """Reads no tensor data. ``gives``: ``"device"``, ``"dtype"`` or ``"host"`` (a size, a bool)."""

    gives: str = "host"


class Constant(Effect):
    """A value rather than a call: ``"dtype"`` (``torch.float16``) or ``"device"`` (``torch.device(...)`` when called)."""

    value: str = "dtype"


class MakesBatch(Effect):
    """A mapping of fresh pageable CPU tensors, read by key or attribute (what a
    Hugging Face tokenizer or processor returns when asked ``return_tensors="pt"``)."""


class Collates(Effect):
    """A batch collated from the items of its first argument (``torch.utils.data.default_collate``):
    tensors stacked (``torch.stack``) or made (``torch.as_tensor``, ``torch.tensor``) afresh, shaped
    as an item is (a dict of them for dict items, a list for sequences, one tensor otherwise). When
    every item holds only host data, arrays and CPU tensors, they are pageable CPU memory."""


class Loads(Effect):
    """A data loader (``torch.utils.data.DataLoader``): iterating it yields batches that its
    collate function stacks afresh from the dataset's items: pageable CPU tensors, shaped as
    the items are (a tensor, a tuple or list, a dict, a record of them), unless ``pin_memory=``
    may be true (then the loader pins each batch before handing it out). A ``collate_fn`` of
    the caller's own makes the batches whatever it returns, unless the loader pins them."""

    #: The positional indexes of ``collate_fn`` and ``pin_memory`` in the constructor.
    collate_slot: int = 6
    pin_slot: int = 7


class Iterates(Effect):
    """A wrapper that yields the items of its first argument as they are (a progress bar,
    ``itertools.islice`` / ``cycle``): iterating it is iterating that argument."""


class Shares(Effect):
    """``t.share_memory_()``: moves a CPU tensor's storage into shared memory (for other
    processes), in place: fresh pageable memory, pinned or not before; a device tensor stays."""


class ReadsFile(Effect):
    """Tensors read from a file or a checkpoint (``torch.load``, safetensors' ``load_file``):
    fresh pageable CPU memory (or memory mapped from the file), shaped as what was saved (a
    tensor, a dict or list of them), on the device ``device_keyword`` names. ``saved_device``:
    without that keyword each tensor goes back to the device it was saved from (unknown)."""

    device_keyword: str = "device"
    #: The positional index of the device argument.
    device_slot: int = 1
    saved_device: bool = False


class Prepares(Effect):
    """``accelerate``'s wrappers of data loaders: the wrapped loader yields what the loader it is
    given yields (the loader's ``pin_memory`` is kept), unless the wrapper puts each batch on the
    device itself (``send_to_device``), which is then no host memory.

    ``role``: ``"object"`` (``Accelerator(..., device_placement=True)``: an object whose
    ``methods`` wrap), ``"method"`` (``accelerator.prepare(*objs, device_placement=[...])``,
    ``accelerator.prepare_data_loader(loader, device_placement=None)``: the object's placement
    unless the call says) or ``"function"`` (``prepare_data_loader(loader, ...,
    put_on_device=False)``). ``placement``: the keyword that turns device placement on or off,
    ``default``: its value when not given (for a method: the object's)."""

    role: str = "function"
    placement: str = "device_placement"
    default: bool = True
    methods: Tuple[str, ...] = ("prepare", "prepare_data_loader")
    #: An object's keyword that may keep the device on the host (``Accelerator(cpu=True)``):
    #: given and not literally ``False``, pinfix cannot tell where batches are placed.
    host_keyword: Optional[str] = "cpu"


class Opens(Effect):
    """An open file of tensors (safetensors' ``safe_open(path, framework="pt", device="cpu")``,
    also as a context manager): each tensor its ``reads`` methods return (``f.get_tensor(name)``)
    or its ``slices`` methods' results give when indexed (``f.get_slice(name)[:, :k]``) is read
    afresh onto the device ``device_keyword`` names (by default the CPU: pageable memory)."""

    device_keyword: str = "device"
    #: The positional index of the device argument.
    device_slot: int = 2
    reads: Tuple[str, ...] = ("get_tensor",)
    slices: Tuple[str, ...] = ("get_slice",)


class Restores(Effect):
    """Objects unpickled (``pickle.load``, ``cloudpickle.loads``): a tensor among them is restored on
    the device it was pickled from (a CUDA tensor on the device), which the call does not say, so
    what it returns is never known to be host memory."""


class Availability(Effect):
    """True only where pinned memory (an accelerator) is available: on its false branch
    no copy can block, so pinfix does not report what happens there. ``value``: the
    entry is a flag computed once (``PIN_MEMORY = is_pin_memory_available()``), not a call."""

    value: bool = False


class RecordFields(Effect):
    """The fields of a dataclass, or of one of its objects (``dataclasses.fields``): ``Field``
    objects whose ``.name`` is one of the fields' names, so that ``getattr(obj, f.name)`` in a
    loop over them reads each field of ``obj`` (a ``to_device`` that copies every tensor field)."""


class DefaultDevice(Effect):
    """The default device: where factories given no ``device=`` allocate (``torch.zeros(n)``,
    ``torch.tensor(data)``, ``torch.as_tensor(data)``). ``get_default_device()`` reads it;
    ``set_default_device(d)`` (``sets``) makes it ``d`` from there on, and a ``torch.device``
    used as a context manager (``with torch.device(d):``) makes it ``d`` inside the block.
    Where it is not known to be the CPU, what a factory makes is not known to be host memory."""

    sets: bool = False


def _entries(effect: Effect, names: str, prefix: str = "") -> Dict[str, Effect]:
    return {prefix + n: effect for n in names.split()}


LEGACY_CONSTRUCTORS = (
    "Tensor LongTensor IntTensor ShortTensor CharTensor ByteTensor BoolTensor FloatTensor DoubleTensor HalfTensor "
    "BFloat16Tensor"
)

_TORCH_DTYPES = (
    "float float16 float32 float64 bfloat16 half double cfloat cdouble complex64 complex128 int int8 int16 int32 int64 "
    "long short uint8 uint16 uint32 uint64 bool float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz"
)

#: Library functions and values, by qualified name.
FUNCTIONS: Mapping[str, Effect] = {
    # --- sources -------------------------------------------------------------------
    # from_numpy shares the array's pageable memory; the pinned helper is a drop-in.
    "torch.from_numpy": Makes(code="PIN001", helper_fix=True, shares_argument=True),
    # torch.tensor(data, *, dtype, device, requires_grad, pin_memory): always copies.
    "torch.tensor": Makes(factory=True),
    # No pin_memory=: report only.
    **_entries(Makes(host_data_only=True), "as_tensor asarray", "torch."),
    "torch.arange": Makes(factory=True),
    **_entries(Makes(factory=True, sized=True), "zeros ones empty rand randn", "torch."),
    "torch.full": Makes(factory=True, sized=True, varargs_size=False),
    "torch.randint": Makes(factory=True),
    "torch.linspace": Makes(factory=True),
    **_entries(
        Makes(factory=True, like=True), "zeros_like ones_like empty_like full_like rand_like randn_like", "torch."
    ),
    # Legacy constructors: always a fresh CPU tensor, no pin_memory=: report only.
    **_entries(Makes(), LEGACY_CONSTRUCTORS, "torch."),
    # --- computed on the inputs' device --------------------------------------------
    **_entries(Computes(inputs="sequence"), "cat concat concatenate stack hstack vstack column_stack", "torch."),
    **_entries(
        Computes(inputs="first"),
        "repeat_interleave cumsum cumprod diff flip nonzero argsort sort clone bucketize abs neg clamp "
        "masked_select index_select gather tril triu searchsorted roll cummax",
        "torch.",
    ),
    **_entries(Computes(inputs="first", scalar=True), "sum prod max min mean amax amin", "torch."),
    **_entries(Computes(inputs="tensors"), "where maximum minimum add sub mul div remainder", "torch."),
    "torch.nn.functional.pad": Computes(inputs="first"),
    "torch.nn.functional.one_hot": Computes(inputs="first"),
    # --- batches ----------------------------------------------------------------------
    **_entries(Collates(), "default_collate", "torch.utils.data."),
    **_entries(Collates(), "default_collate", "torch.utils.data.dataloader."),
    **_entries(Collates(), "default_collate", "torch.utils.data._utils.collate."),
    # --- data loaders and files -------------------------------------------------------
    **_entries(Loads(), "torch.utils.data.DataLoader torch.utils.data.dataloader.DataLoader"),
    "torch.load": ReadsFile(device_keyword="map_location", saved_device=True),
    "safetensors.torch.load_file": ReadsFile(device_keyword="device"),
    # An unpickled tensor goes back to the device it was pickled from (a CUDA tensor comes back on
    # the device): pinfix cannot tell where, so never pageable (no device keyword to say it).
    **_entries(
        Restores(),
        "pickle.load pickle.loads cloudpickle.load cloudpickle.loads _pickle.load _pickle.loads dill.load dill.loads",
    ),
    **_entries(Opens(), "safetensors.safe_open safetensors.torch.safe_open"),
    # accelerate: `Accelerator(...).prepare(loader)` keeps the loader's pinning and, with device placement
    # (the default), puts each batch on the device; `prepare_data_loader(loader)` does not by default.
    **_entries(Prepares(role="object"), "accelerate.Accelerator accelerate.accelerator.Accelerator"),
    "accelerate.data_loader.prepare_data_loader": Prepares(role="function", placement="put_on_device", default=False),
    # torch.frombuffer(buffer, ...) views a host buffer (bytes, an mmap): pageable, no pin_memory=.
    "torch.frombuffer": Makes(shares_argument=True),
    **_entries(Iterates(), "tqdm.tqdm tqdm.auto.tqdm tqdm.notebook.tqdm itertools.islice itertools.cycle"),
    # --- library helpers that copy every tensor of a container (a sink when given non_blocking=) ---
    **_entries(
        CopiesTo(method="send_to_device", source="arg", source_keyword="tensor", device_slot=(1, "device")),
        "accelerate.utils.send_to_device accelerate.utils.operations.send_to_device",
    ),
    # Lightning's move_data_to_device(batch, device): `.to(device, non_blocking=True)` of every tensor
    # of the batch's containers where device is a string or torch.device other than cpu/mps.
    **_entries(
        CopiesTo(
            method="move_data_to_device",
            source="arg",
            source_keyword="batch",
            device_slot=(1, "device"),
            implied_except=("cpu", "mps"),
        ),
        "lightning_fabric.utilities.move_data_to_device lightning_fabric.utilities.apply_func.move_data_to_device "
        "lightning.fabric.utilities.move_data_to_device lightning.fabric.utilities.apply_func.move_data_to_device "
        "pytorch_lightning.utilities.move_data_to_device pytorch_lightning.utilities.apply_func.move_data_to_device "
        "lightning.pytorch.utilities.move_data_to_device lightning.pytorch.utilities.apply_func.move_data_to_device "
        "pytorch_lightning.core.hooks.move_data_to_device",
    ),
    # --- records ----------------------------------------------------------------------
    "dataclasses.fields": RecordFields(),
    # --- values ---------------------------------------------------------------------
    **_entries(Constant(value="dtype"), _TORCH_DTYPES, "torch."),
    # As a context manager (``with torch.device(d):``) it sets the default device inside the block.
    "torch.device": Constant(value="device"),
    "torch.get_default_device": DefaultDevice(),
    "torch.set_default_device": DefaultDevice(sets=True),
    # --- waits and availability -----------------------------------------------------
    **_entries(
        Waits(), "torch.cuda.synchronize torch.xpu.synchronize torch.accelerator.synchronize torch.mps.synchronize"
    ),
    **_entries(
        Availability(),
        "torch.cuda.is_available torch.xpu.is_available torch.accelerator.is_available "
        "vllm.utils.platform_utils.is_pin_memory_available vllm.utils.is_pin_memory_available",
    ),
    **_entries(Availability(value=True), "vllm.utils.torch_utils.PIN_MEMORY"),
    # --- NumPy ----------------------------------------------------------------------
    **_entries(
        MakesArray(),
        "arange array asarray repeat tile concatenate cumsum flatnonzero argsort sort unique zeros ones empty full "
        "take diff clip stack hstack vstack argwhere nonzero where zeros_like ones_like empty_like full_like "
        "ascontiguousarray frombuffer fromiter minimum maximum searchsorted pad",
        "numpy.",
    ),
    # --- builtins -------------------------------------------------------------------
    **_entries(ReadsOnHost(), "print bool int float str repr", "builtins."),
    **_entries(HostData(), "len range isinstance sum max min abs round", "builtins."),
}

#: Tensor methods, by name (the receiver is a tensor, or may be).
TENSOR_METHODS: Mapping[str, Effect] = {
    "pin_memory": Pins(),
    "share_memory_": Shares(),
    "cpu": ToHost(),
    **_entries(View(dense="always"), "view reshape squeeze unsqueeze flatten t transpose permute view_as reshape_as"),
    "narrow": View(dense="first-dim"),
    **_entries(View(dense="maybe"), "expand expand_as diagonal unfold as_strided"),
    **_entries(
        Converts(),
        "long int short char byte bool float double half bfloat16 type type_as",
    ),
    "contiguous": Converts(contiguous=True),
    **_entries(
        Computes(inputs="receiver"),
        "repeat_interleave cumsum cumprod diff flip nonzero argsort clone repeat abs neg clamp masked_fill "
        "masked_select index_select gather tril triu add sub mul div floor_divide remainder pow sort roll",
    ),
    **_entries(Computes(inputs="receiver", scalar=True), "sum prod max min mean amax amin"),
    "copy_": CopiesTo(method="copy_", source="arg", source_keyword="src", non_blocking_slots=(1,)),
    # t.to(device, dtype, non_blocking, copy) / t.to(dtype, non_blocking) / t.to(other, non_blocking)
    "to": CopiesTo(method="to", source="receiver", non_blocking_slots=(1, 2), device_slot=(0, "device")),
    # t.cuda(device=None, non_blocking=False), t.xpu(...)
    "cuda": CopiesTo(method="cuda", source="receiver", non_blocking_slots=(1,)),
    "xpu": CopiesTo(method="xpu", source="receiver", non_blocking_slots=(1,)),
    # An array viewing the tensor's memory: reading it reads the tensor (PIN003).
    "numpy": MakesArray(of_tensor=True),
    # Python calls the dunders itself: ``if t``, ``int(t)``, ``f"{t}"``.
    **_entries(ReadsOnHost(), "tolist item __bool__ __int__ __float__ __format__"),
    **_entries(Waits(), "synchronize wait wait_event wait_stream"),
    **_entries(Metadata(gives="host"), "size numel dim stride is_pinned is_contiguous element_size nelement"),
    "get_device": Metadata(gives="host"),
}

#: Tensor attributes that are no call (``x.shape``, ``x.device``).
TENSOR_ATTRIBUTES: Mapping[str, Effect] = {
    "device": Metadata(gives="device"),
    "dtype": Metadata(gives="dtype"),
    **_entries(Metadata(gives="host"), "shape ndim is_cuda"),
    "T": View(dense="maybe"),
}

#: NumPy array methods, by name.
ARRAY_METHODS: Mapping[str, Effect] = {
    **_entries(MakesArray(), "astype copy reshape flatten ravel repeat cumsum take clip transpose squeeze view"),
    # They read the array's data on the host (PIN003, when it views a pending copy's tensor).
    **_entries(ReadsOnHost(), "tolist item sum max min mean any all"),
}

#: Calls of any callee (a tokenizer object, a processor) that say what they return
#: by a keyword argument: ``(keyword, value) -> effect``.
KEYWORD_CALLS: Mapping[Tuple[str, str], Effect] = {
    ("return_tensors", "pt"): MakesBatch(),
}

#: Sinks, by method name.
COPY_SINKS: Mapping[str, CopiesTo] = {n: e for n, e in TENSOR_METHODS.items() if isinstance(e, CopiesTo)}

NON_BLOCKING_KEYWORD = "non_blocking"

#: Device spellings that plainly mean the host (``"cpu"``, ``"cpu:0"``); ``meta`` holds no data.
CPU_DEVICE_TYPES: FrozenSet[str] = frozenset({"cpu"})
NO_DATA_DEVICE_TYPES: FrozenSet[str] = frozenset({"meta"})

#: Default replacement helper (vLLM's); configurable with ``[tool.pinfix] helper``.
DEFAULT_HELPER = "vllm.utils.torch_utils.np_to_pinned_tensor"

#: Names whose last component says "is pinned memory (or an accelerator) available"
#: when tested: the function vLLM uses and the flags projects keep for it.
AVAILABILITY_NAMES: FrozenSet[str] = frozenset({"is_pin_memory_available"})


#: The last component of every library helper that copies non_blocking without being asked
#: (``move_data_to_device``): a file that calls one may hold a sink without saying ``non_blocking``.
IMPLIED_NON_BLOCKING: FrozenSet[str] = frozenset(
    q.rsplit(".", 1)[-1] for q, e in FUNCTIONS.items() if isinstance(e, CopiesTo) and e.implied_except is not None
)


#: The last component of every name that sets the default device (``set_default_device``).
DEFAULT_DEVICE_SETTERS: FrozenSet[str] = frozenset(
    q.rsplit(".", 1)[-1] for q, e in FUNCTIONS.items() if isinstance(e, DefaultDevice) and e.sets
)


#: The classes of what pinfix's values are, by qualified name -> the value kind they
#: name (``isinstance(x, torch.Tensor)``, ``type(x) is np.ndarray``): a tensor a torch
#: function makes is exactly ``torch.Tensor`` (never a subclass such as ``DTensor`` or
#: ``Parameter``), an array NumPy makes exactly ``numpy.ndarray``.
CLASS_KINDS: Mapping[str, str] = {
    "torch.Tensor": "tensor",
    "numpy.ndarray": "array",
    "builtins.list": "list",
    "builtins.tuple": "tuple",
    "builtins.set": "set",
    "builtins.dict": "dict",
    "builtins.NoneType": "none",
    "types.NoneType": "none",
    "builtins.int": "int",
    "builtins.float": "float",
    "builtins.bool": "bool",
    "builtins.str": "str",
}
#: Classes every tensor is an instance of besides ``torch.Tensor`` itself.
TENSOR_BASES: FrozenSet[str] = frozenset({"torch._C.TensorBase", "torch._C._TensorBase", "builtins.object"})

#: What a failed pinned allocation raises: an ``except`` of one of these after
#: ``torch.empty(n, pin_memory=True)`` is the "pinned unless pinning is impossible" fallback.
ALLOCATION_ERRORS: FrozenSet[str] = frozenset(
    {
        "builtins.RuntimeError",
        "builtins.Exception",
        "builtins.BaseException",
        "builtins.MemoryError",
        "torch.OutOfMemoryError",
        "torch.cuda.OutOfMemoryError",
        "torch.AcceleratorError",
    }
)


def function_effect(qualified: str) -> Optional[Effect]:
    """The entry for a library function or value (``torch.zeros``)."""
    return FUNCTIONS.get(qualified)


def spellings() -> FrozenSet[str]:
    """The last component of every name in the table: what the byte pre-filter looks for."""
    names = {q.rsplit(".", 1)[-1] for q in FUNCTIONS} | set(TENSOR_METHODS) | set(ARRAY_METHODS)
    return frozenset(names)


def tables() -> Tuple[Mapping[Any, Effect], ...]:
    """Every table, for checks that each entry's kind is covered."""
    return (FUNCTIONS, TENSOR_METHODS, TENSOR_ATTRIBUTES, ARRAY_METHODS, KEYWORD_CALLS)
