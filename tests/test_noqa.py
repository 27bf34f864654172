"""Issue 15: suppression comments read from the text, ``--add-noqa`` (a
baseline), and PIN100 (unused or malformed suppressions)."""

import subprocess
import sys
from pathlib import Path

import pytest

from pinfix.suppression import SourceDirectives, add_noqa
from tests.support import BAD_SOURCE, pinfix

COPY = "    dst.copy_(torch.from_numpy(a), non_blocking=True)"


def source(line: str = COPY, before: str = "") -> str:
    return f"import torch\n\n\ndef f(dst, a):\n{before}{line}\n"


# --- which comments suppress -------------------------------------------------------------


@pytest.mark.parametrize(
    "text, suppressed",
    [
        (COPY + "  # noqa", True),
        (COPY + "  # noqa: PIN001", True),
        (COPY + "  # noqa:pin001,E501 why not", True),
        (COPY + "  # NOQA: PIN002", False),
        (COPY + "  # noqa: PIN", False),  # names no code: malformed, suppresses nothing (as in ruff)
        (COPY + "  # noqa: PIN001x", False),
        (COPY + "  # lint-ignore: PageableNonBlockingCopyRule", True),
        (COPY + "  # type: ignore  # noqa: PIN001", True),
        ("    dst.copy_(\n        torch.from_numpy(a),  # noqa: PIN001\n        non_blocking=True,\n    )", True),
        ("    s = '# noqa: PIN001'; dst.copy_(torch.from_numpy(a), non_blocking=True)", False),
    ],
)
def test_which_comments_suppress(tmp_path: Path, text: str, suppressed: bool) -> None:
    from pinfix.api import check_text

    findings = check_text(source(text), path=str(tmp_path / "m.py"))
    assert (findings == []) is suppressed, findings


def test_directive_above_the_statement(tmp_path: Path) -> None:
    from pinfix.api import check_text

    assert check_text(source(before="    # lint-fixme: PIN001\n")) == []
    assert check_text(source(before="    # noqa: PIN001\n")) == []
    assert len(check_text(source(before="    # noqa: PIN002\n"))) == 1


def test_logical_lines_come_from_the_text_alone() -> None:
    text = 'x = f(a,\n      b)  # noqa: PIN002\ns = """\n# noqa: PIN001\n"""\ny = 1 \\\n    + 2\n'
    d = SourceDirectives(text)
    assert d.statement(1) == (1, 2) and d.statement(6) == (6, 7)
    assert d.suppressing("PIN002", 1, 1) is not None
    assert d.suppressing("PIN001", 3, 3) is None  # inside a string: no comment
    assert 3 not in d.commentable and 4 not in d.commentable and 6 not in d.commentable


# --- --add-noqa ---------------------------------------------------------------------


