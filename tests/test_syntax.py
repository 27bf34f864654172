"""The fast tree walk agrees with LibCST's own visiting, parents and positions."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import libcst.matchers as m
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from pinfix.syntax import _LEAVES, TreeIndex, children, comments, definition_lines, walk

#: Every construct whose fields are declared out of written order, and then some.
EVERY_SHAPE = '''
import torch  # a comment
from typing import List as L

@decorator(arg=1)
@other
class Buffer(Base, metaclass=Meta):  # trailing
    size: int = 4

    @staticmethod
    def make(a, /, b: int = 2, *args, c, d=f(x), **kw) -> "Buffer":
        x = a if b else c
        y = (lambda q, *, r=g(): q + r)(1)
        try:
            pass
        except (ValueError, TypeError) as e:
            raise RuntimeError(str(e)) from e
        try:
            pass
        except* OSError as group:
            pass
        finally:
            z = [i * 2 for i in range(b) if i if not i]
        w = {k: v for k, v in kw.items()}
        s = {*args, f"{x!r:>{b}}"}
        del s[1:2:3], s[::-1]
        assert (t := h(x)), "message"
        match x:
            case [1, 2, *rest] if rest:
                pass
            case {"k": v, **more}:
                pass
            case Point(x=0, y=_) | None:
                pass
        return torch.from_numpy(a).to(b, non_blocking=True)

async def run(stream):
    async with lock() as held, other():
        async for item in stream:
            await item.copy_(src, True)
    global counter
    yield from gen()
'''


def _significant(node: cst.CSTNode) -> list:
    return [c for c in node.children if not isinstance(c, _LEAVES)]


def _corpus() -> list:
    own = sorted(Path(__file__).resolve().parents[1].glob("pinfix/**/*.py"))[:20]
    return [cst.parse_module(EVERY_SHAPE)] + [cst.parse_module(p.read_bytes()) for p in own]


@pytest.mark.parametrize("module", _corpus(), ids=lambda mod: str(len(mod.code)))
def test_children_follow_libcst_visiting_order(module: cst.Module) -> None:
    for node in walk(module):
        assert [id(c) for c in children(node)] == [id(c) for c in _significant(node)], type(node).__name__


def test_index_matches_libcst_parents_calls_positions_and_comments() -> None:
    module = cst.parse_module(EVERY_SHAPE)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    parents = wrapper.resolve(ParentNodeProvider)
    positions = wrapper.resolve(PositionProvider)
    tree = TreeIndex(module)
    nodes = list(walk(module))
    assert len(nodes) > 300
    for node in nodes[1:]:
        assert tree.parent(node) is parents[node]
    assert [id(c) for c in tree.calls] == [id(c) for c in m.findall(module, m.Call())]
    assert [id(c) for c in tree.definitions] == [id(c) for c in m.findall(module, m.FunctionDef() | m.ClassDef())]
    # Comments come in no promised order: suppressions index them by line.
    assert sorted(id(c) for c in tree.comments()) == sorted(id(c) for c in m.findall(module, m.Comment()))
    names = [n for n in nodes if isinstance(n, cst.Name)]
    for a, b in zip(names, names[1:]):
        start_a, start_b = positions[a].start, positions[b].start
        assert (start_a.line, start_a.column) < (start_b.line, start_b.column)
        assert tree.before(a, b) and not tree.before(b, a)


def test_an_enclosing_node_starts_before_what_it_holds() -> None:
    module = cst.parse_module("x = f(g(a), b)\ny = 1\n")
    tree = TreeIndex(module)
    outer, inner = tree.calls
    assert tree.before(outer, inner) and not tree.before(inner, outer)
    assert tree.before(inner, module.body[1])
    assert tree.start(outer) < tree.start(inner) < tree.start(module.body[1])


def test_walk_prunes_below_the_root_only() -> None:
    module = cst.parse_module("def f():\n    def g():\n        return 1\n    return 2\n")
    outer = module.body[0]
    returns = [n for n in walk(outer, prune=(cst.FunctionDef,)) if isinstance(n, cst.Return)]
    assert [r.value.value for r in returns] == ["2"]  # type: ignore[union-attr]


def test_comments_of_a_subtree() -> None:
    call = cst.parse_expression("f(a,  # one\n  b)  # not in the call")
    assert [c.value for c in comments(call)] == ["# one"]


def test_checking_a_file_with_a_finding_imports_no_matchers_or_codemod_machinery() -> None:
    # Importing libcst.matchers costs more than analysing a file; only fixing may.
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from pinfix.config import Config\n"
        "from pinfix.engine import Mode, process_source\n"
        "src = b'import torch\\n\\ndef f(a, b):\\n    b.copy_(torch.from_numpy(a), non_blocking=True)\\n'\n"
        "report = process_source('m.py', src, Config(), Mode())\n"
        "print(len(report.diagnostics), 'libcst.matchers' in sys.modules, 'libcst.codemod' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "False", "False"]


def test_definition_lines_pair_each_def_with_its_line() -> None:
    source = EVERY_SHAPE.encode() + b"\ntry:\n    def g(): pass\nexcept E:\n    class K: pass\n"
    module = cst.parse_module(source)
    tree = TreeIndex(module)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    lines = definition_lines(tree.definitions, source)
    assert len(lines) == len(tree.definitions) >= 5
    for node in tree.definitions:
        assert lines[id(node)] == positions[node.name].start.line


def test_definition_lines_refuse_another_source() -> None:
    module = cst.parse_module("def f():\n    pass\n")
    tree = TreeIndex(module)
    assert definition_lines(tree.definitions, b"def g():\n    pass\n") == {}
    assert definition_lines(tree.definitions, b"def f(:\n") == {}
