"""The CLI: exit codes, output formats, fix/diff, summaries, bad files."""

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from pinfix.cli import main

BAD = (
    "import torch\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n    return torch.int32\n"
)
GOOD = "import torch\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a))\n"


def run(argv: List[str]) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def tree(project: Path) -> Path:
    (project / "vllm" / "v1" / "bad.py").write_text(BAD)
    (project / "vllm" / "v1" / "good.py").write_text(GOOD)
    return project


def test_check_reports_path_line_col_code(tree: Path) -> None:
    code, out, err = run(["check", str(tree)])
    assert code == 1
    assert out == f"{tree}/vllm/v1/bad.py:5:15: PIN001 [*] " + out.split(" PIN001 [*] ", 1)[1]
    assert out.count("\n") == 1
    assert "1 finding (1 fixable with `pinfix fix`)" in err


def test_check_clean_exits_zero(tree: Path) -> None:
    code, out, _ = run(["check", str(tree / "vllm" / "v1" / "good.py")])
    assert (code, out) == (0, "")


def test_syntax_error_and_undecodable_are_reported_and_others_still_checked(tree: Path) -> None:
    (tree / "broken.py").write_text("from_numpy non_blocking def (:\n")
    (tree / "latin.py").write_bytes(b"x = '\xff' # from_numpy non_blocking\n")
    code, out, err = run(["check", str(tree)])
    assert code == 2
    assert "bad.py:5:15: PIN001" in out
    assert f"{tree}/broken.py: error: syntax error at 1:" in err
    assert f"{tree}/latin.py: error: cannot decode" in err
    assert "Traceback" not in err


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run(["check", str(tmp_path / "nope.py")])
    assert code == 2 and "no such file or directory" in err


def test_bad_config_is_a_clear_error(tree: Path) -> None:
    (tree / "pyproject.toml").write_text("[tool.pinfix]\nhelpr = 'x.y'\n")
    code, _, err = run(["check", str(tree)])
    assert code == 2 and "unknown setting 'helpr'; did you mean 'helper'?" in err


def test_fix_rewrites_and_second_fix_changes_nothing(tree: Path) -> None:
    bad = tree / "vllm" / "v1" / "bad.py"
    code, _, err = run(["fix", str(tree)])
    assert code == 0
    assert "changed 1 file, 1 fix" in err
    fixed = bad.read_text()
    assert "np_to_pinned_tensor(a)" in fixed
    assert run(["check", str(tree)])[0] == 0
    code, _, err = run(["fix", str(tree)])
    assert code == 0 and "changed 0 files" in err
    assert bad.read_text() == fixed


def test_diff_writes_nothing_and_exits_one(tree: Path) -> None:
    bad = tree / "vllm" / "v1" / "bad.py"
    code, out, err = run(["fix", "--diff", str(tree)])
    assert code == 1
    assert bad.read_text() == BAD
    assert out.startswith(f"--- a{bad}\n+++ b{bad}\n")  # `a/` + the absolute path without its `/`
    assert "+    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)" in out
    assert "would change 1 file" in err
    # A patch that applies cleanly, as printed.
    subprocess.run(
        ["patch", "-p1", "--dry-run", "-d", "/", "-i", "-"], input=out, text=True, check=True, capture_output=True
    )


def test_unsafe_findings_are_left_with_reason(tree: Path) -> None:
    unsafe = tree / "vllm" / "v1" / "unsafe.py"
    unsafe.write_text(
        "import torch\n\n\ndef f(dst, a):\n    s = torch.from_numpy(a)\n    dst.copy_(s, non_blocking=True)\n    return s\n"
    )
    code, out, err = run(["fix", str(unsafe)])
    assert code == 1 and "[*]" not in out
    code, out, err = run(["fix", "--output-format", "full", str(unsafe)])
    assert code == 1
    assert "unsafe fix: `s` is also used at line 7" in " ".join(out.split())
    assert "1 finding left: 1 unsafe fix (use --unsafe-fixes)" in err
    code, _, _ = run(["fix", "--unsafe-fixes", str(unsafe)])
    assert code == 0 and "np_to_pinned_tensor(a)" in unsafe.read_text()


def test_strict_reports_dynamic_non_blocking(tree: Path) -> None:
    dyn = tree / "dyn.py"
    dyn.write_text("import torch\n\n\ndef f(dst, a, nb):\n    dst.copy_(torch.from_numpy(a), non_blocking=nb)\n")
    assert run(["check", str(dyn)])[0] == 0
    code, out, _ = run(["check", "--strict", str(dyn)])
    assert code == 1 and "non_blocking=nb" in out


def test_json_output(tree: Path) -> None:
    code, out, _ = run(["check", "--output-format", "json", str(tree)])
    data = json.loads(out)
    assert code == 1
    (finding,) = data["findings"]
    assert finding["code"] == "PIN001" and finding["line"] == 5 and finding["column"] == 15
    assert finding["fix"]["safety"] == "safe" and finding["pattern"] == "copy_/inline"
    assert data["errors"] == []


def test_sarif_output_is_valid_2_1_0(tree: Path) -> None:
    code, out, _ = run(["check", "--output-format", "sarif", str(tree)])
    sarif = json.loads(out)
    assert code == 1 and sarif["version"] == "2.1.0"
    (run_,) = sarif["runs"]
    assert run_["tool"]["driver"]["name"] == "pinfix"
    assert run_["tool"]["driver"]["rules"][0]["id"] == "PIN001"
    (result,) = run_["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert result["ruleId"] == "PIN001" and region["startLine"] == 5 and region["startColumn"] == 15
    assert run_["invocations"][0]["executionSuccessful"] is True


def test_github_output(tree: Path) -> None:
    code, out, _ = run(["check", "--output-format", "github", str(tree)])
    assert code == 1
    assert out.startswith(f"::error file={tree}/vllm/v1/bad.py,line=5,col=15,endLine=5,endColumn=34,title=PIN001::")


def test_gitignore_and_exclude_are_honoured_but_explicit_files_are_checked(tree: Path) -> None:
    (tree / ".git").mkdir()
    (tree / ".gitignore").write_text("generated/\n")
    (tree / "generated").mkdir()
    (tree / "generated" / "g.py").write_text(BAD)
    (tree / "skipme.py").write_text(BAD)
    (tree / "pyproject.toml").write_text('[tool.pinfix]\nexclude = ["skipme.py"]\n')
    code, out, _ = run(["check", str(tree)])
    assert "generated" not in out and "skipme" not in out and "bad.py" in out
    code, out, _ = run(["check", str(tree / "generated" / "g.py")])
    assert code == 1 and "g.py:5:15" in out


def test_rule_documentation() -> None:
    code, out, _ = run(["rule", "PIN001"])
    assert code == 0
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety"):
        assert section in out
    assert run(["rule", "PIN999"])[0] == 2


def test_console_script_runs_without_traceback(tree: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pinfix", "check", str(tree)], capture_output=True, text=True)
    assert proc.returncode == 1 and "PIN001" in proc.stdout and "Traceback" not in proc.stderr


def test_usage_error_exit_code() -> None:
    assert run(["frobnicate"])[0] == 2
