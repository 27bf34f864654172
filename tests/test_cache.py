"""The check cache answers only for the same path, bytes, code and settings."""

import io
from pathlib import Path

from pinfix import cache as cache_module
from pinfix.cli import main

BAD = "import torch\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a), non_blocking=True)\n"


def check(*argv: str):
    out, err = io.StringIO(), io.StringIO()
    return main(["check", *argv], out, err), out.getvalue(), err.getvalue()


def test_second_run_is_served_from_the_cache(project: Path, monkeypatch) -> None:
    monkeypatch.delenv("PINFIX_CACHE_DIR")
    monkeypatch.chdir(project)
    bad = project / "vllm" / "v1" / "bad.py"
    bad.write_text(BAD)
    first = check(str(project))
    assert (project / ".pinfix_cache").is_dir()
    # Were the file analysed again, this would show: the cache must answer instead.
    monkeypatch.setattr("pinfix.pool._worker", lambda item: (_ for _ in ()).throw(AssertionError("analysed")))
    assert check(str(project)) == first
    assert first[0] == 1 and "bad.py:5:15: PIN001" in first[1]


def test_changed_bytes_settings_or_code_miss(project: Path, monkeypatch) -> None:
    bad = project / "vllm" / "v1" / "bad.py"
    bad.write_text(BAD)
    assert check(str(project))[0] == 1
    bad.write_text(BAD.replace("non_blocking=True", "non_blocking=False"))
    assert check(str(project))[:2] == (0, "")
    bad.write_text(BAD)
    (project / "pyproject.toml").write_text('[tool.pinfix]\nhelper = "mylib.pin.pinned"\n')
    code, out, _ = check("--output-format", "json", str(project))
    assert code == 1 and "pinned(...)" in out  # the fix title names the new helper
    monkeypatch.setattr(cache_module, "__version__", "99")
    code, out, _ = check("--output-format", "json", str(project))
    assert code == 1 and "pinned(...)" in out


def test_no_cache_and_unwritable_cache(project: Path, monkeypatch) -> None:
    monkeypatch.delenv("PINFIX_CACHE_DIR")
    monkeypatch.chdir(project)
    (project / "vllm" / "v1" / "bad.py").write_text(BAD)
    assert check("--no-cache", str(project))[0] == 1
    assert not (project / ".pinfix_cache").exists()
    (project / ".pinfix_cache").write_text("not a directory")
    code, out, err = check(str(project))
    assert code == 1 and "PIN001" in out and "Traceback" not in err


def test_the_code_fingerprint_covers_the_engine_packages(monkeypatch) -> None:
    # A changed rule in pinfix/rules/ (or the analysis in pinfix/semantic/, the applier in
    # pinfix/fixes/) must miss the cache, as a changed module at the top does.
    read = []
    real = Path.read_bytes

    def recording(self: Path) -> bytes:
        read.append(self.resolve().relative_to(Path(cache_module.__file__).resolve().parent.parent).as_posix())
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", recording)
    cache_module._code_fingerprint.cache_clear()
    try:
        cache_module._code_fingerprint()
    finally:
        cache_module._code_fingerprint.cache_clear()
    for module in ("pinfix/engine.py", "pinfix/rules/pin001.py", "pinfix/semantic/module.py", "pinfix/fixes/apply.py"):
        assert module in read, module


def test_the_code_fingerprint_without_the_codemod_installed(project: Path, monkeypatch) -> None:
    # pinfix run from a checkout that was never installed has no `pinfix.codemods`: the
    # cached check must still run (it raised AttributeError on the missing spec).
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pinfix.codemods" else real(name, *a)
    )
    cache_module._code_fingerprint.cache_clear()
    try:
        (project / "vllm" / "v1" / "bad.py").write_text(BAD)
        code, out, err = check(str(project))
    finally:
        cache_module._code_fingerprint.cache_clear()
    assert code == 1 and "Traceback" not in err and "bad.py:5:15: PIN001" in out


# --- files the pre-filter ruled out are not read again while their stat is unchanged ------------

CLEAN = "import torch\n\n\ndef f(dst, a):\n    dst.copy_(torch.from_numpy(a))\n"


def _age(path: Path, seconds: float = 3600) -> None:
    """Make ``path`` look modified long ago. Setting the times sets its change time
    (ctime) to now, which no test can move back: the tests that need a stamp that is
    not racy let the cache take a recent change time as settled."""
    import os
    import time

    then = time.time() - seconds
    os.utime(path, (then, then))


def _reads(monkeypatch) -> list:
    import pinfix.pool as engine

    seen: list = []
    real = engine._read
    monkeypatch.setattr(engine, "_read", lambda path: seen.append(Path(path).name) or real(path))
    return seen


