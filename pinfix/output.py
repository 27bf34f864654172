"""Render findings and errors: ``full`` and ``concise`` text, ``json``,
``sarif`` (2.1.0), ``github`` annotations, ``gitlab`` code quality and
``junit`` XML; plus ``--statistics`` and ``--show-fixes`` listings.

``full`` (the default on a terminal) shows each finding's summary, its source
line with a caret under it, the whole message (why), the evidence chain, and the
fix with its title and safety; ``concise`` (the default elsewhere; ``text`` is
its old name) is one line per finding: ``path:line:col: CODE [*] summary``,
``[*]`` marking what ``pinfix fix`` fixes. Colour only on a terminal, never with ``NO_COLOR`` set, always with
``FORCE_COLOR`` set.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from . import __version__
from .config import OUTPUT_FORMATS, RULES
from .edits import Applicability
from .findings import Diagnostic, FileReport, display, file_identity, same_file, shown

FORMATS = OUTPUT_FORMATS
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def unicode_only(value: Any) -> Any:
    """``value`` (JSON data) with every string valid Unicode: a byte of a file
    name that is not UTF-8 (held as a lone surrogate) as ``\\xNN``, as
    :func:`pinfix.findings.shown` writes it; JSON would otherwise carry ``\\udcff``, which strict
    readers refuse."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            try:
                return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            except UnicodeEncodeError:
                return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {unicode_only(k): unicode_only(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [unicode_only(v) for v in value]
    return value


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
    """``data`` as they are (a diff in a file's own encoding, a fixed source)
    to a text stream's binary buffer; a stream without one (in-process
    callers) gets them decoded."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(data.decode("utf-8", "surrogateescape"))
        return
    stream.flush()
    buffer.write(data)
    buffer.flush()


@dataclass
class Style:
    """How a run prints."""

    color: bool = False
    #: Where ``full`` wraps a message.
    width: int = 100
    #: The project root: SARIF and GitLab name files relative to it.
    root: Optional[Path] = None
    #: Unsafe fixes are applied (``[*]`` marks them too).
    unsafe_fixes: bool = False
    #: SARIF ``fixes``: the report of fixing a file without writing it, or ``None``.
    plan_fixes: Optional[Callable[[FileReport], Optional[FileReport]]] = None


def use_color(stream: TextIO, environ: Optional[Dict[str, str]] = None) -> bool:
    """``NO_COLOR`` (non-empty) turns colour off, ``FORCE_COLOR`` (non-empty)
    on; otherwise colour only on a terminal that is not ``dumb``."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty() and env.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


class _Paint:
    CODES = {"bold": "1", "red": "31", "cyan": "36", "blue": "34", "dim": "2", "yellow": "33"}

    def __init__(self, on: bool):
        self.on = on

    def __call__(self, text: str, *styles: str) -> str:
        if not self.on or not styles:
            return text
        return "\x1b[" + ";".join(self.CODES[s] for s in styles) + "m" + text + "\x1b[0m"


def _open(reports: Sequence[FileReport]) -> List[Diagnostic]:
    """Findings still present (not fixed by this run)."""
    return [d for r in reports for d in r.diagnostics if not d.fixed]


def _errors(reports: Sequence[FileReport]) -> List[FileReport]:
    return [r for r in reports if r.error is not None]


def fixable(d: Diagnostic, unsafe_fixes: bool) -> bool:
    return d.fix_safety is not None and Applicability(d.fix_safety).applies(Applicability.required(unsafe_fixes))


def _chain(d: Diagnostic) -> List[Dict[str, object]]:
    """The evidence chain, each step with its file: the finding's own as the finding
    names it, another relative to the working directory."""
    own = file_identity(d.path) if d.evidence else ""
    return [
        {
            "path": d.path if same_file(e.path, own) else display(e.path),
            "line": e.line,
            "column": e.column,
            "message": e.message,
        }
        for e in d.evidence
    ]


def _lines(report: FileReport) -> List[str]:
    """The report's source as lines (read again if it was not kept)."""
    data = report.source
    if data is None:
        from .regular import read_regular

        try:
            data = read_regular(report.path)  # a FIFO or device put there since is never read
        except OSError:
            return []
    from .suppression import decode

    return re.split(r"\r\n|\r|\n", decode(data)[0])


def _by_file(reports: Sequence[FileReport]) -> Iterable[Tuple[FileReport, List[Diagnostic]]]:
    for r in reports:
        open_ = [d for d in r.diagnostics if not d.fixed]
        if open_:
            yield r, open_


# --- concise and full -------------------------------------------------------------------


def _head(d: Diagnostic, style: Style, paint: _Paint) -> Tuple[str, int]:
    """``path:line:col: CODE [*] `` coloured, and its width."""
    color = "cyan" if d.severity == "info" else "red"
    mark = "[*] " if fixable(d, style.unsafe_fixes) else ""
    path = shown(d.path)
    plain = f"{path}:{d.line}:{d.column}: {d.code} {mark}"
    text = f"{paint(path, 'bold')}:{d.line}:{d.column}: {paint(d.code, 'bold', color)} " + (
        paint("[*]", "cyan") + " " if mark else ""
    )
    return text, len(plain)


def _concise(reports: Sequence[FileReport], out: TextIO, err: TextIO, style: Style) -> None:
    paint = _Paint(style.color)
    for d in _open(reports):
        out.write(_head(d, style, paint)[0] + d.summary + "\n")
    _error_lines(reports, err, paint)


def _error_lines(reports: Sequence[FileReport], err: TextIO, paint: _Paint) -> None:
    for r in _errors(reports):
        err.write(f"{paint(shown(r.path), 'bold')}: {paint('error', 'bold', 'red')}: {r.error}\n")


def _full(reports: Sequence[FileReport], out: TextIO, err: TextIO, style: Style) -> None:
    paint = _Paint(style.color)
    for report, diagnostics in _by_file(reports):
        lines = _lines(report)
        for d in diagnostics:
            out.write(_full_one(d, lines, style, paint))
    _error_lines(reports, err, paint)


def _full_one(d: Diagnostic, lines: List[str], style: Style, paint: _Paint) -> str:
    head, width = _head(d, style, paint)
    wrapped = textwrap.wrap(
        d.summary, max(style.width, width + 20), initial_indent=" " * width, subsequent_indent="    "
    )
    parts = [head + wrapped[0][width:] if wrapped else head.rstrip(), *wrapped[1:]]
    rows = [n for n in range(d.line, min(d.end_line, d.line + 2) + 1) if 0 < n <= len(lines)]
    gutter = len(str(rows[-1])) if rows else 1
    bar = paint(" " * gutter + " |", "blue")
    if rows:
        parts.append(bar)
        for n in rows:
            parts.append(paint(f"{n:>{gutter}} |", "blue") + " " + lines[n - 1].expandtabs(4))
            if n == d.line:
                text = lines[n - 1]
                start = len(text[: d.column - 1].expandtabs(4))
                stop = len(text[: d.end_column - 1].expandtabs(4)) if d.end_line == d.line else len(text.expandtabs(4))
                parts.append(bar + " " + " " * start + paint("^" * max(1, stop - start), "bold", "red"))
        parts.append(bar)
    if d.message != d.summary:
        parts.extend(
            textwrap.wrap(
                f"= why: {d.message}",
                max(style.width, 40),
                initial_indent=" " * (gutter + 1),
                subsequent_indent=" " * (gutter + 3),
            )
        )
    if d.evidence:
        parts.append(" " * gutter + " = evidence:")
        for step in _chain(d):
            parts.append(
                " " * (gutter + 5)
                + paint(f"{shown(str(step['path']))}:{step['line']}:{step['column']}", "dim")
                + f" {step['message']}"
            )
    title = f"{d.fix_title}; " if d.fix_title else ""
    if d.fix_safety == "safe":
        fix = f"fix (safe): {title}`pinfix fix` applies it"
    elif d.fix_safety == "unsafe":
        fix = f"fix (unsafe): {title}`pinfix fix --unsafe-fixes` applies it"
    else:
        fix = "no fix"
    note = f"; {d.fix_note}" if d.fix_note and d.fix_note not in d.message else ""
    parts.extend(
        textwrap.wrap(
            f"= {fix}{note}",
            max(style.width, 40),
            initial_indent=" " * (gutter + 1),
            subsequent_indent=" " * (gutter + 3),
        )
    )
    return "\n".join(parts) + "\n\n"


# --- github, json ---------------------------------------------------------------------


def _github_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


_GITHUB = {"error": "error", "info": "notice"}


def _github(reports: Sequence[FileReport], out: TextIO, err: TextIO, style: Style) -> None:
    for d in _open(reports):
        out.write(
            f"::{_GITHUB.get(d.severity, 'error')} file={_github_escape(shown(d.path), True)},line={d.line},col={d.column},"
            f"endLine={d.end_line},endColumn={d.end_column},title={d.code}::{_github_escape(d.message)}\n"
        )
    for r in _errors(reports):
        out.write(f"::error file={_github_escape(shown(r.path), True)},title=pinfix::{_github_escape(r.error or '')}\n")


def _json(reports: Sequence[FileReport], out: TextIO, err: TextIO, style: Style) -> None:
    payload = {
        "findings": [
            {
                "path": d.path,
                "code": d.code,
                "rule": RULES.get(d.code, d.code),
                "line": d.line,
                "column": d.column,
                "end_line": d.end_line,
                "end_column": d.end_column,
                "message": d.message,
                "summary": d.summary,
                "pattern": d.pattern,
                "severity": d.severity,
                "fix": {"safety": d.fix_safety, "note": d.fix_note, "title": d.fix_title},
                "evidence": _chain(d),
            }
            for d in _open(reports)
        ],
        "errors": [{"path": r.path, "message": r.error} for r in _errors(reports)],
    }
    json.dump(unicode_only(payload), out, indent=2)
    out.write("\n")


# --- paths relative to the project, fingerprints -----------------------------------------


def relative(path: str, root: Optional[Path]) -> Optional[str]:
    """``path`` relative to ``root`` with ``/``; ``None`` when outside it."""
    if root is None:
        return None
    absolute = os.path.abspath(path)
    base = str(root).rstrip(os.sep)
    if not absolute.startswith(base + os.sep):
        real = os.path.realpath(path)
        if not real.startswith(base + os.sep):
            return None
        absolute = real
    return absolute[len(base) + 1 :].replace(os.sep, "/")


def fingerprints(reports: Sequence[FileReport], root: Optional[Path]) -> Dict[int, str]:
    """A stable id per open finding: its rule, file and the text of its line
    (not the line's number), and which of the same it is in the file."""
    out: Dict[int, str] = {}
    for report, diagnostics in _by_file(reports):
        lines = _lines(report)
        name = relative(report.path, root) or report.path.replace(os.sep, "/")
        seen: Counter = Counter()
        for d in diagnostics:
            text = lines[d.line - 1].strip() if 0 < d.line <= len(lines) else ""
            key = (d.code, text)
            seen[key] += 1
            raw = f"{d.code}\0{name}\0{text}\0{seen[key]}".encode("utf-8", "surrogateescape")
            out[id(d)] = hashlib.sha256(raw).hexdigest()[:32]
    return out


# --- sarif ---------------------------------------------------------------------------


def _artifact(path: str, root: Optional[Path]) -> Dict[str, str]:
    """A SARIF artifact location: a URI reference, percent-encoded (a space, ``#``,
    ``%``, a byte that is not UTF-8 each as ``%XX`` of the name's own bytes), so
    that decoding it gives back the file's name."""
    rel = relative(path, root)
    if rel is not None:
        from urllib.parse import quote

        return {"uri": quote(os.fsencode(rel), safe="/"), "uriBaseId": "%SRCROOT%"}
    return {"uri": Path(os.path.abspath(path)).as_uri()}


def _rule_docs() -> Dict[str, str]:
    from .config import NOQA_CODE
    from .rules import RULES_BY_CODE
    from .suppression import NOQA_RULE_DOC

    docs = {code: RULES_BY_CODE[code].doc() for code in RULES if code in RULES_BY_CODE}
    docs[NOQA_CODE] = NOQA_RULE_DOC
    return docs


def _sarif(reports: Sequence[FileReport], out: TextIO, err: TextIO, style: Style) -> None:
    docs = _rule_docs()
    rules = [
        {
            "id": code,
            "name": name,
            "shortDescription": {"text": docs[code].strip().splitlines()[0] if docs.get(code) else name},
            "fullDescription": {"text": docs.get(code, name).strip() or name},
            "help": {"text": docs.get(code, name).strip() or name, "markdown": docs.get(code, name).strip() or name},
            "defaultConfiguration": {"level": "note" if code == "PIN004" else "error"},
        }
        for code, name in RULES.items()
    ]
    index = {code: i for i, code in enumerate(RULES)}
    prints = fingerprints(reports, style.root)
    results = []
    for report, diagnostics in _by_file(reports):
        fixes = _sarif_fixes(report, diagnostics, style)
        for d in diagnostics:
            result: Dict[str, object] = {
                "ruleId": d.code,
                "ruleIndex": index.get(d.code, 0),
                "level": "note" if d.severity == "info" else "error",
                "message": {"text": d.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": _artifact(d.path, style.root),
                            "region": {
                                "startLine": d.line,
                                "startColumn": d.column,
                                "endLine": d.end_line,
                                "endColumn": d.end_column,
                            },
                        }
                    }
                ],
                "partialFingerprints": {"pinfixFinding/v1": prints[id(d)]},
                "properties": {"pattern": d.pattern, "fixSafety": d.fix_safety},
            }
            if id(d) in fixes:
                result["fixes"] = [fixes[id(d)]]
            if d.evidence:
                # Where the tensor was made and each step that kept or lost pinnedness.
                result["codeFlows"] = [
                    {"threadFlows": [{"locations": [_flow_location(e, style.root) for e in _chain(d)]}]}
                ]
            results.append(result)
    notifications = [
        {
            "level": "error",
            "message": {"text": r.error},
            "locations": [{"physicalLocation": {"artifactLocation": _artifact(r.path, style.root)}}],
        }
        for r in _errors(reports)
    ]
    run: Dict[str, object] = {
        "tool": {"driver": {"name": "pinfix", "version": __version__, "rules": rules}},
        "results": results,
        "invocations": [{"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}],
    }
    if style.root is not None:
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": style.root.as_uri().rstrip("/") + "/"}}
    json.dump(unicode_only({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}), out, indent=2)
    out.write("\n")


def _flow_location(step: Dict[str, object], root: Optional[Path]) -> Dict[str, object]:
    return {
        "location": {
            "physicalLocation": {
                "artifactLocation": _artifact(str(step["path"]), root),
                "region": {"startLine": step["line"], "startColumn": step["column"]},
            },
            "message": {"text": step["message"]},
        }
    }


def _sarif_fixes(report: FileReport, diagnostics: List[Diagnostic], style: Style) -> Dict[int, Dict[str, object]]:
    """Each fixable finding's SARIF ``fix``: the hunks of the fixed file on its
    lines (or its evidence's), plus those on no finding's lines (the import
    it needs). ``pinfix fix`` applies them all at once."""
    wanted = [d for d in diagnostics if fixable(d, style.unsafe_fixes)]
    if not wanted or style.plan_fixes is None:
        return {}
    planned = style.plan_fixes(report)
    if planned is None or planned.fixed_source is None or report.source is None:
        return {}
    applied = {(d.code, d.line, d.column) for d in planned.diagnostics if d.fixed}
    wanted = [d for d in wanted if (d.code, d.line, d.column) in applied]
    from difflib import SequenceMatcher

    from .suppression import decode

    before = _keepends(decode(report.source)[0])
    after = _keepends(decode(planned.fixed_source)[0])
    hunks = [op for op in SequenceMatcher(None, before, after, autojunk=False).get_opcodes() if op[0] != "equal"]

    def lines_of(d: Diagnostic) -> List[Tuple[int, int]]:
        own = [(d.line, d.end_line)]
        here = file_identity(d.path)
        return own + [(e.line, e.line) for e in d.evidence if same_file(e.path, here)]

    def touches(hunk: Tuple[str, int, int, int, int], spans: List[Tuple[int, int]]) -> bool:
        first, last = hunk[1] + 1, max(hunk[2], hunk[1] + 1)
        return any(a <= last and first <= b for a, b in spans)

    spans = {id(d): lines_of(d) for d in wanted}
    shared = [h for h in hunks if not any(touches(h, s) for s in spans.values())]
    location = _artifact(report.path, style.root)
    out: Dict[int, Dict[str, object]] = {}
    for d in wanted:
        own = [h for h in hunks if touches(h, spans[id(d)])]
        if not own:
            continue
        replacements = [_replacement(h, before, after) for h in sorted(own + shared, key=lambda h: h[1])]
        note = f": {d.fix_note}" if d.fix_note else ""
        out[id(d)] = {
            "description": {"text": f"{d.fix_safety} fix{note}"},
            "artifactChanges": [{"artifactLocation": location, "replacements": replacements}],
        }
    return out


def _keepends(text: str) -> List[str]:
    """Lines with their endings (``\\r\\n``, ``\\r``, ``\\n`` only)."""
    return [line for line in re.split(r"(?<=\n)|(?<=\r)(?!\n)", text) if line]


def _replacement(hunk: Tuple[str, int, int, int, int], before: List[str], after: List[str]) -> Dict[str, object]:
    _, i1, i2, j1, j2 = hunk
    region = {"startLine": i1 + 1, "startColumn": 1, "endLine": i2 + 1, "endColumn": 1}
    if i2 >= len(before) and before:  # to the end of the file
        region.update(endLine=len(before), endColumn=len(before[-1]) + 1)
        if i1 >= len(before):
            region.update(startLine=len(before), startColumn=len(before[-1]) + 1)
    replacement: Dict[str, object] = {"deletedRegion": region}
    if j2 > j1:
        replacement["insertedContent"] = {"text": "".join(after[j1:j2])}
    return replacement


# --- gitlab, junit -------------------------------------------------------------------


def _gitlab(reports: Sequence[FileReport], out: TextIO, err: TextIO, style: Style) -> None:
    base = Path(os.environ["CI_PROJECT_DIR"]).resolve() if os.environ.get("CI_PROJECT_DIR") else style.root
    prints = fingerprints(reports, base)
    items: List[Dict[str, object]] = []
    for d in _open(reports):
        items.append(
            {
                "check_name": d.code,
                "description": f"{d.code}: {d.message}",
                "severity": "info" if d.severity == "info" else "major",
                "fingerprint": prints[id(d)],
                "location": {
                    "path": relative(d.path, base) or d.path,
                    "positions": {
                        "begin": {"line": d.line, "column": d.column},
                        "end": {"line": d.end_line, "column": d.end_column},
                    },
                },
            }
        )
    for r in _errors(reports):
        items.append(
            {
                "check_name": "pinfix-error",
                "description": f"pinfix: {r.error}",
                "severity": "critical",
                "fingerprint": hashlib.sha256(
                    f"error\0{r.path}\0{r.error}".encode("utf-8", "surrogateescape")
                ).hexdigest()[:32],
                "location": {"path": relative(r.path, base) or r.path, "lines": {"begin": 1}},
            }
        )
    json.dump(unicode_only(items), out, indent=2)
    out.write("\n")


#: What XML 1.0 cannot hold, even escaped: control characters other than tab and
#: the line ends, lone surrogates, U+FFFE and U+FFFF (a pattern's text).
_NOT_XML_PATTERN = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


def xml_safe(text: str) -> str:
    """``text`` as XML 1.0 can hold it: a byte of a file name that is not UTF-8
    as ``\\xNN`` (as text output shows it), other characters XML cannot hold as
    ``\\xNN`` / ``\\uNNNN`` escapes."""
    text = unicode_only(text)
    # Compiled when first needed (re keeps it): 4 ms, at every start, for one output format.
    return re.sub(_NOT_XML_PATTERN, lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _junit(reports: Sequence[FileReport], out: TextIO, err: TextIO, style: Style) -> None:
    import xml.etree.ElementTree as ET

    findings = _open(reports)
    errors = _errors(reports)
    suites = ET.Element(
        "testsuites",
        name="pinfix",
        tests=str(max(1, len(findings) + len(errors))),
        failures=str(len(findings)),
        errors=str(len(errors)),
    )
    for report, diagnostics in _by_file(reports):
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=report.path,
            tests=str(len(diagnostics)),
            disabled="0",
            errors="0",
            failures=str(len(diagnostics)),
            package="org.pinfix",
        )
        classname = re.sub(r"\.py$", "", report.path)
        for d in diagnostics:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"org.pinfix.{d.code}",
                classname=classname,
                line=str(d.line),
                column=str(d.column),
            )
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="severity", value=d.severity)
            failure = ET.SubElement(case, "failure", message=d.message)
            failure.text = f"line {d.line}, col {d.column}, {d.message}"
    if errors:
        suite = ET.SubElement(
            suites,
            "testsuite",
            name="pinfix",
            tests=str(len(errors)),
            disabled="0",
            errors=str(len(errors)),
            failures="0",
            package="org.pinfix",
        )
        for r in errors:
            case = ET.SubElement(suite, "testcase", name="org.pinfix.error", classname=r.path)
            ET.SubElement(case, "error", message=r.error or "").text = r.error
    if not findings and not errors:
        suite = ET.SubElement(
            suites, "testsuite", name="pinfix", tests="1", disabled="0", errors="0", failures="0", package="org.pinfix"
        )
        ET.SubElement(suite, "testcase", name="No findings")
    for element in suites.iter():  # every name and message, in one place
        element.text = xml_safe(element.text) if element.text is not None else None
        for key, value in element.attrib.items():
            element.attrib[key] = xml_safe(value)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    ET.indent(suites, "    ")
    out.write(ET.tostring(suites, encoding="unicode"))
    out.write("\n")


