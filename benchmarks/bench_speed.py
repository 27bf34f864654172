#!/usr/bin/env python3
"""Speed benchmark: pinfix against ruff, Fixit and grep over the vLLM source tree.

Obtains the vLLM sdist with the project's ``fetch-sdist`` tool, copies it to a
temporary directory and runs, in alternation for several rounds:

* ``pinfix check --no-progress --output-format json TREE``
* the same with ``--deep``, when this pinfix has it
* the same with every shortcut off (``PINFIX_NO_PREFILTER=1``)
* ``ruff check --select F --no-cache TREE``
* ``fixit --rules pinfix.lint_rules.pageable_non_blocking_copy lint TREE`` (our rule only)
* ``grep -rl non_blocking TREE``
* the parse floor: ``ast.parse`` of every module under the tree's import root (deep
  mode reads every one of them; summaries are made from one parse of each), the
  least time a cold deep run in Python can take

For each child it records wall time and peak memory: ``ru_maxrss`` from
``os.wait4`` (the largest single process among the child and its waited-for
descendants) and the summed RSS of the whole process tree, sampled from
``/proc``. It prints a markdown table (medians), checks that pinfix finds the
same with and without the shortcuts, times the pre-commit path (ten files that
cannot hold a finding) and shows how pinfix scales with 1x, 2x and 4x copies of
the tree. A few modules are also checked alone with ``--deep --no-cache`` (issue 27: none
over 2 s or 300 MB).

Progress goes to stderr; the report (markdown) goes to stdout.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
RULE = "pinfix.lint_rules.pageable_non_blocking_copy"
NO_PREFILTER_ENV = "PINFIX_NO_PREFILTER"
DEEP_LABEL = "pinfix check --deep"
PARSE_FLOOR_LABEL = "parse floor (ast.parse of every module deep mode reads)"
#: The parse floor's child: the ``.py`` files below the root that deep mode reads
#: (no hidden folder, none of ``pinfix.semantic.roots.NOT_PROJECT``), each parsed.
PARSE_FLOOR = """
import ast, os, sys
skip = {"build", "dist", "node_modules", "site-packages", "venv", "__pycache__"}
n = 0
for directory, subdirs, names in os.walk(sys.argv[1]):
    subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in skip)
    for name in sorted(names):
        if name.endswith(".py"):
            try:
                with open(os.path.join(directory, name), "rb") as f:
                    ast.parse(f.read())
                n += 1
            except (OSError, SyntaxError, ValueError, RecursionError):
                pass
print(n, "modules parsed")
"""
DEEP_WARM_LABEL = "pinfix check --deep, warm cache"
DEEP_ONE_LABEL = "pinfix check --deep FILE, one changed file (a comment), warm cache"
DEEP_CODE_LABEL = "pinfix check --deep FILE, one changed file (a new pageable copy), warm cache"
DEEP_HUB_LABEL = "pinfix check --deep FILE, a comment above the code of a module many verdicts read, warm cache"
#: The same module edited once more right after (the row above is the first edit after a tree run).
DEEP_HUB_AGAIN_LABEL = "pinfix check --deep FILE, that module edited again (another comment above its code)"
#: The same call once more with no edit in between (a retried commit).
DEEP_HUB_RETRY_LABEL = "pinfix check --deep FILE, that call again with no edit (a retried commit)"


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- running one child and measuring it -------------------------------------


@dataclass
class Sample:
    wall: float
    maxrss_kib: int  # ru_maxrss from wait4: largest single process
    tree_rss_kib: int  # sampled sum over the process tree
    rc: int
    cpu: float = 0.0  # user + system seconds, the child and its waited-for descendants
    timed_out: bool = False
    stdout: bytes = b""
    stderr: bytes = b""


def _children(pid: int) -> List[int]:
    out: List[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return out


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return 0


def _tree_rss_kib(root: int) -> int:
    total, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _rss_kib(pid)
        stack.extend(_children(pid))
    return total


def measure(
    cmd: Sequence[str],
    cwd: Path,
    env: Optional[Dict[str, str]] = None,
    timeout: Optional[float] = None,
    sample_interval: float = 0.05,
    keep_output: bool = False,
) -> Sample:
    """Run ``cmd`` once; wall time, peak RSS (wait4 and sampled tree), exit code."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(cmd),
            cwd=str(cwd),
            env=env,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        peak = [0]
        done = threading.Event()
        timed_out = [False]

        def sampler() -> None:
            while not done.wait(sample_interval):
                peak[0] = max(peak[0], _tree_rss_kib(proc.pid))

        def killer() -> None:
            if timeout is not None and not done.wait(timeout):
                timed_out[0] = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass

        threads = [threading.Thread(target=sampler, daemon=True), threading.Thread(target=killer, daemon=True)]
        for t in threads:
            t.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        proc.returncode = os.waitstatus_to_exitcode(status)
        for t in threads:
            t.join()
        # Any stragglers in the session (there should be none).
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        sample = Sample(
            wall,
            usage.ru_maxrss,
            max(peak[0], usage.ru_maxrss),
            proc.returncode,
            usage.ru_utime + usage.ru_stime,
            timed_out[0],
        )
        if keep_output:
            out.seek(0)
            err.seek(0)
            sample.stdout, sample.stderr = out.read(), err.read()
        return sample


