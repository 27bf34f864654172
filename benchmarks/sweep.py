#!/usr/bin/env python3
"""Sweep ``pinfix fix --unsafe-fixes`` over whole real trees and prove it broke nothing.

For each tree (the vLLM 0.28.0 and 0.34.0 sdists, and the installed ``torch``
package's own sources), the tree is copied to a temporary directory and:

1. every file's bytes are hashed, and ``ruff check --select F,I`` is run over
   every ``*.py`` file pinfix would visit (the baseline);
2. ``pinfix fix --unsafe-fixes --no-progress`` runs over the copy; its stderr
   must hold no traceback, only the summary lines and one-line
   ``PATH: error: REASON`` messages naming existing files, and no "internal
   error" (a crash caught per file);
3. files reported with an error are byte-identical to the original, no file
   appears or disappears (no ``*.pinfix-tmp`` left behind);
4. every changed file parses (``ast.parse``) and compiles, and has no ruff
   F/I diagnostic it did not have before (compared as a multiset of
   ``(rule code, message)``, so moved line numbers do not matter);
5. every changed line is an allowed one (see :func:`allowed_lines`): it holds
   ``from_numpy`` or the helper's name, or belongs to an import statement, or
   is a blank line next to one;
6. a second ``pinfix fix`` changes no byte of any file (idempotence);
7. the project's own checks stay green (vLLM trees): the ruff version the tree pins
   (its ``.pre-commit-config.yaml``, installed into a venv of its own) runs
   ``ruff check`` with the tree's ``[tool.ruff]`` and ``ruff format --check`` before the
   fix over the whole tree and after it on the changed files: no new diagnostic
   (multiset of code and message) and no changed file that was formatted before
   and is not after.

Each vLLM tree is swept in several settings variants (``--variant``): ``default``
(``pinfix fix``), ``unsafe`` (``--unsafe-fixes``), ``vllm`` (the settings the
README recommends for vLLM), ``vllm-unsafe`` (both; what CI runs), ``force-single-line`` and ``isort-black`` (the vLLM
settings plus ``[tool.ruff.lint.isort] force-single-line = true`` or ``[tool.isort]
profile = "black"`` written into the copy's ``pyproject.toml``). The torch tree
is swept with ``unsafe`` only.

Per tree it prints files, findings, fixes, errors, changed files and time, and
exits 1 on any violation (2 when a tree cannot be found or a tool fails).

    python benchmarks/sweep.py                     # all three trees, every variant
    python benchmarks/sweep.py --variant vllm      # one variant (repeatable)
    python benchmarks/sweep.py --tree torch        # one of them
    python benchmarks/sweep.py --path SOME/DIR     # any other tree
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

REPO = Path(__file__).resolve().parent.parent
FETCH_SDIST = REPO.parent / "shared" / "tools" / "fetch-sdist"
DEFAULT_SDIST_DIR = Path(os.environ.get("PINFIX_SDIST_DIR", "/tmp/sdists"))
KNOWN_TREES = ("vllm-0.28.0", "vllm-0.34.0", "torch")

HELPER_NAME = b"np_to_pinned_tensor"
#: ``--h2d-helper``: set in each copied tree's ``[tool.pinfix]`` (``None``: the tree's own settings).
H2D_HELPER: Optional[str] = None
SOURCE_NAME = b"from_numpy"
TMP_SUFFIX = ".pinfix-tmp"

# `pinfix fix --verbose`'s summary: "1 file", "2 files", "1 fix", "2 fixes".
SUMMARY_RE = re.compile(
    r"^pinfix: (?P<files>\d+) files? scanned \((?P<parsed>\d+) parsed; \d+ jobs?\); "
    r"(?:changed|would change) (?P<changed>\d+) files?, (?P<fixes>\d+) fix(?:es)?(?:, (?P<errors>\d+) errors?)?$"
)
LEFT_RE = re.compile(r"^pinfix: (?P<left>\d+) findings? left: .+$")
FIXED_RE = re.compile(r"^pinfix: fixed (?P<path>.+) \(\d+ fix(?:es)?\)$")
ERROR_RE = re.compile(r"^(?P<path>.+?): error: (?P<reason>\S.*)$")


# --- Settings variants ------------------------------------------------------------

#: The settings the README recommends for vLLM.
VLLM_SETTINGS = """\
helper = "vllm.utils.torch_utils.np_to_pinned_tensor"
pin-memory-expr = "is_pin_memory_available()"
pin-memory-import = "vllm.utils.platform_utils.is_pin_memory_available"
h2d-helper = "vllm.utils.torch_utils.async_tensor_h2d"
cpu-tensor-names = ["*_cpu", "*_cpu_tensor"]
"""


@dataclass(frozen=True)
class Variant:
    name: str
    unsafe: bool = False
    #: Lines for the copy's ``[tool.pinfix]``.
    pinfix: str = ""
    #: (table header, lines) written into the copy's ``pyproject.toml``.
    table: Optional[Tuple[str, str]] = None


VARIANTS = {
    v.name: v
    for v in (
        Variant("default"),
        Variant("unsafe", unsafe=True),
        Variant("vllm", pinfix=VLLM_SETTINGS),
        Variant("vllm-unsafe", unsafe=True, pinfix=VLLM_SETTINGS),
        Variant(
            "force-single-line", pinfix=VLLM_SETTINGS, table=("[tool.ruff.lint.isort]", "force-single-line = true")
        ),
        Variant("isort-black", pinfix=VLLM_SETTINGS, table=("[tool.isort]", 'profile = "black"')),
    )
}


def add_to_table(pyproject: Path, header: str, lines: str) -> None:
    """Put ``lines`` into the ``header`` table of ``pyproject`` (made when missing)."""
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    if re.search(rf"^{re.escape(header)}\s*$", text, flags=re.M):
        text = re.sub(rf"^{re.escape(header)}\s*$", lambda m: f"{header}\n{lines}", text, count=1, flags=re.M)
    else:
        text += f"\n{header}\n{lines}\n"
    pyproject.write_text(text, encoding="utf-8")


# --- The project's own ruff --------------------------------------------------------

RUFF_VENVS = Path(os.environ.get("PINFIX_SWEEP_RUFF_DIR", "/tmp/pinfix-sweep-ruff"))


def pinned_ruff_version(tree: Path) -> Optional[str]:
    """The ruff version the tree's pre-commit configuration (or lint requirements) pins."""
    config = tree / ".pre-commit-config.yaml"
    if config.is_file():
        text = config.read_text(encoding="utf-8", errors="replace")
        m = re.search(r"ruff-pre-commit\s*\n\s*rev:\s*(\S+)(?:\s*#\s*frozen:\s*(\S+))?", text)
        if m:
            return (m.group(2) or m.group(1)).lstrip("v")
    for req in sorted(tree.glob("requirements/*.txt")) + [tree / "requirements-lint.txt"]:
        if req.is_file():
            m = re.search(r"^ruff==(\S+)", req.read_text(encoding="utf-8", errors="replace"), flags=re.M)
            if m:
                return m.group(1)
    return None


