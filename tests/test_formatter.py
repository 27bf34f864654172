"""The ``formatter`` setting: the project's own ruff or black on the lines a fix
changed, the built-in layout as the fallback, and the quote style either way."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from pinfix.formatter import Layout, lay_out, statement_ranges
from pinfix.style import project_style
from tests.support import pinfix, write_text

#: A PIN002 fix (``pin_memory=...`` added to the factory) in a single-quote file;
#: the line the fix changes no longer fits in 60 columns. The first line of
#: ``f`` is left unformatted on purpose: nothing may touch it.
SOURCE = """\
import torch


def f(n, out):
    x = {'a':1}
    buf = torch.zeros(n, dtype=torch.int64, device='cpu')
    out.copy_(buf, non_blocking=True)
"""

SETTINGS = """\
[tool.pinfix]
pin-memory-expr = "is_pin_memory_available()"
pin-memory-import = "vllm.utils.platform_utils.is_pin_memory_available"
"""

RUFF_SINGLE = '[tool.ruff]\nline-length = 60\n\n[tool.ruff.format]\nquote-style = "single"\n'
BLACK_PRESERVE = "[tool.black]\nline-length = 60\nskip-string-normalization = true\n"

WRAPPED = """\
    buf = torch.zeros(
        n,
        dtype=torch.int64,
        device='cpu',
        pin_memory=is_pin_memory_available(),
    )
"""


def _project(tmp_path: Path, formatter_toml: str, formatter: str = "") -> Path:
    setting = f'formatter = "{formatter}"\n' if formatter else ""
    write_text(tmp_path / "pyproject.toml", SETTINGS + setting + "\n" + formatter_toml)
    return write_text(tmp_path / "pkg" / "m.py", SOURCE)


def _fix(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    proc = pinfix("fix", "--no-cache", *args, "pkg/m.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc


def _ruff_format_check(tmp_path: Path, path: Path, line_range: str) -> str:
    """What the project's ``ruff format`` makes of ``line_range`` of ``path``."""
    from pinfix.formatter import formatter_command

    command = formatter_command("ruff")
    assert command is not None
    done = subprocess.run(
        [*command, "format", "--range", line_range, "--stdin-filename", str(path), "-"],
        input=path.read_bytes(),
        capture_output=True,
        cwd=tmp_path,
        check=True,
    )
    return done.stdout.decode()


@pytest.mark.parametrize("formatter", ["builtin", "ruff", ""])
def test_a_single_quote_project_keeps_its_quotes(tmp_path, formatter):
    """ruff's ``quote-style = "single"``: the fix's statement is wrapped, and its
    ``'cpu'`` stays single-quoted (the built-in layout wrote ``"cpu"``), by the
    built-in layout, by ruff itself, and by the default (``auto`` finds ruff)."""
    path = _project(tmp_path, RUFF_SINGLE, formatter)
    proc = _fix(tmp_path)
    text = path.read_text()
    assert WRAPPED in text
    assert '"cpu"' not in text
    assert "    x = {'a':1}\n" in text  # a line the fix did not touch
    assert "warning" not in proc.stderr
    start = text.index("    buf = torch.zeros(")
    first = text[:start].count("\n") + 1
    assert (
        _ruff_format_check(tmp_path, path, f"{first}:1-{first + 5}:6") == text
    )  # what the project's ruff leaves as is


def test_black_without_string_normalisation_keeps_quotes_in_the_builtin_layout(tmp_path):
    path = _project(tmp_path, BLACK_PRESERVE, "builtin")
    _fix(tmp_path)
    assert WRAPPED in path.read_text()


def test_the_builtin_layout_honours_quote_style():
    from pinfix.layout import format_statement
    from pinfix.style import FormatStyle

    text = 'x = f(\'a\', "b", "it\'s")'
    assert format_statement(text, FormatStyle(quote_style="single")) == "x = f('a', 'b', \"it's\")"
    assert format_statement(text, FormatStyle(quote_style="preserve")) == text
    assert format_statement("x = f('a', \"b\")", FormatStyle()) == 'x = f("a", "b")'


def test_ruff_formats_only_the_lines_the_fix_changed(tmp_path):
    """ruff, double quotes (its default): the changed statement is ruff's
    (``'cpu'`` becomes ``"cpu"`` there, as the project's formatter writes it), the
    unformatted line above it stays as it was."""
    path = _project(tmp_path, "[tool.ruff]\nline-length = 60\n\n[tool.ruff.format]\n", "ruff")
    _fix(tmp_path)
    text = path.read_text()
    assert WRAPPED.replace("'cpu'", '"cpu"') in text
    assert "    x = {'a':1}\n" in text
    assert "from vllm.utils.platform_utils import (\n    is_pin_memory_available,\n)\n" in text  # 62 columns


def test_auto_finds_ruff_or_black_from_the_project(tmp_path):
    ruff = tmp_path / "a"
    write_text(ruff / "pyproject.toml", RUFF_SINGLE)
    assert project_style(ruff / "pyproject.toml").formatter == "ruff"
    toml = tmp_path / "b"
    write_text(toml / "ruff.toml", 'line-length = 70\n[format]\nquote-style = "single"\n')
    write_text(toml / "pyproject.toml", "[tool.black]\nline-length = 100\n")
    style = project_style(toml / "pyproject.toml")
    assert (style.formatter, style.format.line_length, style.format.quote_style) == ("ruff", 70, "single")
    black = tmp_path / "c"
    write_text(black / "pyproject.toml", BLACK_PRESERVE)
    style = project_style(black / "pyproject.toml")
    assert (style.formatter, style.format.quote_style) == ("black", "preserve")
    lint_only = tmp_path / "d"
    write_text(lint_only / "pyproject.toml", "[tool.ruff]\nline-length = 70\n")
    assert project_style(lint_only / "pyproject.toml").formatter is None