# --- tools ----------------------------------------------------------------------


def find_tool(name: str) -> Optional[str]:
    """Prefer the tool next to this interpreter (the project's venv), then PATH."""
    local = Path(sys.executable).parent / name
    if local.exists() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(name)


@dataclass
class Tool:
    label: str
    cmd: List[str]
    env: Dict[str, str]
    ok_rc: Tuple[int, ...]
    rounds: int
    timeout: Optional[float] = None
    keep_output: bool = False
    samples: List[Sample] = field(default_factory=list)
    note: str = ""
    #: Run before each round (not timed): the one-changed-file row edits its file.
    before: Optional[Callable[[], None]] = None


def base_env() -> Dict[str, str]:
    env = dict(os.environ)
    env.pop(NO_PREFILTER_ENV, None)
    return env


def pinfix_supports(pinfix: str, flag: str) -> bool:
    out = subprocess.run([pinfix, "check", "--help"], check=False, capture_output=True, text=True).stdout
    return flag in out


def parse_findings(sample: Sample) -> Tuple[Optional[List[tuple]], Optional[list], str]:
    try:
        doc = json.loads(sample.stdout.decode("utf-8", "replace"))
    except ValueError as e:
        return None, None, f"unparsable JSON ({e})"
    findings = sorted((f.get("path"), f.get("line"), f.get("column"), f.get("code")) for f in doc.get("findings", []))
    errors = doc.get("errors", [])
    return findings, errors, ""


# --- helpers for trees -----------------------------------------------------------


def fetch_tree(tool: Path, cache: Path, version: str) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [str(tool), "vllm", version, str(cache)]
    if not os.access(tool, os.X_OK):
        cmd = [sys.executable] + cmd
    log(f"fetching vllm {version} sdist into {cache} (reuses an earlier download)")
    res = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"fetch-sdist failed ({res.returncode}):\n{res.stderr}")
    tree = Path(res.stdout.strip().splitlines()[-1])
    if not tree.is_dir():
        sys.exit(f"fetch-sdist printed {tree!r}, which is not a directory")
    return tree


def py_files(tree: Path) -> List[Path]:
    return sorted(p for p in tree.rglob("*.py") if p.is_file())


def py_bytes(tree: Path) -> int:
    return sum(p.stat().st_size for p in py_files(tree))


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def fmt_ratio(x: float, y: float) -> str:
    if not (x == x and y == y) or y == 0:  # NaN
        return "n/a"
    return f"{x / y:.3g}x"


# --- sections ----------------------------------------------------------------


