"""Validators: a function that returns only when its argument passes a memory test
narrows the caller's argument after the call, as an ``assert`` would (issue 27: what
a function guarantees about its arguments when it returns)."""

import ast
import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest

from pinfix.api import check_text
from pinfix.semantic.narrowing import Guarantee, checked_by, postconditions
from pinfix.semantic.scope import ModuleInfo
from pinfix.semantic.source import SourceText
from tests.test_deep import deep, lines, project

CHECK_PINNED = "def check_pinned(t):\n    if not t.is_pinned():\n        raise ValueError('pin it first')\n\n"
CHECK_CPU = "def check_cpu(t):\n    if t.device.type != 'cpu':\n        raise ValueError('on the CPU only')\n\n"


def found(code: str) -> List[Tuple[int, str]]:
    return [(f.line, f.code) for f in check_text(code)]


def copy_after(check: str, call: str) -> str:
    return (
        "import torch\n\n"
        + check
        + f"def f(a, dev):\n    t = torch.from_numpy(a)\n    {call}\n    return t.to(dev, non_blocking=True)\n"
    )


@pytest.mark.parametrize(
    "check",
    [
        CHECK_PINNED,
        "def check_pinned(t):\n    assert t.is_pinned()\n\n",
        "def check_pinned(t, what='t'):\n    if not t.is_pinned() or t.numel() == 0:\n        raise ValueError(what)\n\n",
        # Through another function, any number of calls down, and through recursion.
        CHECK_PINNED.replace("check_pinned", "_really") + "def check_pinned(t):\n    _really(t)\n\n",
        CHECK_PINNED.replace("check_pinned", "_c")
        + "def _b(x):\n    _c(x)\n\n"
        + "def check_pinned(t, n=0):\n    if n:\n        raise ValueError('n')\n    _b(t)\n    check_pinned(t, n)\n\n",
    ],
)
def test_a_validator_that_raises_unless_pinned_settles_the_memory(check: str) -> None:
    assert found(copy_after(check, "check_pinned(t)")) == []
    # The same module without the call: the copy blocks.
    code = copy_after(check, "pass")
    assert found(code) == [(code.count("\n"), "PIN001")]


@pytest.mark.parametrize(
    "check, call",
    [
        # Checks that do not hold on every way back.
        ("def check_pinned(t):\n    if t.is_pinned():\n        raise ValueError('x')\n\n", "check_pinned(t)"),
        ("def check_pinned(t, c):\n    if c:\n        return\n    assert t.is_pinned()\n\n", "check_pinned(t, 1)"),
        ("def check_pinned(t, c):\n    if c:\n        assert t.is_pinned()\n\n", "check_pinned(t, 1)"),
        ("def check_pinned(t):\n    if not t.is_pinned():\n        print('x')\n\n", "check_pinned(t)"),
        ("def check_pinned(t):\n    assert t.is_pinned() or t.numel() == 0\n\n", "check_pinned(t)"),
        # The parameter rebound before it is checked: the argument itself is not.
        ("def check_pinned(t):\n    t = t.pin_memory()\n    assert t.is_pinned()\n\n", "check_pinned(t)"),
        # A generator's or a coroutine's body does not run when it is called.
        ("def check_pinned(t):\n    assert t.is_pinned()\n    yield t\n\n", "check_pinned(t)"),
        ("async def check_pinned(t):\n    assert t.is_pinned()\n\n", "check_pinned(t)"),
        # The checked parameter given something else, or nothing pinfix can place.
        ("def check_pinned(t, u):\n    assert u.is_pinned()\n\n", "check_pinned(t, torch.empty(1))"),
        ("def check_pinned(*ts):\n    assert ts.is_pinned()\n\n", "check_pinned(t)"),
        (CHECK_PINNED, "check_pinned(*[t])"),
        # A name that is not (only) the validator.
        (CHECK_PINNED + "check_pinned = print\n\n", "check_pinned(t)"),
    ],
)
def test_what_a_validator_does_not_guarantee_keeps_the_finding(check: str, call: str) -> None:
    code = copy_after(check, call)
    assert found(code) == [(code.count("\n"), "PIN001")]


