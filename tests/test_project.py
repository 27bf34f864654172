"""Project-wide inference (deep mode, issue 17): returns, attributes, callers'
arguments, records; the cases that must report and those that must stay silent."""

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.test_deep import deep, project

HEADER = "import torch\n\n\n"


def lines_in(found: List[dict], name: str) -> List[Tuple[int, str]]:
    return sorted((f["line"], f["code"]) for f in found if Path(f["path"]).name == name)


def run(tmp_path: Path, files: Dict[str, str], check: str) -> List[dict]:
    pkg = project(tmp_path, dict(files))
    return deep([pkg / check])


CASES = {
    # --- function summaries -------------------------------------------------------------------
    "helper_pins_whatever_it_gets": (
        {"mem.py": HEADER + "def pinned(t):\n    return t.pin_memory()\n"},
        "from pkg.mem import pinned\n\n\ndef f(t, dev):\n    return pinned(t).to(dev, non_blocking=True)\n",
        [],
    ),
    "helper_returns_from_numpy": (
        {"mem.py": HEADER + "def wrap(a):\n    return torch.from_numpy(a)\n"},
        "from pkg.mem import wrap\n\n\ndef f(a, dev):\n    return wrap(a).to(dev, non_blocking=True)\n",
        [5],
    ),
    "helper_returns_its_argument": (
        {"mem.py": "def same(t):\n    return t\n"},
        HEADER
        + "from pkg.mem import same\n\n\ndef f(n, dev):\n    return same(torch.zeros(n)).to(dev, non_blocking=True)\n",
        [8],
    ),
    "helper_returns_its_argument_pinned_by_the_caller": (
        {"mem.py": "def same(t):\n    return t\n"},
        HEADER
        + "from pkg.mem import same\n\n\ndef f(n, dev):\n    return same(torch.zeros(n, pin_memory=True)).to(dev, non_blocking=True)\n",
        [],
    ),
    "staticmethod_classmethod_property_cache": (
        {},
        HEADER + "import functools\n\n\nclass A:\n"
        "    @staticmethod\n    def s(n):\n        return torch.zeros(n)\n\n"
        "    @classmethod\n    def c(cls, n):\n        return torch.ones(n)\n\n"
        "    @property\n    def p(self):\n        return torch.arange(3)\n\n"
        "    @functools.lru_cache(maxsize=None)\n    def cached(self, n):\n        return torch.empty(n)\n\n"
        "    def go(self, n, dev):\n        a = A.s(n).to(dev, non_blocking=True)\n        b = self.c(n).to(dev, non_blocking=True)\n"
        "        c = self.p.to(dev, non_blocking=True)\n        d = self.cached(n).to(dev, non_blocking=True)\n        return a, b, c, d\n",
        [25, 26, 27, 28],
    ),
    # --- parameters from their callers ------------------------------------------------------
    "parameter_every_caller_passes_pageable": (
        {
            "use.py": "import torch\n\nfrom pkg.main import upload\n\n\ndef go(dev):\n    return upload(torch.tensor([1, 2]), dev)\n"
        },
        "def upload(host, dev):\n    return host.to(dev, non_blocking=True)\n",
        [2],
    ),
    "parameter_pinned_by_every_caller": (
        {
            "use.py": "import torch\n\nfrom pkg.main import upload\n\n\ndef go(dev):\n    return upload(torch.zeros(2, pin_memory=True), dev)\n"
        },
        "def upload(host, dev):\n    return host.to(dev, non_blocking=True)\n",
        [],
    ),
    "parameter_pinned_by_one_caller_and_unknown_outside": (
        {
            "use.py": "import torch\n\nfrom pkg.main import upload\n\n\ndef go(x, dev):\n    upload(torch.zeros(2, pin_memory=True), dev)\n"
        },
        "def upload(host, dev):\n    return host.to(dev, non_blocking=True)\n",
        [],
    ),
    # A fresh result of a parameter (`lens - 1`) lives on the parameter's device: the
    # callers say which. Pinned or not, a CPU input makes a pageable result.
    "computed_from_a_parameter_a_caller_passes_on_the_cpu": (
        {
            "use.py": "import torch\n\nfrom pkg.main import _starts\n\n\ndef go(dev):\n    return _starts(torch.zeros(4, pin_memory=True), dev)\n"
        },
        "def _starts(lens, dev):\n    starts = lens - 1\n    return starts.to(dev, non_blocking=True)\n",
        [3],
    ),
    "computed_from_a_keyword_only_parameter": (
        {
            "use.py": "import torch\n\nfrom pkg.main import _plan\n\n\ndef go(dev):\n    lens = torch.zeros(8)\n    return _plan(lens=lens[1:], dev=dev)\n"
        },
        "import torch\n\n\ndef _plan(*, lens, dev):\n    kv = torch.minimum(lens, lens - 2)\n    starts = lens - kv\n    return starts.to(dev, non_blocking=True)\n",
        [7],
    ),
    "computed_from_a_parameter_every_caller_passes_on_the_device": (
        {
            "use.py": "import torch\n\nfrom pkg.main import _starts\n\n\ndef go(dev):\n    return _starts(torch.zeros(4, device='cuda'), dev)\n"
        },
        "def _starts(lens, dev):\n    starts = lens - 1\n    return starts.to(dev, non_blocking=True)\n",
        [],
    ),
    "computed_from_a_parameter_no_caller_shows": (
        {},
        "def _starts(lens, dev):\n    starts = lens - 1\n    return starts.to(dev, non_blocking=True)\n",
        [],
    ),
    "a_number_a_caller_passes_decides_nothing": (
        {
            "use.py": "import torch\n\nfrom pkg.main import _part\n\n\ndef go(buf, dev):\n    return _part(buf, 3, dev)\n"
        },
        "def _part(buf, i, dev):\n    return (buf[i] * 2).to(dev, non_blocking=True)\n",
        [],
    ),
    "a_test_calling_library_code_says_nothing_of_it": (
        {
            "test_upload.py": "import torch\n\nfrom pkg.main import upload\n\n\ndef test_go():\n    upload(torch.tensor([1, 2]), 'cpu')\n"
        },
        "def upload(host, dev):\n    return host.to(dev, non_blocking=True)\n",
        [],
    ),
    "a_test_storing_an_attribute_says_nothing_of_the_library": (
        {
            "test_buf.py": "import torch\n\nfrom pkg.main import Box\n\n\ndef test_fill():\n    b = Box()\n    b.buf = torch.zeros(2)\n",
        },
        "import torch\n\n\nclass Box:\n    def __init__(self):\n        self.buf = torch.zeros(2, pin_memory=True)\n\n"
        "    def send(self, dev):\n        return self.buf.to(dev, non_blocking=True)\n",
        [],
    ),
    "constructor_argument_stored_then_copied": (
        {"use.py": "import torch\n\nfrom pkg.main import Stage\n\n\ndef go(n):\n    return Stage(torch.zeros(n))\n"},
        "class Stage:\n    def __init__(self, buf):\n        self.buf = buf\n\n    def push(self, dev):\n        return self.buf.to(dev, non_blocking=True)\n",
        [6],
    ),
    # --- attributes and records ----------------------------------------------------------------
    "dataclass_field_filled_by_the_constructor": (
        {
            "batch.py": HEADER
            + "from dataclasses import dataclass\n\n\n@dataclass\nclass Batch:\n    ids: torch.Tensor\n    n: int = 0\n\n\n"
            "def make(x):\n    return Batch(torch.tensor(x))\n"
        },
        "from pkg.batch import make\n\n\ndef f(x, dev):\n    return make(x).ids.to(dev, non_blocking=True)\n",
        [5],
    ),
    # A record read through an annotated parameter: its field holds what the project's
    # constructor calls give it (or the default), wherever they are.
    "record_field_given_by_a_constructor_call_elsewhere": (
        {
            "meta.py": HEADER
            + "from dataclasses import dataclass\nfrom typing import Optional\n\n\n@dataclass\nclass Meta:\n    lens: Optional[torch.Tensor] = None\n",
            "runner.py": "import torch\n\nfrom pkg.meta import Meta\n\n\ndef make(n):\n    return Meta(lens=torch.zeros(n))\n",
        },
        "from pkg.meta import Meta\n\n\ndef f(m: Meta, dev):\n    return m.lens.to(dev, non_blocking=True)\n",
        [5],
    ),
    "record_field_every_constructor_call_pins": (
        {
            "meta.py": HEADER
            + "from dataclasses import dataclass\nfrom typing import Optional\n\n\n@dataclass\nclass Meta:\n    lens: Optional[torch.Tensor] = None\n",
            "runner.py": "import torch\n\nfrom pkg.meta import Meta\n\n\ndef make(n):\n    return Meta(lens=torch.zeros(n, pin_memory=True))\n",
        },
        "from pkg.meta import Meta\n\n\ndef f(m: Meta, dev):\n    return m.lens.to(dev, non_blocking=True)\n",
        [],
    ),
    "record_field_computed_on_after_the_read": (
        {
            "meta.py": HEADER
            + "from dataclasses import dataclass\nfrom typing import Optional\n\n\n@dataclass\nclass Meta:\n    lens: Optional[torch.Tensor] = None\n",
            "runner.py": "import torch\n\nfrom pkg.meta import Meta\n\n\ndef make(n):\n    return Meta(lens=torch.zeros(n, pin_memory=True))\n",
        },
        "from pkg.meta import Meta\n\n\ndef f(m: Meta, dev):\n    starts = m.lens[1:] - m.lens[:-1]\n    return starts.to(dev, non_blocking=True)\n",
        [6],
    ),
    # The field is read one call away from the copy: a caller passes a slice of it to the
    # helper that copies (the constructor calls are searched two steps from the copy).
    "record_field_passed_on_by_a_caller": (
        {
            "meta.py": HEADER
            + "from dataclasses import dataclass\nfrom typing import Optional\n\n\n@dataclass\nclass Meta:\n    lens: Optional[torch.Tensor] = None\n",
            "runner.py": "import torch\n\nfrom pkg.meta import Meta\n\n\ndef make(n):\n    return Meta(lens=torch.zeros(n))\n",
            "build.py": "from pkg.main import _send\nfrom pkg.meta import Meta\n\n\ndef build(m: Meta, dev):\n    return _send(m.lens[:4], dev)\n",
        },
        "def _send(lens, dev):\n    return lens.to(dev, non_blocking=True)\n",
        [2],
    ),
    "record_field_passed_on_by_a_caller_pinned_everywhere": (
        {
            "meta.py": HEADER
            + "from dataclasses import dataclass\nfrom typing import Optional\n\n\n@dataclass\nclass Meta:\n    lens: Optional[torch.Tensor] = None\n",
            "runner.py": "import torch\n\nfrom pkg.meta import Meta\n\n\ndef make(n):\n    return Meta(lens=torch.zeros(n, pin_memory=True))\n",
            "build.py": "from pkg.main import _send\nfrom pkg.meta import Meta\n\n\ndef build(m: Meta, dev):\n    return _send(m.lens[:4], dev)\n",
        },
        "def _send(lens, dev):\n    return lens.to(dev, non_blocking=True)\n",
        [],
    ),
    # Reflection over a record's fields (`for f in fields(b): getattr(b, f.name)`): each field's
    # value, as the project's constructor calls give it.
    "dataclass_fields_read_by_reflection": (
        {
            "batch.py": HEADER
            + "from dataclasses import dataclass\nfrom typing import Optional\n\n\n@dataclass\nclass Batch:\n    ids: Optional[torch.Tensor] = None\n    lens: Optional[torch.Tensor] = None\n    n: int = 0\n",
            "maker.py": "import torch\n\nfrom pkg.batch import Batch\n\n\ndef make(x):\n    return Batch(ids=torch.zeros(4, pin_memory=True), lens=torch.tensor(x), n=2)\n",
        },
        "from dataclasses import fields\n\nimport torch\n\nfrom pkg.batch import Batch\n\n\ndef send(b: Batch, dev):\n    out = {}\n    for f in fields(b):\n        v = getattr(b, f.name)\n        if isinstance(v, torch.Tensor):\n            v = v.to(dev, non_blocking=True)\n        out[f.name] = v\n    return Batch(**out)\n",
        [13],
    ),
    "dataclass_fields_read_by_reflection_all_pinned": (
        {
            "batch.py": HEADER
            + "from dataclasses import dataclass\nfrom typing import Optional\n\n\n@dataclass\nclass Batch:\n    ids: Optional[torch.Tensor] = None\n    lens: Optional[torch.Tensor] = None\n    n: int = 0\n",
            "maker.py": "import torch\n\nfrom pkg.batch import Batch\n\n\ndef make(x):\n    return Batch(ids=torch.zeros(4, pin_memory=True), lens=torch.zeros(4, pin_memory=True), n=2)\n",
        },
        "from dataclasses import fields\n\nimport torch\n\nfrom pkg.batch import Batch\n\n\ndef send(b: Batch, dev):\n    out = {}\n    for f in fields(b):\n        v = getattr(b, f.name)\n        if isinstance(v, torch.Tensor):\n            v = v.to(dev, non_blocking=True)\n        out[f.name] = v\n    return Batch(**out)\n",
        [],
    ),
    "getattr_with_a_literal_name": (
        {
            "batch.py": HEADER
            + "from dataclasses import dataclass\nfrom typing import Optional\n\n\n@dataclass\nclass Batch:\n    ids: Optional[torch.Tensor] = None\n    lens: Optional[torch.Tensor] = None\n    n: int = 0\n",
            "maker.py": "import torch\n\nfrom pkg.batch import Batch\n\n\ndef make(x):\n    return Batch(ids=torch.zeros(4, pin_memory=True), lens=torch.tensor(x), n=2)\n",
        },
        "from pkg.batch import Batch\n\n\ndef send(b: Batch, dev):\n    return getattr(b, 'ids').to(dev, non_blocking=True), getattr(b, 'lens').to(dev, non_blocking=True)\n",
        [5],
    ),
    # A dataclass's constructor takes its dataclass bases' fields first: `Child(a, b)`.
    "dataclass_subclass_takes_its_bases_fields_first": (
        {},
        HEADER + "from dataclasses import dataclass\n\n\n@dataclass\nclass Base:\n    a: torch.Tensor\n\n\n"
        "@dataclass\nclass Child(Base):\n    b: torch.Tensor\n\n\n"
        "def f(dev):\n    c = Child(torch.zeros(2), torch.zeros(2, pin_memory=True))\n"
        "    x = c.b.to(dev, non_blocking=True)\n    return x, c.a.to(dev, non_blocking=True)\n",
        [20],
    ),
    # A base pinfix cannot see may take the first places: positional arguments say nothing.
    "dataclass_with_a_base_pinfix_cannot_see": (
        {},
        HEADER + "from dataclasses import dataclass\n\nfrom elsewhere import Ext\n\n\n"
        "@dataclass\nclass Child(Ext):\n    b: torch.Tensor\n\n\n"
        "def f(dev):\n    c = Child(torch.zeros(2), torch.zeros(2, pin_memory=True))\n"
        "    return c.b.to(dev, non_blocking=True)\n",
        [],
    ),
    "dataclass_fields_by_reflection_include_the_bases_fields": (
        {},
        HEADER + "from dataclasses import dataclass, fields\n\n\n@dataclass\nclass Base:\n    a: torch.Tensor\n\n\n"
        "@dataclass\nclass Child(Base):\n    b: torch.Tensor\n\n\n"
        "def f(dev):\n    c = Child(torch.zeros(2), torch.zeros(2, pin_memory=True))\n"
        "    return [getattr(c, f.name).to(dev, non_blocking=True) for f in fields(c)]\n",
        [19],
    ),
    "namedtuple_field": (
        {},
        HEADER
        + "from typing import NamedTuple\n\n\nclass Pair(NamedTuple):\n    a: torch.Tensor\n    b: torch.Tensor\n\n\n"
        "def f(dev):\n    p = Pair(torch.zeros(2, pin_memory=True), torch.zeros(2))\n"
        "    return p.a.to(dev, non_blocking=True), p.b.to(dev, non_blocking=True)\n",
        [14],
    ),
    "annotated_parameter_of_a_project_class": (
        {"bufs.py": HEADER + "class Buffers:\n    def __init__(self, n):\n        self.host = torch.zeros(n)\n"},
        "from pkg.bufs import Buffers\n\n\ndef f(b: Buffers, dev):\n    return b.host.to(dev, non_blocking=True)\n",
        [5],
    ),
    "object_made_by_a_factory_function": (
        {
            "bufs.py": HEADER
            + "class Buffers:\n    def __init__(self, n, pin):\n        self.host = torch.zeros(n, pin_memory=pin)\n\n\n"
            "def pinned_buffers(n):\n    return Buffers(n, True)\n"
        },
        "from pkg.bufs import pinned_buffers\n\n\ndef f(n, dev):\n    return pinned_buffers(n).host.to(dev, non_blocking=True)\n",
        [],
    ),
    "register_buffer": (
        {},
        HEADER + "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('scale', torch.ones(1))\n\n"
        "    def forward(self, x):\n        return self.scale.to(x.device, non_blocking=True)\n",
        [10],
    ),
    "subclass_stores_pageable": (
        {
            "child.py": "import torch\n\nfrom pkg.main import Base\n\n\nclass Child(Base):\n    def __init__(self, n):\n        self.buf = torch.zeros(n)\n"
        },
        HEADER + "class Base:\n    def __init__(self, n):\n        self.buf = torch.zeros(n, pin_memory=True)\n\n"
        "    def go(self, dev):\n        return self.buf.to(dev, non_blocking=True)\n",
        [9],
    ),
    "stored_on_an_object_elsewhere": (
        {"bufs.py": HEADER + "class Buffers:\n    pass\n\n\ndef setup(b: Buffers):\n    b.extra = torch.zeros(3)\n"},
        "from pkg.bufs import Buffers\n\n\ndef go(b: Buffers, dev):\n    return b.extra.to(dev, non_blocking=True)\n",
        [5],
    ),
    "unknown_receiver_when_every_store_agrees": (
        {
            "a.py": HEADER + "def fill(x, n):\n    x.staging = torch.zeros(n)\n",
            "b.py": HEADER + "def fill2(y):\n    y.staging = torch.ones(2)\n",
        },
        "def go(obj, dev):\n    return obj.staging.to(dev, non_blocking=True)\n",
        [2],
    ),
    "unknown_receiver_when_stores_disagree": (
        {
            "a.py": HEADER + "def fill(x, n):\n    x.staging = torch.zeros(n)\n",
            "b.py": HEADER + "def fill2(y):\n    y.staging = torch.ones(2, pin_memory=True)\n",
        },
        "def go(obj, dev):\n    return obj.staging.to(dev, non_blocking=True)\n",
        [],
    ),
    # An attribute's answer is the same wherever it is asked, and a chain of them is followed
    # to its end: each level here was one step further from the copy, and past four of them
    # the buffer was "too far from the copy".
    "attribute_chain_followed_to_its_end": (
        {
            "chain.py": HEADER
            + "class Level0:\n    def __init__(self):\n        self.host = torch.zeros(16)\n\n\n"
            + "".join(
                f"class Level{i}:\n    def __init__(self):\n        self.below = Level{i - 1}()\n"
                f"        self.host = self.below.host\n\n\n"
                for i in range(1, 7)
            ),
        },
        "from pkg.chain import Level6\n\n\ndef go(dev):\n    return Level6().host.to(dev, non_blocking=True)\n",
        [5],
    ),
    "attribute_chain_pinned_at_its_end": (
        {
            "chain.py": HEADER
            + "class Level0:\n    def __init__(self):\n        self.host = torch.zeros(16, pin_memory=True)\n\n\n"
            + "".join(
                f"class Level{i}:\n    def __init__(self):\n        self.below = Level{i - 1}()\n"
                f"        self.host = self.below.host\n\n\n"
                for i in range(1, 7)
            ),
        },
        "from pkg.chain import Level6\n\n\ndef go(dev):\n    return Level6().host.to(dev, non_blocking=True)\n",
        [],
    ),
    # Past the calls evaluated with their arguments, each function's returns are worked out
    # once, from its own parameters, and a chain of calls is followed to its end: past four
    # calls the buffer was "too far from the copy".
    "call_chain_followed_to_its_end": (
        {
            "steps.py": HEADER
            + "def step0():\n    return torch.zeros(16)\n\n\n"
            + "".join(f"def step{i}():\n    return step{i - 1}()\n\n\n" for i in range(1, 8)),
        },
        "from pkg.steps import step7\n\n\ndef go(dev):\n    return step7().to(dev, non_blocking=True)\n",
        [5],
    ),
    "call_chain_pinned_at_its_end": (
        {
            "steps.py": HEADER
            + "def step0():\n    return torch.zeros(16).pin_memory()\n\n\n"
            + "".join(f"def step{i}():\n    return step{i - 1}()\n\n\n" for i in range(1, 8)),
        },
        "from pkg.steps import step7\n\n\ndef go(dev):\n    return step7().to(dev, non_blocking=True)\n",
        [],
    ),
    "recursion_reaches_a_fixpoint": (
        {},
        HEADER + "def build(n):\n    if n == 0:\n        return torch.zeros(1)\n    return build(n - 1)\n\n\n"
        "def f(dev):\n    return build(3).to(dev, non_blocking=True)\n",
        [11],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_project_cases(tmp_path: Path, name: str) -> None:
    others, main_py, expected = CASES[name]
    found = run(tmp_path, {**others, "main.py": main_py}, "main.py")
    assert [line for line, _ in lines_in(found, "main.py")] == expected, [f["message"] for f in found]


def test_caller_named_in_the_evidence(tmp_path: Path) -> None:
    others, main_py, _ = CASES["parameter_every_caller_passes_pageable"]
    (finding,) = run(tmp_path, {**others, "main.py": main_py}, "main.py")
    assert "use.py" in finding["message"] and "upload()" in finding["message"]
    assert any(Path(e["path"] or "").name == "use.py" for e in finding["evidence"])


# --- the project's text: searches start from the word index --------------------------------------


def test_a_search_finds_what_a_scan_of_every_file_finds(tmp_path: Path) -> None:
    from pinfix.semantic.deep.words import Searcher, WordIndex

    texts = {
        "a.py": b"def stage(x):\n    return x\n",
        "b.py": b"y = stage(1)\nstaged = 2\n",
        "c.py": b"nothing_here = 3\n",
        "d.py": b"prestage = 1\n",
        "e.py": b"stage",  # the word is the whole file, at the very end of the text
        "f.py": "\u00e9stage(1)\nstage\u00e9(2)\n".encode(),  # non-ASCII letters join the word
    }
    for name, data in texts.items():
        (tmp_path / name).write_bytes(data)
    index = WordIndex(tmp_path)
    searcher = Searcher([index])
    pattern = __import__("re").compile(rb"(?<![\w\x80-\xff])stage\s*\(")

    def names(numbers: list) -> list:
        return [Path(index.names[i]).name for i in numbers]

    # Whole words only (ASCII ones: a non-ASCII letter separates), in the listing's order.
    assert names(index.files_saying(b"stage")) == ["a.py", "b.py", "e.py", "f.py"]
    hits = [(p.name, Searcher.lines_matching(pattern, data)) for p, data in searcher.matching(pattern, b"stage")]
    scan = [
        (name, sorted({data.count(b"\n", 0, m.start()) + 1 for m in pattern.finditer(data)}))
        for name, data in sorted(texts.items())
        if pattern.search(data)
    ]
    assert hits == scan == [("a.py", [1]), ("b.py", [1])]
    # Not a word: every file holding the bytes.
    assert names(index.files_saying(b"x = 3")) == []
    assert names(index.files_saying(b"= 2")) == ["b.py"]
    assert names(index.files_saying(b"here")) == []


INPUTS = """from dataclasses import dataclass, fields
from typing import Optional

import torch


@dataclass
class ModelInputs:
    input_ids: torch.Tensor
    seq_length: torch.Tensor
    block_offsets: Optional[torch.Tensor] = None
    is_decoding: bool = False

    def to_device(self, device: str, non_blocking: bool = False):
        out_dict = dict()
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, torch.Tensor):
                v = v.to(device, non_blocking=non_blocking)
            out_dict[f.name] = v
        return ModelInputs(**out_dict)
"""
MAKER = """import torch

from pkg.inputs import ModelInputs


class InputsMaker:
    def make(self, seqs):
        ids = torch.tensor([s.id for s in seqs]){pin}
        lens = torch.tensor([len(s) for s in seqs]){pin}
        return ModelInputs(input_ids=ids, seq_length=lens)
"""
LOOP = """from pkg.maker import InputsMaker


def preprocess(maker: InputsMaker, seqs, device):
    inputs = maker.make(seqs)
    return inputs.to_device(device, non_blocking=True)
"""


@pytest.mark.parametrize("pin, expected", [("", [(19, "PIN002")]), (".pin_memory()", [])])
def test_a_records_to_device_copies_each_field_its_maker_gives(
    tmp_path: Path, pin: str, expected: List[Tuple[int, str]]
) -> None:
    """A dataclass's ``to_device`` copies every tensor field (``fields(self)`` and ``getattr``),
    with the ``non_blocking=True`` its caller passes: a field the project's maker fills with
    ``torch.tensor`` blocks there; pinned by the maker, nothing is said."""
    pkg = project(tmp_path, {"inputs.py": INPUTS, "maker.py": MAKER.format(pin=pin), "loop.py": LOOP})
    found = deep([pkg / "inputs.py"])
    assert lines_in(found, "inputs.py") == expected
    if expected:
        (finding,) = found
        assert "maker.py:8" in finding["message"] and "loop.py:6" in finding["message"]


def test_the_engine_asks_the_project_through_its_declared_interface() -> None:
    """``ModuleContext`` asks beyond its module only through ``Questions`` (plain mode's
    null answers, ``NO_PROJECT``); deep mode's project implements every one of them with
    the same parameters, and nothing calls the project past the type checker."""
    import inspect

    from pinfix.semantic.deep.project import DeepProject
    from pinfix.semantic.module import NO_PROJECT, ModuleContext, Questions
    from tests.support import REPO

    asked = [n for n, f in vars(Questions).items() if callable(f) and not n.startswith("_")]
    assert sorted(asked) == ["evaluator", "global_value", "open", "recording", "refine", "reused", "run"]
    for name in asked:
        mine = list(inspect.signature(getattr(Questions, name)).parameters)
        theirs = list(inspect.signature(getattr(DeepProject, name)).parameters)
        assert name in vars(DeepProject) and theirs[: len(mine)] == mine, name
    assert DeepProject.deep and not NO_PROJECT.deep
    assert ModuleContext.__init__.__defaults__ == (None,)  # no project given: NO_PROJECT
    text = (REPO / "pinfix" / "semantic" / "module.py").read_text()
    assert "type: ignore[attr-defined]" not in text and "self.project is" not in text


def test_one_evaluation_resolves_each_name_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name called again and again in one function (``make(...)`` five times) is resolved
    once by that function's evaluation (the answer, and what it read, are the same each time)."""
    import collections

    from pinfix.semantic.deep.project import DeepProject

    asked: collections.Counter = collections.Counter()
    resolve = DeepProject.resolve
    monkeypatch.setattr(DeepProject, "resolve", lambda self, q, *a, **k: asked.update([q]) or resolve(self, q, *a, **k))
    found = run(
        tmp_path,
        {
            "a.py": "import torch\n\n\ndef make(n):\n    return torch.zeros(n)\n",
            "main.py": (
                "from .a import make\n\n\ndef f(n, dev):\n"
                + "".join(f"    t{i} = make(n).to(dev, non_blocking=True)\n" for i in range(5))
                + "    return t0, t1, t2, t3, t4\n"
            ),
        },
        "main.py",
    )
    assert [line for line, _ in lines_in(found, "main.py")] == [5, 6, 7, 8, 9]
    assert asked["pkg.a.make"] == 1


def test_a_bodys_evaluation_for_one_name_leaves_out_the_defs_and_imports_of_others() -> None:
    """Asked for one name, a module body runs the statements that bind it and what they read,
    and every statement but a def, a class or an import of another name (an assignment may
    change what the rest sees): evaluated once for each of a thousand defs' names, the whole
    body was quadratic in its size."""
    from pinfix.semantic.scope import ModuleInfo
    from pinfix.semantic.slices import Graph
    from pinfix.semantic.source import SourceText

    text = (
        "import torch\nimport numpy as np\nfrom os import path\nfrom helpers import *\n\n"
        "def other():\n    return 1\n\nclass Unused:\n    pass\n\n"
        "SIZE = 4\nprint(SIZE)\n\ndef make(n=SIZE):\n    return torch.zeros(n)\n\nBUF = make()\n"
    )
    src = SourceText(text, "m.py")
    module = ModuleInfo(src, src.parse())
    graph = Graph(module.body, False)
    run = graph.slice(("binds", "BUF")).run
    assert run is not None
    said = [src.line_text(stmt.lineno).strip() for stmt in run]
    # (`torch` is read by `make`'s body when it runs: a question of its own, not this one's.)
    assert said == [
        "from helpers import *",
        "SIZE = 4",
        "print(SIZE)",
        "def make(n=SIZE):",
        "BUF = make()",
    ]
    # Another question than a name's runs every statement.
    assert graph.slice(("returns",)).run is None


def test_a_body_of_many_statements_is_evaluated_once_for_all_its_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module running more than ``MAX_BODY_PER_NAME`` statements besides defs, classes and
    imports is evaluated once for every name it binds (each name's own evaluation runs them
    all): its tensors are still told apart, pageable and pinned."""
    from pinfix.semantic.deep.project import DeepProject
    from pinfix.semantic.module import MAX_BODY_PER_NAME

    bodies: List[str] = []
    run_one = DeepProject.run

    def counting(self: DeepProject, evaluator):  # type: ignore[no-untyped-def]
        if evaluator.func.is_module:
            bodies.append(evaluator.func.module.name or "")
        return run_one(self, evaluator)

    monkeypatch.setattr(DeepProject, "run", counting)
    n = MAX_BODY_PER_NAME + 8
    assignments = "".join(f"B{i} = torch.zeros({i + 1}){'.pin_memory()' if i % 2 else ''}\n" for i in range(n))
    reads = "".join(f"    t{i} = bufs.B{i}.to(dev, non_blocking=True)\n" for i in range(n))
    found = run(
        tmp_path,
        {"bufs.py": HEADER + assignments, "main.py": "from . import bufs\n\n\ndef f(dev):\n" + reads},
        "main.py",
    )
    assert [line for line, _ in lines_in(found, "main.py")] == [5 + i for i in range(0, n, 2)]
    assert bodies.count("pkg.bufs") == 1
