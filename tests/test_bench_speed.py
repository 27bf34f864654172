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


def test_the_hub_rows_edit_the_module_above_its_code_each_round_and_the_retry_edits_nothing(tmp_path: Path) -> None:
    """The hub row is the first edit after a tree run; the row after it edits the same module
    once more (a comment above its first import, as the first), and the retry edits nothing."""
    bench = _bench()
    hub = tmp_path / bench.HUB_FILE
    hub.parent.mkdir(parents=True)
    hub.write_text('"""Doc."""\nimport os\n\nX = os.sep\n')
    first = bench.one_changed_file("pinfix", tmp_path, 2, hub=True)
    again = bench.one_changed_file("pinfix", tmp_path, 2, hub=True, again=True)
    retry = bench.one_changed_file("pinfix", tmp_path, 2, hub=True, retry=True)
    assert [t.label for t in (first, again, retry)] == [
        bench.DEEP_HUB_LABEL,
        bench.DEEP_HUB_AGAIN_LABEL,
        bench.DEEP_HUB_RETRY_LABEL,
    ]
    assert retry.before is None and retry.cmd == first.cmd == again.cmd and retry.cmd[-1] == str(hub)
    first.before()
    again.before()
    assert hub.read_text().splitlines() == [
        '"""Doc."""',
        "# pinfix benchmark note 1",
        "# pinfix benchmark note again 1",
        "import os",
        "",
        "X = os.sep",
    ]
