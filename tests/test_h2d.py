"""The ``h2d-helper`` fix: ``.to(device, non_blocking=True)`` sinks rewritten to
``async_tensor_h2d(data, device)`` (input -> expected, ruff clean, idempotent),
and the sinks it leaves to the other fixes or to no fix."""

from pathlib import Path

import pytest

from pinfix.api import check_text, fix_text
from pinfix.config import ConfigError, load_config
from tests.support import fix_in_project as _fix
from tests.support import project_file as _path
from tests.support import ruff_clean_before_and_after

H2D_CONFIG = '[tool.pinfix]\nh2d-helper = "vllm.utils.torch_utils.async_tensor_h2d"\n'

CASES = {
    # vLLM 0.29.0's kanana_v rewrite: keyword device for array data; merged import.
    "from_numpy_merged_import": (
        """\
import numpy as np
import torch

from vllm.utils.torch_utils import PIN_MEMORY


def f(cu_seqlens: np.ndarray, device: torch.device) -> torch.Tensor:
    assert PIN_MEMORY is not None
    return torch.from_numpy(cu_seqlens).to(
        device,
        non_blocking=True,
    )
""",
        """\
import numpy as np
import torch

from vllm.utils.torch_utils import PIN_MEMORY, async_tensor_h2d


def f(cu_seqlens: np.ndarray, device: torch.device) -> torch.Tensor:
    assert PIN_MEMORY is not None
    return async_tensor_h2d(cu_seqlens, device=device)
""",
    ),
    # `.to`'s dtype kept as `dtype=`; `from torch import from_numpy` left unused is removed.
    "keyword_form_dtype_unused_import_removed": (
        """\
from torch import from_numpy, int64


def f(a, dev):
    return from_numpy(a).to(device=dev, dtype=int64, non_blocking=True)
""",
        """\
from torch import int64

from vllm.utils.torch_utils import async_tensor_h2d


def f(a, dev):
    return async_tensor_h2d(a, device=dev, dtype=int64)
""",
    ),
    # Positional dtype and non_blocking; `import torch` stays (still used).
    "positional_dtype": (
        """\
import torch


def f(a, device):
    return torch.from_numpy(a).to(device, torch.float32, True)
""",
        """\
import torch

from vllm.utils.torch_utils import async_tensor_h2d


def f(a, device):
    return async_tensor_h2d(a, device=device, dtype=torch.float32)
""",
    ),
    # `import torch` left unused is removed.
    "import_torch_removed": (
        """\
import torch


def f(a, device):
    return torch.from_numpy(a).to(device, non_blocking=True)
""",
        """\
from vllm.utils.torch_utils import async_tensor_h2d


def f(a, device):
    return async_tensor_h2d(a, device=device)
""",
    ),
    # torch.tensor of Python data: its dtype= kept, a plainly-CPU device= dropped (the helper's own).
    "tensor_of_list_parameter": (
        """\
import torch


def f(token_indices: list[int], src: torch.Tensor) -> torch.Tensor:
    device = src.device
    return torch.tensor(
        token_indices, dtype=torch.int32, device="cpu"
    ).to(device, non_blocking=True)
""",
        """\
import torch

from vllm.utils.torch_utils import async_tensor_h2d


def f(token_indices: list[int], src: torch.Tensor) -> torch.Tensor:
    device = src.device
    return async_tensor_h2d(token_indices, device=device, dtype=torch.int32)
""",
    ),
    "tensor_of_display": (
        """\
import torch


def f(n: int, device):
    return torch.tensor([n, n + 1]).to(device, non_blocking=True)
""",
        """\
from vllm.utils.torch_utils import async_tensor_h2d


def f(n: int, device):
    return async_tensor_h2d([n, n + 1], device=device)
""",
    ),
    # A local pageable tensor: positional device (vLLM 0.29.0's siglip / pooler shape);
    # a conversion on the way is fine (the helper pins whatever it is given).
    "local_name_and_conversion": (
        """\
import torch


def f(n: int, ids: list, data: torch.Tensor):
    idx_cpu = torch.arange(n)
    idx = idx_cpu.to(data.device, non_blocking=True)
    mask = torch.tensor(ids).bool()
    return idx, mask.to(data.device, torch.int32, non_blocking=True)
""",
        """\
import torch

from vllm.utils.torch_utils import async_tensor_h2d


def f(n: int, ids: list, data: torch.Tensor):
    idx_cpu = torch.arange(n)
    idx = async_tensor_h2d(idx_cpu, data.device)
    mask = torch.tensor(ids).bool()
    return idx, async_tensor_h2d(mask, data.device, dtype=torch.int32)
""",
    ),
    # Already imported under another name: that name is used; no second import.
    "already_imported_alias": (
        """\
import torch

from vllm.utils.torch_utils import async_tensor_h2d as h2d


def f(a, b, device):
    x = h2d(a, device)
    return x, torch.from_numpy(b).to(device, non_blocking=True)
""",
        """\
from vllm.utils.torch_utils import async_tensor_h2d as h2d


def f(a, b, device):
    x = h2d(a, device)
    return x, h2d(b, device=device)
""",
    ),
    # A copy_ sink keeps the np_to_pinned_tensor fix; both helpers merge into one import.
    "both_helpers_one_import": (
        """\
import torch


def f(dst, a, b, device):
    dst.copy_(torch.from_numpy(a), non_blocking=True)
    return torch.from_numpy(b).to(device, non_blocking=True)
""",
        """\
from vllm.utils.torch_utils import async_tensor_h2d, np_to_pinned_tensor


def f(dst, a, b, device):
    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)
    return async_tensor_h2d(b, device=device)
""",
    ),
    # Parentheses around the call stay.
    "parenthesized_call": (
        """\
import torch


def f(a, device):
    out = (
        torch.from_numpy(a).to(device, non_blocking=True)
    )
    return out
""",
        """\
from vllm.utils.torch_utils import async_tensor_h2d


def f(a, device):
    out = (
        async_tensor_h2d(a, device=device)
    )
    return out
""",
    ),
    # A computed source that is not a call (arithmetic): rewritten as a traced tensor.
    "computed_arithmetic_source": (
        """\
import torch


def bump(count: int, device):
    start = torch.arange(count)
    return (start + 1).to(device, non_blocking=True)
""",
        """\
import torch

from vllm.utils.torch_utils import async_tensor_h2d


def bump(count: int, device):
    start = torch.arange(count)
    return async_tensor_h2d(start + 1, device)
""",
    ),
    # A sum with a non-0-dim CPU tensor is on the CPU whatever the other operand is.
    "sum_with_unknown_operand": (
        """\
import torch


class Table:
    def rows(self, keys: list, device):
        keys_t = torch.tensor(keys, dtype=torch.long)
        base = torch.arange(0, self.width, dtype=torch.long)
        rows = base.view((1, self.width)) + keys_t.view((len(keys), 1)) * self.width
        return rows.to(device=device, non_blocking=True)
""",
        """\
import torch

from vllm.utils.torch_utils import async_tensor_h2d


class Table:
    def rows(self, keys: list, device):
        keys_t = torch.tensor(keys, dtype=torch.long)
        base = torch.arange(0, self.width, dtype=torch.long)
        rows = base.view((1, self.width)) + keys_t.view((len(keys), 1)) * self.width
        return async_tensor_h2d(rows, device)
""",
    ),
    # The name rebound to the copy's result: later uses are of the result, and
    # the list's uses come before the tensor exists.
    "rebound_to_the_result": (
        """\
import torch


def gather(chunks, device):
    pieces = []
    for c in chunks:
        pieces.append(torch.arange(c))
    pieces = torch.cat(pieces)
    pieces = pieces.to(device, non_blocking=True)
    return pieces.sum()
""",
        """\
import torch

from vllm.utils.torch_utils import async_tensor_h2d


def gather(chunks, device):
    pieces = []
    for c in chunks:
        pieces.append(torch.arange(c))
    pieces = torch.cat(pieces)
    pieces = async_tensor_h2d(pieces, device)
    return pieces.sum()
""",
    ),
}

