"""Issue 15: settings per file (as ruff finds them), the commands that show
them, and settings validation. CLI behaviour runs ``python -m pinfix``."""

from pathlib import Path

import pytest

from pinfix.config import ConfigError, load_config
from tests.support import BAD_SOURCE, fix_titles, pinfix
from tests.support import write_text as write


@pytest.fixture
def two_projects(tmp_path: Path) -> Path:
    """vLLM's shape: settings at the top, and a second pyproject.toml (no
    [tool.pinfix]) under examples/."""
    top = tmp_path / "repo"
    write(top / "pyproject.toml", '[project]\nname = "top"\n\n[tool.pinfix]\nhelper = "mylib.pin.pinned"\n')
    write(top / "examples" / "demo" / "pyproject.toml", '[project]\nname = "demo"\n')
    write(top / "examples" / "demo" / "run.py", BAD_SOURCE)
    write(top / "pkg" / "worker.py", BAD_SOURCE)
    return top


def test_each_file_gets_its_nearest_settings_in_either_argument_order(two_projects: Path) -> None:
    for order in (["examples/demo/run.py", "pkg/worker.py"], ["pkg/worker.py", "examples/demo/run.py"]):
        proc = pinfix("check", "--output-format", "json", *order, cwd=two_projects, env={"PINFIX_CACHE_DIR": ""})
        assert proc.returncode == 1, proc.stderr
        titles = fix_titles(proc)
        assert len(titles) == 2 and all(t.endswith("with `pinned(...)`") for t in titles.values()), proc.stdout
    # The cache is at the project root, never in the example's folder.
    assert (two_projects / ".pinfix_cache" / "CACHEDIR.TAG").is_file()
    assert not (two_projects / "examples" / "demo" / ".pinfix_cache").exists()


def test_nested_settings_file_wins_below_it(two_projects: Path) -> None:
    write(two_projects / "examples" / "demo" / "pinfix.toml", 'helper = "demo.mem.pin_it"\n')
    proc = pinfix("check", "--output-format", "json", ".", cwd=two_projects)
    assert proc.returncode == 1
    titles = fix_titles(proc)
    assert titles["examples/demo/run.py"].endswith("`pin_it(...)`")
    assert titles["pkg/worker.py"].endswith("`pinned(...)`")


@pytest.mark.parametrize("name", [".pinfix.toml", "pinfix.toml"])
def test_pinfix_toml_has_top_level_keys_and_beats_pyproject(tmp_path: Path, name: str) -> None:
    write(tmp_path / "pyproject.toml", '[tool.pinfix]\nhelper = "a.b.from_pyproject"\n')
    write(tmp_path / name, 'helper = "a.b.from_toml"\n')
    write(tmp_path / "m.py", BAD_SOURCE)
    proc = pinfix("check", "--output-format", "json", "m.py", cwd=tmp_path)
    assert fix_titles(proc)["m.py"].endswith("`from_toml(...)`"), proc.stdout + proc.stderr


def test_show_settings_names_the_file_root_and_values(two_projects: Path) -> None:
    proc = pinfix("show-settings", "examples/demo/run.py", cwd=two_projects)
    assert proc.returncode == 0, proc.stderr
    assert f"settings file: {two_projects / 'pyproject.toml'}" in proc.stdout
    assert f"project root:  {two_projects}" in proc.stdout
    assert 'helper = "mylib.pin.pinned"' in proc.stdout
    assert 'rules = ["PIN001", "PIN002", "PIN003"]' in proc.stdout


def test_show_files_lists_what_check_would_check(two_projects: Path) -> None:
    write(two_projects / "venv" / "lib" / "site.py", BAD_SOURCE)
    proc = pinfix("show-files", cwd=two_projects)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == ["examples/demo/run.py", "pkg/worker.py"]


# --- --config ------------------------------------------------------------------------


def test_config_file_with_top_level_keys_is_honoured(tmp_path: Path) -> None:
    write(tmp_path / "m.py", BAD_SOURCE)
    write(tmp_path / "elsewhere" / "settings.toml", 'helper = "x.y.from_config_file"\n')
    proc = pinfix("check", "--config", "elsewhere/settings.toml", "--output-format", "json", "m.py", cwd=tmp_path)
    assert fix_titles(proc)["m.py"].endswith("`from_config_file(...)`"), proc.stdout + proc.stderr


