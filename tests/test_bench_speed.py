"""benchmarks/bench_speed.py's section of single modules checked alone with ``--deep``."""

import argparse
import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_speed", REPO / "benchmarks" / "bench_speed.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["bench_speed"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_single_modules_are_the_heavy_ones_then_the_largest_copying_ones_each_checked_alone(
    tmp_path: Path, monkeypatch
) -> None:
    bench = _bench()
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "pkg/__init__.py").write_text("")
    (tree / "pkg/heavy.py").write_text("X = 1\n")
    copy = "import torch\n\n\ndef send(a, dev):\n    return torch.from_numpy(a).to(dev, non_blocking=True)\n"
    (tree / "pkg/big.py").write_text(copy + "# padding\n" * 50)
    (tree / "pkg/small.py").write_text(copy)
    (tree / "pkg/quiet.py").write_text("Y = 2\n" * 100)  # larger, but copies nothing
    (tree / "tests/test_big.py").write_text(copy + "# padding\n" * 100)  # a test: left out
    monkeypatch.setattr(bench, "HEAVY_MODULES", ("pkg/heavy.py", "pkg/absent.py"))
    pinfix = bench.find_tool("pinfix")
    assert pinfix is not None
    report: list = []
    args = argparse.Namespace(modules=3, no_prefilter_timeout=300.0)
    bench.single_modules(args, tmp_path, tree, {"pinfix": pinfix}, report)
    rows = [r for r in report if r.startswith("| `")]
    assert [r.split(" | ")[0] for r in rows] == ["| `pkg/heavy.py`", "| `pkg/big.py`", "| `pkg/small.py`"]
    assert [r.split(" | ")[1] for r in rows] == ["1", "55", "5"]  # lines
    for row in rows:
        wall, _cpu, mib = (float(x) for x in row.split(" | ")[2:5])
        assert 0 < wall < 300 and mib > 0
    (target,) = [r for r in report if r.startswith("Target no module over 2 s or 300 MB")]
    assert ("met" in target) and ("slowest" in target)
