"""The codemod, input -> expected output, checked against ruff's isort and pyflakes."""

from pathlib import Path
from typing import Optional

import pytest

from pinfix.api import check_text, fix_text
from pinfix.config import load_config
from tests.support import ruff_clean_before_and_after

CASES = {
    # The seed's XPU shape: merged into the existing torch_utils import.
    "merge_into_existing_import": (
        """\
from dataclasses import dataclass

import numpy as np
import torch

from vllm.logger import init_logger
from vllm.utils.torch_utils import is_quantized_kv_cache
from vllm.v1.attention.backend import AttentionBackend


@dataclass
class Builder(AttentionBackend):
    buf: torch.Tensor

    def build(self, lengths: np.ndarray) -> None:
        ids = np.repeat(np.arange(lengths.shape[0], dtype=np.int32), lengths)
        self.buf[: ids.shape[0]].copy_(
            torch.from_numpy(ids), non_blocking=True
        )
        init_logger(is_quantized_kv_cache)
""",
        """\
from dataclasses import dataclass

import numpy as np
import torch

from vllm.logger import init_logger
from vllm.utils.torch_utils import is_quantized_kv_cache, np_to_pinned_tensor
from vllm.v1.attention.backend import AttentionBackend


@dataclass
class Builder(AttentionBackend):
    buf: torch.Tensor

    def build(self, lengths: np.ndarray) -> None:
        ids = np.repeat(np.arange(lengths.shape[0], dtype=np.int32), lengths)
        self.buf[: ids.shape[0]].copy_(
            np_to_pinned_tensor(ids), non_blocking=True
        )
        init_logger(is_quantized_kv_cache)
""",
    ),
    # The seed's ROCm shape: a new line between vllm.triton_utils and vllm.v1.
    "new_line_in_isort_place": (
        """\
import numpy as np
import torch

from vllm.platforms import current_platform
from vllm.triton_utils import tl
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionLayer,
)


class Builder(AttentionBackend, AttentionLayer):
    def build(self, ids: np.ndarray, buf: torch.Tensor) -> None:
        buf[: len(ids)].copy_(torch.from_numpy(ids), non_blocking=True)
        current_platform(tl)
""",
        """\
import numpy as np
import torch

from vllm.platforms import current_platform
from vllm.triton_utils import tl
from vllm.utils.torch_utils import np_to_pinned_tensor
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionLayer,
)


class Builder(AttentionBackend, AttentionLayer):
    def build(self, ids: np.ndarray, buf: torch.Tensor) -> None:
        buf[: len(ids)].copy_(np_to_pinned_tensor(ids), non_blocking=True)
        current_platform(tl)
""",
    ),
    "merge_into_parenthesized_import": (
        """\
import torch

from vllm.utils.torch_utils import (
    is_quantized_kv_cache,
    set_default_torch_dtype,
)


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(torch.from_numpy(a), non_blocking=True)
    set_default_torch_dtype(is_quantized_kv_cache)
""",
        """\
import torch

from vllm.utils.torch_utils import (
    is_quantized_kv_cache,
    np_to_pinned_tensor,
    set_default_torch_dtype,
)


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)
    set_default_torch_dtype(is_quantized_kv_cache)
""",
    ),
    "merge_wraps_past_line_length": (
        """\
import torch

from vllm.utils.torch_utils import is_quantized_kv_cache, set_default_torch_dtype


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(torch.from_numpy(a), non_blocking=True)
    set_default_torch_dtype(is_quantized_kv_cache)
""",
        """\
import torch

from vllm.utils.torch_utils import (
    is_quantized_kv_cache,
    np_to_pinned_tensor,
    set_default_torch_dtype,
)


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)
    set_default_torch_dtype(is_quantized_kv_cache)
""",
    ),
    # A first-party section that does not exist yet opens after a blank line.
    "new_first_party_section": (
        """\
import os

import torch


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(torch.from_numpy(a), non_blocking=True)
    os.getcwd()
""",
        """\
import os

import torch

from vllm.utils.torch_utils import np_to_pinned_tensor


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)
    os.getcwd()
""",
    ),
    "docstring_and_future_first": (
        '''\
"""Module docstring."""

from __future__ import annotations

import torch


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(torch.from_numpy(a), non_blocking=True)
''',
        '''\
"""Module docstring."""

from __future__ import annotations

import torch

from vllm.utils.torch_utils import np_to_pinned_tensor


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)
''',
    ),
    # No top-level import block: torch is imported inside the function.
    "file_with_no_imports": (
        '''\
"""Only a function."""


def f(dst, a):
    import torch

    dst.copy_(torch.from_numpy(a), non_blocking=True)
    return torch.int32
''',
        '''\
"""Only a function."""

from vllm.utils.torch_utils import np_to_pinned_tensor


def f(dst, a):
    import torch

    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)
    return torch.int32
''',
    ),
    # `from torch import from_numpy` left unused is removed; `torch` stays used.
    "unused_from_import_removed": (
        """\
import torch
from torch import from_numpy

from vllm.logger import init_logger


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(from_numpy(a), non_blocking=True)
    init_logger()
""",
        """\
import torch

from vllm.logger import init_logger
from vllm.utils.torch_utils import np_to_pinned_tensor


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)
    init_logger()
""",
    ),
    # Still used elsewhere: kept.
    "from_import_still_used_kept": (
        """\
from torch import from_numpy

from vllm.logger import init_logger


def f(dst, a):
    dst.copy_(from_numpy(a), non_blocking=True)
    return init_logger(from_numpy(a))
""",
        """\
from torch import from_numpy

from vllm.logger import init_logger
from vllm.utils.torch_utils import np_to_pinned_tensor


def f(dst, a):
    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)
    return init_logger(from_numpy(a))
""",
    ),
    "aliased_torch_and_aliased_helper": (
        """\
import torch as th

from vllm.utils.torch_utils import np_to_pinned_tensor as pinned


def f(dst: th.Tensor, a) -> None:
    dst.copy_(th.from_numpy(a), non_blocking=True)
    pinned(a)
""",
        """\
import torch as th

from vllm.utils.torch_utils import np_to_pinned_tensor as pinned


def f(dst: th.Tensor, a) -> None:
    dst.copy_(pinned(a), non_blocking=True)
    pinned(a)
""",
    ),
    "multi_line_call_with_comments": (
        """\
import torch


def f(dst: torch.Tensor, a, dev) -> torch.Tensor:
    dst.copy_(
        # the ids, built on the host
        torch.from_numpy(  # shares a's memory
            a  # int32
        ),
        non_blocking=True,  # overlap with compute
    )
    return torch.from_numpy(a).to(
        "cuda",
        non_blocking=True,
    )
""",
        """\
import torch

from vllm.utils.torch_utils import np_to_pinned_tensor


def f(dst: torch.Tensor, a, dev) -> torch.Tensor:
    dst.copy_(
        # the ids, built on the host
        np_to_pinned_tensor(  # shares a's memory
            a  # int32
        ),
        non_blocking=True,  # overlap with compute
    )
    return np_to_pinned_tensor(a).to(
        "cuda",
        non_blocking=True,
    )
""",
    ),
    "bound_name_safe": (
        """\
import torch


def f(dst: torch.Tensor, a) -> None:
    src = torch.from_numpy(a)
    dst.copy_(src, non_blocking=True)
""",
        """\
import torch

from vllm.utils.torch_utils import np_to_pinned_tensor


def f(dst: torch.Tensor, a) -> None:
    src = np_to_pinned_tensor(a)
    dst.copy_(src, non_blocking=True)
""",
    ),
}