# Sinks the h2d fix leaves alone: (source, text the fixed file must contain, fix safety, note part).
OTHER_FIX = {
    # copy= / memory_format=: no h2d; the np_to_pinned_tensor fix as without the setting.
    "copy_keyword": (
        "import torch\n\n\ndef f(a, dev):\n    return torch.from_numpy(a).to(dev, copy=True, non_blocking=True)\n",
        "np_to_pinned_tensor(a).to(dev, copy=True, non_blocking=True)",
        "safe",
        None,
    ),
    "memory_format_keyword": (
        "import torch\n\n\ndef f(a, dev):\n"
        "    return torch.from_numpy(a).to(dev, memory_format=torch.contiguous_format, non_blocking=True)\n",
        "np_to_pinned_tensor(a).to(dev",
        "unsafe",
        "may be the CPU",
    ),
    # `.to(other)` takes the other tensor's dtype too: only a plain device is rewritten.
    "to_other_tensor": (
        "import torch\n\n\ndef f(a, other):\n    return torch.from_numpy(a).to(other, non_blocking=True)\n",
        "np_to_pinned_tensor(a).to(other, non_blocking=True)",
        "unsafe",
        "may be the CPU",
    ),
    # `torch.tensor(d).to(T)` rounds through the inferred dtype: not the same as dtype=T.
    "tensor_with_to_dtype": (
        "import torch\n\n\ndef f(dev):\n    return torch.tensor([0.1, 0.2]).to(dev, torch.float64, non_blocking=True)\n",
        "torch.tensor([0.1, 0.2], pin_memory=True).to(dev, torch.float64, non_blocking=True)",
        "unsafe",
        "pin-memory-expr",
    ),
    # requires_grad= changes the result; an unknown argument may be an ndarray or a tensor.
    "tensor_requires_grad": (
        "import torch\n\n\ndef f(dev):\n    return torch.tensor([1.0], requires_grad=True).to(dev, non_blocking=True)\n",
        "torch.tensor([1.0], requires_grad=True, pin_memory=True)",
        "unsafe",
        "pin-memory-expr",
    ),
    "tensor_of_unknown_data": (
        "import torch\n\n\ndef f(arr, dev):\n    return torch.tensor(arr).to(dev, non_blocking=True)\n",
        "torch.tensor(arr, pin_memory=True)",
        "unsafe",
        "pin-memory-expr",
    ),
    # A comment inside the call would be lost.
    "comment_inside": (
        "import torch\n\n\ndef f(a, dev):\n    return torch.from_numpy(a).to(\n        dev,  # the GPU\n"
        "        non_blocking=True,\n    )\n",
        "np_to_pinned_tensor(a).to(",
        "unsafe",
        "may be the CPU",
    ),
    # The helper's name is bound to something else here.
    "name_taken": (
        "import torch\n\n\ndef async_tensor_h2d(x):\n    return x\n\n\n"
        "def f(a, dev):\n    return torch.from_numpy(a).to(dev, non_blocking=True)\n",
        "np_to_pinned_tensor(a).to(dev, non_blocking=True)",
        "unsafe",
        "may be the CPU",
    ),
}

