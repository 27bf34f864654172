"""In-process API: check or fix source text without touching files."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from .config import Config
from .engine import Diagnostic, FileReport, Mode, parse, process_source


class SourceError(ValueError):
    """The source could not be parsed or decoded; the message says why."""


def _config(helper: Optional[str], unsafe_fixes: bool, strict: bool, config: Optional[Config]) -> Config:
    return (config or Config()).with_overrides(helper=helper, unsafe_fixes=unsafe_fixes, strict=strict)


def check_text(
    source: str,
    *,
    path: Optional[str] = None,
    helper: Optional[str] = None,
    strict: bool = False,
    config: Optional[Config] = None,
) -> List[Diagnostic]:
    """Findings in ``source`` (``path`` only names it, and places it for isort)."""
    report = process_source(path or "<string>", source.encode("utf-8"), _config(helper, False, strict, config), Mode())
    if report.error:
        raise SourceError(report.error)
    return report.diagnostics


def fix_text(
    source: str,
    *,
    path: Optional[str] = None,
    helper: Optional[str] = None,
    unsafe_fixes: bool = False,
    strict: bool = False,
    config: Optional[Config] = None,
) -> str:
    """``source`` with every applicable fix applied (unchanged if none)."""
    from libcst.codemod import CodemodContext

    from pinfix.codemods.pin_pageable_sources import PinPageableSourcesCommand

    report = FileReport(path or "<string>")
    module = parse(source, report)
    if module is None:
        raise SourceError(report.error)
    command = PinPageableSourcesCommand(
        CodemodContext(filename=str(Path(path)) if path else None),
        config=_config(helper, unsafe_fixes, strict, config),
    )
    return command.transform_module(module).code
