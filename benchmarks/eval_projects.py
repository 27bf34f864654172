#!/usr/bin/env python3
"""Recall and precision of pinfix on real PyTorch projects it was not developed against.

usage: python benchmarks/eval_projects.py [--sdist-dir /tmp/sdists] [--labels FILE ...]
                                          [--json-dir DIR] [--pinfix CMD] > eval.md
       python benchmarks/eval_projects.py --list-sites PROJECT VERSION > labels.json

Each label file (``benchmarks/labels/<project>-<version>.json``, all of them by default) names
a release and gives a verdict, by hand, for every *site* of that release. The release is
downloaded into ``--sdist-dir`` (or reused from there): its source distribution with
``fetch-sdist`` when the label file's ``fetch`` says ``sdist``, the wheel pip picks with
``pip download --no-deps --only-binary :all:`` (then unzipped) when it says ``wheel``. The
release's own metadata (``PKG-INFO`` or ``*.dist-info/METADATA``) must name the exact project
and version.

A site is every ``ast.Call`` (stdlib parse of every ``*.py`` of the tree) whose ``func`` is an
attribute ``.to``, ``.cuda``, ``.xpu`` or ``.copy_`` that has a keyword ``non_blocking`` whose
value is not the literal ``False``, or a literal ``True`` in a positional non_blocking slot
(index 1 of ``copy_``, ``cuda`` and ``xpu``; index 1 or 2 of ``to``). Its key is (path relative
to the tree root with ``/``, line, column); it spans ``lineno..end_lineno``. The label file must
cover exactly these sites: missing, extra, repeated or reshaped labels are an error.

pinfix runs twice on each tree, plain and ``--deep``
(``pinfix check --no-cache --no-progress --output-format json .``, cwd = the tree root, no
settings of ours). A PIN001 or PIN002 finding *hits* a site when it is in the same file and its
line lies within the site's lines. Recall, per kind of ``pageable`` site (``inline``,
``same-function``, ``across``, ``layout``, ``in-function`` = the first two, ``all``), is the
share of those sites some finding hits; precision is the share of PIN001/PIN002 findings that
hit a ``pageable`` site (a finding on a site with another verdict, or on no site, is a false
positive). The report (markdown on stdout) has a table per project and mode, a combined table,
and lists the pageable sites missed and the false positives with the labels' evidence.

Standard library only; pinfix is run as a subprocess (``--pinfix``, default
``python -m pinfix`` of this interpreter). ``--json-dir`` keeps each run's JSON and reuses it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LABEL_DIR = REPO / "benchmarks" / "labels"

#: Sink method -> positional indexes where a literal ``True`` is non_blocking.
SINKS: dict[str, tuple[int, ...]] = {"to": (1, 2), "cuda": (1,), "xpu": (1,), "copy_": (1,)}
VERDICTS = ("pageable", "pinned", "device", "not-h2d", "blocking", "unclear")
KINDS = ("inline", "same-function", "across", "layout")
#: Recall columns: each kind, then the two unions.
GROUPS: dict[str, tuple[str, ...]] = {
    **{k: (k,) for k in KINDS},
    "in-function": ("inline", "same-function"),
    "all": KINDS,
}
FETCHES = ("sdist", "wheel")
MODES: dict[str, tuple[str, ...]] = {"plain": (), "deep": ("--deep",)}
CODES = ("PIN001", "PIN002")
SITE_FIELDS = ("path", "line", "col", "end_line", "sink", "verdict", "kind", "evidence")

SiteKey = tuple[str, int, int]


class EvalError(Exception):
    """Bad input or a failed step: reported as ``eval_projects: error: ...``, exit status 2."""


# --------------------------------------------------------------------------- sites


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    col: int
    end_line: int
    sink: str

    @property
    def key(self) -> SiteKey:
        return (self.path, self.line, self.col)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col} ({self.sink}, to line {self.end_line})"


def _literal(node: ast.AST, value: bool) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def is_site(call: ast.Call) -> bool:
    """Whether ``call`` is a site (see the module docstring)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in SINKS:
        return False
    for kw in call.keywords:
        if kw.arg == "non_blocking" and not _literal(kw.value, False):
            return True
    return any(i < len(call.args) and _literal(call.args[i], True) for i in SINKS[func.attr])