def test_unchanged_ruled_out_files_are_not_read_again(project: Path, monkeypatch) -> None:
    monkeypatch.setattr(cache_module, "RACY_SECONDS", -60.0)
    clean = project / "vllm" / "v1" / "clean.py"
    clean.write_text(CLEAN)
    _age(clean)
    assert check(str(project))[0] == 0
    reads = _reads(monkeypatch)
    assert check(str(project))[0] == 0
    assert "clean.py" not in reads
    # Same size, new modification time: read again, and its new finding reported.
    clean.write_text(CLEAN.replace("(a))", "(a), non_blocking=True)"))
    _age(clean, 1800)
    code, out, _ = check(str(project))
    assert "clean.py" in reads and code == 1 and "clean.py:5:15: PIN001" in out
    # Worth reading now: forgotten, so the next run reads it again (the cache answers).
    del reads[:]
    assert check(str(project))[0] == 1
    assert "clean.py" in reads


def test_a_file_modified_just_now_is_not_remembered(project: Path, monkeypatch) -> None:
    # Racily clean: it could change again within the same timestamp tick unseen.
    clean = project / "vllm" / "v1" / "clean.py"
    clean.write_text(CLEAN)
    assert check(str(project))[0] == 0
    reads = _reads(monkeypatch)
    assert check(str(project))[0] == 0
    assert "clean.py" in reads
    _age(clean)  # an old modification time, but a change time of now: still racy
    assert check(str(project))[0] == 0
    assert reads.count("clean.py") == 2


def test_ruled_out_files_are_remembered_per_settings(project: Path, monkeypatch) -> None:
    monkeypatch.setattr(cache_module, "RACY_SECONDS", -60.0)
    # With --strict, `non_blocking=flag` is worth reading: what plain mode ruled out counts not.
    clean = project / "vllm" / "v1" / "clean.py"
    clean.write_text(CLEAN.replace("(a))", "(a), non_blocking=flag)"))
    _age(clean)
    assert check(str(project))[0] == 0
    reads = _reads(monkeypatch)
    code, out, _ = check("--strict", str(project))
    assert "clean.py" in reads and code == 1 and "clean.py:5" in out


def test_a_one_file_deep_check_keeps_the_plain_runs_cache(project: Path, monkeypatch) -> None:
    # Three settings files: a run uses a settings directory per file and mode. A deep check
    # of one file once evicted the plain run's directories (only two others were kept).
    for sub in ("tools", "benchmarks"):
        (project / sub).mkdir()
        (project / sub / "pyproject.toml").write_text("[tool.pinfix]\nline-length = 99\n")
        (project / sub / "bad.py").write_text(BAD)
    bad = project / "vllm" / "v1" / "bad.py"
    bad.write_text(BAD)
    first = check(str(project))
    assert first[0] == 1 and first[1].count("PIN001") == 3
    assert check("--deep", str(project))[0] == 1
    assert check("--deep", str(bad))[0] == 1
    monkeypatch.setattr(
        "pinfix.pool._worker", lambda item: (_ for _ in ()).throw(AssertionError(f"analysed {item[0]}"))
    )
    assert check(str(project)) == first


def test_ruled_out_files_that_are_gone_are_forgotten(project: Path, monkeypatch) -> None:
    import json

    monkeypatch.setattr(cache_module, "RACY_SECONDS", -60.0)
    old, other = project / "vllm" / "v1" / "old.py", project / "vllm" / "v1" / "other.py"
    for f in (old, other):
        f.write_text(CLEAN)
    assert check(str(project))[0] == 0
    (manifest,) = Path(cache_module.os.environ["PINFIX_CACHE_DIR"]).rglob(cache_module.RULED_OUT_NAME)
    assert any(p.endswith("old.py") for p in json.loads(manifest.read_text()))
    old.rename(project / "vllm" / "v1" / "new.py")
    assert check(str(project / "vllm" / "v1" / "new.py"))[0] == 0  # a run that sees only the new name
    kept = json.loads(manifest.read_text())
    assert any(p.endswith("new.py") for p in kept) and any(p.endswith("other.py") for p in kept)
    assert not any(p.endswith("old.py") for p in kept)


def test_a_damaged_ruled_out_list_is_no_shortcut(project: Path, monkeypatch) -> None:
    monkeypatch.setattr(cache_module, "RACY_SECONDS", -60.0)
    bad = project / "vllm" / "v1" / "bad.py"
    bad.write_text(BAD)
    first = check(str(project))
    assert first[0] == 1
    (manifest,) = Path(cache_module.os.environ["PINFIX_CACHE_DIR"]).rglob(cache_module.RULED_OUT_NAME)
    for damage in ("{not json", "[1, 2]", '{"%s": "x"}' % bad, '{"%s": [1, 2]}' % bad, "\0" * 64):
        manifest.write_text(damage)
        code, out, err = check(str(project))
        assert (code, out) == first[:2] and "Traceback" not in err, damage
