"""The pre-filter's shortcuts on the cases they could get wrong: sources the
analysis only sees as computed (``torch.cat``, arithmetic, a gather, a pinned
producer's result), a sink at module level, in a default or a lambda, nested
defs, tabs, backslash continuations, a comment between a comma and a
positional ``True``, strings that look like code, decorated defs the slice
reduces to stubs; and the settings that change what may be a finding
(``deep``, ``strict``, pinned producers). Findings must be identical with the
shortcuts on and off (``PINFIX_NO_PREFILTER=1``)."""

from pathlib import Path

from pinfix.config import Config
from pinfix.prefilter import may_contain_finding
from tests.test_prefilter import _check, _corpus

CASES = {
    "computed_cat": (
        "import torch\n"
        "from vllm.utils.torch_utils import np_to_pinned_tensor\n\n\n"
        "def f(a, dev):\n"
        "    parts = [np_to_pinned_tensor(a)]\n"
        "    return torch.cat(parts).to(dev, non_blocking=True)\n"
    ),
    "computed_append": (
        "import torch\n\n\n"
        "def f(a, b, dev):\n"
        "    xs = []\n"
        "    xs.append(torch.zeros(4, pin_memory=True))\n"
        "    xs.append(b)\n"
        "    return torch.stack(xs).to(dev, non_blocking=True)\n"
    ),
    "computed_arith": (
        "import torch\n\n\ndef f(a, dev):\n    t = torch.from_numpy(a)\n    return (t * 2).to(dev, non_blocking=True)\n"
    ),
    "computed_method": (
        "import torch\n\n\n"
        "def f(a, dev):\n"
        "    p = torch.empty(8, pin_memory=True)\n"
        "    q = p.cumsum(0)\n"
        "    return q.to(dev, non_blocking=True)\n"
    ),
    "gather": (
        "import torch\n\n\n"
        "def f(idx, dev):\n"
        "    p = torch.empty(8, pin_memory=True)\n"
        "    return p[[0, 2, 4]].to(dev, non_blocking=True)\n"
    ),
    "to_cpu_then_cat": (
        'import torch\n\n\ndef f(x, y, dev):\n    return torch.cat([x.to("cpu"), y]).to(dev, non_blocking=True)\n'
    ),
    "escaped_cpu": (
        'import torch\n\n\ndef f(x, y, dev):\n    return torch.cat([x.to("\\x63pu"), y]).to(dev, non_blocking=True)\n'
    ),
    "module_level": (
        "import numpy as np\nimport torch\n\n"
        'BUF = torch.empty(4, device="cuda")\n'
        "BUF.copy_(torch.from_numpy(np.zeros(4)), non_blocking=True)\n\n\n"
        "@staticmethod\n"
        "def unrelated(x=BUF):\n"
        "    return x + 1\n"
    ),
    "in_default": (
        "import numpy as np\nimport torch\n\n\n"
        'def f(x=torch.from_numpy(np.zeros(3)).to("cuda", non_blocking=True)):\n'
        "    return x\n"
    ),
    "in_lambda": "import torch\n\ng = lambda a, dev: torch.from_numpy(a).to(dev, non_blocking=True)\n",
    "nested": (
        "import torch\n\n\n"
        "def outer(a, dev):\n"
        "    def inner():\n"
        "        t = torch.from_numpy(a)\n"
        "        return t.to(dev, non_blocking=True)\n\n"
        "    return inner()\n"
    ),
    "tabs": (
        "import torch\n\n\nclass C:\n\tdef m(self, a, dev):\n\t\tt = torch.from_numpy(a)\n"
        "\t\treturn t.to(dev, non_blocking=True)\n\n\tdef other(self):\n\t\treturn 1\n"
    ),
    "backslash": (
        "import torch\n\n\n"
        "def f(a, dev):\n"
        "    t = torch.from_numpy(a) \\\n"
        "        .view(-1)\n"
        "    return t.to(dev, \\\n"
        "        non_blocking=True)\n"
    ),
    "comment_before_true": (
        "import torch\n\n\n"
        "def f(a, dev, dt):\n"
        "    t = torch.from_numpy(a)\n"
        "    return t.to(dev, dt,  # a comment, then the positional flag\n"
        "                True)\n\n\n"
        "def g(a, dst):\n"
        "    dst.copy_(torch.from_numpy(a),\n"
        "\t\tTrue)\n"
    ),
    "odd_strings": (
        'import torch\n\nDOC = """\ndef f(a, dev):\n    return torch.from_numpy(a).to(dev, non_blocking=True)\n"""\n\n\n'
        'def g(a, dev):\n    text = """\nx = 1\n"""\n    t = torch.from_numpy(a)\n'
        "    return t.to(dev, non_blocking=True), text\n"
    ),
    "decorated": (
        "import functools\n\nimport torch\n\n\n"
        "@functools.lru_cache(maxsize=None)\n"
        "def helper(\n    n,\n    m=2,\n):\n    return n\n\n\n"
        "class K:\n"
        "    @property\n    def p(self):\n        return 1\n\n"
        "    @functools.cache\n"
        "    def m(self, a, dev):\n"
        "        return torch.from_numpy(a).to(dev, non_blocking=True)\n"
    ),
    "module_values": (
        "import numpy as np\nimport torch\n\nTABLE = {\n    'a': torch.from_numpy(np.zeros(2)),\n    'b': 2,\n}  # why\n"
        "HOST = torch.from_numpy(\n    np.zeros(3)\n)\nCOUNT = 0\n\n\n"
        "def bump():\n    global COUNT\n    COUNT += 1\n\n\n"
        "def closure():\n    n = 0\n\n    def inc():\n        nonlocal n\n        n += 1\n\n    return inc\n\n\n"
        "def f(a, dev):\n    HOST.to(dev, non_blocking=True)\n    TABLE['a'].to(dev, non_blocking=True)\n"
        "    t = torch.from_numpy(a)\n    return t.to(dev, non_blocking=True)\n"
    ),
    "aliased_blocks": (
        "try:\n    from torch import from_numpy as fnp\nexcept ImportError:\n    fnp = None\n\n\n"
        "def f(a, dev):\n    from torch import cat as join\n\n    return join([fnp(a)]).to(dev, non_blocking=True)\n"
    ),
    "aliased_global": (
        "import torch\n\n\ndef setup():\n    global fnp\n    from torch import from_numpy as fnp\n\n\n"
        "def f(a, dev):\n    return fnp(a).to(dev, non_blocking=True)\n"
    ),
    "walrus_in_decorator": (
        "import torch\n\n\n@register(HOST := torch.zeros(4))\ndef setup():\n    return 1\n\n\n"
        "def f(dev):\n    return HOST.to(dev, non_blocking=True)\n"
    ),
    "device_of_a_cpu_tensor": (
        "import numpy as np\nimport torch\n\n\n"
        "def f(a, n, dev):\n"
        "    x = torch.from_numpy(a).pin_memory()\n"
        "    pad = torch.full((n,), 0, device=x.device)\n"
        "    return pad.to(dev, non_blocking=True)\n"
    ),
    "device_of_a_parameter": (
        "import torch\n\n\n"
        "def f(x, n, dev):\n"
        "    pad = torch.full((n,), 0, device=x.device)\n"
        "    return pad.to(dev, non_blocking=True)\n"
    ),
    "strict_positional": ("import torch\n\n\ndef f(a, dst, flag):\n    dst.copy_(torch.from_numpy(a), flag)\n"),
    "aliased": (
        "from torch import cat as join, from_numpy as fnp\n\n\n"
        "def f(a, b, dev):\n"
        "    return join([fnp(a), b]).to(dev, non_blocking=True)\n"
    ),
}