# `torch.from_numpy(a).to(device)` with a device that may be the CPU: there `.to` returns the
# tensor on `a`'s memory itself, the helper a copy, so the rewrite is unsafe (applied with
# `--unsafe-fixes`, as these cases are).
MAY_BE_THE_CPU = {
    "from_numpy_merged_import",
    "keyword_form_dtype_unused_import_removed",
    "positional_dtype",
    "import_torch_removed",
    "already_imported_alias",
    "both_helpers_one_import",
    "parenthesized_call",
}

# The source is used again: unsafe (on a CPU device `.to` returns the tensor itself).
USED_AGAIN = (
    "import torch\n\n\ndef f(n, dev):\n    x = torch.zeros(n)\n    y = x.to(dev, non_blocking=True)\n    return x, y\n"
)


@pytest.fixture
def h2d_project(project: Path) -> Path:
    (project / "pyproject.toml").write_text(H2D_CONFIG)
    return project


@pytest.mark.parametrize("name", sorted(CASES))
def test_h2d_fix(h2d_project: Path, name: str) -> None:
    before, expected = CASES[name]
    findings = check_text(before, path=str(_path(h2d_project, name)), config=load_config(h2d_project))
    unsafe = name in MAY_BE_THE_CPU
    assert findings and all(
        f.fix_safety == "safe" or (unsafe and "may be the CPU" in (f.fix_note or "")) for f in findings
    )
    if unsafe:
        assert any(f.fix_safety == "unsafe" for f in findings)
        assert _fix(h2d_project, name, before) != expected
    assert any("async_tensor_h2d" in f.message or "h2d(" in f.message for f in findings)
    after = _fix(h2d_project, name, before, unsafe_fixes=unsafe)
    assert after == expected
    assert _fix(h2d_project, name, after, unsafe_fixes=unsafe) == after  # idempotent
    assert check_text(after, path=str(_path(h2d_project, name)), config=load_config(h2d_project)) == []
    assert ruff_clean_before_and_after(_path(h2d_project, name), h2d_project, before, after)


