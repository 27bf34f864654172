#!/usr/bin/env python3
"""Recall of pinfix on the pageable-source fixes vLLM made by hand, and its findings on a later release.

usage: python benchmarks/eval_recall.py [--sdist-dir /tmp/sdists] [--list-sites] > eval.md

Downloads (or reuses) the vLLM sdists 0.28.0, 0.29.0, 0.30.0 and 0.34.0 with
``../shared/tools/fetch-sdist`` (relative to the repo root; ``--fetch-tool``), reads them in
place and prints markdown. No vLLM code is kept in this repository.

Part 1, fix sites (0.28.0 -> 0.29.0 and 0.28.0 -> 0.30.0)
-----------------------------------------------------------
For every ``vllm/**/*.py`` present in 0.28.0 and in the newer version, the two texts are
compared with ``difflib.SequenceMatcher`` and grouped into hunks with 3 lines of context.
Comments are stripped before any marker test below (``#`` to end of line, outside strings).

A hunk *qualifies* when it newly introduces a pinning marker: the number of matches of
``np_to_pinned_tensor``, ``async_tensor_h2d``, ``pin_memory=<anything but False>``,
``.pin_memory(``, ``CpuGpuBuffer`` or ``.copy_to_gpu(`` in its added lines exceeds the number in
its removed lines. (Rewording ``pin_memory=PIN_MEMORY`` or moving an existing marker does not
count.) One extra shape qualifies without a marker: a removed non_blocking copy from a *gapped
view* (``buf[:, :n]``, ``buf[::k]``) replaced by added lines with a ``for`` loop of
non_blocking copies (the dense per-row split).

In a qualifying hunk, a *fix site* is one non_blocking copy of 0.28.0 (a ``.to`` / ``.cuda`` /
``.copy_`` call with a ``non_blocking`` keyword in the 0.28.0 AST; its lines are the call's lines,
from the receiver to the closing parenthesis) that overlaps the hunk and

* has a removed line in the hunk (the sink itself was rewritten, e.g. into ``async_tensor_h2d``), or
* is unchanged context, the hunk removes no ``non_blocking`` line, and the sink's source was
  rewritten: the statement binding the source name (last plain assignment before the sink in the
  same function) has a removed line, or an added line assigns that name again (``src =
  src.pin_memory()`` inserted before an unchanged ``dst.copy_(src, non_blocking=True)``).

A removed sink in a hunk that qualifies only by the per-row split counts only if its source is a
gapped view. Sites are keyed by (path, 0.28.0 line, column); a site seen in both diffs is listed
once.

Pattern of a site, from its 0.28.0 source expression (the receiver of ``.to``/``.cuda``, the
first argument of ``.copy_``), after following a bare name back through its last assignment in
the same function and through CPU-preserving wrappers (``x[...]`` with plain slices,
``.view/.reshape/.contiguous/.long/.int/.float/.to(dtype)/.clone/.flatten/.squeeze/.unsqueeze/.t``)
at most 6 steps:

* ``from_numpy inline``: the expression itself is ``torch.from_numpy(...)`` (after wrappers);
* ``from_numpy bound``: it reaches ``torch.from_numpy(...)`` through a name;
* ``torch.tensor / factory``: it reaches ``torch.tensor/as_tensor/asarray`` or a factory
  (``arange zeros ones empty full rand randn randint *_like new_*``);
* ``.cpu()``: it reaches a ``.cpu()`` / ``.numpy()``-round-trip call;
* ``gapped view``: the sink's own expression is a subscript with a step or with a slice in a
  non-leading dimension (``buf[:, :n]``);
* left out as *already pinned*: the source is a call of a function of the same file whose body
  holds a pinning marker (0.30.0 swapped such a helper for ``async_tensor_h2d``: a refactor);
* ``other``: anything else (call results, parameters, attributes, tensor ops such as
  ``torch.cat``/``concat``/``stack``, comparisons); the site list gives a sub-kind.

A site is *found* when a pinfix finding on 0.28.0 (whole sdist, ``--no-cache``) lies in the same
file within the sink call's lines (strict; pinfix reports at the source expression, which starts
the call for ``.to`` sinks and lies inside it for ``.copy_``), or anywhere in the hunk's 0.28.0 line range
(loose, the hunk may hold several sinks). The recall table is printed for all codes and
restricted to each code.

Part 2, findings on 0.34.0
--------------------------
Every finding of pinfix on the 0.34.0 sdist, with a verdict read from ``VERDICTS`` below (keyed by
``(path, line)`` first, then ``(path, code)``): ``true`` / ``false`` / ``unclear``. Findings with
no entry print ``unjudged`` and are counted apart, never as true. False-positive rate =
false / (true + false + unclear); the upper bound also counts unclear as false.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import json
import re
import subprocess
import sys
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASE = "0.28.0"
NEWER = ("0.29.0", "0.30.0")
LATEST = "0.34.0"
PATTERNS = ("from_numpy inline", "from_numpy bound", "torch.tensor / factory", ".cpu()", "gapped view", "other")
CODES = ("PIN001", "PIN002", "PIN003")
ALREADY_PINNED: set[tuple[str, int, int]] = set()  # sinks left out: their source was pinned already

# Verdicts on the 0.34.0 findings, judged by reading the code. Key: (path, line) or (path, code).
# Value: (verdict, reason), verdict one of "true", "false", "unclear".
VERDICTS: dict[tuple[str, object], tuple[str, str]] = {
    ("tests/utils_/test_gpu_sync_debug.py", "PIN002"): (
        "true",
        "deliberate bad example for vLLM's runtime sync checker (pageable or gapped non_blocking H2D)",
    ),
    ("tests/utils_/test_gpu_sync_debug.py", 246): (
        "false",
        "torch.zeros(0): an empty copy issues no CUDA call; the test keeps it as a non-sync case",
    ),
}

MARKER_RE = re.compile(
    r"np_to_pinned_tensor|async_tensor_h2d|pin_memory\s*=\s*(?!\s*False\b)|\.pin_memory\(|CpuGpuBuffer|\.copy_to_gpu\("
)
FACTORIES = {
    "tensor",
    "as_tensor",
    "asarray",
    "arange",
    "zeros",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "randint",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
}
NEW_FACTORIES = {"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
WRAPPERS = {
    "view",
    "reshape",
    "contiguous",
    "long",
    "int",
    "float",
    "half",
    "bool",
    "to",
    "clone",
    "flatten",
    "squeeze",
    "unsqueeze",
    "t",
    "type",
}


# --------------------------------------------------------------------------- fetching, running


def fetch(tool: Path, version: str, dest: Path) -> Path:
    out = subprocess.run(
        [sys.executable, str(tool), "vllm", version, str(dest)], check=True, capture_output=True, text=True
    ).stdout
    return Path(out.strip().splitlines()[-1])


def run_pinfix(pinfix: list[str], tree: Path) -> list[dict]:
    proc = subprocess.run(
        [*pinfix, "check", "--no-progress", "--no-cache", "--output-format", "json", str(tree)],
        check=False,
        capture_output=True,
        text=True,
        cwd=tree,
    )
    if proc.returncode not in (0, 1):
        sys.exit(f"pinfix failed ({proc.returncode}) on {tree}:\n{proc.stderr[-2000:]}")
    data = json.loads(proc.stdout)
    if data.get("errors"):
        print(f"<!-- pinfix reported {len(data['errors'])} errors on {tree.name} -->", file=sys.stderr)
    for f in data["findings"]:
        p = Path(f["path"])
        f["path"] = str(p.relative_to(tree)) if p.is_absolute() else f["path"]
    return data["findings"]


# --------------------------------------------------------------------------- source helpers


def strip_comments(lines: list[str]) -> list[str]:
    """Lines with ``#`` comments removed (tokenize-based; falls back to the raw line)."""
    out = list(lines)
    try:
        toks = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out
    for tok in toks:
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            if row - 1 < len(out):
                out[row - 1] = out[row - 1][:col]
    return out