def main_comparison(args, work: Path, tree: Path, tools: Dict[str, str], report: List[str]) -> Dict[str, float]:
    pinfix = tools["pinfix"]
    extra = ["--no-cache"] if pinfix_supports(pinfix, "--no-cache") else []
    pin_cmd = [pinfix, "check", "--no-progress", "--output-format", "json", *extra, str(tree)]
    no_pre_env = base_env()
    no_pre_env[NO_PREFILTER_ENV] = "1"
    deep = pinfix_supports(pinfix, "--deep")

    line_tools: List[Tool] = [
        Tool("pinfix check", pin_cmd, base_env(), (0, 1), args.rounds, keep_output=True),
        # With its content-hash cache, as a repeated run (pre-commit, editor, CI re-run) sees it;
        # each round follows an untimed run that brings the cache up to date (a tree copied just
        # before the first round is "racily clean": its files' stats are not kept then).
        plain_warm(pin_cmd, work, args.rounds if extra else 0),
        # Deep mode (sources followed into other functions and files), once this pinfix has it.
        Tool(DEEP_LABEL, [*pin_cmd[:2], "--deep", *pin_cmd[2:]], base_env(), (0, 1), args.rounds, keep_output=True)
        if deep
        else None,
        # Deep with its cache, nothing changed since the last run: each round is preceded by an
        # untimed run that brings the cache up to date (the row below edits a file every round).
        deep_warm(pin_cmd, work, args.rounds) if extra and deep else None,
        # The pre-commit call on one file just edited, with the cache the row above left: its
        # own verdict and those of the files whose verdict read it are redone.
        one_changed_file(pinfix, tree, args.rounds) if extra and deep else None,
        # The same with an edit that changes the module's meaning: its dependents are rechecked.
        one_changed_file(pinfix, tree, args.rounds, code=True) if extra and deep else None,
        # A comment line above the code of a module many files import: everything in it moves.
        one_changed_file(pinfix, tree, args.rounds, hub=True) if extra and deep else None,
        # Right after: another such comment (the module being edited), then the call once more.
        one_changed_file(pinfix, tree, args.rounds, hub=True, again=True) if extra and deep else None,
        one_changed_file(pinfix, tree, args.rounds, hub=True, retry=True) if extra and deep else None,
        Tool(
            f"pinfix check, shortcuts off ({NO_PREFILTER_ENV}=1)",
            pin_cmd,
            no_pre_env,
            (0, 1),
            args.no_prefilter_rounds,
            timeout=args.no_prefilter_timeout,
            keep_output=True,
        ),
        Tool(
            "ruff check --select F --no-cache",
            [tools["ruff"], "check", "--select", "F", "--no-cache", str(tree)],
            base_env(),
            (0, 1),
            args.rounds,
        )
        if tools.get("ruff")
        else None,
        Tool(
            f"fixit lint (--rules {RULE})",
            [tools["fixit"], "--rules", RULE, "lint", str(tree)],
            base_env(),
            (0, 1),
            args.fixit_rounds,
            timeout=args.fixit_timeout,
        )
        if tools.get("fixit")
        else None,
        Tool("grep -rl non_blocking", ["grep", "-rl", "non_blocking", str(tree)], base_env(), (0, 1), args.rounds),
        # What a cold deep run cannot go below in Python: parsing what it reads (vLLM's tree is
        # its own import root; a summary of each module under it takes one parse).
        Tool(PARSE_FLOOR_LABEL, [sys.executable, "-c", PARSE_FLOOR, str(tree)], base_env(), (0,), args.rounds)
        if deep
        else None,
    ]
    line_tools = [t for t in line_tools if t is not None and t.rounds > 0]
    max_rounds = max(t.rounds for t in line_tools)
    for r in range(max_rounds):
        for t in line_tools:
            if r >= t.rounds:
                continue
            log(f"round {r + 1}/{max_rounds}: {t.label} ...")
            if t.before is not None:
                t.before()
            s = measure(t.cmd, cwd=work, env=t.env, timeout=t.timeout, keep_output=t.keep_output and r == 0)
            t.samples.append(s)
            status = "TIMED OUT" if s.timed_out else f"rc={s.rc}"
            log(
                f"    {s.wall:.2f} s (cpu {s.cpu:.1f} s), {s.maxrss_kib / 1024:.0f} MiB (tree {s.tree_rss_kib / 1024:.0f} MiB), {status}"
            )
            if not s.timed_out and s.rc not in t.ok_rc:
                t.note = f"unexpected exit code {s.rc}"
                log(f"    WARNING: {t.label}: exit code {s.rc}; stderr: {s.stderr[-500:]!r}")

    def wall_of(t: Tool) -> float:
        done = [s.wall for s in t.samples if not s.timed_out]
        return median(done) if done else float("nan")

    by_label = {t.label: t for t in line_tools}
    ruff_t = next((t for t in line_tools if t.label.startswith("ruff")), None)
    fixit_t = next((t for t in line_tools if t.label.startswith("fixit")), None)
    ruff_w = wall_of(ruff_t) if ruff_t else float("nan")
    fixit_w = wall_of(fixit_t) if fixit_t else float("nan")
    fixit_lower = None
    if fixit_t and all(s.timed_out for s in fixit_t.samples):
        fixit_lower = args.fixit_timeout

    report.append(
        "| tool | runs | median wall s | median CPU s | peak RSS MiB (largest process) "
        "| peak RSS MiB (process tree) | ratio to ruff | ratio to fixit |"
    )
    report.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for t in line_tools:
        w = wall_of(t)
        rss = max((s.maxrss_kib for s in t.samples), default=0) / 1024
        trss = max((s.tree_rss_kib for s in t.samples), default=0) / 1024
        timed_out = sum(s.timed_out for s in t.samples)
        if w != w and timed_out:
            wall_s = f"> {t.timeout:.0f} (timed out)"
        else:
            wall_s = f"{w:.2f}" + (f" ({timed_out} timed out)" if timed_out else "")
        if fixit_lower is not None:
            to_fixit = f"< {w / fixit_lower:.3g}x" if w == w else "n/a"
        else:
            to_fixit = fmt_ratio(w, fixit_w)
        label = t.label + (f" [{t.note}]" if t.note else "")
        cpu = median([s.cpu for s in t.samples if not s.timed_out])
        report.append(
            f"| {label} | {len(t.samples)} | {wall_s} | {cpu:.2f} | {rss:.0f} | {trss:.0f} | {fmt_ratio(w, ruff_w)} "
            f"| {to_fixit} |"
        )
    report.append("")
    if extra:
        report.append("pinfix was run with `--no-cache` (it supports one), like ruff.")

    # Findings with and without the shortcuts.
    pin_t = line_tools[0]
    off_t = by_label.get(f"pinfix check, shortcuts off ({NO_PREFILTER_ENV}=1)")
    on_f, on_e, on_why = parse_findings(pin_t.samples[0])
    if off_t and off_t.samples and not off_t.samples[0].timed_out:
        off_f, off_e, off_why = parse_findings(off_t.samples[0])
        if on_f is None or off_f is None:
            report.append(f"Findings check: could not compare ({on_why or off_why}).")
        else:
            same = on_f == off_f
            report.append(
                f"Findings with shortcuts on: {len(on_f)} (errors: {len(on_e)}); with every shortcut off: "
                f"{len(off_f)} (errors: {len(off_e)}). Identical: **{'yes' if same else 'NO'}**."
            )
            if not same:
                for f in sorted(set(on_f) ^ set(off_f))[:20]:
                    where = "only with shortcuts" if f in set(on_f) else "only without shortcuts"
                    report.append(f"  - {where}: {f}")
            if on_e != off_e:
                report.append(f"  Errors differ: on={on_e[:5]} off={off_e[:5]}")
        # Is the switch honoured? With it, pinfix should take far longer than with the pre-filter.
        if wall_of(off_t) < 2 * wall_of(pin_t):
            report.append(
                f"Note: the run with {NO_PREFILTER_ENV}=1 was not much slower than the default run: the "
                "switch may not be honoured by this pinfix version."
            )
    else:
        report.append(f"Findings check: skipped (the {NO_PREFILTER_ENV}=1 run did not finish).")
    if on_f is not None:
        report.append(f"(pinfix JSON output: {len(on_f)} findings, {len(on_e)} errors.)")
    report.append("")
    deep_t = by_label.get(DEEP_LABEL)
    warm_t, one_t = by_label.get(DEEP_WARM_LABEL), by_label.get(DEEP_ONE_LABEL)
    code_t, hub_t = by_label.get(DEEP_CODE_LABEL), by_label.get(DEEP_HUB_LABEL)
    again_t = by_label.get(DEEP_HUB_AGAIN_LABEL)
    floor_t = by_label.get(PARSE_FLOOR_LABEL)
    return {
        "pinfix": wall_of(pin_t),
        "ruff": ruff_w,
        "fixit": fixit_w,
        "fixit_lower": fixit_lower or 0.0,
        "deep": wall_of(deep_t) if deep_t else float("nan"),
        "deep_warm": wall_of(warm_t) if warm_t else float("nan"),
        "deep_one": wall_of(one_t) if one_t else float("nan"),
        "deep_code": wall_of(code_t) if code_t else float("nan"),
        "deep_hub": wall_of(hub_t) if hub_t else float("nan"),
        "deep_hub_again": wall_of(again_t) if again_t else float("nan"),
        "floor": wall_of(floor_t) if floor_t else float("nan"),
    }