def test_add_noqa_writes_a_baseline_merges_and_is_idempotent(tmp_path: Path) -> None:
    two = tmp_path / "two.py"
    two.write_bytes(
        b"import torch\r\n\r\n\r\ndef f(dst, a, dev):\r\n"
        b"    dst.copy_(torch.from_numpy(a), non_blocking=True)  # noqa: E501 long\r\n"
        b"    t = torch.tensor([1]).to(dev, non_blocking=True)  # keep\r\n"
        b"    return t\r\n"
    )
    one = tmp_path / "one.py"
    one.write_text(BAD_SOURCE)
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    proc = pinfix("check", "--add-noqa", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "pinfix: added 3 noqa codes to 2 files" in proc.stderr
    assert two.read_bytes() == (
        b"import torch\r\n\r\n\r\ndef f(dst, a, dev):\r\n"
        b"    dst.copy_(torch.from_numpy(a), non_blocking=True)  # noqa: E501, PIN001 long\r\n"
        b"    t = torch.tensor([1]).to(dev, non_blocking=True)  # keep  # noqa: PIN002\r\n"
        b"    return t\r\n"
    )
    assert one.read_text() == BAD_SOURCE.replace("True)\n", "True)  # noqa: PIN001\n")
    assert clean.read_text() == "x = 1\n"
    # Suppressed now: check passes, and a second --add-noqa changes nothing.
    assert pinfix("check", ".", cwd=tmp_path).returncode == 0
    before = {p: p.read_bytes() for p in (one, two)}
    again = pinfix("check", "--add-noqa", ".", cwd=tmp_path)
    assert "added 0 noqa codes to 0 files" in again.stderr
    assert {p: p.read_bytes() for p in (one, two)} == before


def test_add_noqa_places_the_comment_where_python_allows_one(tmp_path: Path) -> None:
    text = (
        "import torch\n\n\ndef f(dst, a):\n"
        "    dst.copy_(torch.from_numpy(a), non_blocking=True) if a.size else \\\n"
        "        None\n"
    )
    new, added = add_noqa(text.encode(), [("PIN001", 5, 5)])
    assert added == 1
    assert new.decode().endswith("        None  # noqa: PIN001\n")
    compile(new, "m.py", "exec")


def test_add_noqa_keeps_a_latin1_file_byte_for_byte(tmp_path: Path) -> None:
    data = "# -*- coding: latin-1 -*-\nimport torch\n\n\ndef f(dst, a):\n    s = 'caf\xe9'; dst.copy_(torch.from_numpy(a), non_blocking=True)  # noqa: E501\n".encode(
        "latin-1"
    )
    new, added = add_noqa(data, [("PIN001", 6, 6)])
    assert added == 1
    assert new == data.replace(b"# noqa: E501", b"# noqa: E501, PIN001")


# --- PIN100 ---------------------------------------------------------------------------


def test_pin100_reports_unused_unknown_and_malformed_codes(tmp_path: Path) -> None:
    lines = [
        "import torch",
        "",
        "",
        "def f(dst, a, dev):",
        "    dst.copy_(torch.from_numpy(a), non_blocking=True)  # noqa: PIN001, PIN002",
        "    x = 1  # noqa: PIN999, F401",
        "    y = 2  # noqa: PIN",
        "    z = 3  # noqa",
        "    return torch.zeros(1, pin_memory=True).to(dev, non_blocking=True)  # noqa: PIN002",
    ]
    (tmp_path / "m.py").write_text("\n".join(lines) + "\n")
    (tmp_path / "other.py").write_text("x = 1  # noqa: PIN003\n")  # never parsed: nothing can be found there
    proc = pinfix("check", "--extend-select", "PIN100", "--output-format", "concise", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr

    def at(n: int, text: str) -> str:
        return f"m.py:{n}:{lines[n - 1].index(text) + 1}: PIN100"

    assert proc.stdout.splitlines() == [
        f"{at(5, 'PIN002')} unused suppression: `PIN002` suppresses no finding on this statement",
        f"{at(6, 'PIN999')} unknown rule code `PIN999` in a suppression comment",
        f"{at(7, '# noqa')} `noqa` directive names no rule code (write e.g. `# noqa: PIN001`); it suppresses nothing",
        f"{at(9, 'PIN002')} unused suppression: `PIN002` suppresses no finding on this statement",
        "other.py:1:16: PIN100 unused suppression: `PIN003` suppresses no finding on this statement",
    ]
    # Off by default, as ruff's RUF100.
    assert pinfix("check", ".", cwd=tmp_path).returncode == 0


def test_pin100_names_codes_of_rules_not_enabled(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(source(COPY + "  # noqa: PIN001"))
    proc = pinfix("check", "--select", "PIN002,PIN100", "--output-format", "concise", ".", cwd=tmp_path)
    assert "`PIN001` is not enabled here" in proc.stdout


def test_rule_pin100_documented() -> None:
    proc = subprocess.run([sys.executable, "-m", "pinfix", "rule", "PIN100"], capture_output=True, text=True)
    assert proc.returncode == 0 and "## Fix safety" in proc.stdout and "--extend-select PIN100" in proc.stdout


def test_is_suppressed_needs_no_syntax_tree() -> None:
    """The interface an engine reporting from the stdlib ``ast`` calls."""
    from pinfix.suppression import is_suppressed, recording

    data = source(COPY + "  # noqa: PIN001").encode()
    assert is_suppressed("PIN001", 5, 5) is None  # outside a recording
    with recording(data) as state:
        assert is_suppressed("PIN001", 5, 5) is True
        assert is_suppressed("PIN002", 5, 5) is False
    assert state.suppressed == [("PIN001", 5, 5)]