# Findings that must be reported but not fixed by default.
NOT_FIXED = {
    "bound_name_used_again": (
        """\
import torch


def f(dst: torch.Tensor, a) -> torch.Tensor:
    src = torch.from_numpy(a)
    dst.copy_(src, non_blocking=True)
    return src
""",
        "unsafe",
        "`src` is also used at line 7",
    ),
    "array_written_between": (
        """\
import torch


def f(dst: torch.Tensor, a) -> None:
    src = torch.from_numpy(a)
    a[0] = 1
    dst.copy_(src, non_blocking=True)
""",
        "unsafe",
        "`a` is used at line 6",
    ),
    "copy_in_loop_of_one_binding": (
        """\
import torch


def f(dsts, a) -> None:
    src = torch.from_numpy(a)
    for dst in dsts:
        dst.copy_(src, non_blocking=True)
""",
        "unsafe",
        "loop",
    ),
    "helper_name_taken": (
        """\
import torch


def np_to_pinned_tensor(x):
    return x


def f(dst: torch.Tensor, a) -> None:
    dst.copy_(torch.from_numpy(a), non_blocking=True)
""",
        None,
        "already bound",
    ),
}


def _fix(project: Path, name: str, source: str, **kw) -> str:
    path = project / "vllm" / "v1" / f"{name}.py"
    path.write_text(source)
    return fix_text(source, path=str(path), config=load_config(project), **kw)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fix_output(project: Path, name: str) -> None:
    before, expected = CASES[name]
    after = _fix(project, name, before)
    assert after == expected
    # Idempotent, and the result keeps isort and pyflakes as clean as the input.
    assert _fix(project, name, after) == after
    assert ruff_clean_before_and_after(project / "vllm" / "v1" / f"{name}.py", project, before, after)


@pytest.mark.parametrize("name", sorted(NOT_FIXED))
def test_reported_not_fixed(project: Path, name: str) -> None:
    source, safety, why = NOT_FIXED[name]
    path = project / "vllm" / "v1" / f"{name}.py"
    (finding,) = check_text(source, path=str(path), config=load_config(project))
    assert finding.fix_safety == safety
    assert why in (finding.fix_note or "")
    assert why in finding.message
    assert _fix(project, name, source) == source


def test_unsafe_fix_applied_with_flag(project: Path) -> None:
    source = NOT_FIXED["bound_name_used_again"][0]
    after = _fix(project, "unsafe", source, unsafe_fixes=True)
    assert "src = np_to_pinned_tensor(a)" in after
    assert "from vllm.utils.torch_utils import np_to_pinned_tensor\n" in after


def test_module_defining_the_helper_is_not_fixed(project: Path) -> None:
    (project / "vllm" / "utils").mkdir()
    path = project / "vllm" / "utils" / "torch_utils.py"
    source = "import torch\n\n\ndef g(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
    (finding,) = check_text(source, path=str(path), config=load_config(project))
    assert finding.fix_safety is None and "defines" in (finding.fix_note or "")
    assert fix_text(source, path=str(path), config=load_config(project)) == source


def test_crlf_file_keeps_its_line_endings(project: Path) -> None:
    before, expected = CASES["new_first_party_section"]
    crlf = before.replace("\n", "\r\n")
    after = _fix(project, "crlf", crlf)
    assert after == expected.replace("\n", "\r\n")


@pytest.mark.parametrize("helper", [None, "mylib.pinning.pinned_from_numpy"])
def test_configurable_helper(project: Path, helper: Optional[str]) -> None:
    source = "import torch\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
    (project / "pyproject.toml").write_text("[tool.pinfix]\n" + (f'helper = "{helper}"\n' if helper else ""))
    after = _fix(project, "configured", source)
    module, _, name = (helper or "vllm.utils.torch_utils.np_to_pinned_tensor").rpartition(".")
    assert f"from {module} import {name}\n" in after
    assert f"dst.copy_({name}(a), non_blocking=True)" in after
