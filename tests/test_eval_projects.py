"""benchmarks/eval_projects.py: sites, label checks, hit matching and the recall/precision sums,
on small trees written here (no download)."""

import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

SCRIPT = REPO / "benchmarks" / "eval_projects.py"
_spec = importlib.util.spec_from_file_location("eval_projects", SCRIPT)
ev = importlib.util.module_from_spec(_spec)
sys.modules["eval_projects"] = ev  # dataclasses look their module up by name
_spec.loader.exec_module(ev)

#: Each line says whether the call on it is a site (the lines are numbered from 1 below).
SOURCE = """\
import torch
a.to(dev, non_blocking=True)          # site: keyword True
a.to(dev, non_blocking=flag)          # site: an expression
a.to(dev, non_blocking=False)         # not: literal False
a.to(dev)                             # not: no non_blocking
a.to(dev, True)                       # site: .to index 1
a.to(dev, torch.int32, True)          # site: .to index 2
a.to(True)                            # not: index 0
a.to(dev, torch.int32, False, True)   # not: index 3 is copy=
buf.copy_(src, True)                  # site: copy_ index 1
buf.copy_(src, 1)                     # not: 1 is not the literal True
a.cuda(0, True)                       # site: cuda index 1
a.xpu(non_blocking=True)              # site: xpu keyword
a.pin(dev, non_blocking=True)         # not: another method
copy_(buf, src, True)                 # not: a bare name
a.to(dev, **kw)                       # not: ** has no name
b.copy_(
    a.to(dev, non_blocking=True),     # site (inner)
    non_blocking=True,
)                                     # site (outer), lines 17-20
"""


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_release(root: Path, name: str = "demo", version: str = "1.0") -> Path:
    """An unpacked 'sdist' of ``name`` ``version`` in ``root``: PKG-INFO and three copies."""
    tree = root / f"{name}-{version}"
    write(tree, "PKG-INFO", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nlong text: x\n")
    write(
        tree,
        "pkg/runner.py",
        "import numpy as np\nimport torch\n\n\n"
        "def step(a, buf, dev):\n"
        "    buf.copy_(torch.from_numpy(a), non_blocking=True)\n"
        "    host = torch.zeros(4).pin_memory()\n"
        "    return host.to(dev, non_blocking=True)\n",
    )
    write(tree, "pkg/other.py", "def g(x, dev):\n    return x.to(dev, non_blocking=True)\n")
    return tree


def label(path, line, col, end_line, sink, verdict, kind=None, evidence="because"):
    return {
        "path": path,
        "line": line,
        "col": col,
        "end_line": end_line,
        "sink": sink,
        "verdict": verdict,
        "kind": kind,
        "evidence": evidence,
    }


def demo_labels(**over) -> dict:
    data = {
        "project": "demo",
        "version": "1.0",
        "fetch": ["sdist"],
        "sites": [
            label("pkg/other.py", 2, 11, 2, "to", "unclear", evidence="a parameter"),
            label("pkg/runner.py", 6, 4, 6, "copy_", "pageable", "inline", "from_numpy in the call"),
            label("pkg/runner.py", 8, 11, 8, "to", "pinned", evidence="pin_memory() just above"),
        ],
    }
    data.update(over)
    return data


def test_sites_follow_the_definition(tmp_path):
    write(tmp_path, "pkg/sub/mod.py", SOURCE)
    write(tmp_path, "top.py", "x.to(d, non_blocking=True)\n")
    write(tmp_path, "pkg/broken.py", "def f(:\n")
    write(tmp_path, "pkg/notes.txt", "x.to(d, non_blocking=True)\n")
    sites, unparsed = ev.enumerate_sites(tmp_path)
    mod = [(s.line, s.col, s.end_line, s.sink) for s in sites if s.path == "pkg/sub/mod.py"]
    assert mod == [
        (2, 0, 2, "to"),
        (3, 0, 3, "to"),
        (6, 0, 6, "to"),
        (7, 0, 7, "to"),
        (10, 0, 10, "copy_"),
        (12, 0, 12, "cuda"),
        (13, 0, 13, "xpu"),
        (17, 0, 20, "copy_"),
        (18, 4, 18, "to"),
    ]
    assert [s.key for s in sites if s.path != "pkg/sub/mod.py"] == [("top.py", 1, 0)]
    assert len(unparsed) == 1 and unparsed[0].startswith("pkg/broken.py: SyntaxError")


def test_coverage_problems_name_each_site(tmp_path):
    tree = make_release(tmp_path)
    sites, _ = ev.enumerate_sites(tree)
    good = [ev.parse_label(e, "t") for e in demo_labels()["sites"]]
    assert ev.coverage_problems(good, sites) == []
    shifted = ev.parse_label(label("pkg/runner.py", 8, 11, 9, "to", "pinned"), "t")
    extra = ev.parse_label(label("pkg/runner.py", 7, 0, 7, "to", "device"), "t")
    problems = ev.coverage_problems([good[1], good[1], shifted, extra], sites)
    assert problems == [
        "repeated label: pkg/runner.py:6:4 (2 times)",
        "missing label: pkg/other.py:2:11 (to, to line 2)",
        "extra label (no such site): pkg/runner.py:7:0 (to, to line 7)",
        (
            "label does not match the site: labelled pkg/runner.py:8:11 (to, to line 9), "
            "found pkg/runner.py:8:11 (to, to line 8)"
        ),
    ]


@pytest.mark.parametrize(
    "entry, message",
    [
        (label("p.py", 1, 0, 1, "to", "maybe"), "`verdict` must be one of"),
        (label("p.py", 1, 0, 1, "to", "pageable"), "a pageable site needs `kind`"),
        (label("p.py", 1, 0, 1, "to", "pageable", "sideways"), "a pageable site needs `kind`"),
        (label("p.py", 1, 0, 1, "to", "device", "inline"), "`kind` is only for pageable sites"),
        (label("p.py", 1, 0, 1, "to", "device", evidence=" "), "empty `evidence`"),
        (label("p.py", 1, 0, 1, "cpu", "device"), "`sink` must be one of"),
        (label("p.py", "1", 0, 1, "to", "device"), "`line` must be int"),
        (label("p.py", True, 0, 1, "to", "device"), "`line` must be int"),
        ({**label("p.py", 1, 0, 1, "to", "device"), "note": "x"}, "unknown field(s) note"),
        ({"path": "p.py"}, "missing `line`"),
    ],
)
def test_bad_label_entries_are_refused(tmp_path, entry, message):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(demo_labels(sites=[entry])))
    with pytest.raises(ev.EvalError, match="site 0") as err:
        ev.load_labels(path)
    assert message in str(err.value)


