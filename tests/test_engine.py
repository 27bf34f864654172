"""The engine (``pinfix.semantic``): flow-sensitive, table-driven, linear; what it
reports and why, on the shapes issue 13 lists and on every statement kind."""

import textwrap
import threading
from typing import List, Optional, Tuple

import pytest

from pinfix.api import check_text, fix_text
from pinfix.config import Config
from pinfix.semantic import SourceText, analyze_module
from pinfix.settings import Settings

H2D = Config().with_overrides(h2d_helper="vllm.utils.torch_utils.async_tensor_h2d")


def found(code: str, config: Optional[Config] = None) -> List[Tuple[int, str]]:
    return [(f.line, f.code) for f in check_text(textwrap.dedent(code), config=config)]


def messages(code: str, config: Optional[Config] = None) -> List[str]:
    return [f.message for f in check_text(textwrap.dedent(code), config=config)]


# --- ordinary local shapes (issue 13) ----------------------------------------------------------


def test_list_unpacked_then_grown_in_a_loop() -> None:
    code = """\
    import torch

    def f(n, dev):
        a, b, c = [], [], 0
        for i in range(n):
            a.append(torch.arange(i))
        return torch.cat(a).to(dev, non_blocking=True)
    """
    assert found(code) == [(7, "PIN002")]


def test_conversion_chain_before_the_copy() -> None:
    code = """\
    import torch

    def f(v, x, dev):
        return torch.tensor(v).to(x.dtype).to(dev, non_blocking=True)
    """
    (message,) = messages(code)
    assert "`.to()` makes a fresh pageable tensor on the way" in message or "fresh pageable" in message


def test_conditional_expression_names_the_path() -> None:
    code = """\
    import torch

    def f(gpu_t, c, v, dev):
        return (gpu_t if c else torch.tensor(v)).to(dev, non_blocking=True)
    """
    (message,) = messages(code)
    assert "when `c` is false" in message


def test_branch_names_the_path_that_blocks() -> None:
    code = """\
    import torch

    def f(a, n, dev):
        x = torch.from_numpy(a)
        if n > 2:
            x = x.pin_memory()
        return x.to(dev, non_blocking=True)
    """
    (message,) = messages(code)
    assert "when `n > 2` is false" in message


def test_device_paths_do_not_excuse_and_unknown_paths_do_not_hide() -> None:
    code = """\
    import torch

    def f(c, d, p, dev):
        if c:
            x = torch.zeros(4, device=dev)
        elif d:
            x = p
        else:
            x = torch.zeros(4)
        return x.to(dev, non_blocking=True)
    """
    assert found(code) == [(10, "PIN002")]


@pytest.mark.parametrize(
    "test",
    [
        "is_pin_memory_available()",
        "pin_memory",
        "use_pin_memory",
        "torch.cuda.is_available()",
        "PIN",
        "not not PIN",
        "pin_memory and is_pin_memory_available()",
    ],
)
def test_unpinned_only_where_pinned_memory_is_unavailable_counts_as_pinned(test: str) -> None:
    code = f"""\
    import torch
    from vllm.utils.platform_utils import is_pin_memory_available

    PIN = is_pin_memory_available()

    def f(self, a, dev, pin_memory=True, use_pin_memory: bool = True):
        t = torch.from_numpy(a)
        if {test}:
            t = t.pin_memory()
        return t.to(dev, non_blocking=True)
    """
    assert found(code) == []


@pytest.mark.parametrize(
    "test, seen",
    # Not availability tests by the stated rule: a flag pinfix cannot trace to an
    # availability source, a `pin_memory` parameter without the default `True`, a
    # name that merely contains "pin". Those whose value pinfix cannot see (an attribute
    # plain mode does not read, a call it cannot follow, a parameter without a default)
    # are read as availability flags unless `strict`; a parameter defaulting to False is seen.
    [("self.pin_memory", False), ("pin_memory", True), ("allowed(dev)", False), ("pinned_ok", False)],
)
def test_a_flag_not_derived_from_availability_is_no_availability_test(test: str, seen: bool) -> None:
    code = f"""\
    import torch

    def f(self, a, dev, pinned_ok, pin_memory=False):
        t = torch.from_numpy(a)
        if {test}:
            t = t.pin_memory()
        return t.to(dev, non_blocking=True)
    """
    strict = Config(strict=True)
    assert found(code, strict) == [(7, "PIN001")]
    assert f"when `{test}` is false" in messages(code, strict)[0]
    assert found(code) == ([(7, "PIN001")] if seen else [])


def test_negated_availability_test() -> None:
    code = """\
    import torch
    from vllm.utils.platform_utils import is_pin_memory_available

    def f(a, dev):
        t = torch.from_numpy(a)
        if not is_pin_memory_available():
            return t.to(dev)
        return t.pin_memory().to(dev, non_blocking=True)
    """
    assert found(code) == []