def plain_warm(pin_cmd: List[str], work: Path, rounds: int) -> Tool:
    cmd = [c for c in pin_cmd if c != "--no-cache"]

    def fill() -> None:
        subprocess.run(
            cmd, cwd=str(work), env=base_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )

    return Tool("pinfix check, warm cache", cmd, base_env(), (0, 1), rounds, keep_output=True, before=fill)


def deep_warm(pin_cmd: List[str], work: Path, rounds: int) -> Tool:
    cmd = [*pin_cmd[:2], "--deep", *[c for c in pin_cmd[2:] if c != "--no-cache"]]

    def fill() -> None:
        subprocess.run(
            cmd, cwd=str(work), env=base_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )

    return Tool(DEEP_WARM_LABEL, cmd, base_env(), (0, 1), rounds, before=fill)


#: The file the one-changed-file row edits: a vLLM file with a deep finding whose verdict
#: another file's reads (falls back to the first file that says ``non_blocking=True``).
ONE_CHANGED_FILE = "vllm/v1/attention/ops/rocm_aiter_mla_prefill.py"
#: A module whose text the verdicts of many files read (vLLM's tensor helpers: 51 of the
#: files with copies), for issue 27's "a comment in a module hundreds of files import".
HUB_FILE = "vllm/utils/torch_utils.py"


