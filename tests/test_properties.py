"""Properties of ``fix`` over generated programs.

The generator places the PIN001 patterns (a ``torch.from_numpy(...)`` source
feeding a ``non_blocking`` copy, plus look-alikes that are not findings) inside
classes, nested functions, lambdas, comprehensions, decorators and
``if TYPE_CHECKING`` blocks, imports torch in several spellings (some inside
``try/except ImportError``), and sprinkles comments and odd whitespace. For
every program:

* the fixed text parses (with :mod:`ast` and with LibCST);
* fixing again changes nothing (idempotence);
* ``check`` on the fixed text reports no finding whose fix is "safe" (nor,
  after ``--unsafe-fixes``, one whose fix is "unsafe");
* every call of the helper that the fix wrote is bound at run time: an import
  of it exists outside ``if TYPE_CHECKING`` blocks, and no enclosing function
  rebinds the name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Optional, Set

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinfix.api import check_text, fix_text

HELPER_MODULE = "vllm.utils.torch_utils"
HELPER = "np_to_pinned_tensor"

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- The generator ------------------------------------------------------------------


@dataclass(frozen=True)
class Spelling:
    """How the module imports torch's ``from_numpy`` and how a call is spelled."""

    import_lines: List[str]
    call: str  # e.g. "torch.from_numpy"
    guarded: bool = False  # inside try/except ImportError


SPELLINGS = [
    Spelling(["import torch"], "torch.from_numpy"),
    Spelling(["import torch as th"], "th.from_numpy"),
    Spelling(["from torch import from_numpy"], "from_numpy"),
    Spelling(["from torch import from_numpy as fnp"], "fnp"),
]


def _ws(draw) -> str:  # type: ignore[no-untyped-def]
    return draw(st.sampled_from(["", " ", "  "]))


@st.composite
def sink(draw, call: str) -> str:  # type: ignore[no-untyped-def]
    """An expression: a non_blocking copy of ``call(arr)`` (or a look-alike that is no finding)."""
    arr = draw(st.sampled_from(["arr", "a[0]", "np.zeros(4)", "batch.ids"]))
    w = _ws(draw)
    src = f"{call}({w}{arr}{w})"
    kw = f"non_blocking{_ws(draw)}={_ws(draw)}True"
    comment_break = draw(st.sampled_from(["", "  # why\n        ", "\n        ", " \\\n        "]))
    forms = [
        f'{src}.to("cuda",{comment_break}{kw})',
        f"{src}.to(device={draw(st.sampled_from(['dev', 'self.device']))}, {kw})",
        f"{src}.cuda({kw})",
        f"{src}.cuda(0, True)",
        f"dst.copy_({src},{comment_break}{kw})",
        f'{src}.to("cuda", None, True)',
        # Look-alikes that are not findings:
        f"{src}.pin_memory().to('cuda', {kw})",
        f'{src}.to("cpu", {kw})',
        f'{src}.to("cuda")',
        f"{src}.cuda(non_blocking=False)",
    ]
    return draw(st.sampled_from(forms))