def test_config_key_value_overrides_and_option_beats_file(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.pinfix]\nhelper = "a.b.from_file"\n')
    write(tmp_path / "m.py", BAD_SOURCE)
    proc = pinfix("check", "--config", 'helper = "a.b.from_override"', "--output-format", "json", "m.py", cwd=tmp_path)
    assert fix_titles(proc)["m.py"].endswith("`from_override(...)`"), proc.stderr
    proc = pinfix("check", "--config", "select = ['PIN002']", "m.py", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""


@pytest.mark.parametrize(
    "setting, message",
    [
        ("line-length = true", "line-length must be an integer, got a boolean (True)"),
        ("line-length = -5", "line-length must be between 1 and 320, got -5"),
        ("strict = 1", "strict must be true or false"),
        ('helpr = "a.b.c"', "unknown setting 'helpr'; did you mean 'helper'?"),
        ('pin-memory-expr = "a, b"', "single expression"),
        ('pin-memory-expr = "await x"', "`await` cannot be written into every call"),
        ('pin-memory-expr = "True  # on"', "one-line Python expression without comments"),
        ('pin-memory-expr = "is_pin_memory_available()"', "uses `is_pin_memory_available`, which a fix cannot import"),
        ('pin-memory-expr = "True"\npin-memory-import = "m.flag"', "which pin-memory-expr 'True' does not use"),
        ('helper = "mod.class"', "('class' is a Python keyword)"),
        ('helper = "mod.None"', "('None' is a Python keyword)"),
        ('h2d-helper = "mod.def"', "('def' is a Python keyword)"),
        ('exclude = ["[z-a]"]', "invalid pattern '[z-a]'"),
        ('select = ["PIN01O"]', "unknown rule selector 'PIN01O'"),
        ('per-file-ignores = {"tests/**" = "PIN002"}', "must be a list of strings"),
    ],
)
def test_bad_settings_are_one_line_errors_at_start_up(tmp_path: Path, setting: str, message: str) -> None:
    write(tmp_path / "pyproject.toml", f"[tool.pinfix]\n{setting}\n")
    write(tmp_path / "m.py", BAD_SOURCE)
    proc = pinfix("check", "m.py", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"pinfix: {tmp_path / 'pyproject.toml'}: [tool.pinfix]") and message in line, line


@pytest.mark.parametrize(
    "content, message",
    [
        (b"tool = 1\n", "`tool` must be a table, got an integer (1)"),
        (b"[tool]\npinfix = 3\n", "[tool.pinfix] must be a table"),
        (b"[tool.pinfix]\nstrict = true # \xff\xfe\n", "not UTF-8 text"),
        (b"[tool.pinfix\n", "invalid TOML"),
    ],
)
def test_broken_pyproject_is_a_one_line_error(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "pyproject.toml").write_bytes(content)
    write(tmp_path / "m.py", BAD_SOURCE)
    proc = pinfix("check", "m.py", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert message in line, line


@pytest.mark.parametrize(
    "args, message",
    [
        (["--helper", "mod.class"], "--helper must look like"),
        (["--helper", "nodots"], "--helper must look like"),
        (["--exclude", "[z-a]"], "--exclude: invalid pattern '[z-a]'"),
        (["--select", "PIN9"], "unknown rule selector 'PIN9'"),
        (["--config", "line-length = 0"], "line-length must be between 1 and 320"),
        (["--config", "not a setting"], "is neither a settings file nor a `key = value` setting"),
        (["--config", "nope.toml"], "--config nope.toml: no such file"),
    ],
)
def test_bad_command_line_settings_are_one_line_errors(tmp_path: Path, args: list, message: str) -> None:
    write(tmp_path / "m.py", BAD_SOURCE)
    proc = pinfix("check", *args, "m.py", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert message in line, line


def test_load_config_keeps_ruff_line_length_and_project_root(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.ruff]\nline-length = 120\n")
    config = load_config(tmp_path)
    assert config.line_length == 120 and config.root == tmp_path.resolve() and config.source is None
    write(tmp_path / "pyproject.toml", "[tool.ruff]\nline-length = 120\n[tool.pinfix]\nline-length = 100\n")
    assert load_config(tmp_path).line_length == 100
    write(tmp_path / "pyproject.toml", "[tool.pinfix]\nline-length = 0\n")
    with pytest.raises(ConfigError, match="between 1 and 320"):
        load_config(tmp_path)


def test_help_has_no_sphinx_markup() -> None:
    proc = pinfix("--help", cwd=Path.cwd())
    assert proc.returncode == 0 and ":mod:" not in proc.stdout and "pageable" in proc.stdout
    proc = pinfix("check", "--help", cwd=Path.cwd())
    assert "with --deep" not in proc.stdout and "--show-unknown" in proc.stdout
