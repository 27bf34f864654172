"""The linear stages give the same results as the reading they replaced, on
the stress shapes of ``benchmarks/stress_inputs.py`` at two sizes (the time
curve itself is in that benchmark, not here): the byte pre-filter's one reading
of each sink's call, the index of statements, the index of top-level imports
and the sweep that picks the functions holding the copies."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from pinfix.config import Config, settings_of
from pinfix.fixes.plan import planned_findings as check_module
from pinfix.prefilter import may_hold_sink
from pinfix.rules.base import StatementIndex
from pinfix.semantic import SourceText, analyze_module
from pinfix.semantic.module import functions_at
from pinfix.semantic.scope import FunctionInfo, ModuleInfo

HEAD = (
    "import numpy as np\nimport torch\n\n\ndef load(a):\n    return torch.from_numpy(a).to('cuda', non_blocking=True)\n"
)


def _defs(functions: int, head: str = HEAD) -> str:
    return head + "".join(
        f"\n\ndef load_{i}(a):\n    return torch.from_numpy(a).to('cuda', non_blocking=True)\n"
        for i in range(functions)
    )


def _sinks(n: int, inner: str = "x") -> bytes:
    return ("import torch\n\nf(" + "a.to(" * n + inner + ")" * n + ", True)\n").encode()


# --- the byte pre-filter ------------------------------------------------------


@pytest.mark.parametrize("n", [500, 1000])
def test_nested_sinks_without_a_flag_in_them_are_ruled_out(n: int) -> None:
    # The `True` is outside every sink's parentheses.
    assert not may_hold_sink(_sinks(n))


@pytest.mark.parametrize("n", [500, 1000])
def test_a_flag_in_the_innermost_of_nested_sinks_passes(n: int) -> None:
    # Read as part of the outermost call, the innermost one's flag still counts.
    assert may_hold_sink(_sinks(n, "x, d, True"))
    assert may_hold_sink(_sinks(n, "x, d,  # why\n True"))
    # Not a flag: in a string, or not after a comma.
    assert not may_hold_sink(_sinks(n, "x, 'd, True)'"))
    assert not may_hold_sink(_sinks(n, "x=True"))


def test_a_sink_in_an_fstring_field_passes() -> None:
    # Read on its own, and inside another sink's call, whose reading skips the
    # string, yet the field is code.
    assert may_hold_sink(b"s = f'{torch.from_numpy(a).to(d, None, True)}'\n")
    assert may_hold_sink(b"x.to(d, f'{y.to(e, None, True)}')\n")
    assert may_hold_sink(b'x.to(d, f"{y.to(e, None, True)}")\n')
    # With no `True` after it, such a sink cannot hold a flag.
    assert not may_hold_sink(b"ok = g(1, True)\nx.to(d, f'{y.to(e)}')\n")


def test_a_sink_in_a_comment_or_docstring_alone_is_ruled_out() -> None:
    text = b'"""Move it with `x.to(device)`."""\nimport torch\n\n# y.to(d)\nflag = g(torch.zeros(3), True)\n'
    assert not may_hold_sink(text)


def test_a_call_the_reading_cannot_close_passes() -> None:
    assert may_hold_sink(b"h(2, True)\nx.to(d, 'never closed\n")
    assert may_hold_sink(b"h(2, True)\nx.to(d, g(1)\n")
    assert not may_hold_sink(b"h(2, True)\nx.to(d, g(1))\n")


# --- the analysis and the rules -----------------------------------------------


def _findings(text: str) -> List[tuple]:
    settings = settings_of(Config())
    src = SourceText.from_bytes(text.encode(), "m.py")
    facts = analyze_module(src, src.parse(), settings, Path("m.py"))
    return [
        (
            f.code,
            f.line,
            f.column,
            f.end_line,
            f.end_column,
            f.message,
            f.pattern,
            f.fix_note,
            f.evidence,
            f.statement,
            f.fix,
        )
        for f in check_module(facts, settings, Path("m.py"))
    ]


@pytest.mark.parametrize("head", [HEAD, "from vllm.utils.torch_utils import np_to_pinned_tensor as pinned\n" + HEAD])
def test_defs_findings_do_not_depend_on_the_size(head: str) -> None:
    small, large = _findings(_defs(100, head)), _findings(_defs(200, head))
    # The small file is the large one's first half: the same findings there.
    assert len(small) == 101 and len(large) == 201
    assert large[: len(small)] == small
    # Every function's finding is the first one's, moved down four lines.
    first = small[1]
    for k, f in enumerate(large[1:]):
        assert f[0] == first[0] and (f[1], f[3]) == (first[1] + 4 * k, first[3] + 4 * k)
        assert f[9] == (first[9][0] + 4 * k, first[9][1] + 4 * k)
        assert [e.new for e in f[10].edits] == [e.new for e in first[10].edits]
    if "as pinned" in head:  # the existing import's local name is used
        assert "pinned" in [e.new for e in first[10].edits] and first[10].imports == ()


# --- functions_at and the statement index, against the plain readings ----------

NESTED = """
import functools