def python_files(root: Path) -> list[str]:
    """Every ``*.py`` under ``root``, relative with ``/``, in sorted order."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = Path(dirpath).relative_to(root).as_posix()
        out.extend(posixpath.normpath(posixpath.join(rel, f)) for f in filenames if f.endswith(".py"))
    return sorted(out)


def enumerate_sites(root: Path) -> tuple[list[Site], list[str]]:
    """The sites of the tree at ``root`` (sorted by key) and the files that did not parse."""
    sites: list[Site] = []
    unparsed: list[str] = []
    for rel in python_files(root):
        try:
            tree = ast.parse((root / rel).read_bytes(), filename=rel)
        except (SyntaxError, ValueError, OSError) as exc:
            unparsed.append(f"{rel}: {exc.__class__.__name__}: {exc}")
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and is_site(node):
                sink = node.func.attr  # type: ignore[union-attr]
                sites.append(Site(rel, node.lineno, node.col_offset, node.end_lineno or node.lineno, sink))
    return sorted(sites, key=lambda s: s.key), unparsed


# --------------------------------------------------------------------------- labels


@dataclass(frozen=True)
class Label:
    site: Site
    verdict: str
    kind: str | None
    evidence: str


@dataclass
class LabelFile:
    project: str
    version: str
    fetch: list[str]
    labels: list[Label]
    source: str = ""

    @property
    def name(self) -> str:
        return f"{self.project} {self.version}"


def _field(obj: dict, key: str, kind: type, where: str) -> object:
    if key not in obj:
        raise EvalError(f"{where}: missing `{key}`")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise EvalError(f"{where}: `{key}` must be {kind.__name__}, not {type(value).__name__}")
    return value


def parse_label(entry: object, where: str) -> Label:
    """One entry of a label file's ``sites``, checked field by field."""
    if not isinstance(entry, dict):
        raise EvalError(f"{where}: a site must be an object")
    unknown = sorted(set(entry) - set(SITE_FIELDS))
    if unknown:
        raise EvalError(f"{where}: unknown field(s) {', '.join(unknown)}")
    site = Site(
        _field(entry, "path", str, where),  # type: ignore[arg-type]
        _field(entry, "line", int, where),  # type: ignore[arg-type]
        _field(entry, "col", int, where),  # type: ignore[arg-type]
        _field(entry, "end_line", int, where),  # type: ignore[arg-type]
        _field(entry, "sink", str, where),  # type: ignore[arg-type]
    )
    where = f"{where} ({site.path}:{site.line}:{site.col})"
    if site.sink not in SINKS:
        raise EvalError(f"{where}: `sink` must be one of {', '.join(SINKS)}, not {site.sink!r}")
    verdict = _field(entry, "verdict", str, where)
    if verdict not in VERDICTS:
        raise EvalError(f"{where}: `verdict` must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    kind = entry.get("kind")
    if verdict == "pageable" and kind not in KINDS:
        raise EvalError(f"{where}: a pageable site needs `kind`, one of {', '.join(KINDS)}, not {kind!r}")
    if verdict != "pageable" and kind is not None:
        raise EvalError(f"{where}: `kind` is only for pageable sites (null for {verdict})")
    evidence = _field(entry, "evidence", str, where)
    if not evidence.strip():  # type: ignore[union-attr]
        raise EvalError(f"{where}: empty `evidence`")
    return Label(site, verdict, kind, evidence)  # type: ignore[arg-type]


def load_labels(path: Path) -> LabelFile:
    """A label file, checked (a clear :class:`EvalError` on the first problem)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise EvalError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EvalError(f"{path}: the top level must be an object")
    project = _field(data, "project", str, str(path))
    version = _field(data, "version", str, str(path))
    fetch = _field(data, "fetch", list, str(path))
    if not fetch or any(m not in FETCHES for m in fetch):  # type: ignore[union-attr]
        raise EvalError(f"{path}: `fetch` must list one or more of {', '.join(FETCHES)}, not {fetch!r}")
    sites = _field(data, "sites", list, str(path))
    labels = [parse_label(e, f"{path}: site {i}") for i, e in enumerate(sites)]  # type: ignore[arg-type]
    return LabelFile(project, version, list(fetch), labels, str(path))  # type: ignore[arg-type]


def coverage_problems(labels: Sequence[Label], sites: Sequence[Site]) -> list[str]:
    """How ``labels`` fail to cover exactly ``sites``: one line per problem, none when they do."""
    want = {s.key: s for s in sites}
    seen: Counter = Counter(lab.site.key for lab in labels)
    out = [f"repeated label: {k[0]}:{k[1]}:{k[2]} ({n} times)" for k, n in sorted(seen.items()) if n > 1]
    out += [f"missing label: {s}" for k, s in sorted(want.items()) if k not in seen]
    for lab in sorted(labels, key=lambda lab: lab.site.key):
        real = want.get(lab.site.key)
        if real is None:
            out.append(f"extra label (no such site): {lab.site}")
        elif real != lab.site:
            out.append(f"label does not match the site: labelled {lab.site}, found {real}")
    return out


def skeleton(project: str, version: str, fetch: str, sites: Sequence[Site]) -> dict:
    """A label file for ``sites`` with every verdict left empty (``--list-sites``)."""
    return {
        "project": project,
        "version": version,
        "fetch": [fetch],
        "sites": [
            {
                "path": s.path,
                "line": s.line,
                "col": s.col,
                "end_line": s.end_line,
                "sink": s.sink,
                "verdict": "",
                "kind": None,
                "evidence": "",
            }
            for s in sites
        ],
    }


# --------------------------------------------------------------------------- fetching


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def release_metadata(tree: Path) -> Path | None:
    """The release's own metadata file: ``PKG-INFO`` of an sdist, ``METADATA`` of a wheel."""
    if (tree / "PKG-INFO").is_file():
        return tree / "PKG-INFO"
    found = sorted(tree.glob("*.dist-info/METADATA"))
    return found[0] if found else None


def check_release(tree: Path, project: str, version: str) -> None:
    """That ``tree`` is exactly ``project`` ``version`` by its own metadata."""
    meta = release_metadata(tree)
    if meta is None:
        raise EvalError(f"{tree}: no PKG-INFO or *.dist-info/METADATA, so its version cannot be checked")
    head = meta.read_text(encoding="utf-8", errors="replace").split("\n\n", 1)[0]
    fields = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line and not line[0].isspace())
    got = (fields.get("Name", "?"), fields.get("Version", "?"))
    if _canonical(got[0]) != _canonical(project) or got[1] != version:
        raise EvalError(f"{tree}: is {got[0]} {got[1]} by {meta.name}, not {project} {version}")


