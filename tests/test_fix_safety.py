"""Fixes called safe must not change behaviour (issue 25, items 4-9): each case is a
program whose meaning a "safe" fix would change; the fix must be unsafe (with the
reason) or absent, and the cases next to them that are plainly the same stay safe."""

from pathlib import Path

import pytest

from pinfix.api import check_text, fix_text
from pinfix.config import Config

H = "import numpy as np\nimport torch\n\n\n"


def _config(**overrides: object) -> Config:
    return Config(root=Path.cwd()).with_overrides(**overrides)


def _only(source: str, **overrides: object):  # type: ignore[no-untyped-def]
    (finding,) = [f for f in check_text(source, config=_config(**overrides)) if f.code in ("PIN001", "PIN002")]
    return finding


# --- item 4: the array may change through another reference between the binding and the copy ----

CHANGED_ELSEWHERE = {
    # An alias made before the binding, written after it.
    "alias": (
        "def f(dst, a):\n    b = a\n    src = torch.from_numpy(a)\n    b[0] = 1\n    dst.copy_(src, non_blocking=True)\n",
        "`b` is used at line 8",
    ),
    "alias_augmented": (
        "def f(dst, a):\n    b = a\n    src = torch.from_numpy(a)\n    b += 1\n    dst.copy_(src, non_blocking=True)\n",
        "`b += ...` at line 8",
    ),
    "slice_view": (
        "def f(dst, a):\n    v = a[1:]\n    src = torch.from_numpy(a)\n    v[0] = 1\n    dst.copy_(src, non_blocking=True)\n",
        "`v` is used at line 8",
    ),
    "method_view": (
        "def f(dst, a):\n    v = a.view()\n    src = torch.from_numpy(a)\n    v.fill(0)\n    dst.copy_(src, non_blocking=True)\n",
        "`v` is used at line 8",
    ),
    "transpose": (
        "def f(dst, a):\n    v = a.T\n    src = torch.from_numpy(a)\n    v[0] = 1\n    dst.copy_(src, non_blocking=True)\n",
        "`v` is used at line 8",
    ),
    "np_asarray": (
        "def f(dst, a):\n    v = np.asarray(a)\n    src = torch.from_numpy(a)\n    v[0] = 1\n    dst.copy_(src, non_blocking=True)\n",
        "`v` is used at line 8",
    ),
    "list_holding_it": (
        "def f(dst, a):\n    lst = [a]\n    src = torch.from_numpy(a)\n    lst[0][0] = 1\n    dst.copy_(src, non_blocking=True)\n",
        "`lst` is used at line 8",
    ),
    "appended_to_a_list": (
        "def f(dst, a):\n    lst = []\n    lst.append(a)\n    src = torch.from_numpy(a)\n    lst[0][0] = 1\n    dst.copy_(src, non_blocking=True)\n",
        "`lst` is used at line 9",
    ),
    "second_tensor": (
        "def f(dst, a):\n    t = torch.as_tensor(a)\n    src = torch.from_numpy(a)\n    t.add_(1)\n    dst.copy_(src, non_blocking=True)\n",
        "`t` is used at line 8",
    ),
    "second_from_numpy": (
        "def f(dst, a):\n    t = torch.from_numpy(a)\n    src = torch.from_numpy(a)\n    t.zero_()\n    dst.copy_(src, non_blocking=True)\n",
        "`t` is used at line 8",
    ),
    "closure": (
        "def f(dst, a):\n    def g():\n        a[0] = 1\n    src = torch.from_numpy(a)\n    g()\n    dst.copy_(src, non_blocking=True)\n",
        "the call of `g` at line 9",
    ),
    "lambda": (
        "def f(dst, a):\n    g = lambda: a.fill(0)\n    src = torch.from_numpy(a)\n    g()\n    dst.copy_(src, non_blocking=True)\n",
        "the call of `g` at line 8",
    ),
    "call_receiving_an_alias": (
        "def f(dst, a, g):\n    b = a\n    src = torch.from_numpy(a)\n    g(b)\n    dst.copy_(src, non_blocking=True)\n",
        "line 8",
    ),
    "call_receiving_a_container": (
        "def f(dst, a, g):\n    box = {'x': a}\n    src = torch.from_numpy(a)\n    g(box)\n    dst.copy_(src, non_blocking=True)\n",
        "line 8",
    ),
    # A parameter: the caller holds it, so any call pinfix cannot see into may write it.
    "opaque_call_on_a_parameter": (
        "def f(dst, a, g):\n    src = torch.from_numpy(a)\n    g()\n    dst.copy_(src, non_blocking=True)\n",
        "the call at line 7",
    ),
    "stored_on_self_then_method": (
        "class C:\n    def f(self, dst):\n        a = np.zeros(3)\n        self.a = a\n        src = torch.from_numpy(a)\n        self.g()\n        dst.copy_(src, non_blocking=True)\n",
        "line 10",
    ),
    "yield": (
        "def f(dst, a):\n    src = torch.from_numpy(a)\n    yield\n    dst.copy_(src, non_blocking=True)\n",
        "the `yield` at line 7",
    ),
    "await": (
        "async def f(dst, a, g):\n    src = torch.from_numpy(a)\n    await g\n    dst.copy_(src, non_blocking=True)\n",
        "the `await` at line 7",
    ),
    "exec": (
        "def f(dst):\n    a = np.zeros(3)\n    src = torch.from_numpy(a)\n    exec('a[0] = 1')\n    dst.copy_(src, non_blocking=True)\n",
        "`exec(...)` at line 8",
    ),
    "for_loop_variable": (
        "def f(dst, arrays):\n    a = arrays[0]\n    src = torch.from_numpy(a)\n    for x in arrays:\n        x += 1\n    dst.copy_(src, non_blocking=True)\n",
        "line 8",
    ),
}