@st.composite
def placed(draw, call: str, indent: str) -> str:  # type: ignore[no-untyped-def]
    """Statements (at column 0) placing one sink in some construct, indented by ``indent``."""
    expr = draw(sink(call))
    i = indent
    kind = draw(
        st.sampled_from(
            [
                "module",
                "function",
                "nested",
                "method",
                "lambda",
                "listcomp",
                "dictcomp",
                "genexp",
                "decorator",
                "type_checking",
                "bound",
                "bound_reused",
                "bound_loop",
                "shadow",
                "with_comment",
                "default_arg",
            ]
        )
    )
    if kind == "module":
        lines = [f"result = {expr}"]
    elif kind == "function":
        lines = ["def load(arr, dst, batch, a, dev):", f"{i}return {expr}"]
    elif kind == "nested":
        lines = ["def outer(dst, batch, a, dev):", f"{i}def inner(arr):", f"{i}{i}return {expr}", f"{i}return inner"]
    elif kind == "method":
        lines = [
            "class Loader:",
            f'{i}"""Loads."""',
            "",
            f"{i}def load(self, arr, dst, batch, a, dev):",
            f"{i}{i}out = {expr}",
            f"{i}{i}return out",
        ]
    elif kind == "lambda":
        lines = [f"load = lambda arr, dst=None, batch=None, a=None, dev=None: {expr}"]
    elif kind == "listcomp":
        lines = ["def load_all(arrs, dst, batch, a, dev):", f"{i}return [{expr} for arr in arrs]"]
    elif kind == "dictcomp":
        lines = ["def load_all(arrs, dst, batch, a, dev):", f"{i}return {{k: {expr} for k, arr in arrs.items()}}"]
    elif kind == "genexp":
        lines = ["def load_all(arrs, dst, batch, a, dev):", f"{i}return list({expr} for arr in arrs)"]
    elif kind == "decorator":
        lines = [
            "def register(value):",
            f"{i}return lambda f: f",
            "",
            "",
            f"@register({expr})",
            "def registered():",
            f"{i}pass",
        ]
    elif kind == "type_checking":
        lines = ["if TYPE_CHECKING:", f"{i}checked = {expr}", "else:", f"{i}checked = None"]
    elif kind == "bound":
        lines = [
            "def load(arr, dst, batch, a, dev):",
            f"{i}t = {call}(arr)",
            f"{i}# a comment between",
            f"{i}return t.to(dev, non_blocking=True)",
        ]
    elif kind == "bound_reused":
        # The tensor is used again: the fix is unsafe (the helper copies instead of sharing memory).
        lines = [
            "def load(arr, dst, batch, a, dev):",
            f"{i}t = {call}(arr)",
            f"{i}t.mul_(2)",
            f"{i}return t.to(dev, non_blocking=True)",
        ]
    elif kind == "bound_loop":
        lines = [
            "def load(arr, dev, out):",
            f"{i}t = {call}(arr)",
            f"{i}for k in range(3):",
            f"{i}{i}arr[0] = k",
            f"{i}{i}out.append(t.cuda(non_blocking=True))",
        ]
    elif kind == "shadow":
        # A local of the helper's name: the fix must not call it.
        lines = [
            f"def load(arr, dst, batch, a, dev, {HELPER}=None):",
            f"{i}return {expr}",
        ]
    elif kind == "with_comment":
        lines = [
            "def load(arr, dst, batch, a, dev):  # trailing comment",
            f"{i}# leading comment",
            "",
            f"{i}value = (  # open",
            f"{i}{i}{expr}",
            f"{i})  # close",
            f"{i}return value",
        ]
    else:  # default_arg
        lines = [f"def load(arr=None, dst=None, batch=None, a=None, dev=None, out={expr}):", f"{i}return out"]
    return "\n".join(lines)


@st.composite
def programs(draw) -> str:  # type: ignore[no-untyped-def]
    spelling = draw(st.sampled_from(SPELLINGS))
    indent = draw(st.sampled_from(["    ", "  ", "\t"]))
    newline_pad = draw(st.sampled_from(["", "   ", "\t"]))  # trailing whitespace on blank lines

    head: List[str] = []
    if draw(st.booleans()):
        head.append('"""Generated module."""')
    if draw(st.booleans()):
        head.append("from __future__ import annotations")
    if head:
        head.append("")

    imports = ["import os"] if draw(st.booleans()) else []
    imports.append("from typing import TYPE_CHECKING")
    imports.append("import numpy as np")
    torch_import = list(spelling.import_lines)
    guard = draw(st.sampled_from(["plain", "try", "type_checking_extra"]))
    existing_helper = draw(st.sampled_from(["none", "same", "sibling", "alias"]))
    if existing_helper == "same":
        imports.append(f"from {HELPER_MODULE} import {HELPER}")
    elif existing_helper == "sibling":
        imports.append(f"from {HELPER_MODULE} import async_tensor_h2d")
    elif existing_helper == "alias":
        imports.append(f"from {HELPER_MODULE} import {HELPER} as pin")
    if guard == "plain":
        imports.extend(torch_import)
    imports.sort(key=lambda line: (line.startswith("from"), line))
    body_imports = "\n".join(imports)
    if guard == "try":
        body_imports += "\n\ntry:\n" + "\n".join(indent + line for line in torch_import)
        body_imports += f"  # optional\nexcept ImportError:{_ws(draw)}\n{indent}torch = None\n"
    elif guard == "type_checking_extra":
        body_imports += "\n" + "\n".join(torch_import)
        body_imports += f"\n\nif TYPE_CHECKING:\n{indent}from collections.abc import Sequence\n"

    blocks = draw(st.lists(placed(spelling.call, indent), min_size=1, max_size=3))
    if draw(st.booleans()):
        blocks.append(f"# end{_ws(draw)}")
    sep = "\n" + newline_pad + "\n\n"
    text = "\n".join(head) + ("\n" if head else "") + body_imports + "\n" + sep + sep.join(blocks) + "\n"
    if draw(st.booleans()):
        text += "\n"
    return text


