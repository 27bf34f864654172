"""What deep mode keeps in memory for a run: one copy of what is the same, nothing made
before it is needed. Each test measures the bytes allocated (``tracemalloc`` counts
them exactly, whatever the machine's load) or the objects kept."""

import io
import json
import textwrap
import tracemalloc
from pathlib import Path

from pinfix.cli import main
from pinfix.semantic.source import SourceText
from pinfix.semantic.values import CPU, PAGEABLE, Tensor, Value, join


def _allocated(make) -> int:  # type: ignore[no-untyped-def]
    """Bytes still allocated after ``make()``, its result kept."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = make()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert kept is not None
    return after - before


def test_line_starts_are_machine_integers() -> None:
    text = "x = 1\n" * 20000
    size = _allocated(lambda: SourceText(text, "<string>"))
    # A list of int objects took ~36 bytes a line; an array of 64-bit integers takes 8.
    assert size < 20000 * 16, size
    src = SourceText(text, "<string>")
    assert src.line_text(3) == "x = 1" and src.offset(20000, 0) == 6 * 19999


def test_a_values_keys_are_made_when_first_asked_for() -> None:
    atom = Tensor(CPU, PAGEABLE)
    size = _allocated(lambda: [Value((atom,)) for _ in range(10000)])
    # With its set of keys made at once, each value took ~270 bytes.
    assert size < 10000 * 120, size
    one, two = Value((atom,)), Value((Tensor(CPU, PAGEABLE),))
    assert one.keys == frozenset({atom.key}) and one.keys is one.keys
    assert join(one, two) is one  # the same key: nothing added


def test_deep_answers_that_read_the_same_modules_share_one_set_of_reads(tmp_path: Path) -> None:
    from pinfix.semantic.deep import project as deep_project

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import torch\n\n\ndef make():\n    return torch.zeros(4)\n")
    (pkg / "b.py").write_text(
        textwrap.dedent(
            """\
            from pkg.a import make


            def one(dev):
                return make().to(dev, non_blocking=True)


            def two(dev):
                return make().to(dev, non_blocking=True)


            def three(dev):
                x = make()
                return x.to(dev, non_blocking=True)
            """
        )
    )
    code = main(["check", "--no-progress", "--no-cache", "--deep", "-j", "1", str(pkg)], out=io.StringIO())
    assert code == 1
    (project,) = deep_project._PROJECTS.values()
    sets = list(project._reads.values())
    assert len(sets) > len(set(sets))  # answers that read the same modules
    assert len({id(s) for s in sets}) == len(set(sets))  # ... share one set
    # ... kept as a tuple (a frozenset's table is mostly empty slots), one per distinct set
    assert all(type(s) is tuple for s in sets)
    assert len({frozenset(s) for s in sets}) == len({id(s) for s in sets})
    reads = [what for s in sets for what in s if what.startswith("f:")]
    assert len({id(what) for what in reads}) == len(set(reads))  # each module's read made once


def test_a_functions_graph_keeps_no_empty_set_a_statement() -> None:
    import ast

    from pinfix.semantic.scope import ModuleInfo
    from pinfix.semantic.slices import Graph

    text = "def f(a):\n" + "".join(f"    x{i} = a + {i}\n" for i in range(2000)) + "    return x0\n"
    module = ModuleInfo(SourceText(text, "<string>"), ast.parse(text))
    (func,) = [f for f in module.functions.values() if f.name == "f"]
    graph = Graph(func, False)
    size = _allocated(lambda: Graph(func, False))
    # Six sets a statement (most of them empty) took ~1,500 bytes a statement.
    assert size < 2001 * 700, size
    assert [u.first for u in graph.seeds(("returns",))] == [2002]
    assert len(graph.slice(("returns",)).statements) == 2  # the return, and what binds x0


def test_deep_keeps_only_the_values_asked_of_a_modules_names(tmp_path: Path) -> None:
    """A module-level name's binding keeps its value, not what every other name of the
    module body held (20 KB a question on vLLM), and the evaluations made for project
    questions keep no local names at all (nothing reads them)."""
    from pinfix.semantic.deep import project as deep_project
    from pinfix.semantic.facts import FunctionFacts

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    names = "".join(f"N{i} = torch.zeros({i})\n" for i in range(50))
    (pkg / "a.py").write_text(
        "import torch\n\n"
        + names
        + "BUF = torch.zeros(4)\n\n\nclass Holder:\n    def __init__(self):\n        n = 4\n"
        + "        self.buf = torch.zeros(n)\n"
    )
    (pkg / "b.py").write_text(
        "from pkg import a\nfrom pkg.a import Holder\n\n\ndef one(dev):\n    return Holder().buf.to(dev, non_blocking=True)\n\n\n"
        "def two(dev):\n    return a.BUF.to(dev, non_blocking=True)\n"
    )
    out = io.StringIO()
    code = main(
        ["check", "--no-progress", "--no-cache", "--deep", "-j", "1", "--output-format", "json", str(pkg)], out=out
    )
    assert code == 1
    assert sorted(f["line"] for f in json.loads(out.getvalue())["findings"]) == [6, 10]
    (project,) = deep_project._PROJECTS.values()
    kept = [v for ctx in project.contexts.values() for v in ctx.bindings.values()]
    assert kept and all(isinstance(v, Value) for v in kept if v is not None)
    evaluated = [f for f in (*project.own.values(), *project.refined.values()) if isinstance(f, FunctionFacts)]
    assert evaluated and all(not f.all_values for f in evaluated)
