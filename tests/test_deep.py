"""Deep mode (``--deep``): pinnedness followed through attributes, returns,
imports and base classes, across files; evidence chains in the outputs."""

import io
import json
import os
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from pinfix.cli import main

HEADER = "import torch\n\n\n"


def project(root: Path, files: Dict[str, str]) -> Path:
    """A package ``pkg`` under ``root`` with ``files`` (``name.py`` -> body)."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(files.pop("__init__.py", ""))
    for name, body in files.items():
        (pkg / name).write_text(textwrap.dedent(body))
    return pkg


def check(paths: List[Path], *extra: str) -> Tuple[int, List[dict]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", "--no-progress", "--output-format", "json", *extra, *map(str, paths)], out=out, err=err)
    assert code in (0, 1), err.getvalue()
    return code, json.loads(out.getvalue())["findings"]


def deep(paths: List[Path], *extra: str) -> List[dict]:
    return check(paths, "--deep", *extra)[1]


def lines(findings: List[dict]) -> List[Tuple[int, str]]:
    return sorted((f["line"], f["code"]) for f in findings)


RUNNER = """\
import torch

from .helpers import make_index, make_pinned


class Runner:
    def __init__(self, n):
        self.host = torch.zeros(n, dtype=torch.int32)
        self.pinned = torch.zeros(n, pin_memory=True)

    def step(self, dev, n, idx):
        a = self.host[:n].to(dev, non_blocking=True)
        b = self.pinned[:n].to(dev, non_blocking=True)
        c = make_index(n).to(dev, non_blocking=True)
        d = make_pinned(n).to(dev, non_blocking=True)
        return a, b, c, d
"""

HELPERS = """\
import torch


def make_index(n):
    return torch.arange(n)


def make_pinned(n):
    return torch.zeros(n, pin_memory=True)
