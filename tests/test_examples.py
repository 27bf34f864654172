"""examples/fixed is exactly what `pinfix fix` makes of examples/patterns and examples/sparse_mla."""

import json
import shutil
from pathlib import Path

import pytest

from pinfix.cli import main
from tests.support import REPO

SOURCES = sorted(
    p.relative_to(REPO / "examples") for d in ("patterns", "sparse_mla") for p in (REPO / "examples" / d).glob("*.py")
)


@pytest.mark.parametrize("rel", SOURCES, ids=str)
def test_fixed_example_matches_pinfix_fix(tmp_path: Path, rel: Path) -> None:
    work = tmp_path / rel.name
    shutil.copy(REPO / "examples" / rel, work)
    # Its project's metadata: the examples depend on vLLM, so the fix uses vLLM's helper.
    shutil.copy(REPO / "examples" / rel.parent / "pyproject.toml", tmp_path / "pyproject.toml")
    main(["fix", str(work)])
    assert work.read_text() == (REPO / "examples" / "fixed" / rel).read_text()


def test_not_findings_sample_is_clean() -> None:
    assert main(["check", str(REPO / "examples" / "patterns" / "not_findings.py")]) == 0


def test_only_the_unsafe_sample_is_left_after_fix() -> None:
    import io

    out = io.StringIO()
    code = main(["check", "--output-format", "json", str(REPO / "examples" / "fixed")], out, io.StringIO())
    assert code == 1
    (finding,) = json.loads(out.getvalue())["findings"]
    assert finding["path"].endswith("bound_name.py") and finding["line"] == 20 and finding["fix"]["safety"] == "unsafe"
    assert "unsafe fix" in finding["message"]