def project_ruff(version: str) -> str:
    """A ruff of ``version`` in a virtual environment of its own (made once, then reused)."""
    venv = RUFF_VENVS / f"ruff-{version}"
    binary = venv / "bin" / "ruff"
    if binary.exists():
        return str(binary)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"ruff=={version}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not binary.exists():
        raise ToolFailure(f"cannot install ruff=={version}: {proc.stderr.strip()[-500:]}")
    return str(binary)


def project_check(ruff: str, root: Path, files: Sequence[Path]) -> Dict[str, Counter]:
    """The tree's own ``ruff check`` (its configuration, all its rules) on ``files``."""
    return ruff_json(ruff, root, files, [])


def unformatted(ruff: str, root: Path, files: Sequence[Path]) -> Set[str]:
    """Which of ``files`` the tree's own ``ruff format --check`` would reformat."""
    out: Set[str] = set()
    for i in range(0, len(files), 500):
        part = [str(f) for f in files[i : i + 500]]
        proc = subprocess.run(
            [ruff, "format", "--check", "--no-cache", "--", *part],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode not in (0, 1):
            raise ToolFailure(f"project ruff format failed ({proc.returncode}): {proc.stderr.strip()[:2000]}")
        for line in proc.stdout.splitlines():
            if line.startswith("Would reformat: "):
                out.add(Path(root / line[len("Would reformat: ") :]).resolve().relative_to(root.resolve()).as_posix())
    return out


# --- Finding the trees ------------------------------------------------------


def resolve_tree(name: str, sdist_dir: Path) -> Path:
    if name == "torch":
        spec = importlib.util.find_spec("torch")  # locates the package; runs none of it
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("sweep: torch is not installed in this environment")
        return Path(list(spec.submodule_search_locations)[0])
    package, _, version = name.partition("-")
    if not version:
        raise SystemExit(f"sweep: unknown tree {name!r} (known: {', '.join(KNOWN_TREES)}; or use --path)")
    unpacked = sdist_dir / name
    if unpacked.is_dir():
        return unpacked
    if not FETCH_SDIST.exists():
        raise SystemExit(f"sweep: {unpacked} not found and no fetch-sdist tool at {FETCH_SDIST}")
    out = subprocess.run(
        [sys.executable, str(FETCH_SDIST), package, version, str(sdist_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"sweep: fetch-sdist {package} {version} failed: {out.stderr.strip()}")
    return Path(out.stdout.strip().splitlines()[-1])


# --- Snapshots ----------------------------------------------------------------


def snapshot(root: Path) -> Dict[str, str]:
    """Relative path -> sha256 of every regular file (symlinks by their target text)."""
    digest: Dict[str, str] = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                digest[rel] = "link:" + os.readlink(p)
                continue
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            digest[rel] = h.hexdigest()
    return digest


def copy_tree(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


# --- ruff -------------------------------------------------------------------------


class ToolFailure(Exception):
    pass


def ruff_binary() -> str:
    """ruff's own executable (not ``python -m ruff``, which would put the tree on sys.path)."""
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.exists() else (shutil.which("ruff") or "ruff")


def ruff_json(ruff: str, root: Path, files: Sequence[Path], options: Sequence[str]) -> Dict[str, Counter]:
    """Relative path -> Counter of (code, message) from ``ruff check OPTIONS FILES`` (run in ``root``)."""
    result: Dict[str, Counter] = {}
    for i in range(0, len(files), 500):
        part = [str(f) for f in files[i : i + 500]]
        cmd = [ruff, "check", *options, "--no-cache", "--output-format", "json", "--exit-zero", "--", *part]
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ToolFailure(f"ruff failed ({proc.returncode}): {proc.stderr.strip()[:2000]}")
        for item in json.loads(proc.stdout or "[]"):
            rel = Path(item["filename"]).resolve().relative_to(root.resolve()).as_posix()
            result.setdefault(rel, Counter())[(item.get("code"), item["message"])] += 1
    return result


def ruff_diagnostics(root: Path, files: Sequence[Path], isolated: bool) -> Dict[str, Counter]:
    """Relative path -> Counter of (code, message) for ``files`` (all passed explicitly)."""
    return ruff_json(ruff_binary(), root, files, ["--select", "F,I"] + (["--isolated"] if isolated else []))


def ruff_mode(root: Path, probe: Path) -> bool:
    """Whether ruff must run ``--isolated`` (the tree's own ruff config is unusable)."""
    try:
        ruff_diagnostics(root, [probe], isolated=False)
        return False
    except ToolFailure:
        ruff_diagnostics(root, [probe], isolated=True)
        return True


# --- Allowed hunks ---------------------------------------------------------------


def import_lines(tree: ast.AST) -> Set[int]:
    """0-based indices of every line in an ``import``/``from ... import`` statement."""
    lines: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    return lines


def allowed_lines(lines: Sequence[bytes], imports: Set[int], changed: Iterable[int]) -> List[int]:
    """The indices among ``changed`` that are NOT allowed to change.

    A changed (removed or added) line is allowed when
      (a) it contains ``from_numpy`` or the helper's name (the rewritten call), or
          it is a ``pin_memory=`` line (the factory fix; a line that only gains the
          argument is paired with its original in ``check_hunks``), or
      (b) it lies in the span of an import statement of that side of the diff (or, with
          ``--h2d-helper``, of a rewritten ``.to(..., non_blocking=True)`` / helper call), or
      (c) it is blank and the nearest non-blank line above or below it, on that
          side, is an import line (isort's blank line between sections, or the
          blank left when an import block goes).
    """

    def blank(i: int) -> bool:
        return not lines[i].strip()

    def near_import(i: int) -> bool:
        for step in (-1, 1):
            j = i + step
            while 0 <= j < len(lines) and blank(j):
                j += step
            if 0 <= j < len(lines) and j in imports:
                return True
        return False

    bad = []
    for i in changed:
        text = lines[i]
        if SOURCE_NAME in text or HELPER_NAME in text or b"pin_memory=" in text or i in imports:
            continue
        if blank(i) and near_import(i):
            continue
        bad.append(i)
    return bad


_PIN_MEMORY_ARG = re.compile(rb",\s*pin_memory=(?:[\w.]+\(\)|[\w.]+)")


def _without_pin_memory(line: bytes) -> bytes:
    return _PIN_MEMORY_ARG.sub(b"", line)


def call_lines(tree: ast.AST, before: bool) -> Set[int]:
    """0-based lines of the calls the h2d fix rewrites: before, ``X.to(..., non_blocking=True)``
    (and positional ``True``); after, calls of the h2d helper."""
    if H2D_HELPER is None:
        return set()
    name = H2D_HELPER.rpartition(".")[2]
    lines: Set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if before:
            hit = (
                isinstance(f, ast.Attribute)
                and f.attr == "to"
                and (
                    any(k.arg == "non_blocking" for k in node.keywords)
                    or any(isinstance(a, ast.Constant) and a.value is True for a in node.args)
                )
            )
        else:
            hit = isinstance(f, ast.Name) and f.id == name or isinstance(f, ast.Attribute) and f.attr == name
        if hit:
            lines.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    return lines


_FIX_MARKERS = (SOURCE_NAME, HELPER_NAME, b"pin_memory", b"non_blocking", b"async_tensor_h2d")


def fix_statement_lines(tree: ast.AST, lines: Sequence[bytes]) -> Set[int]:
    """0-based lines of the simple statements that hold a fixed call: the fix lays
    them out anew as the project's formatter would (pinfix.layout)."""
    out: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not hasattr(node, "body"):
            span = range(node.lineno - 1, node.end_lineno or node.lineno)
            if any(m in lines[i] for i in span for m in _FIX_MARKERS):
                out.update(span)
    return out


def _statements(tree: ast.AST, lines: Sequence[bytes]) -> List[Tuple[range, bytes]]:
    return [
        (span, b"".join(lines[i] for i in span))
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt) and not hasattr(node, "body")
        for span in [range(node.lineno - 1, node.end_lineno or node.lineno)]
    ]


def _squashed(text: bytes) -> bytes:
    """The statement without layout: no whitespace, no trailing comma before a bracket."""
    flat = re.sub(rb"\s+", b"", text)
    return re.sub(rb",([)\]])", rb"\1", flat)


def pin_memory_statement_lines(
    tree_before: ast.AST, a: Sequence[bytes], tree_after: ast.AST, b: Sequence[bytes]
) -> Set[int]:
    """0-based lines (before the fix) of statements that gained only a ``pin_memory=`` argument
    (PIN002), whatever their new layout."""
    gained = {
        _squashed(_PIN_MEMORY_ARG.sub(b"", text)) for _, text in _statements(tree_after, b) if b"pin_memory=" in text
    }
    return {i for span, text in _statements(tree_before, a) if _squashed(text) in gained for i in span}


def check_hunks(before: bytes, after: bytes, tree_before: ast.AST, tree_after: ast.AST) -> List[str]:
    a = before.splitlines(keepends=True)
    b = after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    removed: List[int] = []
    added: List[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            # PIN002's fix: the same line with a `pin_memory=...` argument added.
            pairs = [(i, j) for i, j in zip(range(i1, i2), range(j1, j2)) if _without_pin_memory(b[j]) == a[i]]
            done_a, done_b = {i for i, _ in pairs}, {j for _, j in pairs}
            removed.extend(i for i in range(i1, i2) if i not in done_a)
            added.extend(j for j in range(j1, j2) if j not in done_b)
            continue
        removed.extend(range(i1, i2))
        added.extend(range(j1, j2))
    problems = []
    spans_a = (
        import_lines(tree_before)
        | call_lines(tree_before, True)
        | fix_statement_lines(tree_before, a)
        | pin_memory_statement_lines(tree_before, a, tree_after, b)
    )
    spans_b = import_lines(tree_after) | call_lines(tree_after, False) | fix_statement_lines(tree_after, b)
    for i in allowed_lines(a, spans_a, removed):
        problems.append(f"removed line {i + 1} is outside the fix: {a[i]!r}")
    for j in allowed_lines(b, spans_b, added):
        problems.append(f"added line {j + 1} is outside the fix: {b[j]!r}")
    return problems


# --- One tree ------------------------------------------------------------------------


@dataclass
class TreeResult:
    name: str
    files: int = 0
    parsed: int = 0
    findings: int = 0
    fixes: int = 0
    errors: int = 0
    changed: int = 0
    seconds: float = 0.0
    second_seconds: float = 0.0
    ruff_isolated: bool = False
    variant: str = "unsafe"
    #: The tree's own ruff: its version, new diagnostics and newly unformatted files (None: not run).
    project_ruff: Optional[str] = None
    new_project_diagnostics: Optional[int] = None
    new_unformatted: Optional[int] = None
    error_reasons: Counter = field(default_factory=Counter)
    violations: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def pinfix_command() -> List[str]:
    """How to start pinfix without putting the swept tree on ``sys.path``: with
    plain ``python -m`` the cwd comes first, and the torch tree's own
    ``multiprocessing`` package would shadow the standard library's."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", "pinfix"]
    script = Path(sys.executable).with_name("pinfix")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pinfix"]


def run_pinfix(tree: Path, jobs: Optional[int], unsafe: bool = True) -> Tuple[subprocess.CompletedProcess, float]:
    cmd = pinfix_command() + ["fix", "--no-progress", "--verbose"] + (["--unsafe-fixes"] if unsafe else [])
    if jobs:
        cmd += ["-j", str(jobs)]
    start = time.perf_counter()
    proc = subprocess.run(cmd + ["."], cwd=tree, capture_output=True, text=True, check=False)
    return proc, time.perf_counter() - start


def parse_stderr(tree: Path, stderr: str, result: TreeResult, label: str) -> Tuple[Optional[re.Match], int, Set[str]]:
    """Checks pinfix's stderr; returns (summary match, findings left, files with errors)."""
    summary = None
    left = 0
    errored: Set[str] = set()
    if "Traceback" in stderr:
        result.violations.append(f"{label}: traceback on stderr:\n{stderr[-3000:]}")
    for line in stderr.splitlines():
        m = SUMMARY_RE.match(line)
        if m:
            summary = m
            continue
        m = LEFT_RE.match(line)
        if m:
            left = int(m.group("left"))
            continue
        if FIXED_RE.match(line):  # each changed file, listed before the summary
            continue
        m = ERROR_RE.match(line)
        if m and os.path.lexists(tree / m.group("path")):
            rel = Path(os.path.normpath(m.group("path"))).as_posix()
            errored.add(rel)
            reason = m.group("reason")
            if reason.startswith("internal error"):
                result.violations.append(f"{label}: crash caught per file: {line}")
            result.error_reasons[re.sub(r"\d+", "N", reason.split(":")[0])] += 1
            continue
        result.violations.append(f"{label}: unexpected stderr line (not a clean one-line message): {line!r}")
    if summary is None:
        result.violations.append(f"{label}: no summary line on stderr")
    return summary, left, errored


def sweep_tree(
    name: str,
    source: Path,
    jobs: Optional[int],
    keep: bool,
    max_show: int,
    variant: Variant = VARIANTS["unsafe"],
    own_checks: bool = False,
) -> TreeResult:
    global H2D_HELPER
    result = TreeResult(name, variant=variant.name)
    workdir = Path(tempfile.mkdtemp(prefix=f"pinfix-sweep-{name}-"))
    tree = workdir / "tree"
    saved_h2d = H2D_HELPER
    try:
        copy_tree(source, tree)
        pinfix_lines = variant.pinfix
        if H2D_HELPER is not None and "h2d-helper" not in pinfix_lines:
            pinfix_lines += f'h2d-helper = "{H2D_HELPER}"\n'
        m = re.search(r'h2d-helper = "([^"]+)"', pinfix_lines)
        H2D_HELPER = m.group(1) if m else H2D_HELPER
        if pinfix_lines:
            add_to_table(tree / "pyproject.toml", "[tool.pinfix]", pinfix_lines.rstrip("\n"))
        if variant.table is not None:
            add_to_table(tree / "pyproject.toml", *variant.table)
        before_hashes = snapshot(tree)

        sys.path.insert(0, str(REPO))
        from pinfix.files import discover  # the same file set pinfix visits

        py_files = discover([str(tree)], root=tree).files
        if not py_files:
            raise ToolFailure(f"no Python files under {source}")
        result.ruff_isolated = ruff_mode(tree, py_files[0])
        if result.ruff_isolated:
            result.notes.append("the tree's ruff config is unusable with this ruff; ran ruff --isolated")
        ruff_before = ruff_diagnostics(tree, py_files, result.ruff_isolated)
        own_ruff = None
        if own_checks:
            version = pinned_ruff_version(tree)
            if version is None:
                result.notes.append("no pinned ruff version found: the tree's own checks were not run")
            else:
                own_ruff = project_ruff(version)
                result.project_ruff = version
                own_before = project_check(own_ruff, tree, py_files)
                unformatted_before = unformatted(own_ruff, tree, py_files)

        proc, result.seconds = run_pinfix(tree, jobs, unsafe=variant.unsafe)
        summary, left, errored = parse_stderr(tree, proc.stderr, result, "first run")
        if summary:
            result.files = int(summary.group("files"))
            result.parsed = int(summary.group("parsed"))
            result.changed = int(summary.group("changed"))
            result.fixes = int(summary.group("fixes"))
            result.errors = int(summary.group("errors") or 0)
        result.findings = result.fixes + left
        if proc.returncode not in (0, 1, 2):
            result.violations.append(f"first run: exit code {proc.returncode}")
        if (proc.returncode == 2) != bool(errored):
            result.violations.append(f"first run: exit {proc.returncode} but {len(errored)} error lines")

        after_hashes = snapshot(tree)
        if set(after_hashes) != set(before_hashes):
            appeared = sorted(set(after_hashes) - set(before_hashes))
            gone = sorted(set(before_hashes) - set(after_hashes))
            result.violations.append(f"files appeared {appeared[:max_show]} / disappeared {gone[:max_show]}")
        stray = [p for p in after_hashes if p.endswith(TMP_SUFFIX)]
        if stray:
            result.violations.append(f"temporary files left behind: {stray[:max_show]}")
        changed = sorted(p for p in before_hashes if p in after_hashes and after_hashes[p] != before_hashes[p])
        if len(changed) != result.changed:
            result.violations.append(f"summary says {result.changed} files changed, {len(changed)} did")
        for rel in sorted(errored):
            if rel in changed:
                result.violations.append(f"{rel}: reported an error yet was changed")
        non_py = [p for p in changed if not p.endswith(".py")]
        if non_py:
            result.violations.append(f"non-Python files changed: {non_py[:max_show]}")

        ruff_after = ruff_diagnostics(tree, [tree / p for p in changed], result.ruff_isolated) if changed else {}
        for rel in changed:
            result.violations.extend(
                f"{rel}: {v}" for v in check_changed_file(tree, source, rel, ruff_before, ruff_after)
            )

        if own_ruff is not None:
            changed_paths = [tree / p for p in changed if p.endswith(".py")]
            own_after = project_check(own_ruff, tree, changed_paths) if changed_paths else {}
            new_total = 0
            for rel in changed:
                new = own_after.get(rel, Counter()) - own_before.get(rel, Counter())
                new_total += sum(new.values())
                for (code, message), n in sorted(new.items(), key=str):
                    result.violations.append(
                        f"{rel}: new diagnostic of the tree's ruff {version}: {code} {message!r} (x{n})"
                    )
            result.new_project_diagnostics = new_total
            now_unformatted = unformatted(own_ruff, tree, changed_paths) if changed_paths else set()
            newly = sorted(now_unformatted - unformatted_before)
            result.new_unformatted = len(newly)
            for rel in newly:
                result.violations.append(f"{rel}: ruff {version} format --check would now reformat it")

        proc2, result.second_seconds = run_pinfix(tree, jobs, unsafe=variant.unsafe)
        summary2, _, _ = parse_stderr(tree, proc2.stderr, result, "second run")
        if summary2 and int(summary2.group("changed")) != 0:
            result.violations.append(f"second run: summary says {summary2.group('changed')} files changed")
        second_hashes = snapshot(tree)
        moved = sorted(p for p in set(second_hashes) | set(after_hashes) if second_hashes.get(p) != after_hashes.get(p))
        if moved:
            result.violations.append(f"not idempotent: the second run changed {moved[:max_show]}")
    except ToolFailure as e:
        result.violations.append(str(e))
    finally:
        H2D_HELPER = saved_h2d
        if keep:
            result.notes.append(f"copy kept at {tree}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return result


def check_changed_file(
    tree: Path, source: Path, rel: str, ruff_before: Dict[str, Counter], ruff_after: Dict[str, Counter]
) -> List[str]:
    problems: List[str] = []
    before = (source / rel).read_bytes()
    after = (tree / rel).read_bytes()
    try:
        tree_before = ast.parse(before, filename=rel)
    except (SyntaxError, ValueError) as e:
        tree_before = None
        before_error = f"{type(e).__name__}: {e}"
    try:
        tree_after = ast.parse(after, filename=rel)
        compile(after, rel, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        if tree_before is not None:
            return [f"no longer parses or compiles: {type(e).__name__}: {e}"]
        return [f"changed a file this Python cannot parse ({before_error})"]
    if tree_before is None:
        return [f"changed a file this Python cannot parse ({before_error})"]
    new = ruff_after.get(rel, Counter()) - ruff_before.get(rel, Counter())
    for (code, message), n in sorted(new.items(), key=str):
        problems.append(f"new ruff diagnostic {code} {message!r} (x{n})")
    problems.extend(check_hunks(before, after, tree_before, tree_after))
    return problems


# --- main ------------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree", action="append", choices=KNOWN_TREES, help="a known tree to sweep (repeatable; default: all three)"
    )
    parser.add_argument("--path", action="append", type=Path, default=[], help="another tree to sweep (repeatable)")
    parser.add_argument("--sdist-dir", type=Path, default=DEFAULT_SDIST_DIR, help="where sdists are unpacked/fetched")
    parser.add_argument("--jobs", "-j", type=int, default=None, help="pinfix --jobs (default: pinfix's)")
    parser.add_argument("--h2d-helper", default=None, help="sweep with [tool.pinfix] h2d-helper set to this")
    parser.add_argument(
        "--variant",
        action="append",
        choices=sorted(VARIANTS),
        help="settings variant for the vLLM trees (repeatable; default: all); torch: unsafe only",
    )
    parser.add_argument(
        "--no-own-checks", action="store_true", help="skip the tree's own pinned ruff check / format --check"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    parser.add_argument("--max-show", type=int, default=20, help="violations shown per tree")
    args = parser.parse_args(argv)
    global H2D_HELPER
    H2D_HELPER = args.h2d_helper

    names = list(args.tree or ([] if args.path else KNOWN_TREES))
    targets = [(n, resolve_tree(n, args.sdist_dir)) for n in names]
    targets += [(p.name, p.resolve()) for p in args.path]
    for name, path in targets:
        if not path.is_dir():
            print(f"sweep: {name}: {path} is not a directory", file=sys.stderr)
            return 2

    chosen = [VARIANTS[v] for v in (args.variant or VARIANTS)]
    runs = []
    for name, path in targets:
        if name == "torch":
            runs.append((name, path, VARIANTS["unsafe"], False))
        else:
            runs.extend((name, path, v, not args.no_own_checks) for v in chosen)
    results = []
    for name, path, variant, own in runs:
        print(f"== {name} [{variant.name}] ({path})", flush=True)
        r = sweep_tree(name, path, args.jobs, args.keep, args.max_show, variant, own)
        results.append(r)
        print(
            f"   files {r.files} (parsed {r.parsed}), findings {r.findings}, fixes {r.fixes}, "
            f"errors {r.errors}, changed files {r.changed}, time {r.seconds:.1f}s "
            f"(second run {r.second_seconds:.1f}s)",
            flush=True,
        )
        if r.error_reasons:
            print("   errors: " + ", ".join(f"{n}x {k}" for k, n in r.error_reasons.most_common()))
        for note in r.notes:
            print(f"   note: {note}")
        for v in r.violations[: args.max_show]:
            print(f"   VIOLATION: {v}")
        if len(r.violations) > args.max_show:
            print(f"   ... and {len(r.violations) - args.max_show} more violations")

    def shown(value: Optional[int]) -> str:
        return "n/a" if value is None else str(value)

    print(
        "\n| tree | variant | files | findings | fixes | errors | changed | time (s) | own ruff | "
        "new ruff diagnostics | files to reformat | violations |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for r in results:
        print(
            f"| {r.name} | {r.variant} | {r.files} | {r.findings} | {r.fixes} | {r.errors} | {r.changed} | "
            f"{r.seconds:.1f} | {r.project_ruff or 'n/a'} | {shown(r.new_project_diagnostics)} | "
            f"{shown(r.new_unformatted)} | {len(r.violations)} |"
        )
    return 1 if any(r.violations for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