# --- what a test of the tensor itself says (narrowing) ------------------------------------------


@pytest.mark.parametrize(
    "guard",
    [
        # vLLM's async_tensor_h2d: the other path runs only where pinned memory is unavailable.
        "    if PIN_MEMORY and not t.is_pinned():\n        t = torch.empty(t.shape, pin_memory=True).copy_(t)\n",
        "    if is_pin_memory_available() and not t.is_pinned():\n        t = t.pin_memory()\n",
        "    if not t.is_pinned():\n        raise ValueError('pin it first')\n",
        "    if c or not t.is_pinned():\n        return None\n",
        "    assert t.is_pinned()\n",
        "    assert t.is_cuda\n",
        "    if t.is_cpu:\n        return t\n",
        "    if t.device.type == 'cpu':\n        return t\n",
        "    if 'cpu' == t.device.type:\n        return t\n",
        "    if t.device.type != 'cuda':\n        return t\n",
        "    if not t.is_xpu:\n        return t\n",
    ],
)
def test_a_test_of_the_tensor_itself_settles_its_memory(guard: str) -> None:
    code = (
        "import torch\nfrom vllm.utils.platform_utils import is_pin_memory_available\n\nPIN_MEMORY = True\n\n"
        "def f(a, c, dev):\n    t = torch.from_numpy(a)\n" + guard + "    return t.to(dev, non_blocking=True)\n"
    )
    assert found(code) == []


@pytest.mark.parametrize(
    "guard, why",
    [
        # What the tests do not settle: the path where they fail still copies pageable memory.
        ("    if t.is_pinned():\n        print('pinned')\n", "`t.is_pinned()` is false"),
        ("    if c and not t.is_pinned():\n        t = t.pin_memory()\n", "`c and not t.is_pinned()` is false"),
        ("    if t.is_cpu:\n        print('host')\n", None),
        ("    assert t.is_cpu\n", None),
        ("    if t.device.type == 'cuda':\n        return t\n", None),
    ],
)
def test_a_test_that_does_not_settle_the_memory_keeps_the_finding(guard: str, why: Optional[str]) -> None:
    code = (
        "import torch\n\ndef f(a, c, dev):\n    t = torch.from_numpy(a)\n"
        + guard
        + "    return t.to(dev, non_blocking=True)\n"
    )
    lines = code.count("\n")
    assert found(code) == [(lines, "PIN001")]
    if why is not None:
        assert why in messages(code)[0]


@pytest.mark.parametrize(
    "guard, expected",
    [
        # A test that names the CPU: what is computed from the tensor is fresh host memory.
        ("    assert t.is_cpu\n", [(6, "PIN002")]),
        ("    assert t.device.type == 'cpu'\n", [(6, "PIN002")]),
        ("    assert not (t.device.type != 'cpu')\n", [(6, "PIN002")]),
        ("    assert t.is_cpu and dev is not None\n", [(6, "PIN002")]),
        # One that only denies an accelerator (the tensor may be on another one, or `meta`).
        ("    assert not t.is_cuda\n", []),
        ("    assert t.device.type != 'cuda'\n", []),
        # A guard: only the way where the test holds goes on.
        ("    if t.device.type != 'cpu':\n        raise ValueError('on the CPU only')\n", [(7, "PIN002")]),
        ("    if not t.is_cpu:\n        return None\n", [(7, "PIN002")]),
        # A branch, after which both ways go on: code that runs on either device tests where a
        # tensor is, and the copy after it may be from the CPU to the CPU.
        ("    if t.is_cpu:\n        print('host')\n", []),
        ("    if t.device.type == 'cpu':\n        n = 1\n    else:\n        n = 2\n", []),
        # A test that does not say where the tensor is when it passes.
        ("    assert t.is_cpu or dev is None\n", []),
    ],
)
def test_a_test_naming_the_cpu_puts_an_unknown_tensor_there(guard: str, expected: List[Tuple[int, str]]) -> None:
    code = (
        "import torch\n\ndef f(t, dev):\n"
        + guard
        + "    y = (t > 0).nonzero()\n    return y.to(dev, non_blocking=True)\n"
    )
    assert found(code) == ([(code.count("\n"), "PIN002")] if expected else [])


def test_an_assert_outlives_a_later_branch_that_rebinds_the_tensor() -> None:
    # The assert's word holds on the way where the branch leaves `t` as it was.
    code = (
        "import torch\n\ndef f(t, c, dev):\n    assert t.is_cpu\n    if c:\n        t = t.cuda()\n"
        "    y = t.nonzero()\n    return y.to(dev, non_blocking=True)\n"
    )
    assert found(code) == [(8, "PIN002")]