def markers(lines: list[str]) -> int:
    return sum(len(MARKER_RE.findall(line)) for line in lines)


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return ""


@dataclass
class Sink:
    start: int  # the non_blocking call's first line (its receiver or ``copy_`` target)
    end: int
    col: int
    source: ast.expr
    func: ast.AST | None


class FileInfo:
    """0.28.0 AST facts of one file: its non_blocking sinks and assignments per function."""

    def __init__(self, text: str):
        self.tree = ast.parse(text)
        self.sinks: list[Sink] = []
        parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        self.parents = parents
        # functions of this file whose body already pins (``_flat_int32`` returning np_to_pinned_tensor)
        self.pinning_helpers = {
            node.name
            for node in self.tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and MARKER_RE.search(ast.unparse(node))
        }
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if not any(k.arg == "non_blocking" for k in node.keywords):
                continue
            meth = node.func.attr
            if meth in ("to", "cuda"):
                src = node.func.value
            elif meth == "copy_" and node.args:
                src = node.args[0]
            else:
                continue
            self.sinks.append(
                Sink(node.lineno, node.end_lineno or node.lineno, node.col_offset, src, self._func_of(node))
            )

    def _func_of(self, node: ast.AST) -> ast.AST | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return node
        return None

    def binding(self, name: str, before: int, func: ast.AST | None) -> ast.Assign | None:
        scope = func if func is not None else self.tree
        best = None
        for node in ast.walk(scope):
            if (
                isinstance(node, ast.Assign)
                and node.lineno < before
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and (best is None or node.lineno > best.lineno)
            ):
                best = node
        return best