def tree_dir(sdist_dir: Path, project: str, version: str, method: str) -> Path:
    base = f"{project}-{version}"
    return sdist_dir / (base if method == "sdist" else f"{base}-wheel")


def _run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, **kw)
    except OSError as exc:
        raise EvalError(f"{what}: cannot run {cmd[0]}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["(no output)"]
        raise EvalError(f"{what} failed (exit {proc.returncode}): {tail[0]}")
    return proc


def fetch_sdist(tool: Path, project: str, version: str, sdist_dir: Path) -> Path:
    """The source distribution, unpacked by ``fetch-sdist`` (which prints where)."""
    out = _run([sys.executable, str(tool), project, version, str(sdist_dir)], f"fetch-sdist {project} {version}")
    printed = out.stdout.strip().splitlines()[-1:]
    return Path(printed[0]) if printed else tree_dir(sdist_dir, project, version, "sdist")


def fetch_wheel(project: str, version: str, sdist_dir: Path) -> Path:
    """The wheel pip picks for this interpreter, unzipped (the archive is kept beside the tree)."""
    target = tree_dir(sdist_dir, project, version, "wheel")
    with tempfile.TemporaryDirectory(dir=sdist_dir, prefix=f".{project}-") as tmp:
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--dest",
                tmp,
                f"{project}=={version}",
            ],
            f"pip download {project}=={version}",
        )
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise EvalError(f"pip download {project}=={version}: no wheel came back")
        unpacked = Path(tmp) / "tree"
        with zipfile.ZipFile(wheels[0]) as zf:
            zf.extractall(unpacked)
        shutil.move(str(wheels[0]), str(sdist_dir / wheels[0].name))
        unpacked.rename(target)
    return target


def fetch_release(project: str, version: str, methods: Sequence[str], sdist_dir: Path, tool: Path) -> tuple[Path, str]:
    """The unpacked release (reused when ``sdist_dir`` holds it) and the method that gave it."""
    sdist_dir.mkdir(parents=True, exist_ok=True)
    failures = []
    for method in methods:
        tree = tree_dir(sdist_dir, project, version, method)
        if not tree.is_dir():
            try:
                tree = (
                    fetch_sdist(tool, project, version, sdist_dir)
                    if method == "sdist"
                    else fetch_wheel(project, version, sdist_dir)
                )
            except EvalError as exc:
                failures.append(str(exc))
                continue
        check_release(tree, project, version)
        return tree, method
    raise EvalError(f"cannot fetch {project} {version}: " + "; ".join(failures))


# --------------------------------------------------------------------------- running pinfix


def default_pinfix() -> list[str]:
    return [sys.executable, "-m", "pinfix"]


