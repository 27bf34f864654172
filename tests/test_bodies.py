"""Function bodies deep mode reads when first used (``pinfix.semantic.bodies``): a body
parsed again is the body the module's parse gave, node for node and position for
position; only what nothing evaluated stays unread; findings do not change."""

import ast
import io
import json
import textwrap
from pathlib import Path
from typing import List

import pytest

from pinfix.cli import main
from pinfix.semantic.bodies import UnreadBody, reparsed_body
from pinfix.semantic.scope import ModuleInfo
from pinfix.semantic.source import SourceText

#: Defs as modules write them: at the top level, as methods, under an `if`, async,
#: decorated, on one line, with a string whose lines start anywhere, with tabs, with
#: characters outside ASCII (columns are UTF-8 bytes), with a comment after the body.
SOURCE = '''\
import torch


@decorator(1,
           2)
def top(a, b=3):
    """Doc."""
    x = torch.zeros(a)
    return x.to(b, non_blocking=True)


class Holder:
    size = 4

    def method(self, n):
        self.buf = torch.empty(n)
        text = """
no indent
        deep indent
"""
        return text

    async def waits(self):
        await self.other()  # a comment
        # a comment after the body


if TYPE_CHECKING:
    def typed(x): return x + 1


def unicode_names():
    café = "é" ; naïve = café
    return naïve


def gen():
    yield torch.ones(2)


def outer():
    def inner():
        return 1
    return inner


def with_lambda():
    f = lambda v: v.to("cuda", non_blocking=True)
    return f
'''


