"""Issue 29: ruff's habits, through the real command line: ``check --fix``, a
file-wide ``# pinfix: noqa``, usage errors with the subcommand's usage,
``--output-format`` honoured or refused by every command, and
``show-producers`` on a function that holds a lambda."""

import json
from pathlib import Path

import pytest

from tests.support import BAD_SOURCE, pinfix
from tests.support import write_text as write

FIXED = "from vllm.utils.torch_utils import np_to_pinned_tensor\n\n\ndef f(dst, a):\n    dst.copy_(np_to_pinned_tensor(a), non_blocking=True)\n"
TWO = (
    "import torch\n\n\ndef f(dst, a, n):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"
    "    dst.copy_(torch.zeros(n), non_blocking=True)\n"
)


def test_check_fix_applies_the_fixes_as_fix_does(tmp_path: Path) -> None:
    write(tmp_path / "vllm" / "m.py", BAD_SOURCE)
    write(tmp_path / "vllm" / "__init__.py", "")
    proc = pinfix("check", "--fix", "--no-cache", "vllm/m.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "vllm" / "m.py").read_text() == FIXED
    assert "pinfix: fixed vllm/m.py (1 fix)" in proc.stderr
    # A baseline and a fix in one run are refused, with nothing written.
    write(tmp_path / "vllm" / "m.py", BAD_SOURCE)
    proc = pinfix("check", "--fix", "--add-noqa", "vllm/m.py", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == "pinfix check: error: --fix and --add-noqa cannot be used together\n"
    assert (tmp_path / "vllm" / "m.py").read_text() == BAD_SOURCE


def _codes(proc) -> list:  # type: ignore[no-untyped-def]
    return sorted((line.split(":")[0], line.split()[1]) for line in proc.stdout.splitlines())


def test_a_file_wide_noqa_suppresses_its_rules_in_the_whole_file(tmp_path: Path) -> None:
    write(tmp_path / "every.py", "# pinfix: noqa\n" + TWO)
    write(tmp_path / "one.py", TWO.replace("import torch\n", "import torch\n# pinfix: noqa: PIN001\n", 1))
    # A trailing comment is no file-wide directive (ruff requires a line of its own).
    write(tmp_path / "trailing.py", TWO.replace("import torch\n", "import torch  # pinfix: noqa\n", 1))
    write(tmp_path / "stale.py", "# pinfix: NOQA: PIN003\nx = 1\n")
    proc = pinfix("check", "--no-cache", "--output-format", "concise", "--extend-select", "PIN100", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert _codes(proc) == [
        ("one.py", "PIN002"),
        ("stale.py", "PIN100"),
        ("trailing.py", "PIN001"),
        ("trailing.py", "PIN002"),
    ], proc.stdout
    assert "`PIN003` suppresses no finding in this file" in proc.stdout
    # fix leaves a suppressed finding alone.
    before = (tmp_path / "every.py").read_bytes()
    assert pinfix("fix", "--no-cache", "--unsafe-fixes", "every.py", cwd=tmp_path).returncode == 0
    assert (tmp_path / "every.py").read_bytes() == before


@pytest.mark.parametrize("command", ["check", "fix", "show-files", "rule", "clean"])
def test_a_usage_error_shows_the_subcommands_usage(tmp_path: Path, command: str) -> None:
    proc = pinfix(command, "--no-such-option", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"usage: pinfix {command} [-h]"), proc.stderr
    assert proc.stderr.endswith(f"pinfix {command}: error: unrecognized arguments: --no-such-option\n")


@pytest.mark.usefixtures("depends_on_vllm")
def test_output_format_is_honoured_or_refused_by_every_command(tmp_path: Path) -> None:
    write(tmp_path / "m.py", "import torch\n\n\ndef pinned(a):\n    return torch.from_numpy(a).pin_memory()\n")
    files = pinfix("show-files", "--output-format", "json", cwd=tmp_path)
    assert files.returncode == 0 and json.loads(files.stdout) == {"files": ["m.py"], "errors": []}
    producers = pinfix("show-producers", "--output-format", "json", cwd=tmp_path)
    assert json.loads(producers.stdout) == {
        "producers": [{"path": "m.py", "line": 4, "name": "m.pinned"}],
        "errors": [],
    }
    settings = json.loads(pinfix("show-settings", "--output-format", "json", "m.py", cwd=tmp_path).stdout)
    assert settings["rules"] == ["PIN001", "PIN002", "PIN003"] and settings["path"] == "m.py"
    assert settings["settings"]["helper"] == '"vllm.utils.torch_utils.np_to_pinned_tensor"'
    for command in ("show-files", "show-producers"):
        assert (
            pinfix(command, "--output-format", "concise", cwd=tmp_path).stdout == pinfix(command, cwd=tmp_path).stdout
        )
        refused = pinfix(command, "--output-format", "sarif", cwd=tmp_path)
        assert refused.returncode == 2 and refused.stdout == ""
        assert (
            refused.stderr
            == f"pinfix: {command}: --output-format sarif is not supported here (text, concise, full or json)\n"
        )
    for command in ("rule", "clean"):  # they print no findings: the option is no option of theirs
        refused = pinfix(command, "--output-format", "json", cwd=tmp_path)
        assert (
            refused.returncode == 2
            and f"pinfix {command}: error: unrecognized arguments: --output-format" in refused.stderr
        )


def test_show_producers_reads_a_function_holding_a_lambda(tmp_path: Path) -> None:
    write(
        tmp_path / "m.py",
        "import torch\n\n\ndef pinned(a):\n    key = lambda x: x + 1\n    return torch.from_numpy(a).pin_memory()\n",
    )
    proc = pinfix("show-producers", ".", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "m.py:4: m.pinned\n", "")