def test_keywords_reach_the_checked_parameter() -> None:
    check = "def check_pinned(name, t=None, *, u=None):\n    assert t.is_pinned()\n    assert u.is_pinned()\n\n"
    assert found(copy_after(check, "check_pinned('a', t=t)")) == []
    assert found(copy_after(check, "check_pinned('a', None, u=t)")) == []
    assert found(copy_after(check, "check_pinned('a', t)")) == []
    code = copy_after(check, "check_pinned(t)")
    assert found(code) == [(code.count("\n"), "PIN001")]


def test_a_validator_naming_the_cpu_puts_an_unknown_tensor_there() -> None:
    # A tensor pinfix cannot follow, checked to be on the CPU: what is computed from it
    # is fresh pageable memory (as `assert t.device.type == "cpu"` says).
    code = (
        "import torch\n\n"
        + CHECK_CPU
        + ("def f(t, dev):\n    check_cpu(t)\n    y = (t > 0).nonzero()\n    return y.to(dev, non_blocking=True)\n")
    )
    assert found(code) == [(code.count("\n"), "PIN002")]
    assert found(code.replace("    check_cpu(t)\n", "")) == []
    # One that denies only an accelerator does not say the CPU.
    denies = code.replace("t.device.type != 'cpu'", "t.is_cuda")
    assert found(denies) == []


def test_a_validator_putting_the_tensor_on_the_device_settles_the_copy() -> None:
    check = "def on_device(t):\n    if not t.is_cuda:\n        raise ValueError('move it first')\n\n"
    assert found(copy_after(check, "on_device(t)")) == []


def test_postconditions_read_once_each_function() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """\
            def v(t, u, *rest, k=None):
                assert t.is_pinned() and not u.is_cuda
                if k.device.type == "cpu":
                    raise ValueError()
                w(u, key=t)
                return t
                assert rest.is_pinned()
            """
        )
    )
    checks = postconditions(tree.body[0], {"t", "u", "k"})
    assert checks.own == (
        Guarantee("t", "is_pinned", True),
        Guarantee("u", "is_cuda", False),
        Guarantee("k", "is_cuda", True),
    )
    assert [(call.func.id, passed) for call, passed in checks.calls] == [("w", (("0", "u"), ("key", "t")))]


PINNED_T = Guarantee("t", "is_pinned", True)
CUDA_U = Guarantee("u", "is_cuda", True)


@pytest.mark.parametrize(
    "body, expected",
    [
        ("    assert t.is_pinned()\n    t = other()\n    assert t.is_cuda\n    return t\n", [PINNED_T]),
        ("    (t := make())\n    assert t.is_pinned()\n", []),
        ("    for t in items:\n        pass\n    assert t.is_pinned()\n", []),
        ("    import t\n    assert t.is_pinned()\n", []),
        ("    try:\n        pass\n    except E as t:\n        pass\n    assert t.is_pinned()\n", []),
        ("    def t():\n        return 1\n    assert u.is_cuda\n", [CUDA_U]),
        ("    class t:\n        x = 1\n    assert t.is_pinned()\n", []),
        ("    x = [t for t in items]\n    assert t.is_pinned()\n", []),  # (a comprehension's t counts too)
        ("    match x:\n        case [*t]:\n            pass\n    assert t.is_pinned()\n", []),
        ("    assert t.is_pinned()\n    yield t\n", []),  # a generator: its body runs later
        ("    assert t.is_pinned()\n    if t:\n        return\n    assert u.is_cuda\n", [PINNED_T]),
        ("    check(t, k=u)\n    del u\n    assert u.is_cuda\n", []),
    ],
)
def test_postconditions_are_the_same_told_whether_the_function_yields(body: str, expected: list) -> None:
    """The caller (the module's analysis) knows whether a function yields from its one scan:
    told so, :func:`postconditions` finds what it finds walking the body for it; a parameter
    rebound before a check (as a name, a walrus target, a loop variable, an import, a
    handler, a def or class, deleted) is no longer the caller's argument."""
    src = SourceText.from_bytes(f"def v(t, u):\n{body}".encode(), "m.py")
    module = ModuleInfo(src, src.parse(), Path("m.py"))
    func = module.top["v"]
    walked = postconditions(func.node, {"t", "u"})
    assert list(walked.own) == expected
    assert postconditions(func.node, {"t", "u"}, func.is_generator) == walked