f = lambda a: (lambda b: (b,
    a)), lambda c: (c,
    2)


@functools.cache
@decorate(lambda: 1)
def outer(x, y=lambda: 3):
    a = 1; b = 2
    def inner(
        z,
    ):
        return lambda: z
    class K:
        def m(self):
            try:
                return 1
            except ValueError as e:
                pass
            else:
                x = 2
            finally:
                y = 3
        v = [w for w in range(3)]
    if a:
        for i in b:
            while i:
                with open(i) as h:
                    match h:
                        case 1:
                            return i
                        case _:
                            pass
    return inner


class Top:
    attr = outer(1); other = 2
"""


def _first_of_body(node: ast.AST) -> int:
    body = node.body  # type: ignore[attr-defined]
    return (body[0] if isinstance(body, list) else body).lineno  # type: ignore[no-any-return]


def _deepest_function(module: ModuleInfo, lines: List[int]) -> List[FunctionInfo]:
    """The plain reading: for each line, try every function."""
    scopes = list(module.functions.values()) + [c.body_function for c in module.classes.values()]
    spans = sorted(
        (
            (
                min([f.node.lineno] + [d.lineno for d in getattr(f.node, "decorator_list", [])]),
                _first_of_body(f.node),
                f.node.end_lineno,
                f,
            )
            for f in scopes
        ),
        key=lambda s: (s[0], -s[2]),
    )
    out: Dict[int, FunctionInfo] = {}
    text_lines = module.src.text.splitlines()
    for line in lines:
        best: Optional[FunctionInfo] = None
        header: Optional[FunctionInfo] = None
        for first, body_start, end, f in spans:
            # The header ends above the body where the line above it ends the header (`:`).
            own_line = body_start > first and text_lines[body_start - 2].rstrip().endswith(":")
            if first <= line <= end:
                if line >= body_start:
                    best = f
                if line <= body_start - own_line:
                    header = f
        chosen = best if best is not None else module.body
        out[id(chosen.node)] = chosen
        if header is not None:
            outer = header.parent if header.parent is not None else module.body
            out[id(outer.node)] = outer
    return sorted(out.values(), key=lambda f: getattr(f.node, "lineno", 0))


def _module(text: str) -> ModuleInfo:
    src = SourceText.from_bytes(text.encode(), "m.py")
    return ModuleInfo(src, src.parse(), Path("m.py"))


@pytest.mark.parametrize("text", [NESTED, _defs(50), _defs(100)])
def test_functions_at_is_the_plain_reading(text: str) -> None:
    module = _module(text)
    count = text.count("\n") + 2
    for lines in [[line] for line in range(count)] + [list(range(count)), list(range(count, 0, -3)), [7, 3, 7, 1]]:
        assert functions_at(module, iter(lines)) == _deepest_function(module, lines)


def test_the_first_line_of_a_body_on_its_own_line_is_no_line_of_the_header() -> None:
    module = _module(NESTED)
    lines = NESTED.split("\n")
    names = lambda line: [f.name for f in functions_at(module, [line])]  # noqa: E731
    # `try:`, the first line of `m`'s body: `m` only, not also the class body around it.
    assert names(lines.index("            try:") + 1) == ["m"]
    # A default or a decorator is evaluated where the def stands: the scope around too.
    assert names(lines.index("def outer(x, y=lambda: 3):") + 1) == ["<module>"]
    assert names(lines.index("    def inner(") + 2) == ["outer"]  # `z,` in its parameters
    # A body on the header's line (`def f(): return 1`) is on a line of both.
    one = _module("class C:\n    def f(self): return 1\n")
    assert [f.name for f in functions_at(one, [2])] == ["C", "f"]


def _innermost_statement(tree: ast.Module, node: ast.AST) -> Optional[ast.stmt]:
    """The plain reading: the deepest statement whose span holds the node."""
    best: Optional[ast.stmt] = None
    depth = -1

    def visit(stmts: List[ast.stmt], level: int) -> None:
        nonlocal best, depth
        for stmt in stmts:
            if (stmt.lineno, stmt.col_offset) <= (node.lineno, node.col_offset) and (
                stmt.end_lineno,
                stmt.end_col_offset,
            ) >= (  # type: ignore[attr-defined]
                node.end_lineno,  # type: ignore[attr-defined]
                node.end_col_offset,  # type: ignore[attr-defined]
            ):
                if level > depth:
                    best, depth = stmt, level
            for name in ("body", "orelse", "finalbody"):
                visit(getattr(stmt, name, []) or [], level + 1)
            for child in list(getattr(stmt, "handlers", [])) + list(getattr(stmt, "cases", [])):
                visit(child.body, level + 1)

    visit(tree.body, 0)
    return best


@pytest.mark.parametrize("text", [NESTED, _defs(50)])
def test_statement_index_is_the_plain_reading(text: str) -> None:
    tree = ast.parse(text)
    index = StatementIndex(tree)
    checked = 0
    for node in ast.walk(tree):
        if not hasattr(node, "end_lineno") or isinstance(node, (ast.arg, ast.keyword, ast.alias)):
            continue
        stmt = _innermost_statement(tree, node)
        got = index.lines(node)
        if stmt is None:
            assert got is None
            continue
        checked += 1
        assert got is not None and got[0] == stmt.lineno
        body = getattr(stmt, "body", None)
        if isinstance(body, list) and body:
            assert got[1] == max(stmt.lineno, min(body[0].lineno - 1, node.lineno))  # a header's lines
        elif type(stmt).__name__ == "Match":
            assert got[1] == stmt.lineno
        else:
            assert got[1] == stmt.end_lineno
    assert checked > 50


@pytest.mark.parametrize("n", [200, 400])
def test_the_scopes_saying_global_are_found_by_bisection_as_by_a_scan(n: int) -> None:
    import re

    parts = []
    for i in range(n):
        said = "    global G%d\n    G%d = 1\n" % (i, i) if i % 3 == 0 else "    x = 'global'\n" if i % 3 == 1 else ""
        nested = "    def inner():\n        global H\n        H = 2\n\n    return inner\n" if i % 5 == 0 else ""
        parts.append(f"def f{i}():\n{said}{nested}    return None\n\n\n")
    text = "G = 0\n\n\n" + "".join(parts)
    module = ModuleInfo(SourceText(text, "<string>"), ast.parse(text))
    lines = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(r"(?m)^[ \t]*global\b", text)]
    for func in module.functions.values():
        node = func.node
        scanned = any(node.lineno <= line <= node.end_lineno for line in lines)
        assert module.may_say_global(func) == scanned, func.name
        said_at_all = func.name.startswith("f") and int(func.name[1:]) % 15 in (0, 3, 5, 6, 9, 10, 12)
        assert scanned == (said_at_all or func.name == "inner"), func.name
    assert module.rebound_globals == {f"G{i}" for i in range(0, n, 3)} | {"H"}


def test_the_lines_of_a_lambda_indexed_after_a_question_are_its_own_at_the_next() -> None:
    # Every line's scope is found once a module; a lambda is indexed when first
    # evaluated, and from then on a line of its body is its.
    text = "def f(xs):\n    return sorted(xs, key=lambda x: (\n        x.size()))\n"
    module = _module(text)
    assert [f.name for f in functions_at(module, [3])] == ["f"]
    node = next(n for n in ast.walk(module.tree) if isinstance(n, ast.Lambda))
    (f,) = module.functions.values()
    module.functions[id(node)] = FunctionInfo(node, module, f, None, "f.<lambda>")
    assert [g.name for g in functions_at(module, [3])] == ["f", "<lambda>"]  # (its body starts on 3)
    assert functions_at(module, [1, 2, 3]) == _deepest_function(module, [1, 2, 3])