def is_gapped(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Subscript):
        return False
    sl = expr.slice
    dims = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    for i, d in enumerate(dims):
        if isinstance(d, ast.Slice) and (d.step is not None or (i > 0 and (d.lower or d.upper))):
            return True
    return False


def unwrap(expr: ast.expr) -> ast.expr:
    while True:
        if isinstance(expr, ast.Subscript) and not is_gapped(expr):
            expr = expr.value
        elif (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in WRAPPERS
            and not any(k.arg == "device" for k in expr.keywords)
            and not (expr.func.attr == "to" and expr.args and not _is_dtype(expr.args[0]))
        ):
            expr = expr.func.value
        else:
            return expr


def _is_dtype(e: ast.expr) -> bool:
    return dotted(e).startswith("torch.") and not dotted(e).startswith("torch.device")


def origin_kind(expr: ast.expr) -> str | None:
    """Kind of a source expression after unwrapping, or None when it is a bare name."""
    e = unwrap(expr)
    if isinstance(e, ast.Name):
        return None
    if isinstance(e, ast.Call):
        fn = dotted(e.func)
        attr = e.func.attr if isinstance(e.func, ast.Attribute) else ""
        if fn in ("torch.from_numpy",):
            return "from_numpy"
        if (fn.startswith("torch.") and attr in FACTORIES) or attr in NEW_FACTORIES:
            return "factory"
        if attr in ("cpu", "numpy"):
            return "cpu"
        return f"call {fn or attr or '?'}(...)"
    if isinstance(e, ast.Attribute):
        return f"attribute .{e.attr}"
    return type(e).__name__.lower()


def classify(info: FileInfo, sink: Sink) -> tuple[str, str]:
    """(pattern, detail) of a sink's source, following names (see the module docstring)."""
    if is_gapped(sink.source):
        return "gapped view", ast.unparse(sink.source)[:60]
    expr, bound, line = sink.source, False, sink.start
    for _ in range(6):
        kind = origin_kind(expr)
        if kind is not None:
            break
        name = unwrap(expr).id  # type: ignore[union-attr]
        assign = info.binding(name, line, sink.func)
        if assign is None:
            kind = f"parameter or outer name `{name}`"
            break
        expr, bound, line = assign.value, True, assign.lineno
    else:
        kind = "deep chain"
    if kind.startswith("call ") and kind[5:-5] in info.pinning_helpers:
        return "already pinned", kind
    if kind == "from_numpy":
        return ("from_numpy bound" if bound else "from_numpy inline"), ""
    if kind == "factory":
        return "torch.tensor / factory", ("bound" if bound else "inline")
    if kind == "cpu":
        return ".cpu()", ("bound" if bound else "inline")
    return "other", kind


# --------------------------------------------------------------------------- sites


@dataclass
class Site:
    path: str
    line: int  # 0.28.0 line where the sink call starts
    end: int
    hunk: tuple[int, int]  # 0.28.0 line range of the hunk (1-based, inclusive)
    pattern: str
    detail: str
    fix: str
    versions: list[str] = field(default_factory=list)
    found_strict: set[str] = field(default_factory=set)
    found_loose: set[str] = field(default_factory=set)


def fix_kind(added: list[str]) -> str:
    text = "\n".join(added)
    for key in ("async_tensor_h2d", "np_to_pinned_tensor", "copy_to_gpu", "CpuGpuBuffer", ".pin_memory(", "pin_memory"):
        if key in text:
            return key.strip(".(") if key != ".pin_memory(" else ".pin_memory()"
    return "per-row split"