# --- Checks -------------------------------------------------------------------------------


def _parses(text: str) -> ast.Module:
    tree = ast.parse(text)
    cst.parse_module(text)
    return tree


def _in_type_checking(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _helper_binding_problems(original: ast.Module, fixed: ast.Module) -> List[str]:
    """Calls of a helper name the fix introduced that would not reach the helper at run time."""
    parents = {child: node for node in ast.walk(fixed) for child in ast.iter_child_nodes(node)}
    locals_ = set()
    for node in ast.walk(fixed):
        if isinstance(node, ast.ImportFrom) and node.module == HELPER_MODULE and not _in_type_checking(node, parents):
            for alias in node.names:
                if alias.name == HELPER:
                    locals_.add(alias.asname or alias.name)
    before = _call_names(original)
    problems = []
    for node in ast.walk(fixed):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        name = node.func.id
        if name in before or name not in (locals_ | {HELPER, "pin"}):
            continue
        if name not in locals_:
            problems.append(f"line {node.lineno}: calls {name}() but no run-time import binds it")
            continue
        scope: Optional[ast.AST] = node
        while scope in parents:
            scope = parents[scope]
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if name in _bound_in(scope):
                    problems.append(f"line {node.lineno}: {name}() resolves to a local of the enclosing function")
    return problems


def _call_names(tree: ast.Module) -> Set[str]:
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _bound_in(func: ast.AST) -> Set[str]:
    args = func.args  # type: ignore[attr-defined]
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _check_fix(source: str, unsafe_fixes: bool) -> None:
    original = ast.parse(source)  # the generator must make valid programs
    fixed = fix_text(source, unsafe_fixes=unsafe_fixes)
    fixed_tree = _parses(fixed)
    again = fix_text(fixed, unsafe_fixes=unsafe_fixes)
    assert again == fixed, "fix is not idempotent"
    left = check_text(fixed)
    fixable = {"safe", "unsafe"} if unsafe_fixes else {"safe"}
    still = [(d.line, d.fix_safety, d.message) for d in left if d.fix_safety in fixable]
    assert still == [], f"check after fix still reports fixable findings: {still}"
    assert _helper_binding_problems(original, fixed_tree) == []


@SETTINGS
@given(programs())
def test_fix_parses_is_idempotent_and_leaves_no_safe_finding(source: str) -> None:
    _check_fix(source, unsafe_fixes=False)


@SETTINGS
@given(programs())
def test_unsafe_fixes_parse_are_idempotent_and_leave_no_fixable_finding(source: str) -> None:
    _check_fix(source, unsafe_fixes=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_fix_changes_the_text_exactly_when_a_safe_finding_exists(source: str) -> None:
    """The text API's check and fix agree (and the generated programs do hold findings)."""
    diagnostics = check_text(source)
    fixed = fix_text(source)
    safe = [d for d in diagnostics if d.fix_safety == "safe"]
    assert (fixed != source) == bool(safe)