@pytest.mark.parametrize("name", sorted(OTHER_FIX))
def test_not_rewritten_to_the_helper(h2d_project: Path, name: str) -> None:
    source, kept, safety, why = OTHER_FIX[name]
    (finding,) = check_text(source, path=str(_path(h2d_project, name)), config=load_config(h2d_project))
    assert finding.fix_safety == safety
    if why is not None:
        assert why in finding.message
    after = _fix(h2d_project, name, source, unsafe_fixes=True)
    # (a statement the fix made too long is laid out as ruff would: compare without layout)
    assert "".join(kept.split()) in "".join(after.split())
    assert "async_tensor_h2d(" not in after.replace("def async_tensor_h2d(", "")


def test_unsafe_name_fix_applied_with_flag(h2d_project: Path) -> None:
    source = USED_AGAIN
    (finding,) = check_text(source, path=str(_path(h2d_project, "u")), config=load_config(h2d_project))
    assert finding.fix_safety == "unsafe" and "`x` is also used at line 7" in finding.message
    assert _fix(h2d_project, "u", source) == source
    after = _fix(h2d_project, "u", source, unsafe_fixes=True)
    assert "    y = async_tensor_h2d(x, dev)\n" in after
    assert _fix(h2d_project, "u", after, unsafe_fixes=True) == after


def test_indexed_cpu_named_tensor_gets_the_helper_fix(project: Path) -> None:
    """Advanced indexing of a tensor named as a CPU tensor: a fresh pageable
    tensor, not a call; the helper takes it as it is."""
    (project / "pyproject.toml").write_text(H2D_CONFIG + 'cpu-tensor-names = ["*_cpu"]\n')
    source = (
        "import numpy as np\nimport torch\n\n\ndef pick(sizes_cpu, n, device):\n"
        "    return sizes_cpu[np.arange(n)].to(device=device, non_blocking=True)\n"
    )
    (finding,) = check_text(source, path=str(_path(project, "i")), config=load_config(project))
    assert finding.code == "PIN002" and finding.fix_safety == "safe"
    assert "    return async_tensor_h2d(sizes_cpu[np.arange(n)], device)\n" in _fix(project, "i", source)


def test_accelerator_device_string_makes_name_fix_safe(h2d_project: Path) -> None:
    source = "import torch\n\n\ndef f(n):\n    x = torch.zeros(n)\n    y = x.to('cuda', non_blocking=True)\n    return x, y\n"
    (finding,) = check_text(source, path=str(_path(h2d_project, "s")), config=load_config(h2d_project))
    assert finding.fix_safety == "safe"
    assert "y = async_tensor_h2d(x, 'cuda')" in _fix(h2d_project, "s", source)


