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
6. a second ``pinfix fix`` changes no byte of any file (idempotence).

Per tree it prints files, findings, fixes, errors, changed files and time, and
exits 1 on any violation (2 when a tree cannot be found or a tool fails).

    python benchmarks/sweep.py                     # all three trees
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
        capture_output=True, text=True, check=False,
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


def ruff_diagnostics(root: Path, files: Sequence[Path], isolated: bool) -> Dict[str, Counter]:
    """Relative path -> Counter of (code, message) for ``files`` (all passed explicitly)."""
    result: Dict[str, Counter] = {}
    chunk = 500
    for i in range(0, len(files), chunk):
        part = [str(f) for f in files[i:i + chunk]]
        cmd = [ruff_binary(), "check", "--select", "F,I", "--no-cache",
               "--output-format", "json", "--exit-zero"]
        if isolated:
            cmd.append("--isolated")
        proc = subprocess.run(cmd + ["--"] + part, cwd=root, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ToolFailure(f"ruff failed ({proc.returncode}): {proc.stderr.strip()[:2000]}")
        for item in json.loads(proc.stdout or "[]"):
            rel = Path(item["filename"]).resolve().relative_to(root.resolve()).as_posix()
            result.setdefault(rel, Counter())[(item.get("code"), item["message"])] += 1
    return result


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
            hit = isinstance(f, ast.Attribute) and f.attr == "to" and (
                any(k.arg == "non_blocking" for k in node.keywords)
                or any(isinstance(a, ast.Constant) and a.value is True for a in node.args)
            )
        else:
            hit = isinstance(f, ast.Name) and f.id == name or isinstance(f, ast.Attribute) and f.attr == name
        if hit:
            lines.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    return lines


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
    for i in allowed_lines(a, import_lines(tree_before) | call_lines(tree_before, True), removed):
        problems.append(f"removed line {i + 1} is outside the fix: {a[i]!r}")
    for j in allowed_lines(b, import_lines(tree_after) | call_lines(tree_after, False), added):
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


def run_pinfix(tree: Path, jobs: Optional[int]) -> Tuple[subprocess.CompletedProcess, float]:
    cmd = pinfix_command() + ["fix", "--unsafe-fixes", "--no-progress", "--verbose"]
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


def sweep_tree(name: str, source: Path, jobs: Optional[int], keep: bool, max_show: int) -> TreeResult:
    result = TreeResult(name)
    workdir = Path(tempfile.mkdtemp(prefix=f"pinfix-sweep-{name}-"))
    tree = workdir / "tree"
    try:
        copy_tree(source, tree)
        if H2D_HELPER is not None:
            with open(tree / "pyproject.toml", "a", encoding="utf-8") as f:
                f.write(f'\n[tool.pinfix]\nh2d-helper = "{H2D_HELPER}"\n')
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

        proc, result.seconds = run_pinfix(tree, jobs)
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

        proc2, result.second_seconds = run_pinfix(tree, jobs)
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
    parser.add_argument("--tree", action="append", choices=KNOWN_TREES,
                        help="a known tree to sweep (repeatable; default: all three)")
    parser.add_argument("--path", action="append", type=Path, default=[], help="another tree to sweep (repeatable)")
    parser.add_argument("--sdist-dir", type=Path, default=DEFAULT_SDIST_DIR, help="where sdists are unpacked/fetched")
    parser.add_argument("--jobs", "-j", type=int, default=None, help="pinfix --jobs (default: pinfix's)")
    parser.add_argument("--h2d-helper", default=None, help="sweep with [tool.pinfix] h2d-helper set to this")
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

    results = []
    for name, path in targets:
        print(f"== {name} ({path})", flush=True)
        r = sweep_tree(name, path, args.jobs, args.keep, args.max_show)
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

    print("\n| tree | files | findings | fixes | errors | changed | time (s) | violations |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r.name} | {r.files} | {r.findings} | {r.fixes} | {r.errors} | {r.changed} | "
              f"{r.seconds:.1f} | {len(r.violations)} |")
    return 1 if any(r.violations for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