@pytest.mark.parametrize("name", sorted(CHANGED_ELSEWHERE))
def test_a_write_through_another_reference_makes_the_bound_fix_unsafe(name: str) -> None:
    body, why = CHANGED_ELSEWHERE[name]
    finding = _only(H + body)
    assert finding.fix_safety == "unsafe", finding.fix_note
    assert why in (finding.fix_note or ""), finding.fix_note
    assert "np_to_pinned_tensor" not in fix_text(H + body, config=_config())


SAME_EITHER_WAY = {
    "nothing_between": "def f(dst, a):\n    src = torch.from_numpy(a)\n    dst.copy_(src, non_blocking=True)\n",
    # A local array nothing else can see: a call that does not receive it cannot write it.
    "local_array_and_an_unrelated_call": (
        "def f(dst, g):\n    a = np.zeros(3)\n    src = torch.from_numpy(a)\n    g()\n    dst.copy_(src, non_blocking=True)\n"
    ),
    # Metadata and fresh data read from the array change nothing.
    "metadata_reads": (
        "def f(dst, a):\n    src = torch.from_numpy(a)\n    n = a.shape[0] + len(a)\n    dst[:n].copy_(src, non_blocking=True)\n"
    ),
    # Dropping a name leaves the memory as it is.
    "del": "def f(dst):\n    a = np.zeros(3)\n    src = torch.from_numpy(a)\n    del a\n    dst.copy_(src, non_blocking=True)\n",
    "library_calls_between": (
        "def f(dst, a, b):\n    src = torch.from_numpy(a)\n    n = torch.cat([b, b]).sum()\n    dst[:n].copy_(src, non_blocking=True)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(SAME_EITHER_WAY))
def test_the_bound_fix_stays_safe_when_nothing_can_write_the_array(name: str) -> None:
    finding = _only(H + SAME_EITHER_WAY[name])
    assert finding.fix_safety == "safe", finding.fix_note


def test_many_copies_in_one_function_ask_one_walk() -> None:
    """The may-alias question walks a function once, whatever is asked of it."""
    from pinfix.semantic import aliasing

    walks = []
    real = aliasing.MemoryWrites.walk

    def counted(self):  # type: ignore[no-untyped-def]
        walks.append(self.func)
        return real(self)

    body = "".join(f"    s{i} = torch.from_numpy(a{i})\n    d.copy_(s{i}, non_blocking=True)\n" for i in range(30))
    source = H + "def f(d, " + ", ".join(f"a{i}" for i in range(30)) + "):\n" + body
    aliasing.MemoryWrites.walk = counted  # type: ignore[method-assign]
    try:
        found = check_text(source, config=_config())
    finally:
        aliasing.MemoryWrites.walk = real  # type: ignore[method-assign]
    assert len(found) == 30
    assert len(walks) == 1


# --- item 5: a walrus-bound source whose name is used later ---------------------------------------------


def test_a_walrus_bound_source_used_later_is_not_fixed_safely() -> None:
    source = (
        H
        + "def f(dst, a):\n    dst.copy_((t := torch.from_numpy(a)), non_blocking=True)\n    a[0] = 1\n    return t.sum()\n"
    )
    finding = _only(source)
    assert finding.fix_safety == "unsafe"
    assert "`t` is also used at line 8" in (finding.fix_note or "")
    assert fix_text(source, config=_config()) == source


@pytest.mark.parametrize(
    "tail",
    ["", "    t = None\n    return t\n"],
    ids=["never-used", "rebound-before-use"],
)
def test_a_walrus_bound_source_not_used_later_keeps_its_safe_fix(tail: str) -> None:
    source = H + "def f(dst, a):\n    dst.copy_((t := torch.from_numpy(a)), non_blocking=True)\n" + tail
    assert _only(source).fix_safety == "safe"
    assert "(t := np_to_pinned_tensor(a))" in fix_text(source, config=_config())


# --- item 6: `.to(dev)` returns its receiver itself when `dev` is the CPU --------------------------------

H2D = {"h2d_helper": "vllm.utils.torch_utils.async_tensor_h2d"}


@pytest.mark.parametrize("settings", [{}, H2D], ids=["helper", "h2d-helper"])
@pytest.mark.parametrize(
    "sink",
    [
        "torch.from_numpy(a).to(dev, non_blocking=True)",
        "torch.from_numpy(a).to(device=dev, dtype=torch.int64, non_blocking=True)",
    ],
)
def test_to_a_device_that_may_be_the_cpu_is_an_unsafe_fix(sink: str, settings: dict) -> None:
    source = H + f"def f(a, dev):\n    return {sink}\n"
    finding = _only(source, **settings)
    assert finding.fix_safety == "unsafe", finding.fix_note
    assert "`dev` may be the CPU" in (finding.fix_note or "")
    assert fix_text(source, config=_config(**settings)) == source


def test_bound_then_to_a_device_that_may_be_the_cpu_is_unsafe() -> None:
    source = H + "def f(a, dev):\n    src = torch.from_numpy(a)\n    return src.to(dev, non_blocking=True)\n"
    assert "may be the CPU" in (_only(source).fix_note or "")


@pytest.mark.parametrize(
    "sink",
    [
        "torch.from_numpy(a).to('cuda', non_blocking=True)",
        "torch.from_numpy(a).to(torch.device('cuda', 0), non_blocking=True)",
        "torch.from_numpy(a).to(0, non_blocking=True)",
        "torch.from_numpy(a).cuda(non_blocking=True)",
        "torch.from_numpy(a).to(dev, copy=True, non_blocking=True)",
    ],
)
def test_a_device_the_engine_knows_is_an_accelerator_keeps_the_safe_fix(sink: str) -> None:
    source = H + f"def f(a, dev):\n    return {sink}\n"
    assert _only(source).fix_safety == "safe"
    assert "np_to_pinned_tensor(a)" in fix_text(source, config=_config())


# --- item 8: the inserted name rebound by `global` in another function -----------------------------------

REBINDS = "\n\ndef elsewhere():\n    global {name}\n    {name} = print\n"


@pytest.mark.parametrize(
    "body, name, settings",
    [
        ("def f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n", "np_to_pinned_tensor", {}),
        (
            "def f(a):\n    return torch.from_numpy(a).to('cuda', non_blocking=True)\n",
            "async_tensor_h2d",
            {**H2D, "helper": "m.np_to_pinned_tensor"},
        ),
        (
            "def f(n, dev):\n    return torch.zeros(n).to(dev, non_blocking=True)\n",
            "is_pin_memory_available",
            {
                "pin_memory_expr": "is_pin_memory_available()",
                "pin_memory_import": "vllm.utils.platform_utils.is_pin_memory_available",
            },
        ),
    ],
    ids=["helper", "h2d-helper", "pin-memory-import"],
)
def test_a_name_another_function_rebinds_globally_is_not_inserted(body: str, name: str, settings: dict) -> None:
    source = H + body + REBINDS.format(name=name)
    finding = _only(source, **settings)
    if name != "async_tensor_h2d":  # (that one falls back to the np_to_pinned_tensor fix)
        assert finding.fix_safety is None
        assert f"`{name}` is already bound to something else here (line 11)" in (finding.fix_note or "")
    fixed = fix_text(source, config=_config(**settings), unsafe_fixes=True)
    assert f"{name}(" not in fixed and f"import {name}" not in fixed


def test_a_global_declaration_that_only_reads_the_name_keeps_the_fix() -> None:
    source = (
        H
        + "def f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n\n\ndef g():\n    global np_to_pinned_tensor\n    return np_to_pinned_tensor\n"
    )
    assert _only(source).fix_safety == "safe"


# --- item 7: pin_memory= on a factory torch cannot pin ------------------------------------------------


@pytest.mark.parametrize("layout", ["torch.sparse_coo", "torch.sparse_csr", "lay"])
@pytest.mark.parametrize(
    "factory", ["torch.zeros(3, layout={})", "torch.empty(3, 4, layout={})", "torch.zeros_like(t, layout={})"]
)
def test_a_layout_that_may_be_sparse_gets_no_pin_memory_fix(factory: str, layout: str) -> None:
    source = (
        H
        + f"def f(dev, lay):\n    t = torch.zeros(3)\n    x = {factory.format(layout)}\n    return x.to(dev, non_blocking=True)\n"
    )
    finding = _only(source, pin_memory_expr="True")
    assert finding.fix_safety is None
    assert f"`layout={layout}` may not be dense" in (finding.fix_note or "")
    assert "pin_memory" not in fix_text(source, config=_config(pin_memory_expr="True"), unsafe_fixes=True)


def test_a_strided_layout_keeps_the_pin_memory_fix() -> None:
    source = H + "def f(dev):\n    x = torch.zeros(3, layout=torch.strided)\n    return x.to(dev, non_blocking=True)\n"
    fixed = fix_text(source, config=_config(pin_memory_expr="True"))
    assert "torch.zeros(3, layout=torch.strided, pin_memory=True)" in fixed


def _factory_call(torch, name: str, **kw):  # type: ignore[no-untyped-def]
    fn = eval(name, {"torch": torch})  # a qualified name from the effects table
    base = torch.zeros(2)
    short = name.rpartition(".")[2]
    if short.endswith("_like"):
        return fn(base, **({"fill_value": 1.0} if short == "full_like" else {}), **kw)
    if short == "full":
        return fn((2,), 1.0, **kw)
    if short == "randint":
        return fn(0, 5, (2,), **kw)
    if short == "linspace":
        return fn(0, 1, 2, **kw)
    if short == "tensor":
        return fn([1, 2], **kw)
    return fn(2, **kw)


def test_the_effects_table_factories_are_what_real_torch_can_pin() -> None:
    """Every entry the table calls a factory takes ``pin_memory=``; torch refuses to pin any
    layout outside PINNABLE_LAYOUTS, and accepts (or lacks only an accelerator for) the others."""
    torch = pytest.importorskip("torch")
    from pinfix.effects import FUNCTIONS, PINNABLE_LAYOUTS, Makes

    factories = sorted(q for q, e in FUNCTIONS.items() if isinstance(e, Makes) and e.factory)
    assert "torch.zeros" in factories and "torch.tensor" in factories
    for name in factories:
        assert _factory_call(torch, name, pin_memory=False).device.type == "cpu", name
    assert "strided" in PINNABLE_LAYOUTS
    for short in ("strided", "sparse_coo", "sparse_csr", "sparse_csc"):
        try:
            torch.empty(2, 2, layout=getattr(torch, short), pin_memory=True)
            refused = False
        except RuntimeError as e:  # without an accelerator every layout is refused, but not for being sparse
            refused = "Only dense CPU tensors can be pinned" in str(e)
        # Whatever the table keeps, torch pins; sparse COO, torch refuses (and the table leaves it out).
        assert not (refused and short in PINNABLE_LAYOUTS), short
        assert refused or short != "sparse_coo"


# --- item 9: the import clean-up keeps exports and leaves no import unused --------------------------------

FORMS = {
    # form: (import statement, the call's callee, a use of the other name it binds or None)
    "import": ("import torch", "torch.from_numpy", None),
    "from": ("from torch import from_numpy", "from_numpy", None),
    "alias": ("import torch as th", "th.from_numpy", None),
    "from_two": ("from torch import from_numpy, int32", "from_numpy", "print(int32)"),
    "two_modules": ("import os, torch", "torch.from_numpy", "print(os.sep)"),
    "from_two_parenthesized": ("from torch import (\n    from_numpy,\n    int32,\n)", "from_numpy", "print(int32)"),
}


def _program(placement: str, form: str) -> str:
    statement, callee, other = FORMS[form]
    use = f"    dst.copy_({callee}(a), non_blocking=True)\n"
    keep = f"    {other}\n" if other else ""
    if placement == "top":
        return f"{statement}\n\n\ndef f(dst, a):\n{keep}{use}"
    if placement == "function":
        return f"def f(dst, a):\n    {statement}\n\n{keep}{use}"
    if placement == "method":
        indented = "".join("    " + line for line in (keep + use).splitlines(keepends=True))
        return f"class C:\n    def f(self, dst, a):\n        {statement}\n{indented}"
    if placement == "if_block":
        return f"import sys\n\nif sys.version_info >= (3, 8):\n    {statement}\n\n\ndef f(dst, a):\n{keep}{use}"
    if placement == "type_checking":
        # typing-only at the top (read by an annotation), imported again at run time in the function
        return (
            f"from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    {statement}\n\n\n"
            f'def f(dst: "{callee.split(".")[0]}", a):\n    {statement}\n\n{keep}{use}'
        )
    if placement == "semicolon":
        return f"def f(dst, a):\n    {statement}; print(dst)\n{keep}{use}"
    if placement == "exported":
        return f"{statement}\n\n__all__ = ['f']\n__all__ += ['{callee.split('.')[0]}']\n\n\ndef f(dst, a):\n{keep}{use}"
    raise AssertionError(placement)


PLACEMENTS = ("top", "function", "method", "if_block", "type_checking", "semicolon", "exported")


@pytest.mark.parametrize("select", ["F401,F811,F841,I", "F401,F811,F841"])
def test_a_file_ruff_passes_before_a_fix_passes_after_it(tmp_path: Path, select: str) -> None:
    """For every placement and form of the import the fix leaves unused: if the project's ruff
    (F401, F811, F841, with or without isort's I: `;`-joined imports pass only without it) passes
    the file before the fix, it passes it after, and the fix was made."""
    from tests.support import ruff_codes

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    clean_before = []
    problems = []
    for placement in PLACEMENTS:
        for form in FORMS:
            source = _program(placement, form)
            path = tmp_path / f"{placement}_{form}.py"
            path.write_text(source)
            if ruff_codes(path, tmp_path, select=select):
                continue
            clean_before.append((placement, form))
            after = fix_text(source, path=str(path), config=Config(root=tmp_path))
            path.write_text(after)
            left = ruff_codes(path, tmp_path, select=select)
            if left or "np_to_pinned_tensor(a)" not in after:
                problems.append((placement, form, left, after))
    # Not vacuous: every placement is among the cases ruff passed before.
    assert {p for p, _ in clean_before} >= (set(PLACEMENTS) - ({"semicolon"} if "I" in select.split(",") else set()))
    assert problems == []


def test_an_import_exported_with_augmented_all_stays() -> None:
    source = _program("exported", "from")
    after = fix_text(source, config=_config())
    assert "np_to_pinned_tensor(a)" in after
    assert "from torch import from_numpy\n" in after


@pytest.mark.parametrize("how", ["__all__.append('from_numpy')", "__all__.extend(['from_numpy'])"])
def test_an_import_exported_by_a_call_ruff_cannot_read_makes_the_fix_unsafe(how: str) -> None:
    """The import must stay for the export, and ruff would then call it unused: not safe."""
    source = f"from torch import from_numpy\n\n__all__ = ['f']\n{how}\n\n\ndef f(dst, a):\n    dst.copy_(from_numpy(a), non_blocking=True)\n"
    finding = _only(source)
    assert finding.fix_safety == "unsafe"
    assert "exported with `__all__.append`/`.extend`" in (finding.fix_note or "")
    after = fix_text(source, config=_config(), unsafe_fixes=True)
    assert "from torch import from_numpy\n" in after and "np_to_pinned_tensor(a)" in after


def test_an_optional_import_in_a_try_is_left_alone() -> None:
    source = "try:\n    import torch\nexcept ImportError:\n    torch = None\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
    after = fix_text(source, config=_config())
    assert "try:\n    import torch\nexcept ImportError:\n    torch = None\n" in after


def test_an_applicability_applies_where_it_is_as_free_as_required() -> None:
    """One applicability type (as ruff's): safe fixes apply in every run, unsafe ones
    only where unsafe fixes are asked for; the choice of a finding's fix follows it."""
    from types import SimpleNamespace

    from pinfix.edits import SAFE, UNSAFE, Applicability, Edit, Fix
    from pinfix.fixes import chosen_fixes

    assert Applicability.required(False) is SAFE and Applicability.required(True) is UNSAFE
    assert SAFE.applies(SAFE) and SAFE.applies(UNSAFE) and UNSAFE.applies(UNSAFE) and not UNSAFE.applies(SAFE)
    safe, unsafe = Fix(SAFE, None, (Edit(0, 0, "a"),)), Fix(UNSAFE, "why", (Edit(1, 1, "b"),))
    findings = [
        SimpleNamespace(code="PIN001", fix=safe),
        SimpleNamespace(code="PIN002", fix=unsafe),
        SimpleNamespace(code="PIN001", fix=None),
    ]
    assert chosen_fixes(findings, SAFE) == [safe, None, None]
    assert chosen_fixes(findings, UNSAFE) == [safe, unsafe, None]
    assert chosen_fixes(findings, UNSAFE, {"PIN002"}) == [None, unsafe, None]
