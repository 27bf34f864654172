"""Module summaries (deep mode's plain data, one parse each) and their store."""

import ast
import marshal
from pathlib import Path

from pinfix.semantic.deep.store import SummaryStore, summary_key
from pinfix.semantic.deep.summary import FORMAT, from_data, summarize, to_data

MODULE = """
from . import sibling
from ..core import helpers as h
import numpy as np
import torch.cuda

__all__ = ["Runner", "send"]


class Runner(base.Engine, Generic[T]):
    buf: int = 0
    limit = 3

    def __init__(self, n):
        self.host = np.zeros(n)
        other.seen = True

    def step(self, t, non_blocking):
        yield h.move(t, True, non_blocking=non_blocking)


def send(x, dev, flag=False):
    flag = not flag
    return x.to(dev, non_blocking=flag), sibling.put(x, dev, flag)
"""


def summary():
    return summarize(ast.parse(MODULE), "pkg.sub.mod", False)


def test_a_summary_resolves_imports_and_says_what_the_module_defines() -> None:
    s = summary()
    assert s.name == "pkg.sub.mod" and not s.is_package
    assert dict(s.imports) == {"sibling": "pkg.sub.sibling", "h": "pkg.core.helpers", "np": "numpy", "torch": "torch"}
    assert s.exports == ("Runner", "send")
    (cls,) = s.classes
    assert (cls.qualname, cls.bases, cls.methods, cls.fields) == (
        "Runner",
        ("base.Engine", "Generic"),
        ("__init__", "step"),
        ("buf",),
    )
    assert cls.self_attributes == ("host",) and {"buf", "limit", "step"} <= set(cls.body_attributes)
    functions = {f.qualname: f for f in s.functions}
    assert functions["Runner.step"].generator and not functions["send"].generator
    assert functions["send"].params == ("x", "dev", "flag")
    # `self.host = ...` is the method's own; `other.seen = ...` is made from outside.
    assert {(st.receiver, st.attr, st.outside) for st in s.stores} == {("self", "host", False), ("other", "seen", True)}
    assert {"Runner", "np", "zeros", "non_blocking"} <= set(s.words)


def test_a_call_site_says_what_each_argument_passes_on() -> None:
    calls = {c.callee: c for c in summary().calls}
    move = calls["h.move"]
    assert (move.scope, move.name, move.target) == ("Runner.step", "move", "pkg.core.helpers.move")
    assert move.passed == (("0", "t"), ("non_blocking", "non_blocking")) and move.bools == (("1", True),)
    assert move.non_blocking == "non_blocking"
    # `flag` is rebound before the calls: it is not passed on unchanged.
    assert (
        calls["sibling.put"].passed == (("0", "x"), ("1", "dev"))
        and calls["sibling.put"].target == "pkg.sub.sibling.put"
    )
    assert calls["x.to"].non_blocking == "flag" and calls["x.to"].target == ""


def test_a_summary_is_plain_data_with_its_format() -> None:
    s = summary()
    data = to_data(s)
    assert data[0] == FORMAT
    assert from_data(marshal.loads(marshal.dumps(data))) == s
    assert from_data((FORMAT + 1, *data[1:])) is None  # another format is never read
    assert from_data("not a summary") is None


def test_the_store_parses_a_module_once_and_keeps_it_by_its_content(tmp_path: Path) -> None:
    def write(directory: Path, name: str, data: bytes) -> None:
        (directory / name).write_bytes(data)

    data = MODULE.encode()
    first = SummaryStore()
    first.use_directory(tmp_path, write)
    assert first.get(data, "pkg.sub.mod", False) == summary()
    assert first.get(data, "pkg.sub.mod", False) is not None and first.parsed == 1  # memoised
    kept = list(tmp_path.rglob("*.summary"))
    assert [p.name for p in kept] == [summary_key(data, "pkg.sub.mod", False) + ".summary"]
    second = SummaryStore()  # another run: read back, not parsed
    second.use_directory(tmp_path, write)
    assert second.get(data, "pkg.sub.mod", False) == summary() and (second.parsed, second.loaded) == (0, 1)
    # Another name (relative imports resolve from it) or other bytes: another summary.
    assert second.get(data, "pkg.mod", False) != summary() and second.parsed == 1
    assert second.get(b"x = (", "pkg.bad", False) is None  # Python cannot parse it
    # Without a directory nothing is written.
    SummaryStore().get(b"y = 1\n", "m", False)
    assert len(list(tmp_path.rglob("*.summary"))) == 2


