"""Issue 15: how findings are printed: ``full`` and ``concise``, colour,
``--quiet``, ``--exit-zero``, ``--statistics``, ``--show-fixes``, the files
``fix`` changed, ``junit``, ``gitlab`` and SARIF's ``$schema``, ``fixes``,
``partialFingerprints`` and project-relative URIs."""

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support import BAD_SOURCE, REPO, pinfix

UNSAFE = (
    "import torch\n\n\ndef g(dst, a):\n    s = torch.from_numpy(a)\n    dst.copy_(s, non_blocking=True)\n    return s\n"
)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\ndependencies = ['vllm']\n")  # vLLM's helper
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD_SOURCE)
    (tmp_path / "pkg" / "unsafe.py").write_text(UNSAFE)
    (tmp_path / "pkg" / "ok.py").write_text("x = 1\n")
    return tmp_path


def test_concise_is_one_line_per_finding_with_a_fix_marker(tree: Path) -> None:
    proc = pinfix("check", "--output-format", "concise", ".", cwd=tree)
    assert proc.returncode == 1
    bad, unsafe = proc.stdout.splitlines()
    assert bad.startswith("pkg/bad.py:5:15: PIN001 [*] `torch.from_numpy(...)` is pageable memory")
    assert unsafe.startswith("pkg/unsafe.py:6:15: PIN001 `s` holds pageable")  # unsafe: no [*]
    assert (
        proc.stderr == "pinfix: 3 files scanned, 2 findings (1 fixable with `pinfix fix`, 1 more with --unsafe-fixes)\n"
    )
    assert pinfix("check", "--output-format", "text", ".", cwd=tree).stdout == proc.stdout  # the old name


def test_full_shows_the_line_a_caret_the_evidence_and_the_fix(tree: Path) -> None:
    proc = pinfix("check", "--output-format", "full", "pkg/unsafe.py", cwd=tree)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("pkg/unsafe.py:6:15: PIN001 `s` holds pageable")
    assert all(len(line) <= 100 for line in lines), proc.stdout  # the message is wrapped
    at = lines.index("6 |     dst.copy_(s, non_blocking=True)")
    assert lines[at + 1] == "  |               ^"
    assert "  = evidence:" in lines
    assert any(line.strip().startswith("pkg/unsafe.py:5:") for line in lines)
    text = " ".join(line.strip() for line in lines)
    assert "= fix (unsafe): Make the source pinned with `np_to_pinned_tensor(...)`; `pinfix fix --unsafe-" in text
    # The whole account is under the source: where `s` was made and why the fix is unsafe.
    assert "= why: `s` holds pageable `torch.from_numpy(...)` (line 5)" in text
    assert "(unsafe fix: `s` is also used at line 7;" in text


CORPUS = REPO / "examples" / "patterns"


def test_concise_is_a_short_message_and_full_has_the_rest(tmp_path: Path) -> None:
    """ruff's shape: concise prints what and why in one sentence (about 100
    characters); the whole message, the chain and the fix are full's."""
    shutil.copytree(CORPUS, tmp_path / "patterns")
    (tmp_path / "patterns" / "more.py").write_text(
        "import torch\n\n\ndef f(t, dst, a, n):\n"
        "    y = t.to('cpu', non_blocking=True)\n    print(y.tolist())\n"
        "    dst.copy_(torch.zeros(n)[::2], non_blocking=True)\n"
        "    dst.copy_(t, non_blocking=True)\n"
        "    x = torch.arange(n) + 1\n    dst.copy_(x, non_blocking=True)\n"
    )
    concise = pinfix("check", "--no-cache", "--show-unknown", "--output-format", "concise", "patterns", cwd=tmp_path)
    full = pinfix("check", "--no-cache", "--show-unknown", "--output-format", "full", "patterns", cwd=tmp_path)
    lines = concise.stdout.splitlines()
    assert {line.split()[1] for line in lines} == {"PIN001", "PIN002", "PIN003", "PIN004"}, concise.stdout
    for line in lines:
        message = line.split(" ", 2)[2].removeprefix("[*] ")
        assert 40 <= len(message) <= 120, line
        assert "blocks the host" in message or "waits" in message or "waited on" in message or "staged" in message, line
    flat = " ".join(full.stdout.split())
    assert flat.count("= why: ") >= len(lines) - 1
    assert "while the driver stages the copy" in flat and "while the driver stages the copy" not in concise.stdout