def sites_of_diff(old_root: Path, new_root: Path, version: str, sites: dict[tuple[str, int, int], Site]) -> None:
    for old_file in sorted((old_root / "vllm").rglob("*.py")):
        rel = str(old_file.relative_to(old_root))
        new_file = new_root / rel
        if not new_file.is_file():
            continue
        a_raw = old_file.read_text(encoding="utf-8", errors="replace").splitlines()
        b_raw = new_file.read_text(encoding="utf-8", errors="replace").splitlines()
        if a_raw == b_raw:
            continue
        a, b = strip_comments(a_raw), strip_comments(b_raw)
        info = None
        for group in difflib.SequenceMatcher(None, a_raw, b_raw, autojunk=False).get_grouped_opcodes(3):
            removed = [i for t, i1, i2, _, _ in group if t != "equal" for i in range(i1, i2)]
            added = [j for t, _, _, j1, j2 in group if t != "equal" for j in range(j1, j2)]
            inserts_at = [i1 for t, i1, _, _, _ in group if t != "equal"]
            rem_text = [a[i] for i in removed]
            add_text = [b[j] for j in added]
            new_marker = markers(add_text) > markers(rem_text)
            split = (
                any("non_blocking" in line for line in rem_text)
                and any(line.lstrip().startswith("for ") for line in add_text)
                and any("non_blocking" in line for line in add_text)
            )
            if not (new_marker or split):
                continue
            if info is None:
                try:
                    info = FileInfo("\n".join(a_raw) + "\n")
                except SyntaxError:
                    break
            h0, h1 = group[0][1] + 1, group[-1][2]
            removed_lines = {i + 1 for i in removed}
            removes_sink_line = any("non_blocking" in line for line in rem_text)
            for sink in info.sinks:
                if not (h0 <= sink.start <= h1 or h0 <= sink.end <= h1):
                    continue
                span = set(range(sink.start, sink.end + 1))
                if span & removed_lines:
                    hit = True
                    if not new_marker and not is_gapped(sink.source):
                        hit = False  # the per-row split only counts for gapped sinks
                elif removes_sink_line:
                    hit = False
                else:
                    hit = False
                    base = unwrap(sink.source)
                    if isinstance(base, ast.Name):
                        assign = info.binding(base.id, sink.start, sink.func)
                        if assign is not None and set(range(assign.lineno, assign.end_lineno + 1)) & removed_lines:
                            hit = True
                        rebind = re.compile(rf"^\s*{re.escape(base.id)}\s*=[^=]")
                        if any(rebind.search(line) for line in add_text) and any(p < sink.start for p in inserts_at):
                            hit = True
                if not hit:
                    continue
                key = (rel, sink.start, sink.col)
                if key not in sites:
                    pattern, detail = classify(info, sink)
                    if pattern == "already pinned":
                        ALREADY_PINNED.add(key)
                        continue
                    sites[key] = Site(rel, sink.start, sink.end, (h0, h1), pattern, detail, fix_kind(add_text))
                if version not in sites[key].versions:
                    sites[key].versions.append(version)


# --------------------------------------------------------------------------- reports


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:.0f} %" if d else "n/a"