def test_a_tensor_put_on_the_cpu_by_a_test_keeps_unknown_memory() -> None:
    # Its own memory is still not known: a copy of it is no finding (it may be pinned).
    assert found("import torch\n\ndef f(t, dev):\n    assert t.is_cpu\n    return t.to(dev, non_blocking=True)\n") == []
    branch = "import torch\n\ndef f(t, dev):\n    if t.device.type == 'cpu':\n        t = t.nonzero()\n    return t.to(dev, non_blocking=True)\n"
    assert found(branch) == [(6, "PIN002")]
    assert "when `t.device.type == 'cpu'` is true" in messages(branch)[0]


@pytest.mark.parametrize(
    "before, expected",
    [
        # The assert holds from the start: `device` read above it is the CPU.
        ("", True),
        ("    n = 3\n", True),
        ("    if dev is None:\n        raise ValueError(dev)\n", True),
        ("    def inner():\n        return m\n", True),
        # Not when the function may return before it, or rebinds the parameter first.
        ("    if dev is None:\n        return None\n", False),
        ("    m = m[1:]\n", False),
        ("    try:\n        pass\n    except ValueError as m:\n        pass\n", False),
        ("    from os import path as m\n", False),
        ("    def m():\n        pass\n", False),
        ("    for m in ms:\n        pass\n", False),
    ],
)
def test_an_assert_on_a_parameter_holds_from_the_function_start(before: str, expected: bool) -> None:
    code = (
        "import torch\n\ndef f(m, ms, dev):\n    device = m.device\n"
        + before
        + "    assert m.device.type == 'cpu'\n    out = torch.zeros(4, device=device)\n    return out.to(dev, non_blocking=True)\n"
    )
    assert found(code) == ([(code.count("\n"), "PIN002")] if expected else [])


def test_a_device_branch_of_a_tensor_made_on_the_host_is_no_host_copy() -> None:
    code = """\
    import torch

    def f(cu, dev):
        if not isinstance(cu, torch.Tensor):
            cu = torch.tensor(cu, dtype=torch.int32)
        if cu.is_cpu:
            cu = cu.pin_memory().to(dev, non_blocking=True)
        else:
            cu = cu.to(device=dev, non_blocking=True)
        return cu
    """
    assert found(code) == []


@pytest.mark.parametrize("check", ["", "    if not o.buf.is_pinned():\n        o.buf = o.buf.pin_memory()\n"])
def test_narrowing_an_attribute_path(check: str) -> None:
    code = (
        "import torch\n\ndef f(o, dev):\n    o.buf = torch.zeros(4)\n"
        + check
        + "    return o.buf.to(dev, non_blocking=True)\n"
    )
    assert found(code) == ([] if check else [(5, "PIN002")])


@pytest.mark.parametrize(
    "register", ["cudart.cudaHostRegister(ptr, n, 0)", "cupy.cuda.runtime.hostRegister(ptr, n, 0)", None]
)
def test_a_view_of_host_memory_the_module_page_locks_is_not_called_pageable(register: Optional[str]) -> None:
    code = (
        "import numpy as np\nimport torch\n\n"
        "def lock(cudart, cupy, ptr, n):\n    " + (register or "pass") + "\n\n"
        "def view(buf, dev):\n"
        "    t = torch.from_numpy(np.frombuffer(buf, dtype=np.uint8))\n"
        "    return t.to(dev, non_blocking=True)\n"
    )
    assert found(code) == ([] if register else [(9, "PIN001")])
    if register:
        (note,) = check_text(code, config=Config().with_overrides(show_unknown=True))
        assert note.code == "PIN004" and "page-locks host memory" in note.message
        # Memory the module makes itself is not what it registers.
        assert found(code + "\ndef fresh(dev):\n    return torch.zeros(4).to(dev, non_blocking=True)\n") == [
            (12, "PIN002")
        ]