def one_changed_file(
    pinfix: str,
    tree: Path,
    rounds: int,
    code: bool = False,
    hub: bool = False,
    again: bool = False,
    retry: bool = False,
) -> Tool:
    """The pre-commit call on one file just edited: a comment appended (no change of meaning:
    the files whose verdict read it keep their verdicts), or with ``code`` a function with a
    new pageable copy appended (issue 27's case: the file is checked again and the copy
    reported; the files whose verdict read it keep theirs, as nothing they read names it),
    or with ``hub`` a comment line above the first import of a module many verdicts read
    (every line of code in it moves). With ``hub``, ``again`` is another such comment (run
    right after the first: the module being edited), ``retry`` the call with no edit."""
    target = tree / (HUB_FILE if hub else ONE_CHANGED_FILE)
    if not target.is_file():
        target = next(p for p in py_files(tree) if b"non_blocking=True" in p.read_bytes())
    edits = [0]

    def edit() -> None:
        edits[0] += 1
        if hub:
            lines = target.read_bytes().splitlines(True)
            first = next((n for n, line in enumerate(lines) if line.startswith((b"import ", b"from "))), 0)
            lines.insert(first, f"# pinfix benchmark note {'again ' if again else ''}{edits[0]}\n".encode())
            target.write_bytes(b"".join(lines))
            return
        line = (
            f"\n\ndef _pinfix_benchmark_copy_{edits[0]}(a, dev):\n"
            "    return torch.from_numpy(a).to(dev, non_blocking=True)\n"
            if code
            else f"# pinfix benchmark edit {edits[0]}\n"
        )
        with open(target, "a", encoding="utf-8") as f:
            f.write(line)

    cmd = [pinfix, "check", "--no-progress", "--output-format", "json", "--deep", str(target)]
    if retry:
        return Tool(DEEP_HUB_RETRY_LABEL, cmd, base_env(), (0, 1), rounds)
    label = (DEEP_HUB_AGAIN_LABEL if again else DEEP_HUB_LABEL) if hub else DEEP_CODE_LABEL if code else DEEP_ONE_LABEL
    return Tool(label, cmd, base_env(), (0, 1), rounds, before=edit)


def _prefilter_predicate():
    """pinfix's own "cannot hold a finding" test."""
    os.environ.pop(NO_PREFILTER_ENV, None)
    from pinfix.prefilter import may_contain_finding

    return lambda data: not may_contain_finding(data)


def precommit_path(args, work: Path, tree: Path, tools: Dict[str, str], report: List[str]) -> float:
    pinfix = tools["pinfix"]
    src = tree / "vllm"
    candidates = py_files(src if src.is_dir() else tree)
    rejects = _prefilter_predicate()
    # Worst realistic case first: files that mention non_blocking but that pinfix's
    # own pre-filter rules out; then any other file it rules out. A run with every
    # shortcut off then confirms that none of them holds a finding.
    excluded: set = set()
    for _attempt in range(5):
        picked: List[Path] = []
        for want_sink in (True, False):
            for p in candidates:
                if len(picked) >= 10:
                    break
                if p in excluded or p in picked:
                    continue
                data = p.read_bytes()
                if len(data) < 2000 or not rejects(data):
                    continue
                if want_sink == (b"non_blocking" in data):
                    picked.append(p)
        env_off = base_env()
        env_off[NO_PREFILTER_ENV] = "1"
        s = measure(
            [pinfix, "check", "--no-progress", "--output-format", "json", *map(str, picked)],
            cwd=work,
            env=env_off,
            keep_output=True,
        )
        found, _, _ = parse_findings(s)
        holding = {Path(f[0]) for f in (found or [])}
        if not holding:
            break
        log(f"pre-commit path: {len(holding)} picked files hold findings after all; picking others")
        excluded |= {p for p in picked if p in holding or Path(os.path.relpath(p, work)) in holding}
    clean = not holding
    pre = work / "precommit"
    pre.mkdir()
    files = []
    for i, p in enumerate(picked):
        dst = pre / f"f{i + 1:02d}_{p.name}"
        shutil.copyfile(p, dst)
        files.append(dst.name)
    size = sum((pre / f).stat().st_size for f in files)
    log(f"pre-commit path: {len(files)} files ({size / 1000:.0f} kB), {args.precommit_rounds} runs")
    env = base_env()
    cmd = [pinfix, "check", "--no-progress", *files]
    walls, rcs = [], set()
    base_walls = []
    for _ in range(args.precommit_rounds):
        s = measure(cmd, cwd=pre, env=env)
        walls.append(s.wall)
        rcs.add(s.rc)
        base_walls.append(measure([sys.executable, "-c", "pass"], cwd=pre, env=env).wall)
    w = median(walls)
    imp = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pinfix", "check", "--no-progress", *files],
        cwd=str(pre),
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )
    modules = set()
    for line in imp.stderr.splitlines():
        m = re.match(r"import time:\s*\d+\s*\|\s*\d+\s*\|\s*(\S+)", line)
        if m:
            modules.add(m.group(1).split(".")[0])
    heavy = {name: name in modules for name in ("libcst", "torch", "numpy", "fixit", "rich")}
    with_sink = sum(b"non_blocking" in (pre / f).read_bytes() for f in files)
    report.append(
        f"`pinfix check --no-progress f01..f{len(files):02d}` over {len(files)} vLLM files ({size / 1000:.0f} kB; "
        f"{with_sink} of them mention `non_blocking`; all ruled out by pinfix's pre-filter; a run with "
        f"every shortcut off finds {'nothing' if clean else 'FINDINGS'} in them): median wall **{w * 1000:.0f} ms** "
        f"over {len(walls)} runs (min {min(walls) * 1000:.0f} ms; exit codes {sorted(rcs)}). "
        f"Bare interpreter start (`python -c pass`): {median(base_walls) * 1000:.0f} ms."
    )
    report.append(
        "Imported on that path (`python -X importtime -m pinfix check ...`): "
        + ", ".join(f"{k}: {'YES' if v else 'no'}" for k, v in heavy.items())
        + f" ({len(modules)} top-level modules in all)."
    )
    report.append("")
    return w


