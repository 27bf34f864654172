"""In-process API: check or fix source text without touching files."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from .config import Config
from .engine import process_source
from .findings import Diagnostic, Mode


class SourceError(ValueError):
    """The source could not be parsed or decoded; the message says why."""


def _config(helper: Optional[str], unsafe_fixes: bool, strict: bool, config: Optional[Config]) -> Config:
    # An option left at its default keeps what ``config`` says (``None`` overrides nothing).
    return (config or Config()).with_overrides(helper=helper, unsafe_fixes=unsafe_fixes or None, strict=strict or None)


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
    report = process_source(
        path or "<string>",
        source.encode("utf-8"),
        _config(helper, unsafe_fixes, strict, config),
        Mode(fix=True, diff_only=True),
    )
    if report.error:
        raise SourceError(report.error)
    if not report.changed:
        return source
    return fixed_text(path or "<string>", source, _config(helper, unsafe_fixes, strict, config))


def fixed_text(path: str, source: str, config: Config) -> str:
    """The fixed text of ``source`` (the applier's own output)."""
    from .config import settings_of
    from .edits import Applicability
    from .engine import analyse
    from .findings import FileReport
    from .fixes import fix_findings

    report = FileReport(path)
    found = analyse(path, source.encode("utf-8"), config, report)
    if found is None:
        raise SourceError(report.error)
    src, findings = found
    result = fix_findings(src, findings, settings_of(config), Path(path), Applicability.required(config.unsafe_fixes))
    return result.text if result is not None else src.text
