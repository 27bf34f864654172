"""The README's tables of options and settings are made from the code
(``python -m pinfix.docs``); this fails when they have drifted."""

import contextlib
import io
import re

import pytest

from pinfix.cli import OPTIONS, parser
from pinfix.config import SETTINGS
from pinfix.docs import update
from tests.support import REPO


def test_readme_tables_are_up_to_date() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert update(text) == text, "run `python -m pinfix.docs README.md`"


def test_every_option_and_setting_is_in_the_readme() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for setting in SETTINGS:
        assert f"| `{setting.key}` |" in text
    for flags, _, _ in OPTIONS:
        assert f"| `{', '.join(flags)}` |" in text
    # Every option a command's --help lists is in one of the tables.
    documented = {flag for flags, _, _ in OPTIONS for flag in flags} | {s.option for s in SETTINGS if s.option}
    for name in ("check", "fix", "show-settings", "show-files"):
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown), pytest.raises(SystemExit):
            parser().parse_args([name, "--help"])
        for flag in set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", shown.getvalue())):
            negated = flag.startswith("--no-") and "--" + flag[5:] in documented  # --no-strict
            if flag not in ("-h", "--help") and not negated:
                assert flag in documented, (name, flag)