@pytest.mark.parametrize(
    "over, message",
    [({"fetch": []}, "`fetch` must list"), ({"fetch": ["git"]}, "`fetch` must list"), ({"version": 1}, "`version`")],
)
def test_bad_label_files_are_refused(tmp_path, over, message):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(demo_labels(**over)))
    with pytest.raises(ev.EvalError, match=message):
        ev.load_labels(path)


def test_hits_and_the_arithmetic():
    labels = [
        ev.parse_label(e, "t")
        for e in [
            label("a.py", 10, 4, 12, "to", "pageable", "inline"),
            label("a.py", 20, 4, 20, "copy_", "pageable", "same-function"),
            label("a.py", 30, 4, 30, "to", "pageable", "across"),
            label("b.py", 5, 0, 5, "to", "pageable", "layout"),
            label("b.py", 9, 0, 9, "to", "device", evidence="on the device already"),
        ]
    ]
    findings = [
        {"path": "a.py", "line": 12, "code": "PIN002"},  # last line of the first site: a hit
        {"path": "a.py", "line": 10, "code": "PIN001"},  # the same site again: counts as a true finding
        {"path": "a.py", "line": 20, "code": "PIN003"},  # another rule: ignored
        {"path": "b.py", "line": 20, "code": "PIN002"},  # same line as a site in a.py, other file: on no site
        {"path": "b.py", "line": 5, "code": "PIN002"},
        {"path": "b.py", "line": 9, "code": "PIN001", "message": "x"},  # on the device site
        {"path": "a.py", "line": 13, "code": "PIN001"},  # one line past the first site
    ]
    s = ev.score("demo 1.0", "plain", labels, findings)
    assert s.recall == {
        "inline": (1, 1),
        "same-function": (0, 1),
        "across": (0, 1),
        "layout": (1, 1),
        "in-function": (1, 2),
        "all": (2, 4),
    }
    assert (s.findings, s.true) == (6, 3)
    assert [lab.site.line for lab in s.missed] == [20, 30]
    assert [(f["path"], f["line"], [lab.verdict for lab in hit]) for f, hit in s.false] == [
        ("b.py", 20, []),
        ("b.py", 9, ["device"]),
        ("a.py", 13, []),
    ]
    both = ev.combine([s, ev.score("other 2.0", "plain", labels[:1], [])], "all projects", "plain")
    assert both.recall["all"] == (2, 5) and (both.findings, both.true) == (6, 3)
    assert ev.pct(2, 5) == "2/5 (40 %)" and ev.pct(0, 0) == "n/a"


def test_release_metadata_must_match(tmp_path):
    tree = make_release(tmp_path)
    ev.check_release(tree, "demo", "1.0")
    with pytest.raises(ev.EvalError, match="is demo 1.0 by PKG-INFO, not demo 1.1"):
        ev.check_release(tree, "demo", "1.1")
    wheel = tmp_path / "Demo_Pkg-2.0-wheel"
    write(wheel, "Demo_Pkg-2.0.dist-info/METADATA", "Name: Demo_Pkg\nVersion: 2.0\n")
    ev.check_release(wheel, "demo-pkg", "2.0")
    with pytest.raises(ev.EvalError, match="no PKG-INFO"):
        ev.check_release(tmp_path, "demo", "1.0")


