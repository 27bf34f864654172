"""Issue 15: choosing rules (``--select``, ``--ignore``, ``--extend-select``,
``per-file-ignores``), on the command line and in settings."""

from pathlib import Path

import pytest

from pinfix.config import DEFAULT_RULES, RuleLayer, resolve_rules
from tests.support import pinfix

PIN001 = "import torch\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
PIN002 = "import torch\n\n\ndef g(dev):\n    return torch.tensor([1, 2]).to(dev, non_blocking=True)\n"
#: Plain mode notes PIN004 only in files that make a pageable source somewhere.
PIN004 = "import torch\n\n\ndef h(dst, dev, b):\n    y = torch.from_numpy(b) * 2\n    dst.copy_(y.to(dev), non_blocking=True)\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    for where in ("pkg", "tests"):
        (tmp_path / where / "one.py").write_text(PIN001)
        (tmp_path / where / "two.py").write_text(PIN002)
    (tmp_path / "pkg" / "unknown.py").write_text(PIN004)
    return tmp_path


def codes(proc) -> list:  # type: ignore[no-untyped-def]
    """``path CODE`` of each concise line."""
    out = []
    for line in proc.stdout.splitlines():
        location, rest = line.split(": ", 1)
        out.append(f"{location.split(':')[0]} {rest.split()[0]}")
    return sorted(out)


def check(tree: Path, *args: str):  # type: ignore[no-untyped-def]
    return pinfix("check", "--output-format", "concise", *args, ".", cwd=tree)


def test_default_rules(tree: Path) -> None:
    assert codes(check(tree)) == [
        "pkg/one.py PIN001",
        "pkg/two.py PIN002",
        "tests/one.py PIN001",
        "tests/two.py PIN002",
    ]


def test_select_ignore_and_extend_select_on_the_command_line(tree: Path) -> None:
    assert codes(check(tree, "--select", "PIN002")) == ["pkg/two.py PIN002", "tests/two.py PIN002"]
    assert codes(check(tree, "--ignore", "PIN002")) == ["pkg/one.py PIN001", "tests/one.py PIN001"]
    assert "pkg/unknown.py PIN004" in codes(check(tree, "--extend-select", "PIN004"))
    # A prefix selects every rule under it; the more specific selector wins.
    selected = codes(check(tree, "--select", "PIN", "--ignore", "PIN00", "--extend-select", "PIN001"))
    assert selected == ["pkg/one.py PIN001", "tests/one.py PIN001"]
    proc = check(tree, "--select", "PIN002", "--exit-zero")
    assert proc.returncode == 0 and proc.stdout


def test_select_in_settings_and_the_command_line_overrides_it(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.pinfix]\nselect = ["PIN001"]\n')
    assert codes(check(tree)) == ["pkg/one.py PIN001", "tests/one.py PIN001"]
    assert codes(check(tree, "--select", "PIN002")) == ["pkg/two.py PIN002", "tests/two.py PIN002"]
    (tree / "pyproject.toml").write_text('[tool.pinfix]\nignore = ["PIN001"]\n')
    assert codes(check(tree)) == ["pkg/two.py PIN002", "tests/two.py PIN002"]
    # A later layer's select brings an ignored rule back, as in ruff.
    assert "pkg/one.py PIN001" in codes(check(tree, "--select", "PIN001"))


def test_per_file_ignores(tree: Path) -> None:
    (tree / "pyproject.toml").write_text(
        '[tool.pinfix]\nper-file-ignores = {"tests/**" = ["PIN002"], "one.py" = ["PIN001"]}\n'
    )
    assert codes(check(tree)) == ["pkg/two.py PIN002"]
    proc = pinfix("show-settings", "tests/two.py", cwd=tree)
    assert "rules here:    PIN001, PIN003" in proc.stdout


@pytest.mark.usefixtures("depends_on_vllm")
def test_per_file_ignores_keep_fixes_of_ignored_rules_out(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.pinfix]\nper-file-ignores = {"tests/**" = ["PIN001"]}\n')
    proc = pinfix("fix", ".", cwd=tree)
    assert (tree / "tests" / "one.py").read_text() == PIN001  # not fixed: PIN001 is ignored there
    assert "np_to_pinned_tensor(a)" in (tree / "pkg" / "one.py").read_text()
    assert proc.returncode == 1  # the PIN002 findings are left


def test_show_unknown_is_extend_select_pin004(tree: Path) -> None:
    assert "pkg/unknown.py PIN004" in codes(check(tree, "--show-unknown"))
    assert "pkg/unknown.py PIN004" not in codes(check(tree, "--show-unknown", "--ignore", "PIN004"))


def test_rule_layers() -> None:
    assert resolve_rules([]) == DEFAULT_RULES
    assert resolve_rules([RuleLayer(select=("ALL",))]) == {"PIN001", "PIN002", "PIN003", "PIN004", "PIN100"}
    assert resolve_rules([RuleLayer(ignore=("PIN",)), RuleLayer(extend_select=("PIN003",))]) == {"PIN003"}
    # Same specificity in one layer: ignore wins.
    assert resolve_rules([RuleLayer(select=("PIN001",), ignore=("PIN001",))]) == set()
