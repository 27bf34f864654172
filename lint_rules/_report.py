"""How the pinfix Fixit rules report: the engine runs once per module, each rule
reports its own codes; the fix of a report is the whole module fixed by the
shared applier (Fixit replaces one node per report, and imports live outside
the call).

Not a rule itself (Fixit loads rules from the other modules of this package).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Type

import libcst as cst
from fixit import Invalid, LintRule, Valid
from libcst.metadata import CodePosition, CodeRange

from pinfix.config import Config, load_config, settings_of
from pinfix.edits import Applicability
from pinfix.engine import analyse
from pinfix.findings import FileReport
from pinfix.fixes import FixError, fix_findings
from pinfix.rules import Case, Finding, Rule

#: The last modules' findings, by their bytes and settings: the four rules share one engine run.
_LAST: List[Tuple[bytes, Config, Any]] = []


def _findings(module: cst.Module, config: Config) -> Optional[Tuple[Any, List[Finding]]]:
    data = module.bytes
    for key, cfg, found in _LAST:
        if key == data and cfg == config:
            return found  # type: ignore[no-any-return]
    report = FileReport("<fixit>")
    found = analyse("<fixit>", data, config, report)
    _LAST[:] = [(data, config, found)] + _LAST[:3]
    return found


def report_findings(rule: LintRule, node: cst.Module, code: str) -> None:
    """Report ``rule``'s findings (those with ``code``) in ``node``; the first
    safely fixable one carries the whole module fixed for this code only."""
    config: Config = rule.config  # type: ignore[attr-defined]
    found = _findings(node, config)
    if found is None:
        return
    src, findings = found
    mine = [f for f in findings if f.code == code]
    fixed = None
    try:
        result = fix_findings(src, findings, settings_of(config), None, Applicability.SAFE, {code})
        fixed = cst.parse_module(result.text) if result is not None else None
    except (FixError, cst.ParserSyntaxError):
        fixed = None
    for finding in mine:
        position = CodeRange(
            CodePosition(finding.line, finding.column - 1),
            CodePosition(finding.end_line, finding.end_column - 1),
        )
        if fixed is not None and finding.fix is not None and finding.fix.applicability.applies(Applicability.SAFE):
            rule.report(node, f"{finding.code} {finding.message}", position=position, replacement=fixed)
            fixed = None
        else:
            rule.report(node, f"{finding.code} {finding.message}", position=position)


def fixit_rule(rule: Type[Rule], module: str) -> Type[LintRule]:
    """A Fixit rule class for one of pinfix's rules: its docs, its cases (those
    that need no settings), its findings."""

    def __init__(self: Any) -> None:
        LintRule.__init__(self)
        # Fixit gives rules no file path: settings come from the working directory's project.
        self.config = load_config()

    def visit_Module(self: Any, node: cst.Module) -> None:
        if rule.opt_in is None or getattr(self.config, rule.opt_in):
            report_findings(self, node, rule.code)

    return type(
        rule.name,
        (LintRule,),
        {
            "__doc__": rule.__doc__,
            "__module__": module,
            "VALID": valid(rule.VALID),
            "INVALID": invalid(rule.INVALID),
            "__init__": __init__,
            "visit_Module": visit_Module,
        },
    )


def valid(cases: Sequence[Case]) -> List[Valid]:
    return [Valid(c.code) for c in cases if not c.settings]


def invalid(cases: Sequence[Case]) -> List[Invalid]:
    return [Invalid(c.code, expected_replacement=c.fixed) for c in cases if not c.settings]