def test_the_index_answers_from_syntax_for_every_module_that_says_it(tmp_path: Path) -> None:
    """The reverse indexes are exact and whole: every one of twenty modules calling
    ``make`` is listed (the text search stopped at sixteen files), a comment or a
    string saying the name is not a call, and a method call, a store from outside
    and a base class each land in their own table."""
    from pinfix.semantic.deep.index import BASES, CALLS, METHOD_CALLS, OWN_STORES, STORES, ProjectIndex

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text(
        "def make():\n    return 1\n\n\nclass Base:\n    def __init__(self):\n        self.buf = 0\n"
    )
    for i in range(20):
        (pkg / f"user{i}.py").write_text(f"from .core import make as build\n\n\ndef f{i}():\n    return build()\n")
    (pkg / "words.py").write_text("# make() here is a comment\nTEXT = 'make()'\n")
    (pkg / "other.py").write_text(
        "from .core import Base\n\n\nclass Child(Base):\n    pass\n\n\ndef g(obj):\n    obj.make()\n    obj.buf = 2\n"
    )
    index = ProjectIndex()
    callers = dict(index.find([tmp_path], CALLS, "make"))
    assert sorted(p.name for p in callers) == sorted(f"user{i}.py" for i in range(20))
    assert all(lines == (5,) for lines in callers.values())
    assert [(p.name, lines) for p, lines in index.find([tmp_path], METHOD_CALLS, "make")] == [("other.py", (9,))]
    assert [(p.name, lines) for p, lines in index.find([tmp_path], STORES, "buf")] == [("other.py", (10,))]
    assert [(p.name, lines) for p, lines in index.find([tmp_path], OWN_STORES, "buf")] == [("core.py", (7,))]
    assert [(p.name, lines) for p, lines in index.find([tmp_path], BASES, "Base")] == [("other.py", (4,))]


def test_child_nodes_are_the_children_ast_gives_in_its_order() -> None:
    """The engine's walks (and the summaries made from them) depend on the order children
    come in: the same list as ``ast.iter_child_nodes``, for every kind of node, including
    lists holding ``None`` (a ``**`` in a dict) or names (``global``), and patterns."""
    import ast

    from pinfix.semantic.scope import child_nodes

    source = (
        "from __future__ import annotations\n"
        "import a.b as c\n"
        "x: int = {**d, 'k': [i async for i in g() if i], **e}\n"
        "@dec(1)\n"
        "async def f(p, /, q=1, *r, s, t=2, **u) -> 'T':\n"
        "    global x\n"
        "    nonlocal_free = lambda v=x: (yield v)\n"
        "    async with m() as (n, o), w:\n"
        "        try:\n"
        "            del n[0], o.attr\n"
        "        except* (E1, E2) as err:\n"
        "            raise X from err\n"
        "        finally:\n"
        "            assert p, f'{q!r:>{s}}'\n"
        "    match p:\n"
        "        case {'a': [1, *rest], **kw} | C(x=1, y=_) if q:\n"
        "            return q if r else s\n"
        "        case (1 | 2) as one:\n"
        "            pass\n"
        "class K(B, metaclass=M):\n"
        "    z = p[1:2, ::3]\n"
        "    def g(self): return not -self.z @ (a := 2)\n"
    )
    nodes = list(ast.walk(ast.parse(source)))
    assert {type(n).__name__ for n in nodes} >= {"MatchMapping", "MatchClass", "TryStar", "Global", "Dict", "JoinedStr"}
    for node in nodes:
        assert child_nodes(node) == list(ast.iter_child_nodes(node)), ast.dump(node)[:80]