def test_helper_module_itself_is_not_rewritten(h2d_project: Path) -> None:
    (h2d_project / "vllm" / "utils").mkdir()
    path = h2d_project / "vllm" / "utils" / "torch_utils.py"
    source = "import torch\n\n\ndef g(dev):\n    return torch.tensor([1, 2]).to(dev, non_blocking=True)\n"
    path.write_text(source)
    (finding,) = check_text(source, path=str(path), config=load_config(h2d_project))
    assert "async_tensor_h2d" not in finding.message
    assert "async_tensor_h2d" not in fix_text(
        source, path=str(path), config=load_config(h2d_project), unsafe_fixes=True
    )


def test_unset_keeps_todays_fix(project: Path) -> None:
    before = CASES["import_torch_removed"][0]
    assert "np_to_pinned_tensor(a).to(device, non_blocking=True)" in _fix(project, "unset", before, unsafe_fixes=True)


def test_config_validates_h2d_helper(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.pinfix]\nh2d-helper = "async_tensor_h2d"\n')
    with pytest.raises(ConfigError, match="h2d-helper"):
        load_config(project)
    (project / "pyproject.toml").write_text(H2D_CONFIG)
    assert load_config(project).h2d_helper == "vllm.utils.torch_utils.async_tensor_h2d"


# --- Behaviour: the rewritten code computes the same tensor -------------------------

RUNTIME = """\
import numpy as np
import torch


def f(a: np.ndarray, ids: list[int], n: int, device):
    x = torch.from_numpy(a).to(device, non_blocking=True)
    y = torch.from_numpy(a).to(device=device, dtype=torch.float16, non_blocking=True)
    z = torch.tensor(ids, dtype=torch.int32, device="cpu").to(device, non_blocking=True)
    w = torch.tensor([0.1, n]).to(device, non_blocking=True)
    idx = torch.arange(n)
    v = idx.to(device, torch.float64, non_blocking=True)
    mask = torch.tensor(ids).bool()
    u = mask.to(device, non_blocking=True)
    return x, y, z, w, v, u
"""


def _stand_in(torch):  # type: ignore[no-untyped-def]
    """vLLM's async_tensor_h2d, in our words (0.28.0's shape)."""
    import numpy as np

    pin = torch.cuda.is_available()

    def async_tensor_h2d(data, device, dtype=None):  # type: ignore[no-untyped-def]
        if isinstance(data, np.ndarray):
            data = torch.from_numpy(data)
        if isinstance(data, torch.Tensor):
            t = data.pin_memory() if pin else data
        else:
            t = torch.tensor(data, dtype=dtype, pin_memory=pin, device="cpu")
        return t.to(device=device, dtype=dtype, non_blocking=True)

    return async_tensor_h2d


def test_rewrite_computes_the_same_tensors(h2d_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    import sys
    import types

    # (`x` and `y` are unsafe rewrites: on a CPU device `.to` returns `a`'s memory itself.)
    after = _fix(h2d_project, "runtime", RUNTIME, unsafe_fixes=True)
    assert after.count("async_tensor_h2d(") == 6 + 0 and "non_blocking" not in after
    shim = types.ModuleType("vllm.utils.torch_utils")
    shim.async_tensor_h2d = _stand_in(torch)  # type: ignore[attr-defined]
    for name, module in (
        ("vllm", types.ModuleType("vllm")),
        ("vllm.utils", types.ModuleType("vllm.utils")),
        (shim.__name__, shim),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    args = (np.arange(6, dtype=np.int64).reshape(2, 3)[:, ::2], [3, 0, 7], 5, device)
    results = []
    for code in (RUNTIME, after):
        scope: dict = {}
        exec(compile(code, "<h2d>", "exec"), scope)
        results.append(scope["f"](*args))
    for old, new in zip(*results):
        assert (old.device, old.dtype, old.shape) == (new.device, new.dtype, new.shape)
        assert torch.equal(old.cpu(), new.cpu())