# --- statements -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, line",
    [
        # try / except / finally: the handler starts from every state of the body
        (
            "    x = torch.zeros(2, pin_memory=True)\n    try:\n        x = torch.zeros(2)\n        g()\n    except ValueError:\n        pass\n    return x.to(d, non_blocking=True)\n",
            10,
        ),
        # with
        ("    with ctx() as c:\n        x = torch.ones(3)\n    return x.to(d, non_blocking=True)\n", 6),
        # walrus
        ("    if (x := torch.arange(3)) is not None:\n        return x.to(d, non_blocking=True)\n", 5),
        # augmented assignment: in place, the tensor keeps its memory
        ("    x = torch.zeros(3)\n    x += 1\n    return x.to(d, non_blocking=True)\n", 6),
        # tuple unpacking
        ("    x, y = torch.zeros(3), torch.zeros(3, pin_memory=True)\n    return x.to(d, non_blocking=True)\n", 5),
        # star unpacking
        ("    x, *rest = [torch.zeros(3), torch.ones(2)]\n    return rest[0].to(d, non_blocking=True)\n", 5),
        # del then rebinding
        (
            "    x = torch.zeros(3, pin_memory=True)\n    del x\n    x = torch.zeros(3)\n    return x.to(d, non_blocking=True)\n",
            7,
        ),
        # a dict with constant keys
        ("    batch = {'ids': torch.tensor([1, 2])}\n    return batch['ids'].to(d, non_blocking=True)\n", 5),
        # a dict filled by key
        (
            "    batch = {}\n    batch['ids'] = torch.tensor([1, 2])\n    return batch['ids'].to(d, non_blocking=True)\n",
            6,
        ),
        # a list comprehension
        ("    xs = [torch.zeros(i) for i in range(3)]\n    return torch.stack(xs).to(d, non_blocking=True)\n", 5),
        # while loop to a fixpoint: `y` is pageable from the second round on
        (
            "    y = torch.zeros(2, pin_memory=True)\n    while cond():\n        y.to(d, non_blocking=True)\n        y = y + 1\n",
            6,
        ),
        # a closure reads what the enclosing function binds
        ("    x = torch.zeros(3)\n    def inner():\n        return x.to(d, non_blocking=True)\n    return inner\n", 6),
        # a module-level name (bound once, never rebound with `global`)
        ("    return TABLE.to(d, non_blocking=True)\n", 4),
    ],
)
def test_statements(body: str, line: int) -> None:
    code = "import torch\nTABLE = torch.arange(4)\n\ndef f(d):\n" + body
    sink = next(i for i, text in enumerate(code.splitlines(), 1) if "non_blocking" in text)
    assert [ln for ln, _ in found(code)] == [sink], code


def test_match_statement() -> None:
    code = """\
    import torch

    def f(kind, d):
        match kind:
            case "pinned":
                x = torch.zeros(2, pin_memory=True)
            case _:
                x = torch.zeros(2)
        return x.to(d, non_blocking=True)
    """
    assert found(code) == [(9, "PIN002")]


def test_global_rebound_in_a_function_is_unknown() -> None:
    code = """\
    import torch
    BUF = torch.zeros(4)

    def reset():
        global BUF
        BUF = torch.zeros(4, pin_memory=True)

    def f(d):
        return BUF.to(d, non_blocking=True)
    """
    assert found(code) == []


# --- linear cost and no budget that can drop a finding ---------------------------------------------


def test_long_rebinding_chain_keeps_the_source() -> None:
    lines = ["import torch", "", "def f(d):", "    x = torch.zeros(4)"]
    lines += ["    x = x * x + x"] * 64
    lines += ["    return x.to(d, non_blocking=True)"]
    assert found("\n".join(lines) + "\n") == [(len(lines), "PIN002")]


def test_straight_chain_of_views_keeps_the_source_and_its_fix() -> None:
    lines = ["import torch", "", "def f(d):", "    x = torch.zeros(4, 4)"]
    lines += ["    x = x.view(-1)", "    x = x.reshape(4, 4)"] * 100
    lines += ["    return x.to(d, non_blocking=True)"]
    (finding,) = check_text("\n".join(lines) + "\n")
    assert finding.code == "PIN002" and "torch.zeros" in finding.message


def test_forty_nested_branches() -> None:
    lines = ["import torch", "", "def f(x, c, d):", "    x = x.cpu()"]
    for depth in range(40):
        lines.append("    " * (depth + 1) + f"if c > {depth}:")
        lines.append("    " * (depth + 2) + "x = x + 1")
    lines.append("    return x.to(d, non_blocking=True)")
    assert found("\n".join(lines) + "\n") == [(len(lines), "PIN002")]


def test_ten_thousand_line_function() -> None:
    lines = ["import torch", "", "def f(d, n):", "    x = torch.zeros(4)"]
    for i in range(10000):
        lines.append(f"    v{i} = n + {i}" if i % 7 else f"    if n > {i}:\n        x = x + v{i - 1}")
    lines.append("    return x.to(d, non_blocking=True)")
    text = "\n".join(lines) + "\n"
    (finding,) = check_text(text)
    assert finding.code == "PIN002"


