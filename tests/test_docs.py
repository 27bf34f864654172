"""The documentation's tables of options, settings and rules are made from the
code (``python -m pinfix.docs``); this fails when they have drifted, when a link
between the documents leads nowhere, or when the README grows past a first read."""

import contextlib
import io
import re

import pytest

from pinfix.cli import OPTIONS, RULES, parser
from pinfix.config import SETTINGS
from pinfix.docs import documents, update_all
from tests.support import REPO


def _texts():
    return {path: path.read_text(encoding="utf-8") for path in documents(REPO)}


def test_tables_are_up_to_date_wherever_they_live() -> None:
    texts = _texts()
    assert update_all(texts) == texts, "run `python -m pinfix.docs`"


def test_a_table_without_markers_or_with_two_is_an_error(tmp_path) -> None:
    texts = _texts()
    readme = REPO / "README.md"
    holder = next(path for path, text in texts.items() if "<!-- begin settings:" in text)
    with pytest.raises(ValueError, match="settings table"):
        update_all({**texts, holder: texts[holder].replace("<!-- begin settings:", "<!-- settings:")})
    with pytest.raises(ValueError, match="options table"):
        update_all({**texts, tmp_path / "x.md": texts[readme]})


def test_every_rule_is_in_the_readme_rules_table() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for code, name in RULES.items():
        assert f"| `{code}` | {name} |" in text


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(text: str):
    slugs = set(re.findall(r'<a id="([^"]+)">', text))
    fenced = False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            slugs.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return slugs


def test_every_link_between_the_documents_leads_somewhere() -> None:
    texts = _texts()
    for path, text in texts.items():
        for target in _LINK.findall(text):
            if "://" in target:
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            assert dest.exists(), (path.name, target)
            if anchor:
                assert anchor in _anchors(dest.read_text(encoding="utf-8")), (path.name, target)


def test_the_readme_is_a_first_read_and_the_rest_is_in_docs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 260
    for name in ("deep-mode", "speed", "guarantees", "runtime", "hardware", "architecture"):
        assert f"(docs/{name}.md)" in readme, name
        assert (REPO / "docs" / f"{name}.md").read_text(encoding="utf-8").startswith("# "), name


def test_every_option_and_setting_is_in_the_readme() -> None:
    text = "\n".join(_texts().values())
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
