"""The rules: each one module with its documentation and cases; each only asks the engine.

========  ==========================  =================================================
code      name                        module
========  ==========================  =================================================
PIN001    PageableNonBlockingCopy     :mod:`.pin001` (``torch.from_numpy`` source)
PIN002    PageableCpuSource           :mod:`.pin002` (any other pageable CPU source)
PIN003    UnsynchronizedHostRead      :mod:`.pin003` (device-to-host read before a wait)
PIN004    UnknownPinnedness           :mod:`.pin004` (informational: memory unknown)
========  ==========================  =================================================

A new rule is a module here with a :class:`~.base.Rule` subclass, added to :data:`RULES`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..semantic.facts import ModuleFacts
from ..settings import Settings
from .base import Case, Finding, Rule, RuleContext
from .pin001 import PageableNonBlockingCopy
from .pin002 import PageableCpuSource
from .pin003 import UnsynchronizedHostRead
from .pin004 import UnknownPinnedness

RULES: Sequence[Rule] = (PageableNonBlockingCopy(), PageableCpuSource(), UnsynchronizedHostRead(), UnknownPinnedness())
#: Rule code -> the rule's name (both work in suppression comments).
RULE_NAMES: Dict[str, str] = {r.code: r.name for r in RULES}
RULES_BY_CODE: Dict[str, Rule] = {r.code: r for r in RULES}


def check_module(facts: ModuleFacts, settings: Settings, path: Optional[Path] = None) -> List[Finding]:
    """Every rule's findings in one module, in source order (suppression comments
    are the shell's to apply: each finding carries its statement's lines)."""
    ctx = RuleContext(facts, settings, path)
    found: List[Finding] = []
    for rule in RULES:
        if rule.opt_in is not None and not getattr(settings, rule.opt_in):
            continue
        try:
            found.extend(rule.check(ctx))
        except RecursionError:
            raise  # the whole file is too deep: the engine says so
        except Exception as e:  # noqa: BLE001  # a bug of ours loses this rule's findings only
            facts.problems.append((0, f"{rule.code}'s findings are lost", e))
    found.sort(key=lambda f: (f.line, f.column, f.code))
    return found


__all__ = ["Case", "Finding", "Rule", "RuleContext", "RULES", "RULE_NAMES", "RULES_BY_CODE", "check_module"]