def run_on_a_terminal(args, cwd: Path, env: dict) -> str:  # type: ignore[no-untyped-def]
    """stdout of ``pinfix ARGS`` when stdout is a terminal."""
    master, slave = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environ.update(env, TERM="xterm", COLUMNS="100")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pinfix", *args], cwd=cwd, stdout=slave, stderr=subprocess.DEVNULL, env=environ
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(master)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_terminal_gets_full_output_in_colour_unless_no_color(tree: Path) -> None:
    shown = run_on_a_terminal(["check", "pkg/bad.py"], tree, {})
    assert "\x1b[" in shown and "^^^^" in shown  # full, coloured
    assert ANSI.sub("", shown).startswith("pkg/bad.py:5:15: PIN001 [*] ")
    plain = run_on_a_terminal(["check", "pkg/bad.py"], tree, {"NO_COLOR": "1"})
    assert "\x1b[" not in plain and "^^^^" in plain
    # Not a terminal: concise, no colour; FORCE_COLOR forces it.
    piped = pinfix("check", "pkg/bad.py", cwd=tree)
    assert "\x1b[" not in piped.stdout and piped.stdout.count("\n") == 1
    forced = pinfix("check", "pkg/bad.py", cwd=tree, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in forced.stdout
    assert "\x1b[" not in pinfix("check", "pkg/bad.py", cwd=tree, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout


def test_output_format_setting_and_environment(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.pinfix]\noutput-format = "json"\n')
    assert json.loads(pinfix("check", ".", cwd=tree).stdout)["findings"]
    assert pinfix("check", ".", cwd=tree, env={"PINFIX_OUTPUT_FORMAT": "github"}).stdout.startswith("::error ")


def test_quiet_and_exit_zero(tree: Path) -> None:
    proc = pinfix("check", "-q", ".", cwd=tree)
    assert proc.returncode == 1 and proc.stderr == "" and proc.stdout.count("\n") == 2
    proc = pinfix("check", "--exit-zero", ".", cwd=tree)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 2
    (tree / "broken.py").write_bytes(b"x = '\xff' # from_numpy non_blocking\n")
    assert pinfix("check", "--exit-zero", ".", cwd=tree).returncode == 2  # errors still fail


def test_statistics(tree: Path) -> None:
    (tree / "pkg" / "more.py").write_text(BAD_SOURCE)
    proc = pinfix("check", "--statistics", ".", cwd=tree)
    assert proc.returncode == 1
    assert proc.stdout == "3  PIN001  [*] PageableNonBlockingCopy\n"
    data = json.loads(pinfix("check", "--statistics", "--output-format", "json", ".", cwd=tree).stdout)
    assert data == [{"code": "PIN001", "name": "PageableNonBlockingCopy", "count": 3, "fixable": 2}]


def test_fix_lists_changed_files_and_show_fixes(tree: Path) -> None:
    shown = pinfix("check", "--show-fixes", ".", cwd=tree)
    assert "Would fix 1 finding:\n- pkg/bad.py:\n    1 \u00d7 PIN001 (PageableNonBlockingCopy)\n" in shown.stderr
    proc = pinfix("fix", "--show-fixes", ".", cwd=tree)
    assert proc.returncode == 1  # the unsafe one is left
    assert proc.stderr.splitlines() == [
        "pinfix: fixed pkg/bad.py (1 fix)",
        "Fixed 1 finding:",
        "- pkg/bad.py:",
        "    1 \u00d7 PIN001 (PageableNonBlockingCopy)",
        "pinfix: 3 files scanned; changed 1 file, 1 fix",
        "pinfix: 1 finding left: 1 unsafe fix (use --unsafe-fixes)",
    ]
    again = pinfix("fix", ".", cwd=tree)
    assert again.stderr.splitlines()[0] == "pinfix: 3 files scanned; changed 0 files, 0 fixes"  # no "(0 parsed)"
    verbose = pinfix("fix", "-v", ".", cwd=tree)
    assert re.match(r"pinfix: 3 files scanned \(\d+ parsed; \d+ jobs?\); changed 0 files", verbose.stderr)
    assert pinfix("fix", "-q", "--unsafe-fixes", ".", cwd=tree).stderr == ""


def test_jobs_default_to_the_cpus_this_process_may_use(tree: Path) -> None:
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    proc = subprocess.run(
        [sys.executable, "-m", "pinfix", "check", "-v", "."],
        cwd=tree,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}),
    )
    assert "; 1 job)" in proc.stderr, proc.stderr