#: Modules of vLLM 0.34.0 whose deep check alone took longest: found by timing each file of one
#: ``-j 1`` deep run over ``vllm/`` (a module checked after others reuses their answers, so
#: each is timed alone here). Others are added by size (:func:`single_modules`).
HEAVY_MODULES = (
    "vllm/v1/attention/backends/flashinfer.py",
    "vllm/models/kimi_k3/nvidia/kda_metadata.py",
    "vllm/distributed/kv_transfer/kv_connector/v1/example_connector.py",
)
#: Issue 27: no single module's deep check over this long or this large.
MODULE_SECONDS, MODULE_MIB = 2.0, 300


def single_modules(args, work: Path, tree: Path, tools: Dict[str, str], report: List[str]) -> None:
    """Each of a few modules checked alone with ``--deep --no-cache`` (what a pre-commit call
    on it costs when its verdict must be made again): :data:`HEAVY_MODULES` where the tree has
    them, and the largest modules that say ``non_blocking=True``, to ``--modules`` in all."""
    pinfix = tools["pinfix"]
    chosen = [tree / m for m in HEAVY_MODULES if (tree / m).is_file()]
    for path in sorted(py_files(tree), key=lambda p: -p.stat().st_size):
        if len(chosen) >= args.modules:
            break
        if (
            path not in chosen
            and "/tests/" not in f"/{path.relative_to(tree)}"
            and b"non_blocking=True" in path.read_bytes()
        ):
            chosen.append(path)
    report.append("| module | lines | wall s | CPU s | peak RSS MiB | within 2 s and 300 MB |")
    report.append("|---|---:|---:|---:|---:|---|")
    worst, met = (0.0, 0.0), True
    for path in chosen[: args.modules]:
        log(f"alone: {path.relative_to(tree)} ...")
        cmd = [pinfix, "check", "--deep", "--no-cache", "--no-progress", "--output-format", "json", str(path)]
        s = measure(cmd, cwd=work, env=base_env(), timeout=args.no_prefilter_timeout)
        mib = max(s.maxrss_kib, s.tree_rss_kib) / 1024
        worst = (max(worst[0], s.wall), max(worst[1], mib))
        ok = s.wall <= MODULE_SECONDS and mib <= MODULE_MIB and not s.timed_out
        met = met and ok
        lines = path.read_bytes().count(b"\n")
        report.append(
            f"| `{path.relative_to(tree)}` | {lines} | {s.wall:.2f} | {s.cpu:.2f} | {mib:.0f} | {'yes' if ok else '**no**'} |"
        )
    report.append("")
    report.append(
        f"Target no module over {MODULE_SECONDS:.0f} s or {MODULE_MIB} MB (issue 27): {'met' if met else 'NOT met'} "
        f"(slowest {worst[0]:.2f} s, largest {worst[1]:.0f} MiB)."
    )
    report.append("")


