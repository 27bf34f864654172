"""The import contract: layers import downward only, and no private name crosses a module.

data -> engine -> rules -> fixes -> shell -> front ends. A module may import
pinfix modules of its own layer or below, never above (type-checking imports
included: they are dependencies too); nothing imports ``_private`` names from
another pinfix module. Every module is listed by name (``pkg.*`` lists a
package and everything in it), every listed name exists, the engine's own
modules have an order of their own, and no modules import each other in a
cycle (today's one is listed, to be removed).
"""

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from pinfix.layers import KNOWN_CYCLES, LAYERS, SEMANTIC_ORDER
from tests.support import REPO


def _listed(module: str, entry: str) -> bool:
    if entry.endswith(".*"):
        return module == entry[:-2] or module.startswith(entry[:-1])
    return module == entry


def layer_of(module: str) -> Optional[int]:
    found = [rank for rank, (_, entries) in enumerate(LAYERS) for entry in entries if _listed(module, entry)]
    assert len(found) <= 1, (module, found)
    return found[0] if found else None


def modules() -> Iterator[Tuple[str, Path]]:
    for top in ("pinfix", "lint_rules", "codemods"):
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), path


def imports(name: str, path: Path) -> Iterator[Tuple[str, List[str], int]]:
    """``(imported module, names, line)`` of every import in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            yield target, names, node.lineno
            for alias in node.names:  # `from . import x` may name a module
                yield f"{target}.{alias.name}", [], node.lineno


def test_every_module_has_a_layer() -> None:
    assert [m for m, _ in modules() if layer_of(m) is None] == []
    # Listed by name: a new module of pinfix is in no layer until someone puts it in one.
    assert layer_of("pinfix.newly_added") is None and layer_of("pinfix") == 0


def test_every_listed_module_exists() -> None:
    own = {m for m, _ in modules()}
    entries = [entry for _, listed in LAYERS for entry in listed] + list(SEMANTIC_ORDER)
    assert [entry for entry in entries if not any(_listed(m, entry) for m in own)] == []


def dependencies() -> Dict[str, set]:
    """Each module -> the modules of this repository it imports (``from pkg import
    sub`` is an import of ``pkg.sub``, not of ``pkg``'s ``__init__``)."""
    own = dict(modules())
    graph: Dict[str, set] = {}
    for name, path in own.items():
        graph[name] = set()
        for target, names, _ in imports(name, path):
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in own]
            if target in own and target != name and len(subs) < len(names):
                graph[name].add(target)
            graph[name].update(s for s in subs if s != name)
            if target in own and target != name and not names:
                graph[name].add(target)
    return graph


