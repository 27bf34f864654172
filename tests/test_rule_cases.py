"""Every rule's VALID / INVALID cases through the engine and the shared applier,
with the settings each case names (no Fixit needed)."""

from pathlib import Path
from typing import Any, List, Tuple

import pytest

from pinfix.api import check_text, fix_text
from pinfix.config import Config
from pinfix.rules import RULES, Case, Rule


def _config(case: Case) -> Config:
    keys = {
        "h2d-helper": "h2d_helper",
        "pin-memory-expr": "pin_memory_expr",
        "show-unknown": "show_unknown",
        "deep": "deep",
        "strict": "strict",
    }
    return Config(root=Path.cwd()).with_overrides(**{keys[k]: v for k, v in case.settings})


def _cases(kind: str) -> List[Tuple[str, Rule, Case]]:
    out = []
    for rule in RULES:
        cases = list(getattr(rule, kind)) + list(getattr(rule, "H2D_" + kind, []))
        for i, case in enumerate(cases):
            out.append((f"{rule.code}-{kind.lower()}-{i}", rule, case))
    return out


@pytest.mark.parametrize("name, rule, case", _cases("VALID"), ids=[c[0] for c in _cases("VALID")])
def test_valid(name: str, rule: Any, case: Case) -> None:
    found = [f for f in check_text(case.code, config=_config(case)) if f.code == rule.code]
    assert found == [], [f.message for f in found]


@pytest.mark.parametrize("name, rule, case", _cases("INVALID"), ids=[c[0] for c in _cases("INVALID")])
def test_invalid(name: str, rule: Any, case: Case) -> None:
    config = _config(case)
    if rule.opt_in:
        config = config.with_overrides(**{rule.opt_in: True})
    found = [f for f in check_text(case.code, config=config) if f.code == rule.code]
    assert found, f"{rule.code} not reported"
    if case.fixed is not None:
        assert fix_text(case.code, config=config) == case.fixed
        assert fix_text(case.fixed, config=config) == case.fixed