def test_a_loop_whose_test_forgets_what_its_body_stores_ends() -> None:
    # The `while` test's method call forgets `self.failed` (an access path), the body
    # stores it again: the loop's head changed every round, for ever, before rounds
    # were capped past widening.
    code = """\
    import threading
    import torch

    class Manager:
        def monitor(self, waiting, a, d):
            while waiting and not self.stopped.is_set():
                died = threading.wait(waiting)
                for s in died:
                    proc = waiting.pop(s)
                    if proc.code != 0 and not self.stopped.is_set():
                        self.failed = proc.name
                if died:
                    break
            return torch.from_numpy(a).to(d, non_blocking=True)
    """
    result: List[List[Tuple[int, str]]] = []
    worker = threading.Thread(target=lambda: result.append(found(code)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the loop's fixpoint never ended"
    assert result == [[(14, "PIN001")]]


def test_nested_loops_stay_within_budget() -> None:
    """Loops nested deep: each runs to a fixpoint while the budget lasts, then once."""
    lines = ["import torch", "", "def f(d, xs):", "    acc = torch.zeros(2)"]
    for depth in range(18):
        lines.append("    " * (depth + 1) + f"for i{depth} in xs:")
    lines.append("    " * 19 + "acc = acc + 1")
    lines.append("    return acc.to(d, non_blocking=True)")
    assert found("\n".join(lines) + "\n") == [(len(lines), "PIN002")]


# --- determinism ----------------------------------------------------------------------------------


def test_other_use_is_the_first_one_written() -> None:
    code = """\
    import torch

    def f(dst, a):
        x = torch.from_numpy(a)
        dst.copy_(x, non_blocking=True)
        print(x)
        print(x)
        print(x)
        print(x)
    """
    for _ in range(5):
        (message,) = messages(code)
        assert "`x` is also used at line 6" in message


@pytest.mark.parametrize(
    "body, line",
    [
        # A rebinding on one branch only: the other path still reads the CPU tensor.
        ("x = torch.arange(n)\n    y = x.to(dev, non_blocking=True)\n    if n:\n        x = y\n    return x\n", 8),
        # Read before the binding in the loop around both: the previous round's tensor.
        (
            "for k in range(n):\n        if k:\n            print(x)\n        x = torch.arange(k)\n"
            "        y = x.to(dev, non_blocking=True)\n",
            6,
        ),
    ],
)
def test_uses_the_binding_may_reach_keep_the_fix_unsafe(body: str, line: int) -> None:
    code = "import torch\n\ndef f(n, dev):\n    " + body
    (finding,) = check_text(code, config=H2D)
    assert finding.fix_safety == "unsafe" and f"`x` is also used at line {line}" in finding.message


@pytest.mark.parametrize("deep", [False, True])
def test_name_imported_under_global_in_a_function_resolves(deep: bool) -> None:
    code = """\
    import torch

    def load():
        global as_host
        from torch import from_numpy as as_host

    def f(arr, dev):
        return as_host(arr).to(dev, non_blocking=True)
    """
    assert found(code, Config().with_overrides(deep=deep)) == [(8, "PIN001")]


@pytest.mark.parametrize(
    "other",
    ["as_host = None\n", "def other():\n    global as_host\n    from numpy import asarray as as_host\n"],
)
def test_name_bound_differently_under_global_stays_unknown(other: str) -> None:
    code = (
        "import torch\n\n"
        + other
        + "\ndef load():\n    global as_host\n    from torch import from_numpy as as_host\n\n"
        "def f(arr, dev):\n    return as_host(arr).to(dev, non_blocking=True)\n"
    )
    assert [f.code for f in check_text(code, config=Config().with_overrides(show_unknown=True))] == ["PIN004"]


@pytest.mark.parametrize(
    "read, column",
    [("print(out)", 11), ("return int(out)", 16), ("return out.tolist()", 12), ("if out[0] > 0:\n        pass", 8)],
)
def test_host_read_is_reported_at_the_name_read(read: str, column: int) -> None:
    code = "import torch\n\ndef f(t):\n    out = t.to(torch.device('cpu'), non_blocking=True)\n    " + read + "\n"
    assert [(f.code, f.line, f.column) for f in check_text(code)] == [("PIN003", 5, column)]


SHOW_UNKNOWN = Config().with_overrides(show_unknown=True)


def test_contiguous_of_a_gapped_view_is_a_fresh_tensor_quoted_once() -> None:
    code = """\
    import torch

    def f(k, dev):
        return torch.ones(3, k, pin_memory=True)[:, :1].contiguous().to(dev, non_blocking=True)
    """
    (message,) = messages(code)
    assert "``" not in message
    assert "`.contiguous()` (line 4) is a fresh pageable CPU tensor" in message


def test_unknown_note_gives_the_root_reason_once_and_the_chain_as_evidence() -> None:
    code = """\
    import torch

    def f(vals, dev):
        a = build(vals)
        b = torch.repeat_interleave(a, 2)
        c = torch.argsort(b)
        return c.to(dev, non_blocking=True)
    """
    (note,) = check_text(textwrap.dedent(code), config=SHOW_UNKNOWN)
    assert note.message.count("cannot see what") == 1 and "what `build()` returns" in note.message
    assert [e.line for e in note.evidence] == [4, 5, 6, 7]
    assert "torch.repeat_interleave" in note.evidence[1].message and "torch.argsort" in note.evidence[2].message


def test_unknown_note_names_the_parameter_an_item_comes_from() -> None:
    code = """\
    import torch

    def f(chunks: list[torch.Tensor], dev):
        return chunks[0].to(dev, non_blocking=True)
    """
    (note,) = check_text(textwrap.dedent(code), config=SHOW_UNKNOWN)
    assert "(`chunks[0]` is an item of the parameter `chunks`)" in note.message


def test_several_origins_are_each_named_with_their_lines_and_remedies() -> None:
    code = """\
    import torch

    def f(a, n, dev):
        x = torch.from_numpy(a)
        if n:
            x = torch.cat((x, torch.zeros(n)))
        return x.to(dev, non_blocking=True)
    """
    (message,) = messages(code)
    assert (
        "`x` holds pageable memory from 2 origins: `torch.from_numpy(...)` (line 4), `torch.cat(...)` (line 6)"
        in message
    )
    assert "for `torch.from_numpy(...)` (line 4), make the source pinned with `np_to_pinned_tensor(...)`" in message
    assert "for `torch.cat(...)` (line 6), stage it through a persistent pinned buffer" in message


def test_several_factories_share_one_remedy_and_one_fix() -> None:
    code = """\
    import torch

    def f(ids, n, dev):
        x = torch.tensor(ids)
        if n:
            x = torch.zeros(n)
        return x.to(dev, non_blocking=True)
    """
    (finding,) = check_text(textwrap.dedent(code))
    assert "2 origins: `torch.tensor(...)` (line 4), `torch.zeros(...)` (line 6)" in finding.message
    assert finding.message.count("allocate it pinned") == 1
    fixed = fix_text(textwrap.dedent(code), unsafe_fixes=True)
    assert "torch.tensor(ids, pin_memory=True)" in fixed and "torch.zeros(n, pin_memory=True)" in fixed


# --- issue 14 items that live in the analysis ----------------------------------------------------


def test_loop_rebinding_gets_no_h2d_helper_fix() -> None:
    code = """\
    import torch

    def f(xs, dev):
        acc = torch.tensor([0.0])
        for s in xs:
            acc = acc.to(dev, non_blocking=True) + s
        return acc
    """
    (finding,) = check_text(textwrap.dedent(code), config=H2D)
    assert finding.fix_safety != "safe" or "async_tensor_h2d" not in fix_text(textwrap.dedent(code), config=H2D)


@pytest.mark.parametrize(
    "target",
    ["w.dtype", "dt", "self.model_dtype", "torch.float16", "dtype"],
)
def test_dtype_conversions_are_no_copies(target: str) -> None:
    code = f"""\
    import torch

    def f(self, w, a, dtype):
        dt = torch.float16
        return torch.from_numpy(a).to({target}, non_blocking=True)
    """
    assert found(code) == []


def test_device_then_positional_true_is_no_copy() -> None:
    # `x.to(dev, True)`: torch rejects it (True is no dtype), so it is no non_blocking copy.
    code = """\
    import torch

    def f(a, dev):
        return torch.from_numpy(a).to(dev, True)
    """
    assert found(code) == []


@pytest.mark.parametrize(
    "taken",
    [
        "    match a:\n        case np_to_pinned_tensor:\n            pass\n",
        "    \uff4ep_to_pinned_tensor = 1\n",  # NFKC-equal to the helper's name
    ],
)
def test_helper_name_taken_gets_no_fix(taken: str) -> None:
    code = "import torch\n\n\ndef f(dst, a):\n" + taken + "    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
    (finding,) = check_text(code)
    assert finding.fix_safety is None and "already bound" in (finding.fix_note or "")
    assert fix_text(code) == code


# --- one join ---------------------------------------------------------------------------------------


def test_attribute_stored_in_two_methods_gets_both_origins(tmp_path) -> None:
    from tests.test_deep import deep, project

    pkg = project(
        tmp_path,
        {
            "main.py": "import torch\n\n\nclass A:\n    def __init__(self, n):\n        self.buf = torch.zeros(n)\n\n"
            "    def reset(self, m):\n        self.buf = torch.ones(m)\n\n"
            "    def go(self, dev):\n        return self.buf.to(dev, non_blocking=True)\n",
        },
    )
    (finding,) = deep([pkg / "main.py"])
    assert finding["line"] == 12


def test_tokenizer_batches_are_pageable() -> None:
    code = """\
    import torch

    def f(self, text):
        enc = self.tokenizer(text, return_tensors="pt")
        ids = enc["input_ids"].to(self.device, non_blocking=True)
        mask = enc.attention_mask.to(self.device, non_blocking=True)
        return ids, mask
    """
    assert found(code) == [(5, "PIN002"), (6, "PIN002")]


def test_facts_answer_what_memory_an_expression_holds() -> None:
    text = "import torch\n\ndef f(d, a):\n    x = torch.from_numpy(a)\n    return x[:2].to(d, non_blocking=True)\n"
    src = SourceText(text, "m.py")
    facts = analyze_module(src, src.parse(), Settings())
    (copy,) = facts.copies
    (tensor,) = copy.source.tensors
    assert (tensor.device, tensor.memory, tensor.layout) == ("cpu", "pageable", "dense")
    assert tensor.origin is not None and tensor.origin.qualified == "torch.from_numpy"
    assert [s.kind for s in __import__("pinfix.semantic.values", fromlist=["steps"]).steps(tensor.route)] == [
        "made",
        "bound",
    ]


# --- default_collate --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "items, read, expected",
    [
        # Host items: the batch is fresh pageable memory, shaped as an item is.
        ("[{'x': torch.zeros(3), 'n': 1} for _ in range(n)]", "['x']", "PIN002"),
        ("[np.zeros(3) for _ in range(n)]", "", "PIN002"),
        ("[(torch.tensor([1]), 2.0), (torch.tensor([2]), 3.0)]", "[0]", "PIN002"),
        # Pinned items are stacked into fresh (pageable) memory all the same.
        ("[torch.zeros(3, pin_memory=True) for _ in range(n)]", "", "PIN002"),
        # Items on a device, or that pinfix cannot follow: unknown, no finding.
        ("[torch.zeros(3, device=dev) for _ in range(n)]", "", None),
        ("list(n)", "", None),
    ],
)
def test_default_collate_of_host_items_is_pageable(items: str, read: str, expected: Optional[str]) -> None:
    code = (
        "import numpy as np\nimport torch\nfrom torch.utils.data import default_collate\n\n"
        f"def f(n, dev):\n    batch = default_collate({items})\n    return batch{read}.to(dev, non_blocking=True)\n"
    )
    assert found(code) == ([(7, expected)] if expected else [])


def test_a_value_past_the_bound_merges_paths_and_offers_no_partial_fix() -> None:
    """Thirteen pageable factories on thirteen paths: past the atoms a value keeps apart
    they merge into one, which is still reported; a fix at the one origin it names
    would leave the other twelve pageable, so none is offered (and the text is unchanged)."""
    arms = "".join(f"    {'if' if i == 0 else 'elif'} k == {i}:\n        x = torch.zeros({i + 1})\n" for i in range(12))
    code = (
        "import torch\n\n\ndef f(k, n, dev):\n"
        + arms
        + "    else:\n        x = torch.zeros(n)\n    return x.to(dev, non_blocking=True)\n"
    )
    (finding,) = check_text(code)
    assert finding.code == "PIN002" and finding.fix_safety is None
    assert "more paths than pinfix keeps apart" in (finding.fix_note or "")
    assert fix_text(code, unsafe_fixes=True) == code


def test_a_container_past_the_bound_keeps_every_element() -> None:
    """Lists from fourteen sites merge into one list holding all their elements: the
    pageable tensor in the last one still reaches the copy."""
    arms = "".join(
        f"    {'if' if i == 0 else 'elif'} k == {i}:\n        xs = [torch.zeros({i + 1}, pin_memory=True)]\n"
        for i in range(13)
    )
    code = (
        "import torch\n\n\ndef f(k, n, dev):\n"
        + arms
        + "    else:\n        xs = [torch.zeros(n)]\n    return xs[0].to(dev, non_blocking=True)\n"
    )
    assert [f.code for f in check_text(code)] == ["PIN002"]


def test_pin003_reports_each_copy_once_at_its_first_read() -> None:
    """Reads on two branches, through an alias and directly: one finding, at the first
    read in the file, naming the copy and the read."""
    code = (
        "import torch\n\n\ndef f(t, c):\n    y = t.to('cpu', non_blocking=True)\n    z = y\n"
        "    if c:\n        return z.tolist()\n    print(y)\n    return int(y[0])\n"
    )
    found = [f for f in check_text(code) if f.code == "PIN003"]
    assert [(f.line, f.column) for f in found] == [(8, 16)]
    assert "(line 5)" in found[0].message and "`z.tolist()`" in found[0].message


def test_pin003_a_view_is_read_when_the_view_is() -> None:
    """Slicing the destination reads nothing; reading the slice is the read, reported there once."""
    code = (
        "import torch\n\n\ndef f(t, n):\n    buf = torch.empty(n, 4)\n    buf[:2].copy_(t, True)\n"
        "    row = buf[0]\n    return int(row[0])\n"
    )
    found = [f for f in check_text(code) if f.code == "PIN003"]
    assert [f.line for f in found] == [8]
    assert "`buf[:2].copy_(t, True)`" in found[0].message and "`int(row[0])`" in found[0].message


def test_nested_tests_cost_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each `and`/`or` part narrows the next by a bounded amount of work: a test nested
    twice as deep takes about twice the forks, not the square or the power (the time
    curve itself is in benchmarks/stress_engine.py)."""
    from pinfix.semantic.state import State

    forks = [0]
    original = State.fork

    def counted(self: State) -> State:
        forks[0] += 1
        return original(self)

    monkeypatch.setattr(State, "fork", counted)

    def cost(depth: int) -> int:
        test = "x.is_pinned()"
        for i in range(depth):
            test = f"(c or ({test} and d))" if i % 2 else f"(not ({test}) or c)"
        forks[0] = 0
        found(
            f"import torch\n\ndef f(n, dev, c, d):\n    x = torch.arange(n)\n    return x.to(dev, non_blocking=True) if {test} else None\n"
        )
        return forks[0]

    small, large = cost(8), cost(16)
    assert large < 3 * small, (small, large)


def test_one_question_says_whether_a_node_binds_a_name() -> None:
    """``pinfix.semantic.scope.binds`` answers for every way Python binds a name (the
    fixes ask it through ``other_binding``; the flow analysis through its rebinding test)."""
    import ast as std_ast

    from pinfix.semantic.scope import binds

    code = (
        "import a.b\nfrom m import *\nfrom m import c as d\nx = 1\ndel y\n"
        "def f(p, *q, r=1, **s):\n    pass\nclass K:\n    pass\n"
        "try:\n    pass\nexcept E as e:\n    pass\n"
        "match v:\n    case [u, *w]:\n        pass\n    case {**z}:\n        pass\n"
    )
    every = list(std_ast.walk(std_ast.parse(code)))
    nodes = [n for n in every if not (isinstance(n, std_ast.alias) and n.name == "*")]
    for name in ("a", "d", "x", "y", "f", "p", "q", "r", "s", "K", "e", "u", "w", "z"):
        assert any(binds(n, name) for n in nodes), name
    assert not any(binds(n, "v") or binds(n, "b") or binds(n, "c") for n in nodes)  # read, or not the bound name
    assert any(binds(n, "anything") for n in every)  # `from m import *` may bind any name


def test_the_innermost_function_at_a_node() -> None:
    from pinfix.semantic import SourceText
    from pinfix.semantic.scope import ModuleInfo

    text = "def outer():\n    def inner():\n        return g(1)\n    return h(2)\n\nclass C:\n    k = j(3)\n"
    src = SourceText.from_bytes(text.encode(), "m.py")
    module = ModuleInfo(src, src.parse(), None)
    calls = {n.func.id: n for n in __import__("ast").walk(module.tree) if type(n).__name__ == "Call"}
    assert module.function_at(calls["g"]).name == "inner"
    assert module.function_at(calls["h"]).name == "outer"
    assert module.function_at(calls["j"]).is_module  # a class body is not a function


@pytest.mark.parametrize(
    "text, names",
    [
        ("def f():\n    global x\n    x = 1\n", {"x"}),
        ("def f(): global x; x = 1\n", {"x"}),
        ("def f():\n    y = 1; global x\n", {"x"}),
        ("def f(c):\n    if c: global x\n", {"x"}),
        ("class C:\n    def m(self):\n        global a, b\n", {"a", "b"}),
        # Words, names and comments that say it are no statement: no function is scanned.
        ("global_rank = 1\n\n\ndef f():\n    # global x\n    return global_rank  # globally\n", set()),
    ],
)
def test_the_names_functions_declare_global_whatever_the_spelling(text: str, names: set) -> None:
    from pinfix.semantic import SourceText
    from pinfix.semantic.scope import ModuleInfo

    src = SourceText.from_bytes(text.encode(), "m.py")
    module = ModuleInfo(src, src.parse(), None)
    assert module.rebound_globals == names
    assert module.says_global is bool(names)


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_only_the_functions_holding_a_global_statement_are_scanned_for_it(end: str) -> None:
    """A module that says `global` once had every function of it scanned to find which
    declare names global; now only those whose lines hold the statement (lines as CPython
    counts them, whatever the line ends)."""
    from pinfix.semantic import SourceText
    from pinfix.semantic.scope import ModuleInfo

    text = end.join(
        [
            "def a():",
            "    return 1",
            "",
            "def b():",
            "    def inner():",
            "        global x",
            "    return 2",
            "",
            "def c():",
        ]
        + ["    return 3", "", "class K:", "    def m(self):", "        global y; y = 1", ""]
    )
    src = SourceText.from_bytes(text.encode(), "m.py")
    module = ModuleInfo(src, src.parse(), None)
    assert module.rebound_globals == {"x", "y"}
    scanned = {f.qualname for f in module.functions.values() if f._locals is not None}
    assert scanned == {"b", "b.<locals>.inner", "K.m"}, scanned


@pytest.mark.parametrize(
    "call",
    ["pickle.load(f)", "pickle.loads(blob)", "cloudpickle.loads(blob)", "torch.load(f)"],
)
def test_unpickled_tensors_go_back_to_the_device_they_were_saved_from(call: str) -> None:
    """An unpickled tensor (pickle, cloudpickle, torch.load without map_location) is restored on the
    device it was pickled from, a CUDA one on the device: pinfix never calls it pageable, and says why."""
    code = f"import pickle\n\nimport cloudpickle\nimport torch\n\n\ndef f(f, blob, dev):\n    return {call}['w'].to(dev, non_blocking=True)\n"
    assert check_text(code) == []
    (note,) = check_text(code, config=SHOW_UNKNOWN)
    assert note.code == "PIN004" and "back on the device it was saved from" in note.message
