"""How the pinfix Fixit rules report: one shared analysis, each rule its own codes.

Not a rule itself (Fixit loads rules from the other modules of this package).
"""

from __future__ import annotations

import libcst as cst
from fixit import LintRule
from libcst.codemod import CodemodContext
from libcst.metadata import CodePosition, CodeRange

from pinfix.codemods.pin_pageable_sources import PinPageableSourcesCommand
from pinfix.analysis import SAFE, analyze


def report_findings(rule: LintRule, node: cst.Module, code: str) -> None:
    """Report ``rule``'s findings (those with ``code``) in ``node``; the first
    safely fixable one carries the whole module fixed for this code only."""
    config = rule.config  # type: ignore[attr-defined]
    findings = [f for f in analyze(node, rule.get_metadata, config) if f.code == code]
    fixed = None
    if any(f.fix_safety == SAFE for f in findings):
        # Fixit replaces one node per report; the import lives outside the
        # call, so the first fixable report carries the whole fixed module.
        command = PinPageableSourcesCommand(CodemodContext(), config=config, codes={code})
        fixed = command.transform_module(node)
    for finding in findings:
        position = CodeRange(
            CodePosition(finding.line, finding.column - 1),
            CodePosition(finding.end_line, finding.end_column - 1),
        )
        if fixed is not None and finding.fix_safety == SAFE:
            rule.report(node, f"{finding.code} {finding.message}", position=position, replacement=fixed)
            fixed = None
        else:
            assert finding.node is not None
            rule.report(finding.node, f"{finding.code} {finding.message}", position=position)