FAKE_PINFIX = """\
import json, os, sys
deep = "--deep" in sys.argv
findings = [{"path": "./pkg/runner.py", "line": 6, "code": "PIN001", "message": "m"}]
if deep:  # an absolute path (cwd is the tree root) is read relative to the tree
    findings.append({"path": os.path.abspath("pkg/runner.py"), "line": 8, "code": "PIN002", "message": "pinned?"})
json.dump({"findings": findings, "errors": []}, sys.stdout)
sys.exit(1)
"""


def run_script(*args, cwd=None):
    return subprocess.run([sys.executable, str(SCRIPT), *args], check=False, capture_output=True, text=True, cwd=cwd)


def test_cli_scores_a_release_with_a_given_pinfix(tmp_path):
    make_release(tmp_path / "dists")
    labels = tmp_path / "demo-1.0.json"
    labels.write_text(json.dumps(demo_labels()))
    fake = tmp_path / "fake_pinfix.py"
    fake.write_text(FAKE_PINFIX)
    pinfix = f"{shlex.quote(sys.executable)} {shlex.quote(str(fake))}"
    base = ["--sdist-dir", str(tmp_path / "dists"), "--labels", str(labels), "--pinfix", pinfix]
    proc = run_script(*base, "--json-dir", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "## demo 1.0 (sdist)" in out
    assert "3 sites; by verdict: pageable 1, pinned 1, device 0, not-h2d 0, blocking 0, unclear 1" in out
    assert "| plain | 1/1 (100 %) | n/a | n/a | n/a | 1/1 (100 %) | 1/1 (100 %) | 1 | 1 | 1/1 (100 %) |" in out
    assert "| deep | 1/1 (100 %) | n/a | n/a | n/a | 1/1 (100 %) | 1/1 (100 %) | 2 | 1 | 1/2 (50 %) |" in out
    assert "- `pkg/runner.py:8` PIN002 on a site labelled `pinned`: pin_memory() just above" in out
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["demo-1.0.deep.json", "demo-1.0.plain.json"]
    # The kept JSON is reused: a broken pinfix is not run again.
    fake.write_text("raise SystemExit(3)\n")
    assert run_script(*base, "--json-dir", str(tmp_path / "runs")).stdout == out
    proc = run_script(*base)
    assert proc.returncode == 2
    assert proc.stderr.startswith("eval_projects: error: pinfix plain on ") and "failed (exit 3)" in proc.stderr
    (tmp_path / "runs" / "demo-1.0.plain.json").write_text("{cut short")
    proc = run_script(*base, "--json-dir", str(tmp_path / "runs"))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "demo-1.0.plain.json: cannot reuse this pinfix run" in proc.stderr


def test_cli_refuses_labels_that_do_not_cover_the_sites(tmp_path):
    make_release(tmp_path / "dists")
    labels = tmp_path / "demo-1.0.json"
    data = demo_labels()
    data["sites"] = data["sites"][1:] + [label("pkg/gone.py", 1, 0, 1, "to", "device")]
    labels.write_text(json.dumps(data))
    proc = run_script("--sdist-dir", str(tmp_path / "dists"), "--labels", str(labels))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"eval_projects: error: {labels} does not cover the 3 sites of demo 1.0 exactly:",
        "  missing label: pkg/other.py:2:11 (to, to line 2)",
        "  extra label (no such site): pkg/gone.py:1:0 (to, to line 1)",
    ]
    labels.write_text(json.dumps(demo_labels(version="1.1")))
    (tmp_path / "dists" / "demo-1.0").rename(tmp_path / "dists" / "demo-1.1")
    proc = run_script("--sdist-dir", str(tmp_path / "dists"), "--labels", str(labels))
    assert proc.returncode == 2 and proc.stderr.strip().endswith("is demo 1.0 by PKG-INFO, not demo 1.1")


def test_list_sites_prints_a_skeleton_to_fill_in(tmp_path):
    make_release(tmp_path / "dists")
    proc = run_script("--sdist-dir", str(tmp_path / "dists"), "--list-sites", "demo", "1.0")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["fetch"] == ["sdist"]
    assert [(s["path"], s["line"], s["col"], s["verdict"], s["kind"]) for s in data["sites"]] == [
        ("pkg/other.py", 2, 11, "", None),
        ("pkg/runner.py", 6, 4, "", None),
        ("pkg/runner.py", 8, 11, "", None),
    ]


def test_real_pinfix_is_scored(tmp_path):
    """The default pinfix (this interpreter's) reads the tree; its JSON paths match the labels'."""
    make_release(tmp_path / "dists")
    labels = tmp_path / "demo-1.0.json"
    labels.write_text(json.dumps(demo_labels()))
    proc = run_script("--sdist-dir", str(tmp_path / "dists"), "--labels", str(labels), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "| plain | 1/1 (100 %) |" in proc.stdout and "| deep | 1/1 (100 %) |" in proc.stdout
    assert "False positives (plain): 0" in proc.stdout
