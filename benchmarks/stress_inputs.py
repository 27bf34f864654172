#!/usr/bin/env python3
"""Stress inputs: how pinfix's time and memory grow with the size of one file.

Generates, for each shape, one file at 1x, 2x, 4x, 8x ... a base size, each
holding one fixable finding (so every stage runs), and measures

* ``pinfix check --no-cache -j 1 FILE``
* ``pinfix fix -j 1 COPY`` (on a fresh copy each time)
* ``ruff check --isolated --no-cache --select F FILE``, when ruff is installed

(wall time, CPU seconds, peak RSS) with :func:`bench_speed.measure`. It prints
a markdown table per shape, with each size's cost relative to the 1x one, so
the curve shows: linear growth doubles with the size, quadratic quadruples.

``--stages`` also times pinfix's own stages in this process for each input
(byte pre-filter, CPython parse, nesting screen, analysis, fix applier, byte
comparison and compile check, diff), to show where the time goes.

Shapes (the issue-14 inputs, at smaller sizes):

* ``lines``: N module-level statements (the 200k-line file);
* ``line``: one line of N list items (the 5 MB single line);
* ``list``: a list literal with one item per line, N lines (the 1M-line literal);
* ``defs``: N/4 small functions, each with a finding (code-like);
* ``fixes``: N fixable copies in one function: ``fix``'s cost per fix (linear: the
  applier once compared each edit with every earlier one);
* ``string``: N lines inside one string literal (the cheap case, for contrast);
* ``sinks``: N nested ``.to(`` calls and a positional ``True`` (no ``non_blocking``):
  not Python, but the byte pre-filter reads it before any parser does.

Standard library only; progress on stderr, the report on stdout.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_speed import base_env, compile_bytecode, find_tool, machine, measure, pinfix_revision, versions

HEAD = (
    "import numpy as np\n"
    "import torch\n"
    "\n"
    "\n"
    "def load(a):\n"
    '    return torch.from_numpy(a).to("cuda", non_blocking=True)\n'
    "\n"
    "\n"
)


def _lines(n: int) -> str:
    return HEAD + "".join(f"value_{i} = {i}\n" for i in range(n))


def _line(n: int) -> str:
    return HEAD + "DATA = [" + ", ".join(str(i) for i in range(n)) + "]\n"


def _list(n: int) -> str:
    return HEAD + "DATA = [\n" + "".join(f"    {i},\n" for i in range(n)) + "]\n"


def _defs(n: int) -> str:
    body = "".join(
        f"\n\ndef load_{i}(a):\n    return torch.from_numpy(a).to('cuda', non_blocking=True)\n" for i in range(n // 4)
    )
    return HEAD + body


def _fixes(n: int) -> str:
    # N fixes in one file, one function: what `fix` does per fix (the applier
    # compared each edit with every earlier one: quadratic in this count).
    body = "".join(f"    dst_{i % 8}.copy_(torch.from_numpy(a_{i % 8}), non_blocking=True)\n" for i in range(n))
    return HEAD + "def fill(" + ", ".join(f"dst_{i}, a_{i}" for i in range(8)) + "):\n" + body


def _string(n: int) -> str:
    return HEAD + 'DOC = """\n' + "".join(f"line {i} of the text\n" for i in range(n)) + '"""\n'


def _sinks(n: int) -> str:
    # Not Python (deeper than 200 brackets), and no finding: the byte
    # pre-filter reads it before any parser does, and without `non_blocking`
    # it looks for a positional `True` inside each sink's parentheses.
    return "import torch\n\nf(" + "a.to(" * n + "x" + ")" * n + ", True)\n"


#: shape -> (generator, base size, what the size counts)
SHAPES: Dict[str, tuple] = {
    "lines": (_lines, 2_500, "statements"),
    "line": (_line, 10_000, "items on one line"),
    "list": (_list, 1_000, "lines of items"),
    "defs": (_defs, 1_000, "lines (N/4 functions)"),
    "fixes": (_fixes, 2_500, "fixes in one file"),
    "string": (_string, 100_000, "lines in a string"),
    "sinks": (_sinks, 1_000, "nested .to( calls"),
}


def log(msg: str) -> None:
    print(f"[stress {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _cell(sample, base) -> str:  # type: ignore[no-untyped-def]
    if sample is None:
        return "n/a"
    if sample.timed_out:
        return "timeout"
    growth = f" ({sample.cpu / base.cpu:.1f}x)" if base is not None and base.cpu > 0 and not base.timed_out else ""
    return f"{sample.wall:.2f} / {sample.cpu:.2f}{growth} / {sample.tree_rss_kib / 1024:.0f}"


def _per_byte(sample, size: int) -> str:  # type: ignore[no-untyped-def]
    """Peak memory per byte of source: bounded per source byte, it settles to a
    constant as the file grows (the interpreter's own ~20 MB weigh on small files)."""
    if sample is None or sample.timed_out or not size:
        return "n/a"
    return f"{sample.tree_rss_kib * 1024 / size:.0f}"


def stages(data: bytes) -> Dict[str, float]:
    """CPU seconds per pinfix stage for ``data`` (fixed as ``pinfix fix`` would), in this process."""
    from pinfix.config import Config, settings_of
    from pinfix.diffs import unified_diff
    from pinfix.engine import MAX_SYNTAX_DEPTH, deep_recursion, nested_deeper_than, on_deep_stack
    from pinfix.fixes import apply_fixes
    from pinfix.fixes.plan import planned_findings
    from pinfix.prefilter import gc_paused, may_contain_finding
    from pinfix.semantic import SourceError, SourceText, analyze_module
    from pinfix.writing import unintended_change

    config = Config()
    settings = settings_of(config)
    out: Dict[str, float] = {}

    def timed(name: str, fn: Callable[[], object]) -> object:
        start = time.process_time()
        value = fn()
        out[name] = out.get(name, 0.0) + time.process_time() - start
        return value

    def run() -> None:
        with gc_paused():
            if not timed("bytes", lambda: may_contain_finding(data, config)):
                return
            try:
                src = timed("parse", lambda: SourceText.from_bytes(data, "m.py"))
                tree = timed("parse", lambda: src.parse())  # type: ignore[attr-defined]
            except SourceError:
                return  # not Python: an error, as CPython says it
            if timed("nesting", lambda: nested_deeper_than(tree, MAX_SYNTAX_DEPTH)):  # type: ignore[arg-type]
                return
            with deep_recursion():
                facts = timed("analyse", lambda: analyze_module(src, tree, settings, Path("m.py")))  # type: ignore[arg-type]
                findings = timed("analyse", lambda: planned_findings(facts, settings, Path("m.py")))
                fixes = [f.fix for f in findings]  # type: ignore[attr-defined]
                applied = timed("apply", lambda: apply_fixes(src, fixes, settings, Path("m.py")))  # type: ignore[arg-type]
            new_bytes = applied.data  # type: ignore[attr-defined]
            timed("compare", lambda: unintended_change(data, new_bytes, applied.touched))  # type: ignore[attr-defined]
            timed("compare", lambda: compile(new_bytes, "m.py", "exec", dont_inherit=True))
            timed("diff", lambda: unified_diff(data, new_bytes, "m.py"))

    on_deep_stack(run)
    return out


def stages_apart(path: Path) -> Dict[str, float]:
    """:func:`stages` in a child process: this one stays small, so its memory
    never shows in the next child's peak (``ru_maxrss`` survives ``fork`` and ``exec``)."""
    import json
    import subprocess

    out = subprocess.run(
        [sys.executable, __file__, "--stages-of", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)


STAGE_NAMES = ("bytes", "parse", "nesting", "analyse", "apply", "compare", "diff")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of: {', '.join(SHAPES)}")
    parser.add_argument("--scales", default="1,2,4,8", help="multiples of each shape's base size")
    parser.add_argument("--base", type=float, default=1.0, help="multiply every base size by this")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run before it is killed")
    parser.add_argument("--no-fix", action="store_true", help="skip pinfix fix")
    parser.add_argument("--stages", action="store_true", help="also time each stage in process")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--stages-of", type=Path, help=argparse.SUPPRESS)  # one file's stages, as JSON
    args = parser.parse_args(argv)
    if args.stages_of is not None:
        import json

        print(json.dumps(stages(args.stages_of.read_bytes())))
        return 0
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shapes: {', '.join(unknown)}")
    scales = [int(x) for x in args.scales.split(",")]

    tools = {"pinfix": find_tool("pinfix"), "ruff": find_tool("ruff")}
    if not tools["pinfix"]:
        log("pinfix is not installed")
        return 2
    env = base_env()
    bytecode = compile_bytecode()
    work = Path(tempfile.mkdtemp(prefix="pinfix-stress-"))

    def emit(lines: List[str]) -> None:  # each table as soon as it is complete
        print("\n".join(lines), flush=True)

    emit(
        [
            "## Stress inputs",
            "",
            f"{machine()}; {versions(tools)}; pinfix {pinfix_revision()}, {bytecode}.",
            "Each cell: wall s / CPU s (growth of CPU over the 1x size) / peak MB of the process tree;",
            "B/B: peak bytes of memory per byte of source.",
            "",
        ]
    )
    try:
        for shape in shapes:
            make, base_size, unit = SHAPES[shape]
            rows = [
                f"### `{shape}`: {unit}",
                "",
                "| size | MB | pinfix check | pinfix fix | ruff check | check B/B | fix B/B |",
                "| ---: | ---: | --- | --- | --- | ---: | ---: |",
            ]
            stage_rows: List[str] = []
            first: Dict[str, object] = {}
            for scale in scales:
                n = int(base_size * args.base * scale)
                data = make(n).encode()
                path = work / f"{shape}_{n}.py"
                path.write_bytes(data)
                log(f"{shape} x{scale}: {n} {unit}, {len(data) / 1e6:.1f} MB")
                results = {}
                results["check"] = measure(
                    [tools["pinfix"], "check", "--no-cache", "--no-progress", "-j", "1", str(path)],
                    cwd=work,
                    env=env,
                    timeout=args.timeout,
                )
                if not args.no_fix:
                    copy = work / f"fix_{shape}_{n}.py"
                    shutil.copyfile(path, copy)
                    results["fix"] = measure(
                        [tools["pinfix"], "fix", "--no-progress", "-j", "1", str(copy)],
                        cwd=work,
                        env=env,
                        timeout=args.timeout,
                    )
                    copy.unlink()
                if tools["ruff"]:
                    results["ruff"] = measure(
                        [tools["ruff"], "check", "--isolated", "--no-cache", "--select", "F", str(path)],
                        cwd=work,
                        env=env,
                        timeout=args.timeout,
                    )
                for key, sample in results.items():
                    first.setdefault(key, sample)
                cells = [_cell(results.get(k), first.get(k)) for k in ("check", "fix", "ruff")]
                cells += [_per_byte(results.get(k), len(data)) for k in ("check", "fix")]
                rows.append(f"| {n:,} | {len(data) / 1e6:.2f} | " + " | ".join(cells) + " |")
                if args.stages:
                    times = stages_apart(path)
                    stage_rows.append(
                        f"| {n:,} | " + " | ".join(f"{times.get(s, 0.0):.2f}" for s in STAGE_NAMES) + " |"
                    )
                if not args.keep:
                    path.unlink()
            report = rows + [""]
            if stage_rows:
                report += [
                    f"Stages for `{shape}`, CPU seconds in one process (`--stages`):",
                    "",
                    "| size | " + " | ".join(STAGE_NAMES) + " |",
                    "| ---: | " + " | ".join("---:" for _ in STAGE_NAMES) + " |",
                    *stage_rows,
                    "",
                ]
            emit(report)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"kept {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