def recall_table(sites: list[Site], codes: tuple[str, ...], title: str) -> str:
    rows = [
        f"**{title}**",
        "",
        "| pattern | sites | found (sink) | recall | found (hunk) | recall (hunk) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    tot = [0, 0, 0]
    for pat in PATTERNS:
        group = [s for s in sites if s.pattern == pat]
        strict = sum(1 for s in group if s.found_strict & set(codes))
        loose = sum(1 for s in group if s.found_loose & set(codes))
        tot = [tot[0] + len(group), tot[1] + strict, tot[2] + loose]
        rows.append(
            f"| {pat} | {len(group)} | {strict} | {pct(strict, len(group))} | {loose} | {pct(loose, len(group))} |"
        )
    rows.append(f"| **all** | {tot[0]} | {tot[1]} | {pct(tot[1], tot[0])} | {tot[2]} | {pct(tot[2], tot[0])} |")
    return "\n".join(rows)


def verdict_of(f: dict) -> tuple[str, str]:
    for key in ((f["path"], f["line"]), (f["path"], f["code"])):
        if key in VERDICTS:
            return VERDICTS[key]
    return "unjudged", ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sdist-dir", type=Path, default=Path("/tmp/sdists"))
    ap.add_argument("--fetch-tool", type=Path, default=REPO.parent / "shared" / "tools" / "fetch-sdist")
    ap.add_argument("--pinfix", default=f"{sys.executable} -m pinfix", help="command that runs pinfix")
    ap.add_argument("--list-sites", action="store_true", help="also print every fix site")
    args = ap.parse_args()
    pinfix = args.pinfix.split()

    trees = {v: fetch(args.fetch_tool, v, args.sdist_dir) for v in (BASE, *NEWER, LATEST)}
    sites: dict[tuple[str, int, int], Site] = {}
    for v in NEWER:
        sites_of_diff(trees[BASE], trees[v], v, sites)
    site_list = sorted(sites.values(), key=lambda s: (s.path, s.line))

    base_findings = run_pinfix(pinfix, trees[BASE])
    by_path: dict[str, list[dict]] = defaultdict(list)
    for f in base_findings:
        by_path[f["path"]].append(f)
    used: set[int] = set()
    for s in site_list:
        for f in by_path.get(s.path, []):
            if s.line <= f["line"] <= s.end:
                s.found_strict.add(f["code"])
                used.add(id(f))
            if s.hunk[0] <= f["line"] <= s.hunk[1]:
                s.found_loose.add(f["code"])

    out = print
    out(f"## Recall on vLLM {BASE} fix sites (diffs to {', '.join(NEWER)})\n")
    per_version = {v: sum(1 for s in site_list if v in s.versions) for v in NEWER}
    both = sum(1 for s in site_list if len(s.versions) == len(NEWER))
    out(
        f"{len(site_list)} fix sites in {len({s.path for s in site_list})} files "
        f"({', '.join(f'{n} in the diff to {v}' for v, n in per_version.items())}; {both} in both). "
        f"pinfix on {BASE}: {len(base_findings)} findings, {len(used)} of them on a fix site.\n"
    )
    out(recall_table(site_list, CODES, "all codes"))
    for code in CODES:
        out()
        out(recall_table(site_list, (code,), f"{code} only"))
    if args.list_sites:
        out("\n### Fix sites\n")
        out("| path:line (0.28.0) | pattern | detail | upstream fix | in | found |")
        out("|---|---|---|---|---|---|")
        for s in site_list:
            found = ",".join(sorted(s.found_strict)) or (
                "(hunk: " + ",".join(sorted(s.found_loose)) + ")" if s.found_loose else "-"
            )
            out(f"| {s.path}:{s.line} | {s.pattern} | {s.detail} | {s.fix} | {' '.join(s.versions)} | {found} |")
    if ALREADY_PINNED:
        out(
            f"\nLeft out as already pinned: {len(ALREADY_PINNED)} rewritten sinks "
            f"({', '.join(sorted({p for p, _, _ in ALREADY_PINNED}))})."
        )

    latest = run_pinfix(pinfix, trees[LATEST])
    unmatched = [f for f in base_findings if id(f) not in used]
    if unmatched:
        latest_paths = {f["path"] for f in latest}
        out(
            f"\n{len(unmatched)} findings on {BASE} that are not on a fix site "
            f"(whether {LATEST} still has the flagged line, and any {LATEST} finding in the file):\n"
        )
        for f in unmatched:
            lines = (trees[BASE] / f["path"]).read_text(encoding="utf-8", errors="replace").splitlines()
            text = lines[f["line"] - 1].strip()
            later = trees[LATEST] / f["path"]
            kept = later.is_file() and text in {ln.strip() for ln in later.read_text(errors="replace").splitlines()}
            flagged = "flagged" if f["path"] in latest_paths else "not flagged"
            out(
                f"- {f['path']}:{f['line']} {f['code']} {f['pattern']}: "
                f"line {'still there' if kept else 'gone'} in {LATEST}, file {flagged} there"
            )
    out(f"\n## Findings on vLLM {LATEST}\n")
    out("| path:line | code | pattern | verdict | reason |")
    out("|---|---|---|---|---|")
    counts: dict[str, int] = defaultdict(int)
    for f in sorted(latest, key=lambda f: (f["path"], f["line"])):
        verdict, reason = verdict_of(f)
        counts[verdict] += 1
        out(f"| {f['path']}:{f['line']} | {f['code']} | {f['pattern']} | {verdict} | {reason} |")
    judged = counts["true"] + counts["false"] + counts["unclear"]
    out(
        f"\n{len(latest)} findings: {counts['true']} true, {counts['false']} false, {counts['unclear']} unclear, "
        f"{counts['unjudged']} unjudged. False-positive rate: {pct(counts['false'], judged)} "
        f"({counts['false']}/{judged}; counting unclear as false: "
        f"{pct(counts['false'] + counts['unclear'], judged)})."
    )


if __name__ == "__main__":
    main()