WRITERS = {
    "full": _full,
    "concise": _concise,
    "text": _concise,
    "json": _json,
    "sarif": _sarif,
    "github": _github,
    "gitlab": _gitlab,
    "junit": _junit,
}
assert set(WRITERS) == set(FORMATS)


def render(fmt: str, reports: Sequence[FileReport], out: TextIO, err: TextIO, style: Optional[Style] = None) -> None:
    WRITERS[fmt](reports, out, err, style or Style())


# --- listings -------------------------------------------------------------------------


def statistics(reports: Sequence[FileReport], out: TextIO, fmt: str, style: Style) -> None:
    """Counts per rule, most frequent first (``--statistics``)."""
    counts: Counter = Counter()
    fixes: Counter = Counter()
    for d in _open(reports):
        counts[d.code] += 1
        fixes[d.code] += fixable(d, style.unsafe_fixes)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if fmt == "json":
        json.dump(
            [{"code": c, "name": RULES.get(c, c), "count": n, "fixable": fixes[c]} for c, n in rows], out, indent=2
        )
        out.write("\n")
        return
    paint = _Paint(style.color)
    width = max((len(str(n)) for _, n in rows), default=1)
    for code, n in rows:
        mark = paint("[*]", "cyan") if fixes[code] else "   "
        out.write(f"{n:>{width}}  {paint(code, 'bold', 'red')}  {mark} {RULES.get(code, code)}\n")
    for r in _errors(reports):
        out.write(f"{shown(r.path)}: error: {r.error}\n")


def fix_listing(reports: Sequence[FileReport], out: TextIO, applied: bool, style: Style) -> None:
    """``--show-fixes``: per file, the fixes applied (``fix``) or that
    ``pinfix fix`` would apply (``check``), counted by rule."""
    per_file: Dict[str, Counter] = {}
    for r in reports:
        for d in r.diagnostics:
            if d.fixed if applied else fixable(d, style.unsafe_fixes):
                per_file.setdefault(r.path, Counter())[d.code] += 1
    total = sum(sum(c.values()) for c in per_file.values())
    if not total:
        return
    out.write(f"{'Fixed' if applied else 'Would fix'} {plural(total, 'finding')}:\n")
    for path in sorted(per_file):
        out.write(f"- {shown(path)}:\n")
        for code, n in sorted(per_file[path].items()):
            out.write(f"    {n} \u00d7 {code} ({RULES.get(code, code)})\n")


def plural(n: int, word: str) -> str:
    """``1 file``, ``2 files``, ``1 fix``, ``2 fixes``."""
    if n == 1:
        return f"1 {word}"
    return f"{n} {word}es" if word.endswith(("x", "s", "ch", "sh")) else f"{n} {word}s"