def scaling(args, work: Path, tree: Path, tools: Dict[str, str], report: List[str]) -> None:
    pinfix = tools["pinfix"]
    extra = ["--no-cache"] if pinfix_supports(pinfix, "--no-cache") else []
    one_mb = py_bytes(tree) / 1e6
    rows = []
    for k in args.scales:
        root = work / f"scale{k}x"
        root.mkdir()
        for i in range(k):
            # Hard links: same bytes to read and parse, no extra disk.
            shutil.copytree(tree, root / f"copy{i + 1}", copy_function=os.link, symlinks=True)
        walls, rss, cpus = [], [], []
        for r in range(args.scaling_rounds):
            log(f"scaling {k}x, run {r + 1}/{args.scaling_rounds} ...")
            s = measure([pinfix, "check", "--no-progress", *extra, str(root)], cwd=work, env=base_env())
            walls.append(s.wall)
            rss.append(s.tree_rss_kib)
            cpus.append(s.cpu)
            log(f"    {s.wall:.2f} s (cpu {s.cpu:.1f} s), rc={s.rc}")
        w = median(walls)
        rows.append((k, k * one_mb, w, median(cpus), max(rss) / 1024))
        shutil.rmtree(root)
    report.append(
        "| copies | .py MB | median wall s | wall s per MB | median CPU s | CPU s per MB | peak RSS MiB (tree) |"
    )
    report.append("|---:|---:|---:|---:|---:|---:|---:|")
    for k, mb, w, c, r in rows:
        report.append(f"| {k}x | {mb:.1f} | {w:.2f} | {w / mb:.4f} | {c:.2f} | {c / mb:.4f} | {r:.0f} |")
    if len(rows) > 1:
        k0, mb0, w0, c0, _ = rows[0]
        report.append("")
        report.append(
            "Wall relative to 1x: "
            + ", ".join(f"{k}x -> {w / w0:.2f}" for k, _, w, _, _ in rows)
            + "; CPU relative to 1x: "
            + ", ".join(f"{k}x -> {c / c0:.2f}" for k, _, _, c, _ in rows)
            + " (linear would be "
            + ", ".join(f"{k / k0:.0f}" for k, *_ in rows)
            + ")."
        )
    report.append("")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({cpu}){mem}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def versions(tools: Dict[str, str]) -> str:
    parts = []
    for name, exe in tools.items():
        if not exe:
            continue
        res = subprocess.run([exe, "--version"], check=False, capture_output=True, text=True)
        parts.append((res.stdout or res.stderr).strip().splitlines()[0] if (res.stdout or res.stderr) else name)
    return "; ".join(parts)


def pinfix_revision() -> str:
    """The commit of this checkout (pinfix is usually installed editable from it)."""
    res = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"], check=False, capture_output=True, text=True
    )
    return f"checkout {res.stdout.strip()}" if res.returncode == 0 else "an unknown revision"


