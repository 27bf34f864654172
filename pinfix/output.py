"""Render findings and errors: text, json, sarif (2.1.0) and github annotations."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence, TextIO

from . import __version__
from .engine import Diagnostic, FileReport
from .patterns import RULE_NAMES

FORMATS = ("text", "json", "sarif", "github")


def _open(reports: Sequence[FileReport]) -> List[Diagnostic]:
    """Findings still present (not fixed by this run)."""
    return [d for r in reports for d in r.diagnostics if not d.fixed]


def _chain(d: Diagnostic) -> List[Dict[str, object]]:
    """The evidence chain, each step with its file (the finding's own when unnamed)."""
    return [{"path": e.path or d.path, "line": e.line, "column": e.column, "message": e.message} for e in d.evidence]


#: SARIF result levels (and GitHub annotation commands) by severity.
_LEVELS = {"error": "error", "info": "note"}
_GITHUB = {"error": "error", "info": "notice"}


def _errors(reports: Sequence[FileReport]) -> List[FileReport]:
    return [r for r in reports if r.error is not None]


def shown(path: str) -> str:
    """A path for text output: bytes that are not UTF-8 in a file name (which
    Python holds as lone surrogates) as ``\\xNN`` escapes; JSON and SARIF
    escape them on their own."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class TolerantStream:
    """A text stream that writes what its encoding cannot hold as backslash
    escapes instead of raising ``UnicodeEncodeError``."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except UnicodeEncodeError:
            encoding = getattr(self._stream, "encoding", None) or "utf-8"
            return self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def write_bytes(stream: TextIO, data: bytes) -> None:
    """``data`` as they are (a diff in a file's own encoding) to a text stream's
    binary buffer; a stream without one (in-process callers) gets them decoded."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(data.decode("utf-8", "surrogateescape"))
        return
    stream.flush()
    buffer.write(data)
    buffer.flush()


def _text(reports: Sequence[FileReport], out: TextIO, err: TextIO) -> None:
    for d in _open(reports):
        out.write(f"{shown(d.path)}:{d.line}:{d.column}: {d.code} {d.message}\n")
    for r in _errors(reports):
        err.write(f"{shown(r.path)}: error: {r.error}\n")


def _github_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def _github(reports: Sequence[FileReport], out: TextIO, err: TextIO) -> None:
    for d in _open(reports):
        out.write(
            f"::{_GITHUB.get(d.severity, 'error')} file={_github_escape(shown(d.path), True)},line={d.line},col={d.column},"
            f"endLine={d.end_line},endColumn={d.end_column},title={d.code}::{_github_escape(d.message)}\n"
        )
    for r in _errors(reports):
        out.write(f"::error file={_github_escape(shown(r.path), True)},title=pinfix::{_github_escape(r.error or '')}\n")


def _json(reports: Sequence[FileReport], out: TextIO, err: TextIO) -> None:
    payload = {
        "findings": [
            {
                "path": d.path,
                "code": d.code,
                "rule": RULE_NAMES.get(d.code, d.code),
                "line": d.line,
                "column": d.column,
                "end_line": d.end_line,
                "end_column": d.end_column,
                "message": d.message,
                "pattern": d.pattern,
                "severity": d.severity,
                "fix": {"safety": d.fix_safety, "note": d.fix_note},
                "evidence": _chain(d),
            }
            for d in _open(reports)
        ],
        "errors": [{"path": r.path, "message": r.error} for r in _errors(reports)],
    }
    json.dump(payload, out, indent=2)
    out.write("\n")


def _sarif(reports: Sequence[FileReport], out: TextIO, err: TextIO) -> None:
    import inspect

    import lint_rules

    docs: Dict[str, str] = {
        code: inspect.cleandoc(getattr(getattr(lint_rules, name, None), "__doc__", None) or "")
        for code, name in RULE_NAMES.items()
    }
    rules = [
        {
            "id": code,
            "name": name,
            "shortDescription": {"text": docs.get(code, "").strip().splitlines()[0] if docs.get(code) else name},
            "fullDescription": {"text": docs.get(code, name).strip()},
            "help": {"text": docs.get(code, name).strip(), "markdown": docs.get(code, name).strip()},
            "defaultConfiguration": {"level": "note" if code == "PIN004" else "error"},
        }
        for code, name in RULE_NAMES.items()
    ]
    index = {code: i for i, code in enumerate(RULE_NAMES)}
    results = []
    for d in _open(reports):
        result = {
            "ruleId": d.code,
            "ruleIndex": index.get(d.code, 0),
            "level": _LEVELS.get(d.severity, "error"),
            "message": {"text": d.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": d.path.replace("\\", "/")},
                        "region": {
                            "startLine": d.line,
                            "startColumn": d.column,
                            "endLine": d.end_line,
                            "endColumn": d.end_column,
                        },
                    }
                }
            ],
            "properties": {"pattern": d.pattern, "fixSafety": d.fix_safety},
        }
        if d.evidence:
            # Where the tensor was made and each step that kept or lost pinnedness.
            result["codeFlows"] = [{"threadFlows": [{"locations": [_flow_location(e) for e in _chain(d)]}]}]
        results.append(result)
    notifications = [
        {
            "level": "error",
            "message": {"text": r.error},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": r.path.replace("\\", "/")}}}],
        }
        for r in _errors(reports)
    ]
    sarif = {
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "pinfix",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "results": results,
                "invocations": [
                    {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}
                ],
            }
        ],
    }
    json.dump(sarif, out, indent=2)
    out.write("\n")


def _flow_location(step: Dict[str, object]) -> Dict[str, object]:
    return {
        "location": {
            "physicalLocation": {
                "artifactLocation": {"uri": str(step["path"]).replace("\\", "/")},
                "region": {"startLine": step["line"], "startColumn": step["column"]},
            },
            "message": {"text": step["message"]},
        }
    }


WRITERS = {"text": _text, "json": _json, "sarif": _sarif, "github": _github}


def render(fmt: str, reports: Sequence[FileReport], out: TextIO, err: TextIO) -> None:
    WRITERS[fmt](reports, out, err)