#: Cases the analysis reports (so each checks that its shortcut keeps the file).
REPORTED = (
    "computed_cat",
    "computed_arith",
    "module_level",
    "in_lambda",
    "nested",
    "tabs",
    "backslash",
    "comment_before_true",
    "odd_strings",
    "decorated",
    "aliased",
    "module_values",
    "aliased_blocks",
    "device_of_a_cpu_tensor",
)


def _write(root: Path) -> None:
    for name, code in CASES.items():
        (root / f"case_{name}.py").write_text(code)


def test_cases_are_sound_and_reported(tmp_path: Path) -> None:
    _write(tmp_path)
    without = _check(tmp_path, False)
    assert _check(tmp_path, True) == without
    found = {Path(f[0]).name for f in without}
    missing = [n for n in REPORTED if f"case_{n}.py" not in found]
    assert not missing, missing


def test_sound_in_strict_mode(tmp_path: Path) -> None:
    _write(tmp_path)
    _corpus(tmp_path)
    assert _check(tmp_path, True, "--strict") == _check(tmp_path, False, "--strict")


def test_sound_in_deep_mode(tmp_path: Path) -> None:
    _write(tmp_path)
    _corpus(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.pinfix]\ndeep = true\n")
    assert _check(tmp_path, True) == _check(tmp_path, False)


def test_settings_change_what_passes() -> None:
    plain, deep, strict = Config(), Config(deep=True), Config(strict=True)
    # Deep: the source may be made elsewhere, so a sink alone lets the file through.
    text = b"def f(self, d):\n    return self.buf.to(d, non_blocking=True)\n\n\ndef g():\n    return 1\n"
    assert not may_contain_finding(text, plain) and may_contain_finding(text, deep)
    # So does a naming convention for CPU tensors.
    named = Config(cpu_tensor_names=("*_host",))
    text = b"def f(x_host, d):\n    return (x_host + 1).to(d, non_blocking=True)\n"
    assert not may_contain_finding(text, plain) and may_contain_finding(text, named)
    # A literal False is no sink... (the byte stage still passes it: `non_blocking` is spelt).
    # Strict: a non-literal positional flag.
    text = b"import torch\n\n\ndef f(a, dst, flag):\n    dst.copy_(torch.from_numpy(a), flag)\n"
    assert not may_contain_finding(text, plain) and may_contain_finding(text, strict)
    # A configured pinned producer is an origin spelling.
    producer = Config(extra_pinned_producers=("mylib.alloc.grab",))
    text = b"from mylib.alloc import grab\n\n\ndef f(d):\n    return grab(3)[::2].to(d, non_blocking=True)\n"
    assert may_contain_finding(text, producer) and not may_contain_finding(text, plain)


def test_positional_true_behind_a_comment_passes_the_byte_stage() -> None:
    text = b"import torch\n\n\ndef f(a, d, dt):\n    return torch.from_numpy(a).to(d, dt,  # why\n        True)\n"
    assert may_contain_finding(text)
    # `True` after something else than a comma is no positional flag.
    assert not may_contain_finding(text.replace(b"dt,  # why\n        True", b"dt=True"))