def compile_bytecode() -> str:
    """Byte-compile pinfix as pip does when it installs a package. An editable
    checkout run with PYTHONDONTWRITEBYTECODE=1 (as on these machines) would
    otherwise compile every module of ours again in every process."""
    import compileall

    ok = all(compileall.compile_dir(str(REPO / d), quiet=1) for d in ("pinfix", "codemods", "lint_rules"))
    return "byte-compiled first, as an install does" if ok else "could not be byte-compiled (timings include compiling)"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--fetch-tool",
        default=str(REPO.parent / "shared" / "tools" / "fetch-sdist"),
        help="the fetch-sdist tool (default: ../shared/tools/fetch-sdist from the repo root)",
    )
    ap.add_argument("--cache-dir", default="/tmp/pinfix-bench", help="where sdists are downloaded and unpacked")
    ap.add_argument("--vllm-version", default="0.34.0")
    ap.add_argument("--tree", help="use this source tree instead of fetching one (it is still copied)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds for pinfix, ruff and grep (default 5)")
    ap.add_argument(
        "--no-prefilter-rounds",
        type=int,
        default=1,
        help="rounds for pinfix with every shortcut off; it parses every file (default 1)",
    )
    ap.add_argument("--no-prefilter-timeout", type=float, default=1800.0, help="seconds (default 1800)")
    ap.add_argument("--fixit-rounds", type=int, default=1, help="rounds for fixit; 0 skips it (default 1)")
    ap.add_argument(
        "--fixit-timeout",
        type=float,
        default=2400.0,
        help="seconds per fixit run; on timeout ratios become bounds (default 2400)",
    )
    ap.add_argument("--precommit-rounds", type=int, default=15)
    ap.add_argument("--scaling-rounds", type=int, default=3)
    ap.add_argument("--scales", type=int, nargs="*", default=[1, 2, 4], help="tree copies to time (default 1 2 4)")
    ap.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=["compare", "modules", "precommit", "scaling"],
        help="skip a section (repeatable)",
    )
    ap.add_argument("--modules", type=int, default=5, help="modules checked alone with --deep (default 5)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args(argv)

    tools = {"pinfix": find_tool("pinfix"), "ruff": find_tool("ruff"), "fixit": find_tool("fixit")}
    if not tools["pinfix"]:
        sys.exit("pinfix is not installed (pip install -e .)")
    for name in ("ruff", "fixit"):
        if not tools[name]:
            log(f"WARNING: {name} not found; its row is left out")

    if args.tree:
        source = Path(args.tree).resolve()
    else:
        source = fetch_tree(Path(args.fetch_tool), Path(args.cache_dir), args.vllm_version)
    work = Path(tempfile.mkdtemp(prefix="pinfix-bench-"))
    try:
        tree = work / source.name
        log(f"copying {source} to {tree}")
        shutil.copytree(source, tree, symlinks=True)
        n_py = len(py_files(tree))
        mb = py_bytes(tree) / 1e6
        n_lines = sum(p.read_bytes().count(b"\n") for p in py_files(tree))
        report = [
            f"## pinfix speed benchmark ({time.strftime('%Y-%m-%d')})",
            "",
            f"Machine: {machine()}.",
            f"Tools: {versions(tools)}; pinfix from {pinfix_revision()}, {compile_bytecode()}.",
            f"Tree: {source.name} ({n_py} .py files, {n_lines / 1e6:.2f} M lines, {mb:.1f} MB of .py), "
            f"copied to a temporary directory; each tool is run as a child process with the temporary "
            f"directory as its working directory.",
            "",
        ]
        if "compare" not in args.skip:
            report.append(f"### Whole tree ({args.rounds} rounds in alternation; fewer where noted)")
            report.append("")
            walls = main_comparison(args, work, tree, tools, report)
            if walls["ruff"] == walls["ruff"]:
                ok = walls["pinfix"] <= walls["ruff"]
                report.append(
                    f"Target pinfix <= ruff: {'met' if ok else 'NOT met'} "
                    f"({walls['pinfix']:.2f} s vs {walls['ruff']:.2f} s)."
                )
            if walls["ruff"] == walls["ruff"] and walls["deep"] == walls["deep"]:
                ok = walls["deep"] <= 5 * walls["ruff"]
                report.append(
                    f"Target pinfix --deep <= 5x ruff (issue 27): {'met' if ok else 'NOT met'} "
                    f"({walls['deep']:.2f} s vs {walls['ruff']:.2f} s, {walls['deep'] / walls['ruff']:.2f}x)."
                )
                if walls["floor"] == walls["floor"]:
                    ok = walls["deep"] <= 1.5 * walls["floor"]
                    report.append(
                        f"Target pinfix --deep <= 1.5x the parse floor: {'met' if ok else 'NOT met'} "
                        f"({walls['deep'] / walls['floor']:.2f}x the floor's {walls['floor']:.2f} s)."
                    )
            if walls["ruff"] == walls["ruff"] and walls["deep_warm"] == walls["deep_warm"]:
                ok = walls["deep_warm"] <= 0.5 * walls["ruff"]
                report.append(
                    f"Target pinfix --deep, warm cache <= 0.5x ruff: {'met' if ok else 'NOT met'} "
                    f"({walls['deep_warm']:.2f} s, {walls['deep_warm'] / walls['ruff']:.2f}x)."
                )
            for key, what in (
                ("deep_one", "a comment"),
                ("deep_code", "code"),
                ("deep_hub", "a comment above code"),
                ("deep_hub_again", "a comment above code, again"),
            ):
                if walls[key] == walls[key]:
                    ok = walls[key] <= 0.3
                    report.append(
                        f"Target one changed file ({what}), deep, warm cache <= 300 ms: {'met' if ok else 'NOT met'} "
                        f"({walls[key] * 1000:.0f} ms)."
                    )
            if walls["fixit"] == walls["fixit"]:
                speed = walls["fixit"] / walls["pinfix"]
                report.append(f"Target >= 20x faster than fixit: {'met' if speed >= 20 else 'NOT met'} ({speed:.0f}x).")
            elif walls["fixit_lower"]:
                report.append(
                    f"fixit timed out: pinfix is at least {walls['fixit_lower'] / walls['pinfix']:.0f}x faster."
                )
            report.append("")
        if "modules" not in args.skip:
            report.append("### Single modules, deep, no cache (one run each)")
            report.append("")
            single_modules(args, work, tree, tools, report)
        if "precommit" not in args.skip:
            report.append("### Pre-commit path")
            report.append("")
            w = precommit_path(args, work, tree, tools, report)
            report.append(f"Target <= 100 ms: {'met' if w <= 0.1 else 'NOT met'}.")
            report.append("")
        if "scaling" not in args.skip:
            report.append(f"### Scaling ({args.scaling_rounds} runs each, copies as sibling subdirectories)")
            report.append("")
            scaling(args, work, tree, tools, report)
        print("\n".join(report))
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