def test_the_solver_reaches_a_fixpoint_through_a_cycle_in_linear_work() -> None:
    # A chain of n functions, each passing its argument to the next, the last one (and the
    # first, through a cycle back to it) checking it: every one of them guarantees it.
    n = 300
    body = "".join(f"def f{i}(t):\n    f{i + 1}(t)\n    f0(t)\n\n" for i in range(n))
    body += f"def f{n}(t):\n    assert t.is_pinned()\n"
    src = SourceText.from_bytes(body.encode(), "m.py")
    module = ModuleInfo(src, src.parse(), Path("m.py"))
    reads = []

    def checks(func):  # type: ignore[no-untyped-def]
        reads.append(func.name)
        return postconditions(func.node, {p.name for p in func.params})

    def resolve(func, call):  # type: ignore[no-untyped-def]
        return module.top.get(call.func.id)

    solved = checked_by(checks, resolve, module.top["f0"])
    assert len(reads) == n + 1 == len(set(reads))
    assert all(solved[id(module.top[f"f{i}"].node)] == (Guarantee("t", "is_pinned", True),) for i in range(n + 1))


def test_deep_mode_narrows_after_a_validator_imported_from_another_module(tmp_path: Path) -> None:
    pkg = project(
        tmp_path,
        {
            "checks.py": CHECK_PINNED + "def ensure_ready(t, name='x'):\n    check_pinned(t)\n",
            "use.py": """\
                import numpy as np
                import torch

                from pkg.checks import check_pinned, ensure_ready


                def _push(buf, t):
                    check_pinned(t)
                    buf.copy_(t, non_blocking=True)


                def _push_checked_further_down(buf, t):
                    ensure_ready(t)
                    buf.copy_(t, non_blocking=True)


                def _push_unchecked(buf, t):
                    buf.copy_(t, non_blocking=True)


                def run(buf, a: np.ndarray):
                    _push(buf, torch.from_numpy(a))
                    _push_checked_further_down(buf, torch.from_numpy(a))
                    _push_unchecked(buf, torch.from_numpy(a))
                """,
        },
    )
    # Only the copy no validator guards: the other two callers' pageable tensors would be refused.
    assert lines(deep([pkg])) == [(18, "PIN001")]


def test_a_validator_reached_through_a_module_or_an_object_narrows_too(tmp_path: Path) -> None:
    pkg = project(
        tmp_path,
        {
            "checks.py": CHECK_PINNED,
            "use.py": """\
                import numpy as np
                import torch

                from pkg import checks


                class Pusher:
                    def _check(self, t):
                        if not t.is_pinned():
                            raise ValueError("pin it first")

                    @staticmethod
                    def _check_static(t):
                        assert t.is_pinned()

                    def push(self, buf, t):
                        self._check(t)
                        buf.copy_(t, non_blocking=True)

                    def push_static(self, buf, t):
                        self._check_static(t)
                        buf.copy_(t, non_blocking=True)

                    def push_unchecked(self, buf, t):
                        buf.copy_(t, non_blocking=True)


                def _push(buf, t):
                    checks.check_pinned(t)
                    buf.copy_(t, non_blocking=True)


                def run(buf, a: np.ndarray):
                    p = Pusher()
                    p.push(buf, torch.from_numpy(a))
                    p.push_static(buf, torch.from_numpy(a))
                    p.push_unchecked(buf, torch.from_numpy(a))
                    _push(buf, torch.from_numpy(a))
                """,
        },
    )
    assert lines(deep([pkg])) == [(25, "PIN001")]


def test_a_method_validator_in_plain_mode() -> None:
    code = (
        "import torch\n\nclass P:\n"
        "    def check(self, t):\n        assert t.is_pinned()\n\n"
        "    def f(self, a, dev):\n        t = torch.from_numpy(a)\n        self.check(t)\n"
        "        return t.to(dev, non_blocking=True)\n"
    )
    assert found(code) == []
    # The receiver is not the checked argument.
    receiver = code.replace("self.check(t)", "t.check(self)")
    assert found(receiver) == [(receiver.count("\n"), "PIN001")]