@pytest.mark.skipif(importlib.util.find_spec("black") is None, reason="black is not installed")
def test_black_formats_only_the_lines_the_fix_changed(tmp_path):
    path = _project(tmp_path, BLACK_PRESERVE)  # auto: [tool.black], and black is installed
    _fix(tmp_path)
    text = path.read_text()
    assert WRAPPED in text
    assert "    x = {'a':1}\n" in text
    first = text[: text.index("    buf = torch.zeros(")].count("\n") + 1
    done = subprocess.run(
        [sys.executable, "-m", "black", "-q", "--check", f"--line-ranges={first}-{first + 5}", str(path)],
        cwd=tmp_path,
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr


def test_a_formatter_that_fails_falls_back_to_the_builtin_layout_with_one_warning(tmp_path):
    """ruff refuses the project's broken ``ruff.toml``: both files are fixed with
    the built-in layout, and one line says so."""
    path = _project(tmp_path, RUFF_SINGLE, "ruff")
    write_text(tmp_path / "ruff.toml", 'line-length = "sixty"\n')
    other = write_text(tmp_path / "pkg" / "n.py", SOURCE)
    proc = pinfix("fix", "--no-cache", "-j", "1", "pkg", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, proc.stderr
    assert (
        warnings[0].startswith("pinfix: warning: ruff could not lay out the fix") and "built-in layout" in warnings[0]
    )
    for p in (path, other):
        text = p.read_text()
        assert "pin_memory=is_pin_memory_available()" in text
        assert "    x = {'a':1}\n" in text


def test_a_missing_formatter_falls_back(tmp_path, monkeypatch):
    import pinfix.formatter as formatter

    monkeypatch.setattr(formatter, "formatter_command", lambda tool: None)
    old = "def f():\n    g(1)\n"
    new = "def f():\n    g(1, pin_memory=True)\n"
    style = project_style(None)
    done = lay_out(old, new, style, "black")
    assert done == Layout(new, "builtin", done.warning)
    assert done.warning is not None and "black is neither importable nor on PATH" in done.warning
    assert lay_out(old, new, style, "auto").warning is None


def test_a_formatter_that_reformats_other_lines_is_refused(tmp_path, monkeypatch):
    """A "formatter" that rewrites every quote in the file touches lines the
    fix did not: its result is refused, the built-in layout is used."""
    import pinfix.formatter as formatter

    script = "import sys; sys.stdout.write(sys.stdin.read().replace(chr(39), chr(34)))"
    monkeypatch.setattr(formatter, "formatter_command", lambda tool: [sys.executable, "-c", script])
    old = "a = 'x'\nb = g(1)\n"
    new = "a = 'x'\nb = g(1, 'y')\n"
    done = lay_out(old, new, project_style(None), "black")
    assert done.text == "a = 'x'\nb = g(1, \"y\")\n" and done.by == "builtin"  # the built-in layout, double quotes
    assert "it also changed line 1, which the fix did not touch" in (done.warning or "")


def test_statement_ranges_cover_whole_statements_and_headers_only():
    text = "x = 1\ny = f(\n    2,\n)\nif y:\n    z = 3\n"
    assert statement_ranges(text, [3]) == [(2, 4)]
    assert statement_ranges(text, [5]) == [(5, 5)]
    assert statement_ranges(text, [1, 2]) == [(1, 4)]


def test_the_formatter_reads_the_settings_nearest_the_file_wherever_pinfix_runs(tmp_path):
    """Run from above the project with a relative path: ruff still finds the
    ``ruff.toml`` of the file's own directory (single quotes there), not only the
    project root's settings (double quotes)."""
    project = tmp_path / "proj"
    path = _project(project, "[tool.ruff]\nline-length = 60\n\n[tool.ruff.format]\n", "ruff")
    write_text(project / "pkg" / "ruff.toml", 'line-length = 60\n[format]\nquote-style = "single"\n')
    proc = pinfix("fix", "--no-cache", "proj/pkg/m.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert WRAPPED in path.read_text()


def test_a_file_with_more_changed_statements_than_the_formatter_is_run_for_gets_the_builtin_layout(monkeypatch):
    """ruff reads the whole file once per range: past ``MAX_RANGES`` statements the
    built-in layout (one pass) keeps a fix's cost linear in the file; the
    formatter is never started."""
    import pinfix.formatter as formatter

    monkeypatch.setattr(formatter, "formatter_command", lambda tool: [sys.executable, "-c", "import sys; sys.exit(9)"])
    count = formatter.MAX_RANGES + 1
    old = "".join(f"x{i} = g({i})\n\n" for i in range(count))
    new = "".join(f"x{i} = g({i}, 'y')\n\n" for i in range(count))
    done = lay_out(old, new, project_style(None), "ruff")
    assert done.by == "builtin" and done.text == new.replace("'y'", '"y"')
    assert (
        done.warning
        == f"{count} changed statements in one file, more than ruff is run for (32); used the built-in layout"
    )
    fewer = lay_out("x = g(1)\n", "x = g(1, 'y')\n", project_style(None), "ruff")
    assert fewer.warning is not None and "ruff could not lay out the fix (exit 9)" in fewer.warning
