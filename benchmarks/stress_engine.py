#!/usr/bin/env python3
"""The engine's cost against the size of one function: generated stress inputs.

usage: python benchmarks/stress_engine.py [--sizes 1,2,4,8,16] [--rounds 3] > stress.md

Each family grows one shape (issue 13) and must stay linear and keep its finding:

* ``rebinding``: ``x = x * x + x`` repeated (each line used to double the old tracer's time);
* ``straight``: a chain of views (``x = x.view(-1)``, ``x = x.reshape(...)``) of one factory;
* ``branches``: ``if`` statements nested ever deeper, each computing a new CPU tensor;
* ``function``: one long function of assignments with a branch every seventh line;
* ``loops``: loops nested ever deeper around an accumulation;
* ``lambdas``: one function making ever more lambdas, each copying (the last one pageable
  memory): each lambda met is queued for its evaluation once (the queue was searched whole
  for each lambda met: 0.17 -> 0.27 ms a line from 1,000 to 8,000 lambdas before 2026-12-08);
* ``methods`` (deep mode, two modules): a class of ever more methods, each storing its own
  attribute from a parameter, and a module asking about each attribute of an object of it
  (a def's line was taken for a call of the method, and each question swept every scope of
  the module: quadratic until d29f2dd);
* ``attribute_chain`` and ``call_chain`` (deep): classes each storing the one before's
  attribute, functions each returning the one before's result, the copy at the far end
  (followed to its end since an attribute's and a function's own answers no longer depend on
  the depth left; quadratic until the module-level names below were);
* ``module_names`` (deep, one module): ever more module-level tensors and functions, each
  read by name in the copying function (each name's evaluation ran the whole module body:
  quadratic until the stop after e384038).

For each family and size it prints the lines, the median seconds of
``pinfix.semantic.analyze_module`` plus the rules over ``--rounds`` runs (in
this process, after one warm-up; for a deep family, of ``pinfix check --deep
--no-cache -j 1`` of the asking module, in this process), the seconds per 1,000
lines, and whether the finding is still reported. Times are CPU seconds of this process
(``time.process_time``), steadier than wall time on a shared machine, with the cyclic
garbage collector paused as the engine pauses it for each file (with it running, its walks
of a heap that grows with the input made linear families look superlinear).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pinfix.fixes.plan import planned_findings  # noqa: E402
from pinfix.prefilter import gc_paused  # noqa: E402
from pinfix.semantic import SourceText, analyze_module  # noqa: E402
from pinfix.settings import Settings  # noqa: E402

HEAD = ["import torch", "", "", "def f(d, n, c, xs):"]


def rebinding(k: int) -> str:
    return "\n".join(
        HEAD
        + ["    x = torch.zeros(4)"]
        + ["    x = x * x + x"] * (64 * k)
        + ["    return x.to(d, non_blocking=True)", ""]
    )


def straight(k: int) -> str:
    body = ["    x = x.view(-1)", "    x = x.reshape(4, 4)"] * (100 * k)
    return "\n".join(HEAD + ["    x = torch.zeros(4, 4)"] + body + ["    return x.to(d, non_blocking=True)", ""])


def branches(k: int) -> str:
    lines = HEAD + ["    x = torch.zeros(4)"]
    depth = min(40 * k, 90)  # CPython refuses blocks nested ~100 deep
    for i in range(depth):
        lines.append("    " * (i + 1) + f"if c > {i}:")
        lines.append("    " * (i + 2) + "x = x + 1")
    # Past the nesting CPython allows, more siblings at the deepest level.
    for i in range(40 * k - depth):
        lines.append("    " * (depth + 1) + f"x = x * {i}")
    lines.append("    return x.to(d, non_blocking=True)")
    return "\n".join(lines) + "\n"


def function(k: int) -> str:
    lines = HEAD + ["    x = torch.zeros(4)"]
    for i in range(1250 * k):
        lines.append(f"    v{i} = n + {i}" if i % 7 else f"    if n > {i}:\n        x = x + v{max(i - 1, 0)}")
    lines.append("    return x.to(d, non_blocking=True)")
    return "\n".join(lines) + "\n"


def loops(k: int) -> str:
    depth = min(4 * k, 19)  # CPython allows 20 statically nested blocks
    lines = HEAD + ["    acc = torch.zeros(2)"]
    for i in range(depth):
        lines.append("    " * (i + 1) + f"for i{i} in xs:")
    for i in range(10 * k):
        lines.append("    " * (depth + 1) + f"acc = acc + {i}")
    lines.append("    return acc.to(d, non_blocking=True)")
    return "\n".join(lines) + "\n"


def lambdas(k: int) -> str:
    n = 1000 * k
    lines = HEAD + ["    calls = []"]
    for i in range(n):
        pinned = ", pin_memory=True" if i < n - 1 else ""
        lines.append(f"    calls.append(lambda: torch.zeros({i + 1}{pinned}).to(d, non_blocking=True))")
    lines.append("    return calls")
    return "\n".join(lines) + "\n"


def methods(k: int) -> Dict[str, str]:
    n = 250 * k
    big = ["import torch", "", "", "class Big:", "    def __init__(self):", "        self.buf = torch.zeros(4)"]
    for i in range(n):
        big += ["", f"    def m{i}(self, x):", f"        self.a{i} = x", "        return x"]
    use = ["from .big import Big", "", ""]
    for i in range(n):
        use += [f"def u{i}(dev):", f"    return Big().a{i}.to(dev, non_blocking=True)", "", ""]
    use += ["def last(dev):", "    return Big().buf.to(dev, non_blocking=True)"]
    return {"__init__.py": "", "big.py": "\n".join(big) + "\n", "use.py": "\n".join(use) + "\n"}


def attribute_chain(k: int) -> Dict[str, str]:
    n = 250 * k
    chain = ["import torch", "", "", "class Level0:", "    def __init__(self):", "        self.host = torch.zeros(16)"]
    for i in range(1, n):
        chain += ["", "", f"class Level{i}:", "    def __init__(self):"]
        chain += [f"        self.below = Level{i - 1}()", "        self.host = self.below.host"]
    use = [f"from .chain import Level{n - 1}", "", "", "def go(dev):"]
    use += [f"    return Level{n - 1}().host.to(dev, non_blocking=True)"]
    return {"__init__.py": "", "chain.py": "\n".join(chain) + "\n", "use.py": "\n".join(use) + "\n"}


def call_chain(k: int) -> Dict[str, str]:
    n = 250 * k
    steps = ["import torch", "", "", "def step0():", "    return torch.zeros(16)"]
    for i in range(1, n):
        steps += ["", "", f"def step{i}():", f"    return step{i - 1}()"]
    use = [
        f"from .steps import step{n - 1}",
        "",
        "",
        "def go(dev):",
        f"    return step{n - 1}().to(dev, non_blocking=True)",
    ]
    return {"__init__.py": "", "steps.py": "\n".join(steps) + "\n", "use.py": "\n".join(use) + "\n"}


def module_names(k: int) -> Dict[str, str]:
    n = 250 * k
    lines = ["import torch", "", ""]
    lines += [f"B{i} = torch.zeros({i + 1})" for i in range(n)]
    for i in range(n):
        lines += ["", "", f"def make{i}():", f"    return torch.ones({i + 1})"]
    lines += ["", "", "def go(dev, i):", "    x = None"]
    for i in range(n):
        lines += [f"    if i == {i}:", f"        x = B{i} if dev else make{i}()"]
    lines.append("    return x.to(dev, non_blocking=True)")
    return {"__init__.py": "", "names.py": "\n".join(lines) + "\n"}


#: Families checked in deep mode: the files of a package ``pkg``, the last one checked.
DEEP_FAMILIES: Dict[str, Callable[[int], Dict[str, str]]] = {
    "methods": methods,
    "attribute_chain": attribute_chain,
    "call_chain": call_chain,
    "module_names": module_names,
}

FAMILIES: Dict[str, Callable[[int], str]] = {
    "rebinding": rebinding,
    "straight": straight,
    "branches": branches,
    "function": function,
    "loops": loops,
    "lambdas": lambdas,
}


def measure(text: str, rounds: int) -> tuple:
    settings = Settings()
    times: List[float] = []
    found = 0
    for i in range(rounds + 1):
        start = time.process_time()
        with gc_paused():
            src = SourceText(text, "m.py")
            facts = analyze_module(src, src.parse(), settings)
            findings = planned_findings(facts, settings)
        if i:
            times.append(time.process_time() - start)
        found = len(findings)
    return statistics.median(times), found


def measure_deep(files: Dict[str, str], rounds: int) -> tuple:
    import io
    import json
    import tempfile

    from pinfix.cli import main as pinfix_main

    times: List[float] = []
    found = 0
    with tempfile.TemporaryDirectory() as folder:
        pkg = Path(folder) / "pkg"
        pkg.mkdir()
        for name, text in files.items():
            (pkg / name).write_text(text)
        checked = pkg / list(files)[-1]
        for i in range(rounds + 1):
            out = io.StringIO()
            start = time.process_time()
            args = ["check", "--deep", "--no-cache", "--no-progress", "-j", "1", "--output-format", "json"]
            pinfix_main([*args, str(checked)], out=out)
            if i:
                times.append(time.process_time() - start)
            found = len(json.loads(out.getvalue())["findings"])
    return statistics.median(times), found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,4,8,16", help="multiples of each family's base size")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--family", action="append", choices=sorted([*FAMILIES, *DEEP_FAMILIES]), help="only these families"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| family | size | lines | median CPU s | s per 1,000 lines | finding kept |")
    print("|---|---:|---:|---:|---:|---|")
    for name in args.family or [*FAMILIES, *DEEP_FAMILIES]:
        for k in sizes:
            if name in DEEP_FAMILIES:
                files = DEEP_FAMILIES[name](k)
                lines = sum(text.count("\n") for text in files.values())
                seconds, found = measure_deep(files, args.rounds)
            else:
                text = FAMILIES[name](k)
                lines = text.count("\n")
                seconds, found = measure(text, args.rounds)
            print(
                f"| {name} | {k}x | {lines:,} | {seconds:.3f} | {seconds / lines * 1000:.4f} | {'yes' if found == 1 else f'no ({found})'} |"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