"""


def test_attribute_and_return_across_files(tmp_path):
    pkg = project(tmp_path, {"runner.py": RUNNER, "helpers.py": HELPERS})
    found = deep([pkg / "runner.py"])
    assert lines(found) == [(12, "PIN002"), (14, "PIN002")]
    attr, ret = found
    assert "made at" in attr["message"] and "runner.py:8" in attr["message"] and "`self.host`" in attr["message"]
    assert "helpers.py:5" in ret["message"] and "make_index" in ret["message"]
    assert attr["pattern"] == "to/deep/torch.zeros" and attr["fix"]["safety"] == "unsafe"
    assert ret["fix"]["safety"] is None  # made in another file: fixed there, not from here
    # The chain: made in helpers.py, returned there, used in runner.py, copied.
    chain = [(Path(e["path"]).name, e["line"]) for e in ret["evidence"]]
    assert chain[0] == ("helpers.py", 5) and chain[-1] == ("runner.py", 14)
    assert ("runner.py", 14) in chain[:-1]


@pytest.mark.parametrize("host_freezes", [False, True])
def test_a_run_in_process_freezes_the_heap_between_deep_files_and_thaws_it(tmp_path, host_freezes):
    """What deep files leave (the project's modules and answers) is frozen out of the
    collector's walks between files, and the heap is thawed when the run ends. A host
    that freezes its own heap keeps it as it was: pinfix neither freezes nor thaws."""
    import gc

    from pinfix.config import Config
    from pinfix.findings import Mode
    from pinfix.pool import run

    pkg = project(tmp_path, {"runner.py": RUNNER, "helpers.py": HELPERS, "other.py": RUNNER})
    config = Config(root=tmp_path, deep=True)
    gc.unfreeze()
    if host_freezes:
        gc.freeze()
    before = gc.get_freeze_count()
    seen: List[int] = []
    try:
        reports = list(
            run(
                sorted(pkg.glob("*.py")),
                config,
                Mode(),
                jobs=1,
                on_progress=lambda _n: seen.append(gc.get_freeze_count()),
            )
        )
        after = gc.get_freeze_count()
    finally:
        gc.unfreeze()
    assert sorted((Path(r.path).name, len(r.diagnostics)) for r in reports if r.diagnostics) == [
        ("other.py", 2),
        ("runner.py", 2),
    ]
    if host_freezes:
        assert seen and set(seen) == {before} and after == before
    else:
        assert before == 0 and max(seen) > 0 and after == 0


def test_plain_mode_does_not_follow(tmp_path):
    pkg = project(tmp_path, {"runner.py": RUNNER, "helpers.py": HELPERS})
    assert check([pkg / "runner.py"], "--no-cache")[1] == []


def test_deep_from_config(tmp_path):
    pkg = project(tmp_path, {"runner.py": RUNNER, "helpers.py": HELPERS})
    (tmp_path / "pyproject.toml").write_text("[tool.pinfix]\ndeep = true\n")
    assert lines(check([pkg])[1]) == [(12, "PIN002"), (14, "PIN002")]
    # Deep results depend on other files: no per-file cache is written.
    assert not (tmp_path / ".pinfix_cache").exists()


def test_sarif_code_flows_name_the_other_file(tmp_path):
    pkg = project(tmp_path, {"runner.py": RUNNER, "helpers.py": HELPERS})
    out = io.StringIO()
    main(["check", "--deep", "--output-format", "sarif", str(pkg / "runner.py")], out=out, err=io.StringIO())
    results = json.loads(out.getvalue())["runs"][0]["results"]
    flows = [
        r["codeFlows"][0]["threadFlows"][0]["locations"]
        for r in results
        if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 14
    ]
    uris = [loc["location"]["physicalLocation"]["artifactLocation"]["uri"] for loc in flows[0]]
    assert uris[0].endswith("pkg/helpers.py") and uris[-1].endswith("pkg/runner.py")
    assert all(loc["location"]["message"]["text"] for loc in flows[0])


# One function body per case: (helper module, copying module, expected finding lines in main.py).
CASES = {
    "reexport_through_package": (
        {
            "__init__.py": "from .impl import build\n",
            "impl.py": HEADER + "def build(ids):\n    return torch.tensor(ids)\n",
        },
        "from pkg import build\n\n\ndef f(ids, dev):\n    return build(ids).to(dev, non_blocking=True)\n",
        [5],
    ),
    "base_class_in_other_module": (
        {"base.py": HEADER + "class Base:\n    def __init__(self, n):\n        self.buf = torch.empty(n)\n"},
        "from pkg.base import Base\n\n\nclass Child(Base):\n    def go(self, dev):\n        return self.buf.to(dev, non_blocking=True)\n",
        [6],
    ),
    "object_of_project_class": (
        {"bufs.py": HEADER + "class Bufs:\n    def __init__(self, n):\n        self.cpu = torch.zeros(n)\n"},
        "from pkg.bufs import Bufs\n\n\ndef f(n, dev):\n    b = Bufs(n)\n    return b.cpu.to(dev, non_blocking=True)\n",
        [6],
    ),
    "method_return": (
        {},
        HEADER + "class A:\n    def make(self, n):\n        return torch.ones(n)\n\n"
        "    def go(self, n, dev):\n        return self.make(n).to(dev, non_blocking=True)\n",
        [9],
    ),
    "from_numpy_in_helper": (
        {"np_helpers.py": HEADER + "def wrap(a):\n    return torch.from_numpy(a)\n"},
        "from pkg.np_helpers import wrap\n\n\ndef f(a, dst):\n    dst.copy_(wrap(a), non_blocking=True)\n",
        [5],
    ),
    # Steps that lose pinnedness, from a pinned attribute.
    "gather_of_pinned_attribute": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(n, pin_memory=True)\n\n"
        "    def go(self, idx, dev):\n        sel = torch.tensor(idx)\n        return self.buf[sel].to(dev, non_blocking=True)\n",
        [10],
    ),
    "cat_of_pinned_attribute": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(n, pin_memory=True)\n\n"
        "    def go(self, n, dev):\n        return torch.cat([self.buf[:n], self.buf[:n]]).to(dev, non_blocking=True)\n",
        [9],
    ),
    "clone_of_pinned_attribute": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(n, pin_memory=True)\n\n"
        "    def go(self, n, dev):\n        return self.buf[:n].clone().to(dev, non_blocking=True)\n",
        [9],
    ),
    "arithmetic_on_pinned_attribute": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(n, 4, pin_memory=True)\n\n"
        "    def go(self, n, dev):\n        return (self.buf[:n] + 1).to(dev, non_blocking=True)\n",
        [9],
    ),
    "gapped_view_of_pinned_attribute": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(4, n, pin_memory=True)\n\n"
        "    def go(self, n, dev):\n        return self.buf[:, :n].to(dev, non_blocking=True)\n",
        [9],
    ),
    "contiguous_of_gapped_view": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(4, n, pin_memory=True)\n\n"
        "    def go(self, n, dev):\n        return self.buf[:, :n].contiguous().to(dev, non_blocking=True)\n",
        [9],
    ),
    "expand_of_pinned_attribute_is_non_dense": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(1, n, pin_memory=True)\n\n"
        "    def go(self, dev):\n        return self.buf.expand(4, -1).to(dev, non_blocking=True)\n",
        [9],
    ),
    "numpy_index_gathers_from_pinned_attribute": (
        {},
        "import numpy as np\n" + HEADER + "class A:\n    def __init__(self, n):\n"
        "        self.buf = torch.zeros(n, pin_memory=True)\n\n"
        "    def go(self, counts, dev):\n        idx = np.repeat(np.arange(len(counts)), counts)\n"
        "        return self.buf[idx].to(dev, non_blocking=True)\n",
        [11],
    ),
    "long_chain_through_two_functions": (
        {
            "masks.py": HEADER + "def mask(n):\n    seq = torch.arange(n).unsqueeze(0).expand(n, -1)\n"
            "    col = torch.arange(n).unsqueeze(-1)\n    a = seq >= col\n    b = seq < col + 2\n    return a & b\n"
        },
        "from pkg.masks import mask\n\n\nclass M:\n    def _m(self, n):\n"
        "        m = mask(n).unsqueeze(0).expand([2, -1, -1])\n        return m\n\n"
        "    def go(self, x, n):\n        m = self._m(n)\n        return m.contiguous().to(x.device, non_blocking=True)\n",
        [11],
    ),
    "tuple_return_unpacked_and_indexed": (
        {},
        HEADER + "class A:\n    def two(self, n):\n        return torch.arange(n), torch.zeros(n, pin_memory=True)\n\n"
        "    def go(self, n, dev):\n        a, b = self.two(n)\n        x = a.to(dev, non_blocking=True)\n"
        "        y = b.to(dev, non_blocking=True)\n        z = self.two(n)[0].to(dev, non_blocking=True)\n"
        "        return x, y, z, self.two(n)[1].to(dev, non_blocking=True)\n",
        [10, 12],
    ),
    # Must stay silent.
    "index_of_a_returned_tensor_is_a_row": (
        {},
        HEADER + "class A:\n    def one(self, n):\n        return torch.zeros(n, 4, pin_memory=True)\n\n"
        "    def go(self, n, dev):\n        return self.one(n)[0].to(dev, non_blocking=True)\n",
        [],
    ),
    "narrow_of_first_dimension_keeps_pinnedness": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(n, 4, pin_memory=True)\n\n"
        "    def go(self, n, dev):\n        return self.buf.narrow(0, 0, n).to(dev, non_blocking=True)\n",
        [],
    ),
    "int_index_is_a_view": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(n, 4, pin_memory=True)\n\n"
        "    def go(self, i, dev):\n        return self.buf[i].to(dev, non_blocking=True)\n",
        [],
    ),
    "helper_returns_pinned": (
        {"mk.py": HEADER + "def pinned(n):\n    return torch.empty(n).pin_memory()\n"},
        "from pkg.mk import pinned\n\n\ndef f(n, dev):\n    return pinned(n).to(dev, non_blocking=True)\n",
        [],
    ),
    "buffer_pinned_by_its_caller": (
        {},
        HEADER + "def upload(host, dev):\n    return host.to(dev, non_blocking=True)\n\n\n"
        "def caller(n, dev):\n    return upload(torch.zeros(n, pin_memory=True), dev)\n",
        [],
    ),
    "views_keep_pinnedness": (
        {},
        HEADER + "class A:\n    def __init__(self, n):\n        self.buf = torch.zeros(n, 4, pin_memory=True)\n\n"
        "    def go(self, n, dev):\n        a = self.buf[:n].view(-1).to(dev, non_blocking=True)\n"
        "        b = self.buf.narrow(0, 0, n).reshape(-1, 2).to(dev, non_blocking=True)\n"
        "        return a, b, self.buf.t().to(dev, non_blocking=True)\n",
        [],
    ),
    "pinned_by_configured_flag": (
        {"flags.py": "PIN_MEMORY = True\n"},
        HEADER + "from pkg.flags import PIN_MEMORY\n\n\nclass A:\n    def __init__(self, n):\n"
        "        self.buf = torch.zeros(n, pin_memory=PIN_MEMORY)\n\n"
        "    def go(self, n, dev):\n        return self.buf[:n].to(dev, non_blocking=True)\n",
        [],
    ),
    "cpugpubuffer_like_class": (
        {
            "buffers.py": HEADER + "class CpuGpu:\n    def __init__(self, n, dev, pin_memory=True):\n"
            "        self.cpu = torch.zeros(n, pin_memory=pin_memory)\n        self.gpu = torch.zeros(n, device=dev)\n"
        },
        "from pkg.buffers import CpuGpu\n\n\nclass A:\n    def __init__(self, n, dev):\n        self.b = CpuGpu(n, dev)\n\n"
        "    def go(self, n):\n        self.b.gpu[:n].copy_(self.b.cpu[:n], non_blocking=True)\n",
        [],
    ),
    "attribute_pinned_on_one_path_only": (
        {},
        HEADER
        + "class A:\n    def __init__(self, n, pin_memory=True):\n        if pin_memory:\n            self.buf = torch.zeros(n, pin_memory=True)\n"
        "        else:\n            self.buf = torch.zeros(n)\n\n"
        "    def go(self, dev):\n        return self.buf.to(dev, non_blocking=True)\n",
        [],
    ),
    # A flag pinfix cannot trace to an availability source (no caller passes it): the path where it is false is reported.
    "attribute_pinned_where_an_untraced_flag_holds": (
        {},
        HEADER
        + "class A:\n    def __init__(self, n, pin):\n        if pin:\n            self.buf = torch.zeros(n, pin_memory=True)\n"
        "        else:\n            self.buf = torch.zeros(n)\n\n"
        "    def go(self, dev):\n        return self.buf.to(dev, non_blocking=True)\n",
        [12],
    ),
    # Narrowing across files: another module's availability flag, negated; the copy in a helper of a third.
    "negated_flag_from_another_module": (
        {
            "flags.py": "from vllm.utils.platform_utils import is_pin_memory_available\n\nPIN = is_pin_memory_available()\n",
            "up.py": HEADER + "def upload(x, dev):\n    return x.to(dev, non_blocking=True)\n",
        },
        HEADER + "from pkg.flags import PIN\nfrom pkg.up import upload\n\n\n"
        "def f(n, dev):\n    x = torch.arange(n)\n    if not PIN:\n        return x.to(dev)\n"
        "    return upload(x if x.is_pinned() else x.pin_memory(), dev)\n",
        [],
    ),
    "flag_from_another_module_that_is_no_availability_source": (
        {"flags.py": "import os\n\nPIN = os.environ.get('PIN') == '1'\n"},
        HEADER + "from pkg.flags import PIN\n\n\n"
        "def f(n, dev):\n    x = torch.arange(n)\n    if PIN:\n        x = x.pin_memory()\n"
        "    return x.to(dev, non_blocking=True)\n",
        [11],
    ),
    # A pinned allocation with a fallback, made in another module, copied here.
    "pinned_with_a_fallback_in_another_module": (
        {
            "alloc.py": HEADER + "def host_buffer(n):\n    while True:\n        try:\n"
            "            return torch.empty(n, pin_memory=True)\n        except RuntimeError:\n"
            "            if n <= 1024:\n                buf = torch.empty(n)\n                return buf\n"
            "            n //= 2\n",
        },
        "from pkg.alloc import host_buffer\n\n\ndef f(n, dev):\n    return host_buffer(n).to(dev, non_blocking=True)\n",
        [],
    ),
    # The recursive call is unknown; the base case is pageable, and some path returns it.
    "recursion_reaches_a_pageable_base_case": (
        {},
        HEADER + "def loop(n):\n    return loop(n - 1) if n else torch.zeros(1)\n\n\n"
        "def f(dev):\n    return loop(3).to(dev, non_blocking=True)\n",
        [9],
    ),
    "recursion_with_a_pinned_base_case": (
        {},
        HEADER + "def loop(n):\n    return loop(n - 1) if n else torch.zeros(1, pin_memory=True)\n\n\n"
        "def f(dev):\n    return loop(3).to(dev, non_blocking=True)\n",
        [],
    ),
    "cat_of_a_returned_list": (
        {},
        HEADER + "class A:\n    def pos_ids(self, grid):\n        ids = []\n        for h in grid:\n"
        "            ids.append(torch.arange(h).repeat(2))\n        return ids\n\n"
        "    def go(self, grid, dev):\n        pos = torch.cat(self.pos_ids(grid), dim=0)\n"
        "        return pos.to(dev, non_blocking=True)\n",
        [13],
    ),
    "cat_of_a_returned_list_bound_first": (
        {"parts.py": HEADER + "def parts(n):\n    return [torch.zeros(n), torch.ones(n)]\n"},
        "import torch\n\nfrom pkg.parts import parts\n\n\ndef f(n, dev):\n    xs = parts(n)\n"
        "    return torch.cat(xs).to(dev, non_blocking=True)\n",
        [8],
    ),
    "cat_of_a_returned_list_of_device_tensors": (
        {},
        HEADER + "class A:\n    def parts(self, n, dev):\n        return [torch.zeros(n, device=dev)]\n\n"
        "    def go(self, n, dev):\n        return torch.cat(self.parts(n, dev)).to(dev, non_blocking=True)\n",
        [],
    ),
    # vLLM 0.28.0 qwen2_5_vl `get_window_index_thw`: a factory rebound four times,
    # gathered with a mask, returned in a tuple and unpacked by the caller.
    "long_rebinding_chain_through_a_tuple_return": (
        {},
        HEADER
        + (
            "import torch.nn.functional as F\n\n\n"
            "class A:\n"
            "    def win(self, t, h, w):\n"
            "        index = torch.arange(t * h * w).reshape(t, h, w)\n"
            "        padded = F.pad(index, (0, 1, 0, 1), 'constant', -100)\n"
            "        padded = padded.reshape(t, 2, 2, 2, 2)\n"
            "        padded = padded.permute(0, 1, 3, 2, 4).reshape(t, 4, 2, 2)\n"
            "        padded = padded.reshape(-1)\n"
            "        kept = padded[padded != -100]\n"
            "        return kept, index\n\n"
            "    def rope(self, t, h, w, dev):\n"
            "        kept, _ = self.win(t, h, w)\n"
            "        return kept.to(dev, non_blocking=True)\n"
        ),
        [19],
    ),
    # vLLM 0.28.0 qwen3_vl: `self.get_positions(...)[0]`, which returns `self._impl(...)`.
    "tuple_item_through_a_delegating_method": (
        {},
        HEADER
        + (
            "import numpy as np\n\n\n"
            "class A:\n"
            "    def positions(self, ids):\n"
            "        return self._impl(ids)\n\n"
            "    @staticmethod\n"
            "    def _impl(ids):\n"
            "        return torch.from_numpy(np.asarray(ids)), len(ids)\n\n"
            "    def go(self, ids, dev):\n"
            "        return self.positions(ids)[0].to(dev, non_blocking=True)\n"
        ),
        [16],
    ),
    "self_reassigned_from_itself": (
        {},
        HEADER + "class A:\n    def __init__(self):\n        self.buf = self.buf[1:]\n\n"
        "    def go(self, dev):\n        return self.buf.to(dev, non_blocking=True)\n",
        [],
    ),
    "assert_in_callee_puts_its_parameter_on_the_cpu": (
        {
            "maps.py": HEADER + "def counts(mapping, n):\n    device = mapping.device\n"
            "    assert mapping.device.type == 'cpu'\n    out = torch.zeros(mapping.shape[0], n, device=device)\n"
            "    return mapping, out\n",
        },
        "from pkg.maps import counts\n\n\ndef commit(new_map, dst, dst2):\n    dst.copy_(new_map, non_blocking=True)\n"
        "    _, count = counts(new_map, 4)\n    dst2.copy_(count, non_blocking=True)\n",
        [7],
    ),
    "assert_after_an_early_return_says_nothing_from_the_start": (
        {
            "maps.py": HEADER
            + "def counts(mapping, n, flag):\n    device = mapping.device\n    if flag:\n        return None\n"
            "    assert mapping.device.type == 'cpu'\n    return torch.zeros(n, device=device)\n",
        },
        "from pkg.maps import counts\n\n\ndef commit(m, dst):\n    dst.copy_(counts(m, 4, False), non_blocking=True)\n",
        [],
    ),
    "outside_the_project_stays_unknown": (
        {},
        "import numpy as np\nimport torch\n\n\ndef f(dev):\n    return torch.nn.Parameter(torch.zeros(2)).data.to(dev, non_blocking=True)\n",
        [],
    ),
}


_MOVE = HEADER + "def move(x, dev, non_blocking=False):\n    return x.to(dev, non_blocking=non_blocking)\n"


@pytest.mark.parametrize(
    "callers, expected",
    [
        # A call that passes True makes the copy non_blocking, with what that call gives.
        ("def go(dev):\n    return move(torch.zeros(4), dev, non_blocking=True)\n", [5]),
        ("def go(dev):\n    return move(torch.zeros(4), dev, True)\n", [5]),
        ("def go(dev):\n    return move(torch.zeros(4), dev, non_blocking=False)\n", []),
        ("def go(dev):\n    return move(torch.zeros(4), dev)\n", []),
        ("def go(dev):\n    return move(torch.zeros(4, pin_memory=True), dev, non_blocking=True)\n", []),
        # Each call is one way: a pageable tensor copied blocking and a pinned one copied
        # non_blocking are no pageable non_blocking copy (the arguments are not joined).
        (
            "def go(dev):\n    return move(torch.zeros(4), dev, non_blocking=False)\n\n\n"
            "def go2(dev):\n    return move(torch.zeros(4, pin_memory=True), dev, non_blocking=True)\n",
            [],
        ),
        (
            "def go(dev):\n    return move(torch.zeros(4, pin_memory=True), dev, non_blocking=True)\n\n\n"
            "def go2(dev):\n    return move(torch.zeros(4), dev, non_blocking=True)\n",
            [5],
        ),
    ],
)
def test_non_blocking_parameter_from_the_project_calls(tmp_path, callers, expected):
    pkg = project(tmp_path, {"move.py": _MOVE, "main.py": HEADER + "from pkg.move import move\n\n\n" + callers})
    found = deep([pkg / "move.py"])
    assert [line for line, _ in lines(found)] == expected
    if expected:
        caller = "go2" if "go2" in callers else "go"
        given = [e for e in found[0]["evidence"] if e["message"] == f"`{caller}()` passes `non_blocking=True`"]
        assert len(given) == 1 and given[0]["path"].endswith("main.py")
        assert f"(`True` in the call at {given[0]['path']}:{given[0]['line']})" in found[0]["message"]


@pytest.mark.parametrize(
    "body, expected",
    [
        # The default is what a call that says nothing passes.
        (
            "def move(x, dev, non_blocking=True):\n    return x.to(dev, non_blocking=non_blocking)\n\n\n"
            "def go(dev):\n    return move(torch.zeros(4), dev)\n",
            [5],
        ),
        # A method, its receiver's attribute pageable.
        (
            "class Batch:\n    def __init__(self, n):\n        self.ids = torch.arange(n)\n\n"
            "    def to_device(self, dev, non_blocking=False):\n        return self.ids.to(dev, non_blocking=non_blocking)\n\n\n"
            "def run(dev):\n    return Batch(3).to_device(dev, non_blocking=True)\n",
            [9],
        ),
        # The flag rebound before the copy: what it is then is not the caller's True.
        (
            "def move(x, dev, non_blocking=False):\n    non_blocking = non_blocking and x.is_pinned()\n"
            "    return x.to(dev, non_blocking=non_blocking)\n\n\n"
            "def go(dev):\n    return move(torch.zeros(4), dev, non_blocking=True)\n",
            [],
        ),
        # No call in the project: the flag stays an expression (reported with --strict only).
        ("def move(x, dev, non_blocking=False):\n    return x.to(dev, non_blocking=non_blocking)\n", []),
    ],
)
def test_non_blocking_parameter_shapes(tmp_path, body, expected):
    pkg = project(tmp_path, {"main.py": HEADER + body})
    assert [line for line, _ in lines(deep([pkg / "main.py"]))] == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_deep_cases(tmp_path, name):
    others, main_py, expected = CASES[name]
    pkg = project(tmp_path, {**others, "main.py": main_py})
    assert [line for line, _ in lines(deep([pkg / "main.py"]))] == expected


def test_configured_pinned_producer(tmp_path):
    pkg = project(
        tmp_path,
        {
            "main.py": "from ext.mem import staged\n\n\ndef f(dev):\n    x = staged()\n    return torch.cat([x, x]).to(dev, non_blocking=True)\n",
        },
    )
    (pkg / "main.py").write_text("import torch\n" + (pkg / "main.py").read_text())
    # An outside producer is unknown: nothing is computed from a CPU tensor pinfix can see.
    assert deep([pkg / "main.py"]) == []
    (tmp_path / "pyproject.toml").write_text('[tool.pinfix]\npinned-producers = ["ext.mem.staged"]\n')
    # Configured as pinned CPU memory: torch.cat of it makes a fresh pageable tensor.
    assert lines(deep([pkg / "main.py"])) == [(7, "PIN002")]


def test_show_unknown_notes_never_fail(tmp_path):
    pkg = project(
        tmp_path, {"main.py": HEADER + "def upload(host, dev):\n    return host.to(dev, non_blocking=True)\n"}
    )
    code, found = check([pkg / "main.py"], "--deep", "--show-unknown")
    assert code == 0
    assert [(f["code"], f["severity"], f["line"]) for f in found] == [("PIN004", "info", 5)]
    assert "parameter" in found[0]["message"]
    err = io.StringIO()
    main(["check", "--deep", "--show-unknown", str(pkg / "main.py")], out=io.StringIO(), err=err)
    assert "1 note (PIN004)" in err.getvalue()
    # Without the flag, nothing.
    assert check([pkg / "main.py"], "--deep")[1] == []


def test_unparsable_dependency_stays_unknown(tmp_path):
    pkg = project(
        tmp_path,
        {
            "broken.py": "def make(:\n",
            "main.py": "from pkg.broken import make\n\n\ndef f(dev):\n    return make().to(dev, non_blocking=True)\n",
        },
    )
    code, found = check([pkg / "main.py"], "--deep")
    assert (code, found) == (0, [])


NAMED = "[tool.pinfix]\ncpu-tensor-names = ['*_cpu']\n"


@pytest.mark.parametrize(
    "body, expected",
    [
        # Arithmetic of a tensor named as CPU by the project's convention: a fresh pageable tensor.
        (
            "def f(meta, dev):\n    lens = meta.loc_cpu[1:] - meta.loc_cpu[:-1]\n    return lens.to(dev, non_blocking=True)\n",
            [6],
        ),
        # A gapped view of any CPU tensor is staged.
        ("def f(pos_cpu, n, dst):\n    dst.copy_(pos_cpu[:, :n], non_blocking=True)\n", [5]),
        # The name alone says nothing about pinnedness: a dense view stays silent.
        ("def f(pos_cpu, n, dst):\n    dst.copy_(pos_cpu[:n], non_blocking=True)\n", []),
        # A D2H copy into a CPU destination is not H2D.
        ("def f(out_cpu, x):\n    out_cpu.copy_(x[:, :2], non_blocking=True)\n", []),
    ],
)
def test_cpu_tensor_names(tmp_path, body, expected):
    pkg = project(tmp_path, {"main.py": HEADER + body})
    assert check([pkg / "main.py"], "--no-cache")[1] == []  # not configured: unknown
    (tmp_path / "pyproject.toml").write_text(NAMED)
    # Plain mode too: the pre-filter then keeps every scope with a sink.
    assert [f["line"] for f in check([pkg / "main.py"], "--no-cache")[1]] == expected
    assert [f["line"] for f in deep([pkg / "main.py"])] == expected


def test_star_size_with_pin_memory_flag_is_pinned(tmp_path):
    pkg = project(
        tmp_path,
        {
            "main.py": HEADER + "class B:\n    def __init__(self, *size, pin_memory=True):\n"
            "        self.cpu = torch.zeros(*size, pin_memory=pin_memory)\n\n"
            "    def go(self, n, dst):\n        dst.copy_(self.cpu[:n], non_blocking=True)\n"
            "        dst.copy_(self.cpu[:, :n], non_blocking=True)\n"
        },
    )
    found = deep([pkg / "main.py"])
    assert [(f["line"], f["pattern"]) for f in found] == [(10, "copy_/non-dense")]
    assert "gapped (non-dense) view of a pinned tensor" in found[0]["message"]


def test_origin_in_the_same_file_gets_an_unsafe_pin_memory_fix(tmp_path):
    source = (
        HEADER + "class Runner:\n    def __init__(self, n):\n        # staging\n"
        "        self.host = torch.zeros(n, dtype=torch.int32)\n\n"
        "    def step(self, dev, n):\n        return self.host[:n].to(dev, non_blocking=True)\n"
    )
    pkg = project(tmp_path, {"runner.py": source})
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pinfix]\npin-memory-expr = "is_pin_memory_available()"\n'
        'pin-memory-import = "pkg.platform.is_pin_memory_available"\n'
    )
    (found,) = deep([pkg / "runner.py"])
    assert found["fix"]["safety"] == "unsafe" and "race" in found["fix"]["note"]
    path = pkg / "runner.py"
    err = io.StringIO()
    # Safe fixes only: nothing changes.
    assert main(["fix", "--deep", str(path)], out=io.StringIO(), err=err) == 1
    assert path.read_text() == source
    assert main(["fix", "--deep", "--unsafe-fixes", str(path)], out=io.StringIO(), err=io.StringIO()) == 0
    fixed = path.read_text()
    assert "from pkg.platform import is_pin_memory_available\n" in fixed
    # (laid out as ruff format would: the line would pass 88 columns)
    assert "torch.zeros(n,dtype=torch.int32,pin_memory=is_pin_memory_available())" in "".join(fixed.split())
    assert "# staging" in fixed
    # Idempotent: nothing left to find or fix.
    assert deep([path]) == []
    assert main(["fix", "--deep", "--unsafe-fixes", str(path)], out=io.StringIO(), err=io.StringIO()) == 0
    assert path.read_text() == fixed


@pytest.mark.parametrize(
    "body, why",
    [
        ("def f(host, dev):\n    return host.to(dev, non_blocking=True)\n", "`host` is a parameter"),
        ("def f(items, dev):\n    for t in items:\n        t.to(dev, non_blocking=True)\n", "`t` is bound in a way"),
        (
            "def f(other, dev):\n    lst = []\n    lst += other\n    return torch.cat(lst).to(dev, non_blocking=True)\n",
            "`other` is a parameter",
        ),  # the root reason; `torch.cat()` of it is evidence
        ("def f(obj, dev):\n    return obj.make().to(dev, non_blocking=True)\n", "`obj` is a parameter"),
    ],
)
def test_unknown_note_says_what_stopped_it(tmp_path, body, why):
    pkg = project(tmp_path, {"main.py": HEADER + body})
    code, found = check([pkg / "main.py"], "--deep", "--show-unknown")
    assert code == 0 and [f["code"] for f in found] == ["PIN004"]
    assert why in found[0]["message"]


_ROPE = HEADER + (
    "class A:\n"
    "    def win(self, n):\n"
    "        index = torch.arange(n)\n"
    "        return {item}, n\n\n"
    "    def go(self, grid, dev):\n"
    "        parts: list = []\n"
    "        offset = 0\n"
    "        for t in grid:\n"
    "            (\n"
    "                wi,\n"
    "                _,\n"
    "            ) = self.win(t)\n"
    "            parts.append(wi + offset)\n"
    "            offset += t\n"
    "        parts = torch.cat(parts)\n"
    "        return parts.to(dev, non_blocking=True)\n"
)


@pytest.mark.parametrize(
    "item, expected",
    [
        ("index[index != -1]", [(20, "PIN002")]),  # a mask keeps a dimension: the sum stays on the CPU
        ("index.sum()", []),  # 0-dim: `wi + offset` follows the device of `offset`, which pinfix cannot see
    ],
)
def test_tuple_item_is_read_for_its_dimensions(tmp_path, item, expected):
    pkg = project(tmp_path, {"main.py": _ROPE.format(item=item)})
    assert lines(deep([pkg / "main.py"])) == expected


def test_evidence_outside_the_working_directory_is_named_whole(tmp_path, monkeypatch):
    pkg = project(tmp_path, {"helpers.py": HELPERS, "runner.py": RUNNER})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    found = [f for f in deep([pkg / "runner.py"]) if f["line"] == 14]
    origin = found[0]["evidence"][0]["path"]
    assert origin == str((pkg / "helpers.py").resolve())
    inside = tmp_path / "inside"
    inside.mkdir()
    pkg = project(inside, {"helpers.py": HELPERS, "runner.py": RUNNER})
    monkeypatch.chdir(inside)
    found = [f for f in deep([pkg / "runner.py"]) if f["line"] == 14]
    assert found[0]["evidence"][0]["path"] == os.path.join("pkg", "helpers.py")


# --- bounds on what one file's deep check may cost -------------------------------------------------

_WIDE_INIT = (
    HEADER
    + """\
class Batch:
    def __init__(self, n):
        self.a = torch.zeros(n)
        self.b = torch.zeros(n, pin_memory=True)
        self.c = torch.zeros(n)
        self.d = torch.zeros(n, pin_memory=True)
        self.e = torch.zeros(n)
        self.f = n

    def send(self, dev):
        return (
            self.a.to(dev, non_blocking=True),
            self.b.to(dev, non_blocking=True),
            self.c.to(dev, non_blocking=True),
        )
"""
)


@pytest.mark.parametrize("cap", [0, 100])
def test_a_function_storing_many_attributes_is_evaluated_once_for_all_of_them(tmp_path, monkeypatch, cap):
    from pinfix.semantic.deep import project as deep_project

    monkeypatch.setattr(deep_project, "_PROJECTS", {})
    monkeypatch.setattr(deep_project, "MAX_SLICED_STORES", cap)
    pkg = project(tmp_path, {"batch.py": _WIDE_INIT})
    # The same verdicts whether __init__ is evaluated once for all its stores or once per attribute.
    assert lines(deep([pkg / "batch.py"])) == [(15, "PIN002"), (17, "PIN002")]
    (proj,) = deep_project._PROJECTS.values()
    evaluations = [k for k in proj.own if k[0] == "own"]
    purposes = sorted({str(k[2]) for k in evaluations})
    if cap == 0:
        assert purposes == ["('stores', '*')"]
    else:
        assert purposes == ["('stores', 'a')", "('stores', 'b')", "('stores', 'c')"]


def test_a_spent_work_budget_leaves_project_questions_unknown(tmp_path, monkeypatch):
    from pinfix.semantic.deep import project as deep_project

    pkg = project(tmp_path, {"batch.py": _WIDE_INIT})
    monkeypatch.setattr(deep_project, "_PROJECTS", {})
    assert lines(deep([pkg / "batch.py"])) == [(15, "PIN002"), (17, "PIN002")]
    monkeypatch.setattr(deep_project, "_PROJECTS", {})
    monkeypatch.setattr(deep_project, "WORK_BASE", 0)
    monkeypatch.setattr(deep_project, "WORK_PER_STATEMENT", 0)
    code, found = check([pkg / "batch.py"], "--deep", "--show-unknown", "--no-cache")
    assert [f["code"] for f in found] == ["PIN004"] * 3
    assert all("budget for project questions is spent" in f["message"] for f in found)


_PRODUCERS = """\
import numpy as np
import torch


def pinned_index(n):
    return torch.arange(n).pin_memory()


def pinned_from(a):
    if isinstance(a, np.ndarray):
        return torch.from_numpy(a).pin_memory()
    return torch.empty(len(a), pin_memory=True)


def sometimes(n, flag):
    t = torch.zeros(n)
    if flag:
        t = t.pin_memory()
    return t


def wrapped(n):
    return pinned_index(n)


def passthrough(t):
    return t


class Buffers:
    def staging(self, n):
        return torch.empty(n, dtype=torch.int32, pin_memory=True)

    def gapped(self, n):
        return torch.empty(n, pin_memory=True)[::2]
"""


def test_show_producers_lists_the_inferred_pinned_producers(tmp_path):
    pkg = project(tmp_path, {"helpers.py": _PRODUCERS, "bad.py": "def broken(:\n"})
    out, err = io.StringIO(), io.StringIO()
    code = main(["show-producers", str(pkg / "helpers.py")], out=out, err=err)
    assert code == 0, err.getvalue()
    listed = [line.split(": ", 1)[1] for line in out.getvalue().splitlines()]
    # Pinned on every path (also through another producer; `sometimes` pins unless a flag
    # parameter pinfix cannot see is false, read as an availability flag); not: whatever it
    # is given, or a gapped view of pinned memory.
    assert listed == [
        "pkg.helpers.pinned_index",
        "pkg.helpers.pinned_from",
        "pkg.helpers.sometimes",
        "pkg.helpers.wrapped",
        "pkg.helpers.Buffers.staging",
    ]
    # With --strict an unseen flag's false path counts: `sometimes` is pinned on one path only.
    strict = io.StringIO()
    assert main(["show-producers", "--strict", str(pkg / "helpers.py")], out=strict, err=io.StringIO()) == 0
    assert "pkg.helpers.sometimes" not in strict.getvalue() and "pkg.helpers.wrapped" in strict.getvalue()
    assert out.getvalue().splitlines()[0].endswith("helpers.py:5: pkg.helpers.pinned_index")
    # What it lists needs no setting: a copy of a call of one is not reported.
    (pkg / "use.py").write_text(
        "from .helpers import wrapped\n\n\ndef f(d):\n    return wrapped(3).to(d, non_blocking=True)\n"
    )
    assert deep([pkg / "use.py"]) == []
    # A file that does not parse: one line, and a non-zero exit.
    err = io.StringIO()
    assert main(["show-producers", str(pkg / "bad.py")], out=io.StringIO(), err=err) == 2
    assert err.getvalue().count("\n") == 1 and "bad.py: error:" in err.getvalue()


LOADERS = """\
from torch.utils.data import DataLoader


def plain_loader(ds):
    return DataLoader(ds, batch_size=8)


def flagged_loader(ds, pin):
    return DataLoader(ds, batch_size=8, pin_memory=pin)
"""

TRAINER = """\
from torch.utils.data import DataLoader

from .loaders import flagged_loader, plain_loader


class Trainer:
    def __init__(self, ds):
        self.ds = ds
        self.loader = DataLoader(ds, batch_size=4)

    def train_dataloader(self):
        return DataLoader(self.ds, batch_size=4)

    def fit(self, dev):
        for x, y in self.loader:
            x.to(dev, non_blocking=True)

    def fit_epoch(self, dev):
        for batch in self.train_dataloader():
            batch["ids"].to(dev, non_blocking=True)

    def fit_other(self, dev):
        for x in plain_loader(self.ds):
            x.to(dev, non_blocking=True)

    def fit_flagged(self, dev):
        for x in flagged_loader(self.ds, True):
            x.to(dev, non_blocking=True)
"""


def test_dataloader_on_self_returned_and_from_another_file(tmp_path):
    """A loader stored on `self`, returned by `*_dataloader()` or by another file's helper:
    its batches are pageable; fixed where it is built in the same file, reported (no fix) in another."""
    pkg = project(tmp_path, {"loaders.py": LOADERS, "trainer.py": TRAINER})
    found = sorted(deep([pkg]), key=lambda f: f["line"])
    assert [(Path(f["path"]).name, f["line"], f["code"]) for f in found] == [
        ("trainer.py", 16, "PIN002"),
        ("trainer.py", 20, "PIN002"),
        ("trainer.py", 24, "PIN002"),
    ]
    assert [f["fix"]["safety"] for f in found] == ["safe", "safe", None]
    assert "loaders.py:5" in found[2]["message"] and "built in another file" in found[2]["message"]
    # Plain mode cannot see through `self.loader` or a call.
    assert check([pkg])[1] == []
    path = pkg / "trainer.py"
    assert main(["fix", "--deep", str(pkg)], out=io.StringIO(), err=io.StringIO()) == 1  # loaders.py's finding stays
    fixed = path.read_text()
    assert fixed == TRAINER.replace("batch_size=4)", "batch_size=4, pin_memory=True)")
    assert (pkg / "loaders.py").read_text() == LOADERS
    assert [f["line"] for f in deep([pkg])] == [24]


COLLATES = """\
import torch


def pad_collate(items):
    return {"ids": torch.tensor([i["ids"] for i in items])}


def pinned_collate(items):
    return {"ids": torch.tensor([i["ids"] for i in items]).pin_memory()}
"""

COLLATED = """\
from torch.utils.data import DataLoader

from .collates import pad_collate, pinned_collate


def train(ds, dev):
    for batch in DataLoader(ds, collate_fn=pad_collate):
        batch["ids"].to(dev, non_blocking=True)


def train_pinned(ds, dev):
    for batch in DataLoader(ds, collate_fn=pinned_collate):
        batch["ids"].to(dev, non_blocking=True)
"""


def test_collate_fn_from_another_file(tmp_path):
    """Deep mode reads a `collate_fn` of another file as a function: the loader's batches are what
    it returns (fresh pageable tensors, or pinned ones); plain mode does not see into it."""
    pkg = project(tmp_path, {"collates.py": COLLATES, "loop.py": COLLATED})
    found = deep([pkg])
    assert [(Path(f["path"]).name, f["line"], f["code"]) for f in found] == [("loop.py", 8, "PIN002")]
    assert "pad_collate" in json.dumps(found[0]) and found[0]["fix"]["safety"] == "safe"
    assert check([pkg])[1] == []


_STAGE = (
    HEADER + "def _stage(ids, dev, non_blocking):\n    return torch.tensor(ids).to(dev, non_blocking=non_blocking)\n"
)


@pytest.mark.parametrize(
    "callers, expected, given_at",
    [
        # `True` two calls up, passed on unchanged (by position, then by keyword).
        (
            "def _prepare(b, dev, non_blocking):\n    return _stage(b, dev, non_blocking)\n\n\n"
            "def _outer(b, dev, nb):\n    return _prepare(b, dev, non_blocking=nb)\n\n\n"
            "def run(dev):\n    return _outer([1, 2], dev, True)\n",
            [5],
            17,
        ),
        # `False` at the top; the flag rebound on the way: no finding.
        (
            "def _prepare(b, dev, non_blocking):\n    return _stage(b, dev, non_blocking)\n\n\n"
            "def run(dev):\n    return _prepare([1, 2], dev, False)\n",
            [],
            None,
        ),
        (
            "def _prepare(b, dev, non_blocking):\n    non_blocking = non_blocking and dev.type == 'cuda'\n"
            "    return _stage(b, dev, non_blocking)\n\n\n"
            "def run(dev):\n    return _prepare([1, 2], dev, True)\n",
            [],
            None,
        ),
        # A chain longer than MAX_FLAG_RELAY calls is not followed to its end.
        (
            "".join(
                f"def _h{i}(b, dev, nb):\n    return {'_stage' if i == 0 else f'_h{i - 1}'}(b, dev, nb)\n\n\n"
                for i in range(8)
            )
            + "def run(dev):\n    return _h7([1], dev, True)\n",
            [],
            None,
        ),
    ],
)
def test_non_blocking_passed_on_through_helpers(tmp_path, callers, expected, given_at):
    pkg = project(tmp_path, {"stage.py": _STAGE + "\n\n" + callers.replace("_stage(", "_stage(", 1)})
    found = deep([pkg / "stage.py"])
    assert [line for line, _ in lines(found)] == expected
    if expected:
        assert f"(`True` in the call at line {given_at})" in found[0]["message"]


@pytest.mark.parametrize(
    "callers, expected",
    [
        # Nobody in the project calls it: users take the default.
        ("", [5]),
        # A project call that leaves it out takes the default too.
        ("def go(dev):\n    return plan([1], dev)\n", [5]),
        # Every project call passes False (a private helper: nobody else calls it).
        ("def go(dev):\n    return _plan([1], dev, non_blocking=False)\n", []),
    ],
)
def test_non_blocking_true_by_default(tmp_path, callers, expected):
    name = "_plan" if "_plan" in callers else "plan"
    body = (
        HEADER
        + f"def {name}(ids, dev, non_blocking: bool = True):\n    return torch.tensor(ids).to(dev, non_blocking=non_blocking)\n"
    )
    pkg = project(tmp_path, {"plan.py": body + ("\n\n" + callers if callers else "")})
    found = deep([pkg / "plan.py"])
    assert [line for line, _ in lines(found)] == expected
    if expected and not callers:
        assert "(`True` by default, line 4)" in found[0]["message"]


# --- which file evidence names ---------------------------------------------------------------------

_SENDER = """\
import torch


def make_index(n):
    return torch.arange(n)


def send(dev, n):
    return make_index(n).to(dev, non_blocking=True)
"""

_CALLER = """\
import torch

from .sender import make_index


def step(dev, n):
    x = make_index(n)
    return x.to(dev, non_blocking=True)
"""


def _checked_in_order(tmp_path: Path, names: List[str]) -> Dict[str, list]:
    """Each file's findings, its files checked one after the other in one process (one Project)."""
    from pinfix.config import Config
    from pinfix.engine import process_source
    from pinfix.findings import Mode
    from pinfix.output import render
    from pinfix.semantic.deep.project import forget_projects

    forget_projects()
    config = Config(root=tmp_path, deep=True)
    reports = {}
    for name in names:
        path = tmp_path / "pkg" / name
        reports[name] = process_source(str(path), path.read_bytes(), config, Mode())
    out = io.StringIO()
    render("json", [reports[n] for n in sorted(reports)], out, io.StringIO())
    forget_projects()
    shown = json.loads(out.getvalue())["findings"]
    identities = {n: [[(e.path, e.line) for e in d.evidence] for d in r.diagnostics] for n, r in reports.items()}
    return {
        "shown": [[(Path(e["path"]).name, e["line"]) for e in f["evidence"]] for f in shown],
        "identities": identities,
    }


def test_evidence_names_each_file_whatever_order_they_are_checked_in(tmp_path):
    """A module checked first and then traced into from a later file keeps its own
    name in the later file's evidence (it once printed the later file's name with the
    first file's line numbers)."""
    project(tmp_path, {"sender.py": _SENDER, "caller.py": _CALLER})
    first = _checked_in_order(tmp_path, ["sender.py", "caller.py"])
    second = _checked_in_order(tmp_path, ["caller.py", "sender.py"])
    assert first == second
    sender = str((tmp_path / "pkg" / "sender.py").resolve())
    caller = str((tmp_path / "pkg" / "caller.py").resolve())
    (caller_chain,) = first["identities"]["caller.py"]
    assert caller_chain[0] == (sender, 5) and caller_chain[-1] == (caller, 8)
    assert {p for p, _ in caller_chain} == {sender, caller}
    (sender_chain,) = first["identities"]["sender.py"]
    assert sender_chain[0] == (sender, 5) and sender_chain[-1] == (sender, 9)
    assert {p for p, _ in sender_chain} == {sender}
    # Output names them: caller.py's chain starts in sender.py.
    assert first["shown"][0][0] == ("sender.py", 5) and first["shown"][0][-1] == ("caller.py", 8)
    assert first["shown"][1] == [(Path(p).name, line) for p, line in sender_chain]


# --- which pageable path the message names ---------------------------------------------------------

_LIBRARY = """\
import torch




def make_index(n):
    return torch.arange(n)
"""

_DEMO = """\
import torch


def make_batch(n):
    return torch.ones(n)
"""

_PICKER = """\
import torch

from .helpers import make_index
from .{demo}.data import make_batch


def step(dev, n, c):
    x = make_batch(n) if c else make_index(n)
    return x.to(dev, non_blocking=True)
"""


@pytest.mark.parametrize("demo", ["benchmarks", "examples", "tests"])
def test_the_message_names_library_code_before_a_benchmark_example_or_test(tmp_path, demo):
    """Two pageable paths, one made in library code and one (earlier in its file, and
    first in the copy's expression) in a benchmark, example or test: the message and the
    evidence follow the library's."""
    pkg = project(tmp_path, {"helpers.py": _LIBRARY, "picker.py": _PICKER.format(demo=demo)})
    (pkg / demo).mkdir()
    (pkg / demo / "__init__.py").write_text("")
    (pkg / demo / "data.py").write_text(_DEMO)
    (finding,) = deep([pkg / "picker.py"])
    assert "helpers.py:7" in finding["message"] and "make_index" in finding["message"]
    assert "data.py" not in finding["message"]
    assert [Path(e["path"]).name for e in finding["evidence"]][0] == "helpers.py"


# --- the default device across files ----------------------------------------------------------------

_ALLOCATORS = """\
import torch


def on_default(n, dev):
    with torch.device(dev):
        return torch.zeros(n)


def on_host(n):
    with torch.device("cpu"):
        return torch.zeros(n)
"""

_SENDS = """\
import torch

from .alloc import on_default, on_host


def send(n, dev):
    a = on_default(n, dev).to(dev, non_blocking=True)
    b = on_host(n).to(dev, non_blocking=True)
    return a, b
"""


def test_a_factory_on_another_files_default_device_is_no_host_memory(tmp_path):
    """Made inside `with torch.device(dev):` in another file, the tensor is not taken for
    the CPU; made inside `with torch.device("cpu"):` it is, and its copy is reported."""
    pkg = project(tmp_path, {"alloc.py": _ALLOCATORS, "sends.py": _SENDS})
    assert lines(deep([pkg / "sends.py"])) == [(8, "PIN002")]


def test_a_module_that_sets_the_default_device_makes_no_host_memory(tmp_path):
    alloc = "import torch\n\ntorch.set_default_device('cuda')\n\n\ndef make(n):\n    return torch.zeros(n)\n"
    sends = "import torch\n\nfrom .alloc import make\n\n\ndef send(n, dev):\n    return make(n).to(dev, non_blocking=True)\n"
    pkg = project(tmp_path, {"alloc.py": alloc, "sends.py": sends})
    assert lines(deep([pkg / "sends.py"])) == []


def test_a_none_test_of_a_field_known_only_by_its_default_leaves_the_path(tmp_path):
    """A nested record whose constructor call leaves a field out: all pinfix knows of it is
    its default ``None``. ``assert chunk.rows is not None`` says code pinfix does not see
    stores there, not that the copy after it never runs (vLLM 0.34.0's ROCm MLA context
    rows lost their finding this way when only the files that say ``non_blocking`` ran)."""
    import subprocess
    import sys

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "meta.py").write_text(
        "from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass\nclass Outer:\n"
        "    @dataclass\n    class Chunk:\n        n: int\n        rows: list[int] | None = None\n\n"
        "    chunk: 'Outer.Chunk'\n\n\ndef build(n, dev):\n    chunk = Outer.Chunk(n)\n"
        "    return torch.zeros(n).to(dev, non_blocking=True), chunk\n"
    )
    (pkg / "user.py").write_text(
        "import torch\n\nfrom pkg.meta import Outer\n\n\n"
        "def gather(chunk: Outer.Chunk, n, dev):\n    assert chunk.rows is not None\n"
        "    x = torch.arange(n)\n    return x.to(dev, non_blocking=True)\n"
    )
    env = {**os.environ, "PINFIX_NO_PREFILTER": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pinfix", "check", "--no-cache", "--deep", "--output-format", "json", "pkg/user.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert [(f["line"], f["code"]) for f in json.loads(proc.stdout)["findings"]] == [(9, "PIN002")]


GENERATORS = """\
\"\"\"Batches made here.\"\"\"

import numpy as np
import torch


def batches(n):
    for _ in range(n):
        yield torch.from_numpy(np.ones(4))


def pinned_batches(n):
    for _ in range(n):
        yield torch.ones(4).pin_memory()


def passed_on(items):
    yield from items
"""

USES_GENERATORS = """\
from .gen import batches, passed_on, pinned_batches


def run(dev, items):
    for b in batches(3):
        b.to(dev, non_blocking=True)
    for p in pinned_batches(3):
        p.to(dev, non_blocking=True)
    for x in passed_on(items):
        x.to(dev, non_blocking=True)
    return next(batches(1)).to(dev, non_blocking=True)
"""


def test_a_project_generator_hands_out_what_it_yields(tmp_path):
    """Iterating a project generator gives what it yields (its own parameters unknown):
    pageable where it yields fresh pageable memory, pinned where pinned, unknown where it
    hands on its argument (``yield from``)."""
    pkg = project(tmp_path, {"gen.py": GENERATORS, "use.py": USES_GENERATORS})
    found = deep([pkg / "use.py"])
    assert lines(found) == [(6, "PIN001"), (11, "PIN001")]
    (yielded,) = [e for e in found[0]["evidence"] if "yielded by `batches()`" in e["message"]]
    assert (Path(yielded["path"]).name, yielded["line"]) == ("gen.py", 7)  # where the generator is
    assert lines(check([pkg / "use.py"])[1]) == []  # plain mode follows no call


BUFFERS = """\
import torch

PAGEABLE = torch.zeros(4)
PINNED = torch.zeros(4, pin_memory=True)


def make():
    return PAGEABLE
"""


def test_a_module_level_tensor_imported_by_name_is_what_its_module_binds(tmp_path):
    # `from .buffers import PAGEABLE` reads the module's binding as `buffers.PAGEABLE` does,
    # wherever a copy reads the name (its source or, for `copy_`, its argument); a
    # pinned one and an imported function or library name stay what they were.
    pkg = project(
        tmp_path,
        {
            "buffers.py": BUFFERS,
            "use.py": """\
import torch
from torch import float16
from . import buffers
from .buffers import PAGEABLE, PINNED, make
from .buffers import PAGEABLE as renamed


def by_name(dev):
    return PAGEABLE.to(dev, non_blocking=True)


def by_module(dev):
    return buffers.PAGEABLE.to(dev, non_blocking=True)


def renamed_and_copied_into(out):
    out.copy_(renamed, non_blocking=True)


def pinned(dev):
    return PINNED.to(dev, non_blocking=True)


def through_a_local(dev):
    x = PAGEABLE
    return x.to(dev, non_blocking=True)


def returned(dev):
    return make().to(dev, non_blocking=True)


def a_dtype(x, dev):
    return x.to(dev, float16, non_blocking=True)
""",
        },
    )
    found = deep([pkg / "use.py"])
    assert lines(found) == [(9, "PIN002"), (13, "PIN002"), (17, "PIN002"), (26, "PIN002"), (30, "PIN002")]
    assert all((Path(f["evidence"][0]["path"]).name, f["evidence"][0]["line"]) == ("buffers.py", 3) for f in found)
    # Plain mode looks at one function at a time: an imported name is not followed.
    assert lines(check([pkg / "use.py"])[1]) == []


def test_a_class_body_is_not_evaluated_for_each_of_its_methods_asked_about(tmp_path, monkeypatch):
    # A method's def line says `m3(` but calls nothing: the class body around it is no
    # caller of it; and a class body that binds no `a3` is not evaluated for `Big.a3`.
    # Either, for each attribute asked, ran every def of the class body again.
    from pinfix.semantic import evaluator

    methods = "".join(f"\n    def m{i}(self, x):\n        self.a{i} = x\n        return x\n" for i in range(30))
    uses = "".join(f"def u{i}(dev):\n    return Big().a{i}.to(dev, non_blocking=True)\n\n\n" for i in range(30))
    pkg = project(
        tmp_path,
        {
            "big.py": "import torch\n\n\nclass Big:\n    def __init__(self):\n        self.buf = torch.zeros(4)\n"
            + methods,
            "use.py": "from .big import Big\n\n\n"
            + uses
            + "def last(dev):\n    return Big().buf.to(dev, non_blocking=True)\n",
        },
    )
    ran = []
    real = evaluator.Evaluator.run
    monkeypatch.setattr(evaluator.Evaluator, "run", lambda self: ran.append(self.func.name) or real(self))
    # And the lines of big.py, where each question's search lands, are swept for their
    # scopes once (twice: bodies and headers), not once a question.
    from pinfix.semantic import module as semantic_module

    sweeps = []
    sweep = semantic_module._last_holding
    monkeypatch.setattr(semantic_module, "_last_holding", lambda *a: sweeps.append(1) or sweep(*a))
    assert lines(deep([pkg / "use.py"])) == [(125, "PIN002")]
    assert "Big" not in ran and ran.count("m3") <= 2
    assert len(sweeps) <= 2 * 3  # big.py, use.py, the package's __init__.py at most
    # Past a few attributes asked, the class's methods are indexed by what they store,
    # once: the index answers as asking each method did.
    from pinfix.semantic.deep import project as deep_project

    (asked,) = deep_project._PROJECTS.values()
    (index,) = asked._storing_methods.values()
    assert {attr: [m.name for m in methods] for attr, methods in index.items()} == {
        "buf": ["__init__"],
        **{f"a{i}": [f"m{i}"] for i in range(30)},
    }


def test_a_test_module_a_search_finds_is_not_parsed_for_a_question_of_library_code(tmp_path, monkeypatch):
    """What a test passes says nothing of how the library runs: a module of tests that
    calls a library function is not even parsed when the function's callers are asked
    for (a third of the modules vLLM's searches found were tests); a test's own question
    still reads the other tests."""
    from pinfix.semantic.deep import project as deep_project

    pkg = project(
        tmp_path,
        {
            "sender.py": "def send(x, dev):\n    return x.to(dev, non_blocking=True)\n",
            "user.py": "import torch\n\nfrom .sender import send\n\n\ndef run(dev):\n    return send(torch.zeros(4), dev)\n",
        },
    )
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_send.py").write_text(
        "import torch\n\nfrom pkg.sender import send\n\n\n"
        "def send_it(x, dev):\n    return x.to(dev, non_blocking=True)\n\n\n"
        "def test_send():\n    send(torch.zeros(4), 'cuda')\n"
    )
    (tests / "test_other.py").write_text(
        "import torch\n\nfrom .test_send import send_it\n\n\ndef test_it():\n    send_it(torch.zeros(2), 'cuda')\n"
    )

    def parsed() -> List[str]:
        (proj,) = deep_project._PROJECTS.values()
        return sorted(m.path.name for m in proj.modules.values() if m is not None)

    monkeypatch.setattr(deep_project, "_PROJECTS", {})
    library = deep([pkg / "sender.py"], "--no-cache")
    assert [(f["path"], f["line"], f["code"]) for f in library] == [(str(pkg / "sender.py"), 2, "PIN002")]
    assert "torch.zeros" in library[0]["message"] and "test_send" not in library[0]["message"]
    assert "test_send.py" not in parsed() and "user.py" in parsed()
    monkeypatch.setattr(deep_project, "_PROJECTS", {})
    assert lines(deep([tests / "test_send.py"], "--no-cache")) == [(7, "PIN002")]
    assert "test_other.py" in parsed()