def test_junit(tree: Path) -> None:
    proc = pinfix("check", "--output-format", "junit", ".", cwd=tree)
    root = ET.fromstring(proc.stdout)
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "2"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    (case,) = suites["pkg/bad.py"].findall("testcase")
    assert case.get("name") == "org.pinfix.PIN001" and case.get("line") == "5" and case.get("column") == "15"
    assert case.find("failure").text.startswith("line 5, col 15, `torch.from_numpy(...)`")
    clean = ET.fromstring(pinfix("check", "--output-format", "junit", "pkg/ok.py", cwd=tree).stdout)
    assert clean.get("failures") == "0" and clean.find("testsuite/testcase").get("name") == "No findings"


def test_gitlab(tree: Path) -> None:
    items = json.loads(pinfix("check", "--output-format", "gitlab", "pkg", cwd=tree / "pkg" / "..").stdout)
    assert [i["check_name"] for i in items] == ["PIN001", "PIN001"]
    first = items[0]
    assert first["location"] == {
        "path": "pkg/bad.py",
        "positions": {"begin": {"line": 5, "column": 15}, "end": {"line": 5, "column": 34}},
    }
    assert first["severity"] == "major" and first["description"].startswith("PIN001: ")
    assert len({i["fingerprint"] for i in items}) == 2
    # A fingerprint follows the code, not its line number.
    (tree / "pkg" / "bad.py").write_text("# moved down\n" + BAD_SOURCE)
    moved = json.loads(pinfix("check", "--output-format", "gitlab", "pkg", cwd=tree).stdout)
    assert moved[0]["fingerprint"] == first["fingerprint"] and moved[0]["location"]["positions"]["begin"]["line"] == 6


def apply_sarif_fix(text: str, fix: dict) -> str:  # type: ignore[type-arg]
    lines = text.splitlines(keepends=True)
    (change,) = fix["artifactChanges"]
    for rep in sorted(change["replacements"], key=lambda r: r["deletedRegion"]["startLine"], reverse=True):
        region = rep["deletedRegion"]
        start = sum(len(x) for x in lines[: region["startLine"] - 1]) + region["startColumn"] - 1
        end = sum(len(x) for x in lines[: region["endLine"] - 1]) + region["endColumn"] - 1
        text = text[:start] + rep.get("insertedContent", {}).get("text", "") + text[end:]
        lines = text.splitlines(keepends=True)
    return text


def test_sarif_schema_fixes_fingerprints_and_relative_uris(tree: Path) -> None:
    proc = pinfix("check", "--output-format", "sarif", str(tree / "pkg"), cwd=tree)
    sarif = json.loads(proc.stdout)
    assert sarif["$schema"].endswith("sarif-schema-2.1.0.json") and sarif["version"] == "2.1.0"
    (run,) = sarif["runs"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tree.resolve().as_uri() + "/"
    results = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r for r in run["results"]}
    assert set(results) == {"pkg/bad.py", "pkg/unsafe.py"}
    bad = results["pkg/bad.py"]
    assert bad["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert bad["partialFingerprints"]["pinfixFinding/v1"]
    assert "fixes" not in results["pkg/unsafe.py"]  # unsafe: not offered without --unsafe-fixes
    # The fix, applied, gives what `pinfix fix` writes.
    fixed = apply_sarif_fix(BAD_SOURCE, bad["fixes"][0])
    assert pinfix("fix", "pkg/bad.py", cwd=tree).returncode == 0
    assert fixed == (tree / "pkg" / "bad.py").read_text()
    unsafe = json.loads(pinfix("check", "--unsafe-fixes", "--output-format", "sarif", "pkg/unsafe.py", cwd=tree).stdout)
    (result,) = unsafe["runs"][0]["results"]
    assert result["fixes"][0]["description"]["text"].startswith("unsafe fix: ")


def test_errors_are_printed_as_the_engine_gives_them() -> None:
    """The position in a syntax error is the parser's (the hardening work screens
    inputs with CPython's parser and reports its positions); the shell adds nothing."""
    import io

    from pinfix.findings import FileReport
    from pinfix.output import Style, render

    report = FileReport("pkg/broken.py", error="syntax error at 2:7: '(' was never closed")
    for fmt in ("full", "concise"):
        out, err = io.StringIO(), io.StringIO()
        render(fmt, [report], out, err, Style())
        assert (out.getvalue(), err.getvalue()) == (
            "",
            "pkg/broken.py: error: syntax error at 2:7: '(' was never closed\n",
        )
