"""The import contract: layers import downward only, and no private name crosses a module.

data -> engine -> rules -> fixes -> shell -> front ends. A module may import
pinfix modules of its own layer or below, never above (type-checking imports
included: they are dependencies too); nothing imports ``_private`` names from
another pinfix module.
"""

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from tests.support import REPO

LAYERS: List[Tuple[str, Tuple[str, ...]]] = [
    ("data", ("pinfix", "pinfix.effects", "pinfix.settings", "pinfix.edits", "pinfix.findings", "pinfix.regular")),
    ("engine", ("pinfix.semantic", "pinfix.prefilter")),
    ("rules", ("pinfix.rules",)),
    ("fixes", ("pinfix.fixes", "pinfix.imports", "pinfix.layout", "pinfix.style")),
    (
        "shell",
        (
            "pinfix.engine",
            "pinfix.pipeline",
            "pinfix.project",
            "pinfix.suppression",
            "pinfix.files",
            "pinfix.writing",
            "pinfix.cache",
            "pinfix.deepcache",
            "pinfix.config",
            "pinfix.output",
            "pinfix.api",
            "pinfix.settings_table",
        ),
    ),
    ("front ends", ("pinfix.cli", "pinfix.__main__", "pinfix.docs", "lint_rules", "codemods", "pinfix.runtime", "pinfix.lint_rules", "pinfix.codemods")),
]


def layer_of(module: str) -> Optional[int]:
    best: Optional[Tuple[int, int]] = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (rank, len(prefix))
    return best[0] if best is not None else None


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
    {"narrow", "refinements", "availability", "settled", "value_of_test", "tested_cpu", "memory_test", "truth_of", "preconditions"}
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
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.lstrip("_") in REFINING_FUNCTIONS:
                bad.append(f"{where}:{node.lineno}: defines {node.name}")
        if not name.startswith("pinfix.semantic."):
            continue
        nested = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f) if n is not f}
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