def cycles(graph: Dict[str, set]) -> List[frozenset]:
    """The strongly connected groups of more than one module (iterative Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    on_stack: set = set()
    stack: List[str] = []
    found: List[frozenset] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(frozenset(group))
    return found


def test_no_modules_import_each_other_in_a_cycle() -> None:
    assert sorted(map(sorted, cycles(dependencies()))) == sorted(map(sorted, KNOWN_CYCLES))
    # The check finds a cycle inside a layer, and one of three.
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [frozenset({"a", "b"})]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [frozenset({"a", "b", "c"})]


def test_the_engine_modules_import_in_their_own_order() -> None:
    rank = {name: i for i, name in enumerate(SEMANTIC_ORDER)}
    assert sorted(m for m, _ in modules() if m.startswith("pinfix.semantic")) == sorted(SEMANTIC_ORDER)
    known = {tuple(sorted(c)) for c in KNOWN_CYCLES}
    bad = [
        f"{name} imports {dep}"
        for name, deps in dependencies().items()
        if name in rank
        for dep in deps
        if dep in rank and rank[dep] > rank[name] and tuple(sorted((name, dep))) not in known
    ]
    assert bad == []


def test_layers_import_downward_only() -> None:
    bad = []
    for name, path in modules():
        mine = layer_of(name)
        assert mine is not None
        for target, _, line in imports(name, path):
            theirs = layer_of(target)
            if theirs is not None and theirs > mine and not (target == "pinfix" or target.startswith("pinfix.__")):
                bad.append(f"{path.relative_to(REPO)}:{line}: {LAYERS[mine][0]} imports {target} ({LAYERS[theirs][0]})")
    assert bad == []


def test_no_private_name_crosses_a_module() -> None:
    bad = []
    own = {m for m, _ in modules()}
    for name, path in modules():
        for target, names, line in imports(name, path):
            if target not in own and layer_of(target) is None:
                continue
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    bad.append(f"{path.relative_to(REPO)}:{line}: imports {target}.{n}")
    assert bad == []


#: What rules may import of the engine: its facts and its values, nothing else.
RULES_READ = frozenset({"pinfix.semantic.facts", "pinfix.semantic.values"})


def test_rules_import_only_facts_and_values() -> None:
    """Rules only ask: they read the engine's facts and values, and plan no fix
    (:mod:`pinfix.fixes` imports the rules, not the reverse)."""
    bad = []
    for name, path in modules():
        if not name.startswith("pinfix.rules"):
            continue
        for target, _, line in imports(name, path):
            read = target == "pinfix.semantic" or any(target == m or target.startswith(m + ".") for m in RULES_READ)
            engine = target.startswith("pinfix.semantic") and not read
            if engine or target.startswith("pinfix.fixes"):
                bad.append(f"{path.relative_to(REPO)}:{line}: imports {target}")
    assert bad == []


def test_no_module_reads_a_name_out_of_a_message() -> None:
    """A step says the name it is about (``Step.name``): no code splits a message's
    words to find it again."""
    bad = []
    for name, path in modules():
        for node in ast.walk(ast.parse(path.read_bytes())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "split"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "message"
            ):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert bad == []


def test_every_front_end_chooses_fixes_one_way() -> None:
    """Analyse -> choose fixes by applicability -> apply is one function
    (:func:`pinfix.fixes.fix_findings`): no shell module or front end compares a fix's
    applicability itself or calls the applier with fixes it chose."""
    shell = LAYER_NAMES["shell"]
    bad = []
    for name, path in modules():
        if (layer_of(name) or 0) < shell:
            continue
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Compare) and any(
                isinstance(n, ast.Attribute) and n.attr == "applicability" for n in ast.walk(node)
            ):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: compares an applicability")
            if (
                isinstance(node, (ast.Name, ast.alias))
                and getattr(node, "id", getattr(node, "name", None)) == "apply_fixes"
            ):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: applies fixes it chose")
    assert bad == []


#: Public names two modules define today, each meaning its own thing (to be renamed;
#: none may be added): the API's parse error and the engine's, the settings' rule
#: codes and the rule objects, the runtime modes. (Deep mode's ``Project`` is ``DeepProject``.)
SHARED_NAMES = frozenset({"SourceError", "RULES", "MODES"})


def test_a_public_name_says_one_thing() -> None:
    """No two modules define a class or constant of the same public name (two
    ``Slice`` classes, ``MAX_NESTING`` as container depth here and syntax depth
    there), and none defines a name of :mod:`typing` (a ``Dict`` value class forced
    ``DictAtom`` aliases wherever ``typing.Dict`` was needed too)."""
    import typing

    defined: Dict[str, List[str]] = {}
    for name, path in modules():
        for node in ast.parse(path.read_bytes()).body:
            targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
            found = (
                [node.name]
                if isinstance(node, ast.ClassDef)
                else [t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()]
            )
            for n in found:
                if not n.startswith("_"):
                    defined.setdefault(n, []).append(name)
    twice = {n: where for n, where in defined.items() if len(where) > 1 and n not in SHARED_NAMES}
    assert twice == {}
    assert sorted(n for n in defined if n in typing.__all__) == []
    # The list of names still shared shrinks as they are renamed: it never names one defined once.
    assert sorted(n for n in SHARED_NAMES if len(defined.get(n, [])) < 2) == []


def test_the_check_path_imports_no_libcst() -> None:
    """Checking reads the stdlib ``ast``; LibCST is loaded only where a fix is written."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pinfix.api import check_text\n"
        "check_text('import torch\\n\\ndef f(a, d):\\n    return torch.from_numpy(a).to(d, non_blocking=True)\\n')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('libcst', 'torch', 'fixit')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.strip() == "[]"