def run_pinfix(pinfix: Sequence[str], tree: Path, mode: str, cache: Path | None) -> dict:
    """pinfix's JSON for ``tree`` in ``mode`` (paths made relative to the tree, with ``/``).

    With ``cache`` (a file), the JSON is kept there and read back on a later call."""
    if cache is not None and cache.is_file():
        try:
            data = json.loads(cache.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EvalError(f"{cache}: cannot reuse this pinfix run ({exc}); delete it to run pinfix again") from None
    else:
        cmd = [*pinfix, "check", "--no-cache", "--no-progress", "--output-format", "json", *MODES[mode], "."]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PINFIX_")}
        try:
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=tree, env=env)
        except OSError as exc:
            raise EvalError(f"cannot run pinfix ({cmd[0]}): {exc.strerror or exc}") from None
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            data = None
        if proc.returncode not in (0, 1, 2) or not isinstance(data, dict) or "findings" not in data:
            tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise EvalError(f"pinfix {mode} on {tree} failed (exit {proc.returncode}): {tail[0]}")
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            part = cache.with_name(cache.name + ".part")
            part.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(part, cache)
    for f in data["findings"]:
        f["path"] = relative_path(f["path"], tree)
    return data


def relative_path(path: str, tree: Path) -> str:
    """A finding's path as the labels write it: relative to the tree root, with ``/``."""
    p = Path(path)
    if p.is_absolute() and p.resolve().is_relative_to(tree.resolve()):
        p = p.resolve().relative_to(tree.resolve())
    return p.as_posix()


# --------------------------------------------------------------------------- scoring


def hits(finding: dict, site: Site) -> bool:
    return finding["path"] == site.path and site.line <= finding["line"] <= site.end_line


@dataclass
class Score:
    name: str
    mode: str
    #: group -> (pageable sites found, pageable sites)
    recall: dict[str, tuple[int, int]]
    findings: int
    true: int
    missed: list[Label] = field(default_factory=list)
    #: each false positive with the labels of the sites it hits (none: on no site)
    false: list[tuple[dict, list[Label]]] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)


def score(name: str, mode: str, labels: Sequence[Label], findings: Iterable[dict]) -> Score:
    """Recall and precision of ``findings`` (pinfix JSON entries) against ``labels``."""
    counted = [f for f in findings if f.get("code") in CODES]
    by_path: dict[str, list[Label]] = {}
    for lab in labels:
        by_path.setdefault(lab.site.path, []).append(lab)
    found: set = set()
    true = 0
    false: list[tuple[dict, list[Label]]] = []
    for f in counted:
        hit = [lab for lab in by_path.get(f["path"], ()) if hits(f, lab.site)]
        found.update(lab.site.key for lab in hit)
        if any(lab.verdict == "pageable" for lab in hit):
            true += 1
        else:
            false.append((f, hit))
    pageable = [lab for lab in labels if lab.verdict == "pageable"]
    recall = {}
    for group, kinds in GROUPS.items():
        members = [lab for lab in pageable if lab.kind in kinds]
        recall[group] = (sum(lab.site.key in found for lab in members), len(members))
    missed = [lab for lab in pageable if lab.site.key not in found]
    return Score(name, mode, recall, len(counted), true, missed, false)


def combine(scores: Sequence[Score], name: str, mode: str) -> Score:
    """The sums of several projects' scores in one mode."""
    recall = {g: (sum(s.recall[g][0] for s in scores), sum(s.recall[g][1] for s in scores)) for g in GROUPS}
    return Score(name, mode, recall, sum(s.findings for s in scores), sum(s.true for s in scores))


# --------------------------------------------------------------------------- report


def pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else "n/a"


def table(scores: Sequence[Score]) -> list[str]:
    head = ["mode", *GROUPS, "PIN001+PIN002 findings", "on pageable sites", "precision"]
    out = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for s in scores:
        cells = [pct(*s.recall[g]) for g in GROUPS]
        out.append(f"| {s.mode} | " + " | ".join(cells) + f" | {s.findings} | {s.true} | {pct(s.true, s.findings)} |")
    return out


def census(labels: Sequence[Label]) -> str:
    verdicts = Counter(lab.verdict for lab in labels)
    kinds = Counter(lab.kind for lab in labels if lab.verdict == "pageable")
    return (
        f"{len(labels)} sites; by verdict: "
        + ", ".join(f"{v} {verdicts[v]}" for v in VERDICTS)
        + "; pageable by kind: "
        + ", ".join(f"{k} {kinds[k]}" for k in KINDS)
        + "."
    )