def _defs(tree: ast.AST) -> List[ast.AST]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize("lead", ["", "# a line above\n" * 400])
@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"])
def test_a_body_parsed_again_is_the_first_parse_node_for_node(
    line_end: str, lead: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Near the top, a def's lines are parsed below as many empty lines; far down (more
    # lines above it than it has characters), parsed alone and shifted: the same nodes,
    # from its own lines, never from the whole text.
    from pinfix.semantic import bodies

    text = (lead + SOURCE).replace("\n", line_end)
    text = text.replace(
        "if TYPE_CHECKING:" + line_end + "    def typed", "if TYPE_CHECKING:" + line_end + "\tdef typed"
    )
    src = SourceText.from_bytes(text.encode("utf-8"), "<test>")
    tree = src.parse()
    defs = _defs(tree)
    assert len(defs) == 9
    parsed: List[int] = []
    real_parse = ast.parse
    monkeypatch.setattr(bodies.ast, "parse", lambda source, *a, **k: parsed.append(len(source)) or real_parse(source))
    for node in defs:
        again = reparsed_body(node, src, node.body[0].col_offset)
        assert [ast.dump(s, include_attributes=True) for s in again] == [
            ast.dump(s, include_attributes=True) for s in node.body
        ], node.name
    assert len(parsed) == len(defs) and max(parsed) < len(text) - len(lead) // 2


def test_a_body_whose_lines_do_not_parse_alone_is_found_in_the_whole_text() -> None:
    src = SourceText.from_bytes(SOURCE.encode("utf-8"), "<test>")
    tree = src.parse()
    method = next(n for n in _defs(tree) if n.name == "method")
    # A column the def's own lines do not give: the whole text is parsed instead.
    again = reparsed_body(method, src, column=99)
    assert [ast.dump(s, include_attributes=True) for s in again] == [
        ast.dump(s, include_attributes=True) for s in method.body
    ]


def test_deferred_bodies_are_read_when_first_used() -> None:
    src = SourceText.from_bytes(SOURCE.encode("utf-8"), "<test>")
    tree = src.parse()
    first = {n.name: [ast.dump(s, include_attributes=True) for s in n.body] for n in _defs(tree)}
    module = ModuleInfo(src, tree)
    starts = {f.name: f.body_line for f in module.functions.values()}
    stores = {f.name: f.attribute_stores for f in module.functions.values()}
    assert module.defer_bodies() == 8  # every def but `outer`, which holds a def
    by_name = {f.name: f for f in module.functions.values()}
    assert not isinstance(by_name["outer"].node.body, UnreadBody)
    assert isinstance(by_name["inner"].node.body, UnreadBody)
    # What the index asks of a body is answered without reading it: where it starts,
    # whether it stores an attribute (its lines say the name or not), whether it yields.
    assert {f.name: f.body_line for f in module.functions.values()} == starts
    for f in module.functions.values():
        for attr in ("buf", "size", "other", "cuda"):
            assert f.stores_attribute(attr) == (attr in stores[f.name]), (f.name, attr)
    assert stores["method"] == frozenset({"buf"})
    assert not by_name["top"].is_generator  # its text says no `yield`
    assert all(
        isinstance(by_name[n].node.body, UnreadBody) and not by_name[n].node.body.read for n in ("top", "method")
    )
    # Each way of looking into a body reads it, and it is then the body the first parse gave.
    looks = {
        "top": lambda b: list(b),
        "method": lambda b: b[0],
        "waits": lambda b: len(b),
        "typed": lambda b: list(reversed(b)),
        "unicode_names": lambda b: [0] + b,
        "gen": lambda b: b.index(b[0]),
        "with_lambda": lambda b: bool(b),
        "inner": lambda b: b == [],
    }
    for name, look in looks.items():
        body = by_name[name].node.body
        assert isinstance(body, UnreadBody) and not body.read
        look(body)
        assert body.read, name
        assert type(by_name[name].node.body) is list  # later readers get a plain list
        assert [ast.dump(s, include_attributes=True) for s in body] == first[name], name
        assert [ast.dump(s, include_attributes=True) for s in by_name[name].node.body] == first[name]
    assert by_name["gen"].is_generator and not by_name["with_lambda"].is_generator
    assert module.defer_bodies() == 0  # read bodies are kept from then on


def _package(root: Path) -> Path:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(
        textwrap.dedent(
            """\
            import numpy as np
            import torch


            def make(n):
                return torch.from_numpy(np.zeros(n))


            def pinned(n):
                return torch.empty(n, pin_memory=True)


            def unused(n):
                values = [torch.zeros(i) for i in range(n)]
                return sum(v.sum() for v in values)


            class Buffers:
                def __init__(self, n):
                    self.host = torch.zeros(n)
                    self.ready = torch.empty(n, pin_memory=True)

                def never_called(self):
                    return self.host.numpy()
            """
        )
    )
    (pkg / "use.py").write_text(
        textwrap.dedent(
            """\
            from pkg.helpers import Buffers, make, pinned


            def copy(dev, n):
                a = make(n).to(dev, non_blocking=True)
                b = pinned(n).to(dev, non_blocking=True)
                return a, b


            def buffers(bufs: Buffers, dev):
                bufs.host.to(dev, non_blocking=True)
                bufs.ready.to(dev, non_blocking=True)
            """
        )
    )
    return pkg


def _findings(pkg: Path) -> list:
    out = io.StringIO()
    code = main(
        ["check", "--no-progress", "--no-cache", "--deep", "-j", "1", "--output-format", "json", str(pkg)], out=out
    )
    assert code == 1
    return json.loads(out.getvalue())["findings"]


def test_deep_mode_reads_only_the_bodies_it_evaluates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pinfix.semantic.deep import project as deep_project

    pkg = _package(tmp_path)
    found = _findings(pkg)
    assert sorted((Path(f["path"]).name, f["line"]) for f in found) == [("use.py", 5), ("use.py", 11)]
    (project,) = deep_project._PROJECTS.values()
    helpers = next(m for m in project.modules.values() if m is not None and m.path.name == "helpers.py")
    unread = {f.name for f in helpers.functions.values() if isinstance(f.node.body, UnreadBody)}
    # What the copies led to was read; what nothing asked about was not.
    assert unread == {"unused", "never_called"}

    # The same findings, evidence and all, with every body kept as first parsed.
    monkeypatch.setattr(ModuleInfo, "defer_bodies", lambda module: 0)
    assert _findings(pkg) == found


def test_an_attribute_spelt_otherwise_is_still_found_in_an_unread_body() -> None:
    # Python reads identifiers in NFKC form: `self.ﬁle` (a ligature) stores `file`.
    text = "class C:\n    def set(self, x):\n        self.\ufb01le = x\n\n    def other(self):\n        return 1\n"
    src = SourceText.from_bytes(text.encode("utf-8"), "<test>")
    module = ModuleInfo(src, src.parse())
    assert module.defer_bodies() == 2
    by_name = {f.name: f for f in module.functions.values()}
    assert by_name["set"].stores_attribute("file")
    assert not by_name["other"].stores_attribute("file")
    assert not by_name["set"].node.body.read and not by_name["other"].node.body.read


def test_many_attributes_asked_of_one_unread_body_read_its_text_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each look for an attribute in an unread body's text scans its lines: past a few,
    # its stores are read from one parse, so asking for n attributes stays linear.
    from pinfix.semantic import scope

    text = "class C:\n    def set(self, x):\n" + "".join(f"        self.a{i} = x\n" for i in range(300))
    module = ModuleInfo(SourceText(text, "<test>"), ast.parse(text))
    module.defer_bodies()
    (method,) = [f for f in module.functions.values() if f.name == "set"]
    scans = []
    real = ModuleInfo.lines_say
    monkeypatch.setattr(ModuleInfo, "lines_say", lambda self, node, word: scans.append(word) or real(self, node, word))
    asked = [f"b{i}" for i in range(200)] + [f"a{i}" for i in range(300)]
    assert [method.stores_attribute(a) for a in asked] == [a.startswith("a") for a in asked]
    assert len(scans) == 1 + scope.MAX_TEXT_LOOKUPS  # `register_buffer` once, then the name each look
    assert not method.node.body.read  # answered from a parse not kept


def test_a_buffer_name_spelt_otherwise_in_an_unread_body_is_still_found() -> None:
    text = (
        "class C:\n    def a(self, t):\n        self.register_buffer('x' 'y', t)\n\n"
        "    def b(self, t):\n        self.register_buffer('\\x78y', t)\n\n    def c(self, t):\n        return t\n"
    )
    assert "xy" not in text
    module = ModuleInfo(SourceText(text, "<test>"), ast.parse(text))
    module.defer_bodies()
    by_name = {f.name: f for f in module.functions.values()}
    assert by_name["a"].stores_attribute("xy") and by_name["b"].stores_attribute("xy")
    assert not by_name["c"].stores_attribute("xy")