LAYER_NAMES: Dict[str, int] = {name: rank for rank, (name, _) in enumerate(LAYERS)}


def test_a_run_whose_files_are_all_ruled_out_loads_neither_rules_nor_analysis(tmp_path: Path) -> None:
    """The pre-commit path over files that cannot hold a finding: the byte pre-filter
    answers, so neither the rules nor the analysis (nor the process pool) is imported."""
    import subprocess
    import sys

    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(f"import torch\n\nx{i} = torch.zeros(3)\n")
    code = (
        "import io, sys\n"
        "from pinfix.cli import main\n"
        f"code = main(['check', '--no-progress', *[{str(tmp_path)!r} + f'/m{{i}}.py' for i in range(3)]], io.StringIO(), io.StringIO())\n"
        "assert code == 0, code\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pinfix.rules', 'pinfix.semantic.', 'concurrent.futures', 'libcst'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.strip() == "[]"


#: What deciding a test's refinements takes: defined in :mod:`pinfix.semantic.narrowing` only.
REFINING_FUNCTIONS = frozenset(
    {
        "narrow",
        "refinements",
        "availability",
        "settled",
        "value_of_test",
        "tested_cpu",
        "memory_test",
        "truth_of",
        "preconditions",
    }
)
#: The spellings of what a test says of a value (tensor tests, class and attribute tests).
TEST_SPELLINGS = frozenset({"is_pinned", "is_cpu", "is_cuda", "isinstance", "hasattr"})


def test_only_the_narrowing_module_refines_a_value_on_a_test() -> None:
    """The narrowing module is the one place a test refines a value: no other module
    defines a refining function or reads a test's spelling, and every function of the
    engine that evaluates a branch's test (``.test``, ``.guard``, ``.ifs``, a ``BoolOp``'s
    parts) hands it to :mod:`pinfix.semantic.narrowing` (or to the loop that does)."""
    bad: List[str] = []
    for name, path in modules():
        if name == "pinfix.semantic.narrowing" or not name.startswith("pinfix."):
            continue
        tree = ast.parse(path.read_bytes())
        where = path.relative_to(REPO)
        for node in ast.walk(tree):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name.lstrip("_") in REFINING_FUNCTIONS
            ):
                bad.append(f"{where}:{node.lineno}: defines {node.name}")
        if not name.startswith("pinfix.semantic."):
            continue
        nested = {
            id(n)
            for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            for n in ast.walk(f)
            if n is not f
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in TEST_SPELLINGS:
                bad.append(f"{where}:{node.lineno}: reads the test spelling {node.value!r}")
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or id(node) in nested:
                continue  # (a nested function is judged with the one it is in)
            inner = list(ast.walk(node))
            evaluates = any(isinstance(n, ast.Attribute) and n.attr == "eval" for n in inner)
            tests = any(isinstance(n, ast.Attribute) and n.attr in ("test", "guard", "ifs") for n in inner)
            parts = node.name == "eval_boolop"
            hands_on = any(isinstance(n, ast.Name) and n.id == "narrowing" for n in inner) or any(
                isinstance(n, ast.keyword) and n.arg == "test" for n in inner
            )
            if evaluates and (tests or parts) and not hands_on:
                bad.append(f"{where}:{node.lineno}: {node.name} evaluates a test without narrowing")
    assert bad == []


def test_the_layout_table_is_made_from_the_contract() -> None:
    """docs/architecture.md's layout table has one row per module, in the layer the
    contract gives it (a module moved to another layer moves in the table)."""
    from pinfix.docs import layout_markdown

    rows = [line.split(" | ") for line in layout_markdown().splitlines()[2:]]
    table = {row[0].strip("|` "): row[1] for row in rows}
    assert len(table) == len(rows)
    expected = {path.relative_to(REPO).as_posix(): LAYERS[layer_of(name)][0] for name, path in modules()}
    assert table == expected