def one_line(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def details(s: Score) -> list[str]:
    out = [f"Missed pageable sites ({s.mode}): {len(s.missed)}", ""]
    out += [f"- `{lab.site.path}:{lab.site.line}` ({lab.kind}): {lab.evidence}" for lab in s.missed]
    out += ["", f"False positives ({s.mode}): {len(s.false)}", ""]
    for f, hit in s.false:
        where = f"`{f['path']}:{f['line']}` {f['code']}"
        if hit:
            out += [f"- {where} on a site labelled `{lab.verdict}`: {lab.evidence}" for lab in hit]
        else:
            out.append(f"- {where} on no site: {one_line(f.get('message', ''))}")
    if s.errors:
        out += [
            "",
            f"pinfix could not read {len(s.errors)} file(s) ({s.mode}): "
            + ", ".join(e.get("path", "?") for e in s.errors),
        ]
    return out + [""]


def pinfix_version(pinfix: Sequence[str]) -> str:
    try:
        proc = subprocess.run([*pinfix, "--version"], check=False, capture_output=True, text=True)
    except OSError:
        return "pinfix of unknown version"
    lines = proc.stdout.strip().splitlines()
    return lines[0] if proc.returncode == 0 and lines else "pinfix of unknown version"


def report(results: Sequence[tuple[LabelFile, str, list[str], list[Score]]], pinfix: Sequence[str]) -> str:
    out = ["# pinfix on projects it was not developed against", ""]
    out += [f"{pinfix_version(pinfix)} (`{' '.join(pinfix)}`); modes: plain, `--deep`.", ""]
    for lf, method, unparsed, scores in results:
        out += [f"## {lf.name} ({method})", "", census(lf.labels), ""]
        if unparsed:
            out += [f"Files the stdlib parser rejected (no sites counted there): {', '.join(unparsed)}", ""]
        out += table(scores) + [""]
        for s in scores:
            out += details(s)
    out += ["## All projects", ""]
    combined = [
        combine([sc for _, _, _, scores in results for sc in scores if sc.mode == mode], "all projects", mode)
        for mode in MODES
    ]
    out += table(combined) + [""]
    return "\n".join(out)


# --------------------------------------------------------------------------- main


def evaluate(lf: LabelFile, args: argparse.Namespace) -> tuple[LabelFile, str, list[str], list[Score]]:
    tree, method = fetch_release(lf.project, lf.version, lf.fetch, args.sdist_dir, args.fetch_tool)
    sites, unparsed = enumerate_sites(tree)
    problems = coverage_problems(lf.labels, sites)
    if problems:
        raise EvalError(
            f"{lf.source} does not cover the {len(sites)} sites of {lf.name} exactly:\n  " + "\n  ".join(problems)
        )
    scores = []
    for mode in MODES:
        cache = args.json_dir / f"{lf.project}-{lf.version}.{mode}.json" if args.json_dir else None
        data = run_pinfix(args.pinfix, tree, mode, cache)
        s = score(lf.name, mode, lf.labels, data["findings"])
        s.errors = list(data.get("errors") or [])
        scores.append(s)
    return lf, method, unparsed, scores


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdist-dir", type=Path, default=Path("/tmp/sdists"), help="where releases are unpacked")
    ap.add_argument("--labels", type=Path, nargs="+", help="label files (default: benchmarks/labels/*.json)")
    ap.add_argument("--json-dir", type=Path, help="keep each pinfix run's JSON here and reuse it")
    ap.add_argument("--pinfix", type=shlex.split, default=None, help="pinfix command (default: python -m pinfix)")
    ap.add_argument("--fetch-tool", type=Path, default=None, help="fetch-sdist (default: shared/tools/fetch-sdist)")
    ap.add_argument("--list-sites", nargs=2, metavar=("PROJECT", "VERSION"), help="print a skeleton label file")
    args = ap.parse_args(argv)
    args.pinfix = args.pinfix or default_pinfix()
    if args.fetch_tool is None:
        places = [REPO / "shared", REPO.parent / "shared", REPO.parent.parent / "shared"]
        args.fetch_tool = next((p / "tools" / "fetch-sdist" for p in places if (p / "tools").is_dir()), places[0])
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.list_sites:
            project, version = args.list_sites
            tree, method = fetch_release(project, version, FETCHES, args.sdist_dir, args.fetch_tool)
            sites, unparsed = enumerate_sites(tree)
            for bad in unparsed:
                print(f"eval_projects: warning: not parsed, no sites counted: {bad}", file=sys.stderr)
            print(json.dumps(skeleton(project, version, method, sites), indent=2))
            return 0
        paths = args.labels or sorted(LABEL_DIR.glob("*.json"))
        if not paths:
            raise EvalError(f"no label files (looked in {LABEL_DIR})")
        results = [evaluate(load_labels(p), args) for p in paths]
    except EvalError as exc:
        print(f"eval_projects: error: {exc}", file=sys.stderr)
        return 2
    print(report(results, args.pinfix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
