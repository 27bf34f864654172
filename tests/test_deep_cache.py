"""``--deep`` verdicts in the check cache (issue 17): reused while nothing they read
changed, redone when a module they read or a search of the project's text they made
would now answer otherwise, and the files depending on a checked file rechecked."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from pinfix.semantic.deep.searches import calls_of, record

PINNED_MAKER = "import torch\n\n\ndef make():\n    return torch.zeros(4, pin_memory=True)\n"
COPIER = "from pkg.a import make\n\n\ndef send(dev):\n    return make().to(dev, non_blocking=True)\n"


#: The search for callers of `make` as the deep cache records it.
CALLS_OF_MAKE = "g:" + record(calls_of("make"), "make")


def tree(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "pyproject.toml").write_text("[tool.pinfix]\ndeep = true\n")
    return root


def check(root: Path, *paths: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PINFIX_CACHE_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "pinfix", "check", "--no-progress", "--output-format", "json", *paths],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def found(proc: subprocess.CompletedProcess) -> list:
    return sorted((f["path"], f["line"], f["code"]) for f in json.loads(proc.stdout)["findings"])


def checked_here(root: Path, monkeypatch) -> Callable[[str], List[str]]:  # type: ignore[no-untyped-def]
    """A deep check of a path of ``root`` run in this process (so a setting patched here holds),
    giving the messages of its findings."""
    import io

    from pinfix.cli import main

    monkeypatch.chdir(root)
    monkeypatch.delenv("PINFIX_CACHE_DIR", raising=False)

    def run(path: str) -> List[str]:
        out = io.StringIO()
        main(["check", "--no-progress", "--output-format", "json", path], out, io.StringIO())
        return [f["message"] for f in json.loads(out.getvalue())["findings"]]

    return run


def entries(root: Path) -> Dict[str, dict]:
    out = {}
    for entry in (root / ".pinfix_cache").rglob("*"):
        if entry.is_file() and len(entry.name) == 64:
            raw = json.loads(entry.read_text())
            out[entry.name] = raw
    return out


def test_a_changed_module_the_verdict_read_is_not_answered_from_the_cache(tmp_path: Path) -> None:
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER})
    assert found(check(root, "pkg")) == []
    (kept,) = entries(root).values()
    modules = json.loads(kept["deep"]["modules"])
    assert any(r.endswith(os.path.join("pkg", "a.py")) for r in modules)
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    # b.py's own bytes are unchanged: a cache keyed by them alone would say "clean".
    assert found(check(root, "pkg/b.py")) == [("pkg/b.py", 5, "PIN002")]


def test_an_unchanged_project_reuses_every_deep_verdict(tmp_path: Path) -> None:
    root = tree(
        tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER.replace(", pin_memory=True", ""), "pkg/b.py": COPIER}
    )
    assert found(check(root, "pkg")) == [("pkg/b.py", 5, "PIN002")]
    ((name, kept),) = entries(root).items()
    # A verdict from the cache says what the entry says: mark the entry and see it come back.
    kept["diagnostics"][0]["message"] = "from the cache"
    (path,) = [p for p in (root / ".pinfix_cache").rglob(name)]
    path.write_text(json.dumps(kept))
    again = json.loads(check(root, "pkg").stdout)["findings"]
    assert [f["message"] for f in again] == ["from the cache"]


def test_a_new_caller_elsewhere_invalidates_a_verdict_that_searched_for_callers(tmp_path: Path) -> None:
    sender = "def _send(x, dev):\n    return x.to(dev, non_blocking=True)\n"
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/b.py": sender})
    assert found(check(root, "pkg/b.py")) == []
    (kept,) = entries(root).values()
    assert kept["deep"]["searches"], kept["deep"]
    caller = "import torch\n\nfrom pkg.b import _send\n\n\ndef go(dev):\n    return _send(torch.arange(3), dev)\n"
    (root / "pkg/c.py").write_text(caller)
    assert found(check(root, "pkg/b.py")) == [("pkg/b.py", 2, "PIN002")]


def test_checking_a_file_rechecks_its_dependents_and_names_the_origin(tmp_path: Path) -> None:
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER})
    assert check(root, "pkg").returncode == 0
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    proc = check(root, "pkg/a.py")
    assert proc.returncode == 1
    (finding,) = json.loads(proc.stdout)["findings"]
    assert (finding["path"], finding["line"]) == ("pkg/b.py", 5)
    assert "depends on `pkg/a.py`" in finding["message"]
    # Without the cache there is nothing to say which files depend on a.py.
    quiet = subprocess.run(
        [sys.executable, "-m", "pinfix", "check", "--no-cache", "--no-progress", "pkg/a.py"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert quiet.returncode == 0, quiet.stdout


def test_a_recorded_search_is_tested_by_its_word_then_its_pattern(tmp_path):
    from pinfix.deepcache import DeepVerdicts

    verdicts = DeepVerdicts(tmp_path)
    search = CALLS_OF_MAKE[2:]
    assert not verdicts.matches(search, b"x = build(3)\n")
    assert verdicts._patterns == {}  # without the word, the pattern is never compiled
    assert verdicts.matches(search, b"x = make (3)\n")
    assert not verdicts.matches(search, b"x = remake(3)\n")  # the word, not the pattern
    assert not verdicts.matches(search, b"x = build(3)\n")  # not even the word


def test_what_a_recorded_search_finds_in_a_text_without_its_word_compiles_nothing(tmp_path):
    from pinfix.deepcache import DeepVerdicts

    verdicts = DeepVerdicts(tmp_path)
    search = CALLS_OF_MAKE[2:]
    assert verdicts.matched(search, b"x = build(3)\n") == []
    assert verdicts.matched(search, b"x = build(3)\n", lines=True) == []
    assert verdicts._patterns == {}
    assert verdicts.matched(search, b"x = 1\ny = make(3)\n", lines=True) == [(1, b"make(")]
    assert verdicts.matched(search, b"x = remake(3)\n") == []  # the word, not the pattern


@pytest.mark.parametrize(
    "search",
    [
        "\\bmake\\s*\\(",  # a bare pattern (no word)
        "make\0\\bmake\\s*\\(",  # a pattern pinfix does not make
        "a\0(a+)+$",  # one that backtracks without end on the text below
        "not a name\0x",
    ],
)
def test_a_search_pinfix_does_not_make_is_never_run_and_counts_as_a_change(tmp_path, monkeypatch, search: str) -> None:
    """A cache can come from a repository: what it says it searched is run again only when
    it is a search pinfix makes, rebuilt from its word; in a text that holds its word it
    counts as a change (in one that does not, it finds nothing, as any search would)."""
    from pinfix.deepcache import DeepVerdicts

    verdicts = DeepVerdicts(tmp_path)
    text = b"x = " + b"a" * 20 + b"! make() not a name\n"
    assert verdicts.matches(search, text)  # never run: a change
    assert verdicts.matched(search, text) is None
    assert verdicts._patterns == {}  # nothing compiled
    word, sep, _ = search.partition("\0")
    if sep:
        # Not even checked to be one pinfix makes (most searches are ruled out so).
        monkeypatch.setattr("pinfix.deepcache._made_by_pinfix", lambda s: pytest.fail(f"checked {s!r}"))
        assert not verdicts.matches(search, b"y = 1\n") and verdicts.matched(search, b"y = 1\n") == []
        monkeypatch.undo()
    module = tmp_path / "m.py"
    module.write_text('NOTE = "not a name"\n\n\ndef helper():\n    return make()\n')
    kept = verdicts.record(str(module), [f"f:{module}", "g:" + search])
    module.write_text('NOTE = "not a name"\n\n\ndef helper():\n    return make()  # a comment\n')
    assert DeepVerdicts(tmp_path).still_valid(str(module), kept, []) is False


def test_a_file_touched_but_unchanged_that_the_verdict_read_keeps_it(tmp_path: Path) -> None:
    # b.py's verdict searched the project for callers of `_send` and read c.py, which has one.
    sender = "def _send(x, dev):\n    return x.to(dev, non_blocking=True)\n"
    caller = "import torch\n\nfrom pkg.b import _send\n\n\ndef go(dev):\n    return _send(torch.arange(3), dev)\n"
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/b.py": sender, "pkg/c.py": caller})
    assert found(check(root, "pkg/b.py")) == [("pkg/b.py", 2, "PIN002")]
    ((name, kept),) = entries(root).items()
    assert kept["deep"]["searches"] and any(m.endswith("c.py") for m in json.loads(kept["deep"]["modules"]))
    kept["diagnostics"][0]["message"] = "from the cache"
    (path,) = [p for p in (root / ".pinfix_cache").rglob(name)]
    path.write_text(json.dumps(kept))
    # c.py rewritten with the same bytes (a checkout, a formatter that changed nothing): its
    # stat differs, its text matches the search as before, and the verdict still stands.
    later = os.stat(root / "pkg/c.py").st_mtime_ns + 5_000_000_000
    os.utime(root / "pkg/c.py", ns=(later, later))
    assert [f["message"] for f in json.loads(check(root, "pkg/b.py").stdout)["findings"]] == ["from the cache"]
    # Its text changed: redone.
    (root / "pkg/c.py").write_text(caller.replace("torch.arange(3)", "torch.arange(3).pin_memory()"))
    assert found(check(root, "pkg/b.py")) == []


def test_an_entry_compares_only_the_modules_changed_since_its_listing(tmp_path: Path, monkeypatch) -> None:
    """When the project's listing moved, the modules a verdict read whose listing stamps
    did not are as it read them: only the changed ones are compared (a one-file run after
    an edit compared 2,000 to find one)."""
    from pinfix.deepcache import DeepVerdicts

    root = tree(
        tmp_path, {"pkg/__init__.py": "", **{f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(4)}}
    )
    modules = [str((root / f"pkg/m{i}.py").resolve()) for i in range(4)]
    kept = DeepVerdicts(tmp_path / "cache").record(modules[0], [f"f:{m}" for m in modules])
    compared: list = []
    holds = DeepVerdicts._module_holds

    def counted(self, name, *args):  # type: ignore[no-untyped-def]
        compared.append(name)
        return holds(self, name, *args)

    monkeypatch.setattr(DeepVerdicts, "_module_holds", counted)
    (root / "pkg/m2.py").write_text("def f2():\n    return 2  # a comment\n")
    assert DeepVerdicts(tmp_path / "cache").still_valid(modules[0], kept, []) is True
    assert compared == [modules[2]]
    compared.clear()
    (root / "pkg/m3.py").write_text("def f3(n):\n    return 30\n")
    assert DeepVerdicts(tmp_path / "cache").still_valid(modules[0], kept, []) is False
    assert modules[3] in compared and set(compared) <= set(modules[2:])


def test_a_search_that_found_too_many_files_holds_while_it_finds_as_many(tmp_path: Path) -> None:
    """A verdict whose search found too many files to read them (callers of a common name)
    got no answer from it: a changed file that the search finds, read or not, cannot change
    that, and a module it read needs only to be found by it still. On vLLM 0.34.0 a comment
    in a module such searches find cost 8 s of rechecks."""
    from pinfix.deepcache import DeepVerdicts

    root = tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/m.py": "X = 1\n"})
    unread, read = root / "pkg/o.py", root / "pkg/r.py"
    unread.write_text("def f():\n    return make()\n")
    read.write_text("def f():\n    return 1  # make() here\n")
    module = str((root / "pkg/m.py").resolve())
    many = "t:" + CALLS_OF_MAKE[2:]
    cache = tmp_path / "cache"
    first = _settled(cache)
    kept = json.loads(json.dumps(first.record(module, [f"f:{module}", f"f:{read.resolve()}", many])))
    assert kept["many"] == [many[2:]] and kept["searches"] == []
    assert first._index_updates[module] == [f"f:{module}", f"f:{read.resolve()}"]  # makes no dependent
    assert DeepVerdicts(cache).reads_of(kept) == sorted([f"f:{module}", f"f:{read.resolve()}", many])
    for path, text, valid in [
        (unread, "def f():\n    return make()  # a comment\n", True),
        (unread, "def f():\n    return make() + make()\n", True),  # found more: still too many
        (read, "def f():\n    return 1  # make() there\n", True),
        (read, "def f():\n    return 1\n", False),  # not found: it finds one file fewer
    ]:
        path.write_text(text)
        assert _settled(cache).still_valid(module, kept) is valid, (path.name, text)
    # As a search whose files were read, it would have been a change (a caller more).
    plain = json.loads(json.dumps(_settled(cache).record(module, [f"f:{module}", CALLS_OF_MAKE])))
    unread.write_text("def f():\n    return make() + make()  # more\n")
    assert _settled(cache).still_valid(module, plain) is False


def test_a_comment_in_one_of_many_callers_rechecks_no_verdict_that_counted_them(tmp_path: Path) -> None:
    from pinfix.semantic.deep.project import MAX_CALLER_FILES

    callers = {
        f"pkg/c{i}.py": "import torch\n\nfrom pkg.b import send\n\n\ndef go(dev):\n    return send(torch.ones(2), dev)\n"
        for i in range(MAX_CALLER_FILES + 2)
    }
    sender = "def send(x, dev):\n    return x.to(dev, non_blocking=True)\n"
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/b.py": sender, **callers})
    check(root, "pkg")
    _mark_entry_of(root, "pkg/b.py")
    (entry,) = [p for p in (root / ".pinfix_cache").rglob("*") if p.is_file() and b"from the cache" in p.read_bytes()]

    def kept() -> bool:  # (a recheck keeps what it said before as its baseline)
        return any(d["message"] == "from the cache" for d in json.loads(entry.read_text())["diagnostics"])

    for edit in ("# a comment\n", "\n\ndef more(dev):\n    return send(torch.ones(3), dev)\n"):
        with open(root / "pkg/c3.py", "a") as c3:
            c3.write(edit)
        check(root, "pkg/c3.py")
        assert kept()  # not rechecked: its callers are still too many


def test_dependents_are_found_through_linked_folders(tmp_path: Path) -> None:
    from pinfix.deepcache import DeepVerdicts

    real = tmp_path / "real" / "pkg"
    real.mkdir(parents=True)
    (real / "a.py").write_text(PINNED_MAKER)
    (real / "b.py").write_text(COPIER)
    (tmp_path / "linked").symlink_to(tmp_path / "real")  # a folder reached through a link
    (tmp_path / "real" / "pkg" / "c.py").symlink_to(real / "a.py")  # a linked file
    cache = tmp_path / "cache"
    b = os.path.realpath(real / "b.py")
    _write_index(cache, {b: ["f:" + os.path.realpath(real / "a.py")]})
    for given in (tmp_path / "linked" / "pkg" / "a.py", tmp_path / "linked" / "pkg" / "c.py", real / "a.py"):
        assert DeepVerdicts(cache).dependents([str(given)]) == [(b, str(given))]
    assert DeepVerdicts(cache).dependents([str(tmp_path / "linked" / "pkg" / "b.py")]) == []  # itself


def test_several_dependents_are_rechecked_in_a_pool_and_each_names_the_origin(tmp_path: Path) -> None:
    copiers = {f"pkg/b{i}.py": COPIER for i in range(3)}
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, **copiers})
    assert check(root, "pkg").returncode == 0
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    proc = check(root, "--jobs", "2", "--verbose", "pkg/a.py")
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    assert sorted((f["path"], f["line"]) for f in findings) == [(f"pkg/b{i}.py", 5) for i in range(3)]
    assert all("depends on `pkg/a.py`" in f["message"] for f in findings)
    # Their verdicts are cached now: the same call reports them again (the commit still fails).
    again = check(root, "--jobs", "1", "pkg/a.py")
    assert sorted((f["path"], f["line"]) for f in json.loads(again.stdout)["findings"]) == [
        (f"pkg/b{i}.py", 5) for i in range(3)
    ]


def test_the_recheck_of_several_dependents_starts_a_pool(tmp_path: Path, monkeypatch) -> None:
    import io

    import pinfix.pool as engine
    from pinfix.cli import main

    copiers = {f"pkg/b{i}.py": COPIER for i in range(3)}
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, **copiers})
    monkeypatch.chdir(root)
    monkeypatch.delenv("PINFIX_CACHE_DIR", raising=False)
    assert main(["check", "--no-progress", "pkg"], io.StringIO(), io.StringIO()) == 0
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    sizes = []
    real = engine._Pool
    monkeypatch.setattr(engine, "_Pool", lambda jobs, keeper=None: sizes.append(jobs) or real(jobs, keeper))
    out = io.StringIO()
    assert (
        main(["check", "--no-progress", "--jobs", "2", "--output-format", "json", "pkg/a.py"], out, io.StringIO()) == 1
    )
    assert sizes == [2]
    assert len(json.loads(out.getvalue())["findings"]) == 3


def test_a_second_run_in_the_same_process_sees_the_files_as_they_are_now(tmp_path: Path) -> None:
    import io

    from pinfix.cli import main

    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER})
    args = ["check", "--no-progress", "--no-cache", "--jobs", "1", "--deep", str(root / "pkg" / "b.py")]
    assert main(args, io.StringIO(), io.StringIO()) == 0
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    out = io.StringIO()
    assert main(args, out, io.StringIO()) == 1, "answered from the first run's reading of a.py"
    assert "PIN002" in out.getvalue()


def test_at_most_max_dependents_are_rechecked_closest_first_and_a_note_names_the_rest(tmp_path: Path) -> None:
    # b0..b2 read only a.py (and their package); far.py reads a.py through a helper module too.
    far = "from pkg.mid import make\n\n\ndef send(dev):\n    return make().to(dev, non_blocking=True)\n"
    mid = "from pkg.a import make\n"
    copiers = {f"pkg/b{i}.py": COPIER for i in range(3)}
    root = tree(
        tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/mid.py": mid, "pkg/far.py": far, **copiers}
    )
    assert check(root, "pkg").returncode == 0
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    proc = check(root, "--config", "max-dependents=2", "pkg/a.py")
    assert proc.returncode == 1, proc.stderr
    assert sorted(f["path"] for f in json.loads(proc.stdout)["findings"]) == ["pkg/b0.py", "pkg/b1.py"]
    assert (
        "2 more files whose deep verdict read the checked files were not rechecked (max-dependents = 2)" in proc.stderr
    )
    assert "pkg/b2.py pkg/far.py" in proc.stderr
    # 0: every one of them.
    everything = check(root, "--config", "max-dependents=0", "pkg/a.py")
    assert sorted(f["path"] for f in json.loads(everything.stdout)["findings"]) == [
        "pkg/b0.py",
        "pkg/b1.py",
        "pkg/b2.py",
        "pkg/far.py",
    ]
    assert "not rechecked" not in everything.stderr


def test_dependents_whose_verdicts_hold_are_not_counted_against_max_dependents(tmp_path: Path) -> None:
    maker = PINNED_MAKER + "\n\ndef helper(n):\n    return n + 1\n"
    copiers = {f"pkg/b{i}.py": COPIER for i in range(3)}
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": maker, **copiers})
    assert check(root, "pkg").returncode == 0
    # A body none of them looked into: each verdict holds, none is left unchecked.
    (root / "pkg/a.py").write_text(maker.replace("n + 1", "n + 2"))
    proc = check(root, "--config", "max-dependents=1", "pkg/a.py")
    assert proc.returncode == 0 and "not rechecked" not in proc.stderr, proc.stderr
    # One they used: one rechecked, two left (and named).
    (root / "pkg/a.py").write_text(maker.replace(", pin_memory=True", ""))
    proc = check(root, "--config", "max-dependents=1", "pkg/a.py")
    assert [f["path"] for f in json.loads(proc.stdout)["findings"]] == ["pkg/b0.py"]
    assert "2 more files whose deep verdict read the checked files were not rechecked" in proc.stderr


def test_no_file_is_a_dependent_when_every_verdict_is_among_the_checked_paths(tmp_path: Path, monkeypatch) -> None:
    from pinfix.deepcache import DeepVerdicts

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (pkg / name).write_text("x = 1\n")
    cache = tmp_path / "cache"
    real = {name: os.path.realpath(pkg / name) for name in ("a.py", "b.py", "c.py")}
    _write_index(cache, {real["b.py"]: ["f:" + real["a.py"]], real["c.py"]: ["f:" + real["b.py"]]})
    monkeypatch.chdir(tmp_path)
    verdicts = DeepVerdicts(cache)
    assert verdicts.dependents(["pkg/a.py", "pkg/b.py", "pkg/c.py"]) == []  # the whole tree
    assert verdicts.dependents(["pkg/a.py", "pkg/b.py"]) == [(real["c.py"], "pkg/b.py")]
    assert verdicts.dependents(["pkg/a.py"]) == [(real["b.py"], "pkg/a.py")]


# --- edits that change no meaning ---------------------------------------------------------------

_INLINE = "\n\ndef other(dev):\n    return torch.arange(3).to(dev, non_blocking=True)\n"
_COPIER_AND_INLINE = "import torch\n\n" + COPIER + _INLINE


def _mark_entry(root: Path) -> Path:
    """Mark the one entry's finding, to see whether a later check answers from the cache."""
    ((name, kept),) = entries(root).items()
    kept["diagnostics"][0]["message"] = "from the cache"
    (path,) = [p for p in (root / ".pinfix_cache").rglob(name)]
    path.write_text(json.dumps(kept))
    return path


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t + "# a comment at the end\n",
        lambda t: "# a comment at the top: every line below moves\n" + t,
        lambda t: t.replace("def make():\n", 'def make():\n    """Four pinned zeros."""\n'),
        lambda t: '"""The maker."""\n' + t,
        lambda t: t.replace(
            "torch.zeros(4, pin_memory=True)", "torch.zeros(\n        4,  pin_memory=True  # pinned\n    )"
        ),
    ],
    ids=["comment-at-end", "comment-at-top", "docstring", "module-docstring", "layout"],
)
def test_an_edit_that_changes_no_meaning_keeps_the_verdicts_that_read_the_module(tmp_path: Path, edit) -> None:
    import hashlib

    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": _COPIER_AND_INLINE})
    assert found(check(root, "pkg")) == [("pkg/b.py", 11, "PIN002")]
    entry = _mark_entry(root)
    (root / "pkg/a.py").write_text(edit(PINNED_MAKER))
    assert [f["message"] for f in json.loads(check(root, "pkg/b.py").stdout)["findings"]] == ["from the cache"]
    # The entry now records a.py as it is, so the next run compares nothing.
    from pinfix.deepcache import DeepVerdicts

    modules = DeepVerdicts(root / ".pinfix_cache").modules_of(json.loads(entry.read_text())["deep"])
    recorded = {os.path.basename(k): v[1] for k, v in modules.items() if v is not None}  # (None: looked for, absent)
    assert recorded["a.py"] == hashlib.sha256((root / "pkg/a.py").read_bytes()).hexdigest()
    # A pre-commit call on a.py leaves b.py alone, and a real edit still reaches it.
    assert check(root, "pkg/a.py").returncode == 0
    (root / "pkg/a.py").write_text(
        edit(PINNED_MAKER).replace(", pin_memory=True", "").replace(",  pin_memory=True", "")
    )
    # (line 11 comes back too: it differs from the marked text the hook compares with)
    assert ("pkg/b.py", 7, "PIN002") in found(check(root, "pkg/a.py"))


def test_a_verdict_that_names_the_module_is_redone_when_its_lines_move(tmp_path: Path) -> None:
    maker = PINNED_MAKER.replace(", pin_memory=True", "")
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": maker, "pkg/b.py": COPIER})
    (finding,) = json.loads(check(root, "pkg").stdout)["findings"]
    assert "made at pkg/a.py:5" in finding["message"]
    _mark_entry(root)
    (root / "pkg/a.py").write_text("# one more line\n" + maker)
    (again,) = json.loads(check(root, "pkg/b.py").stdout)["findings"]
    assert "made at pkg/a.py:6" in again["message"]


def test_a_comment_that_a_recorded_search_would_now_match_is_a_change(tmp_path: Path) -> None:
    from pinfix.deepcache import DeepVerdicts

    module = tmp_path / "m.py"
    module.write_text("def helper():\n    return 1\n")
    verdicts = DeepVerdicts(tmp_path / "cache")
    kept = verdicts.record(str(module), [f"f:{module}", CALLS_OF_MAKE])
    said: list = []
    for text, valid in [
        ("def helper():\n    return 1  # no call of the maker here\n", True),
        ("def helper():\n    return 1  # make() would be a caller\n", False),
        ("def helper():\n    return 2\n", False),
    ]:
        module.write_text(text)
        again = DeepVerdicts(tmp_path / "cache")  # a later run
        assert again.still_valid(str(module), kept, said) is valid, text
        assert bool(again.refreshed) is valid
    # A verdict whose findings name the module keeps nothing of it but its exact bytes.
    module.write_text("def helper():\n    return 1  # no call of the maker here\n")
    assert DeepVerdicts(tmp_path / "cache").still_valid(str(module), kept, [{"message": "made at m.py:2"}]) is False


_PAGEABLE_MAKER = PINNED_MAKER.replace(", pin_memory=True", "")


@pytest.mark.parametrize(
    "edit, kept, expected",
    [
        (lambda t: t + "# a comment at the end\n", True, [("pkg/b.py", 5, "PIN002")]),
        (lambda t: t.replace("def send(dev):", "def send(dev):  # sends"), True, [("pkg/b.py", 5, "PIN002")]),
        (lambda t: t.replace("import make\n", "import make   \n"), True, [("pkg/b.py", 5, "PIN002")]),
        # Every line below moves: the finding's position is another.
        (lambda t: "# a comment at the top\n" + t, False, [("pkg/b.py", 6, "PIN002")]),
        # A line the finding spans: what output shows of it changed.
        (lambda t: t.replace("non_blocking=True)", "non_blocking=True)  # fast"), False, [("pkg/b.py", 5, "PIN002")]),
        (lambda t: t + "# pinfix: noqa\n", False, []),
        (lambda t: t.replace("import make", "import make  # noqa: PIN002"), False, [("pkg/b.py", 5, "PIN002")]),
        # Code appended that binds a name nothing says: checked alone (see below).
        (lambda t: t + "X = 1\n", True, [("pkg/b.py", 5, "PIN002")]),
        (lambda t: t.replace("\n", "\r\n"), False, [("pkg/b.py", 5, "PIN002")]),
    ],
    ids=[
        "comment-at-end",
        "comment-elsewhere",
        "blanks",
        "lines-move",
        "finding-line",
        "file-noqa",
        "noqa",
        "code",
        "crlf",
    ],
)
def test_the_checked_files_own_verdict_holds_for_an_edit_that_moves_nothing_it_says(
    tmp_path: Path, edit, kept: bool, expected: list
) -> None:
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": _PAGEABLE_MAKER, "pkg/b.py": COPIER})
    assert found(check(root, "pkg")) == [("pkg/b.py", 5, "PIN002")]
    entry = _mark_entry(root)
    (root / "pkg/b.py").write_bytes(edit(COPIER).encode())
    again = check(root, "pkg/b.py")
    assert found(again) == expected
    assert [f["message"] == "from the cache" for f in json.loads(again.stdout)["findings"]] == [kept] * len(expected)
    if kept:
        # The entry now holds the file as it is: the next run compares nothing, and a real
        # edit after it is still seen.
        assert json.loads(entry.read_text())["sha256"] == hashlib.sha256((root / "pkg/b.py").read_bytes()).hexdigest()
        (root / "pkg/a.py").write_text(PINNED_MAKER)
        assert found(check(root, "pkg/b.py")) == []


def _searched_verdict(tmp_path: Path, text: bytes):  # type: ignore[no-untyped-def]
    """The real path of ``m.py`` holding ``text``, and a verdict that read it and searched
    the project for callers of ``make``."""
    from pinfix.deepcache import DeepVerdicts

    module = tmp_path / "m.py"
    module.write_bytes(text)
    real = os.path.realpath(module)
    return real, DeepVerdicts(tmp_path / "cache").record(str(module), [f"f:{real}", CALLS_OF_MAKE])


def test_a_comment_in_the_checked_file_that_a_search_would_now_match_is_a_change(tmp_path: Path) -> None:
    from pinfix.deepcache import DeepVerdicts, file_hash

    before = b"def helper():\n    return 1\n\n\ndef other():\n    return make()\n"
    real, kept = _searched_verdict(tmp_path, before)
    for text, same in [
        (before + b"# the end\n", True),
        (before.replace(b"return 1", b"return 1  # nothing called"), True),
        # One more match of the callers' search, in another function: a caller it did not see.
        (before.replace(b"return 1", b"return 1  # make() is a caller"), False),
        # The same matches on other lines.
        (b"\n" + before, False),
    ]:
        assert DeepVerdicts(tmp_path / "cache").unmoved(real, file_hash(before), text, kept, []) is same, text


def test_the_checked_files_own_verdict_holds_where_only_lines_without_code_moved(tmp_path: Path) -> None:
    from pinfix.deepcache import DeepVerdicts, file_hash

    before = b'def helper():\n    return 1\n\n# about other\n\ndef other():\n    return make()\n\n\nS = """a\nb"""\n'
    real, kept = _searched_verdict(tmp_path, before)
    finding = [{"code": "PIN002", "line": 2, "column": 5, "end_line": 2, "end_column": 13, "message": "at m.py:2"}]
    for text, findings, same in [
        # Comment and blank lines added, removed or changed below every line the findings name.
        (before.replace(b"# about other\n", b"# about other\n# and more\n\n"), finding, True),
        (before.replace(b"# about other\n", b""), finding, True),
        (before.replace(b"# about other", b"# about the other one"), finding, True),
        (before.replace(b"\n\n\nS", b"\nS"), finding, True),
        # Above a line they name: it moved.
        (b"# first\n" + before, finding, False),
        (b"# first\n" + before, [], True),
        # One that may suppress or direct.
        (before.replace(b"# about other", b"# noqa: PIN002"), [], False),
        (before.replace(b"# about other\n", b"# fmt: off\n"), [], False),
        # A line of code among them, or a comment-like line inside a string (its value changed).
        (before.replace(b"# about other\n", b"X = 1\n"), [], False),
        (before.replace(b"a\nb", b"a\n# b\nb"), [], False),
        # The callers' search finds the same call on its new line ...
        (before.replace(b"# about other\n", b"\n\n"), [], True),
        # ... but not one more in a comment (a caller it did not see), nor one fewer.
        (before.replace(b"# about other", b"# make() is a caller"), [], False),
        (before.replace(b"# about other", b"# make ()"), [], False),
    ]:
        verdicts = DeepVerdicts(tmp_path / "cache")
        assert verdicts.recommented(real, file_hash(before), text, kept, findings) is same, text
    # A verdict made while a comment said `make(`: the comment removed, the search finds one fewer.
    commented = before.replace(b"# about other", b"# make() is said")
    real, kept = _searched_verdict(tmp_path, commented)
    removed = commented.replace(b"# make() is said\n", b"")
    assert DeepVerdicts(tmp_path / "cache").recommented(real, file_hash(commented), removed, kept, []) is False
    assert DeepVerdicts(tmp_path / "cache").recommented(real, file_hash(commented), removed + b"#\n", kept, []) is False


def test_a_comment_below_every_line_the_findings_name_keeps_the_checked_files_verdict(tmp_path: Path) -> None:
    """A comment in a module much of the project imports: the module's own deep verdict is
    not made again from nothing (on vLLM 0.34.0's ``torch_utils.py``, 1.6 s -> 0.6 s)."""
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER})
    assert found(check(root, "pkg")) == []
    _mark_entry_of(root, "pkg/b.py")  # (a finding on line 1)
    (root / "pkg/b.py").write_text(COPIER.replace("\n\n\ndef send", "\n\n\n# sends\ndef send"))
    again = check(root, "pkg/b.py")
    assert [f["message"] for f in json.loads(again.stdout)["findings"]] == ["from the cache"]
    # A comment above the line its finding names: made again (here, found clean).
    (root / "pkg/b.py").write_text("# top\n" + COPIER)
    assert found(check(root, "pkg/b.py")) == []


def test_a_module_read_whose_comment_adds_a_match_of_a_search_is_a_change(tmp_path: Path) -> None:
    from pinfix.deepcache import DeepVerdicts

    module = tmp_path / "m.py"
    module.write_text("def helper():\n    return make()\n")
    verdicts = DeepVerdicts(tmp_path / "cache")
    kept = verdicts.record(str(module), [f"f:{module}", CALLS_OF_MAKE])
    for text, valid in [
        ("# moved down\ndef helper():\n    return make()\n", True),
        # It matched before and matches now, once more: the comment would be read as a call.
        ("def helper():\n    return make()  # as make() says\n", False),
    ]:
        module.write_text(text)
        assert DeepVerdicts(tmp_path / "cache").still_valid(str(module), kept, []) is valid, text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_like_a_module_is_no_text_and_not_waited_on(tmp_path: Path) -> None:
    # A deep verdict that searched the project, then a FIFO `z.py` appears: the search is
    # tested against the new files' texts, and a FIFO has none (it would wait for a writer).
    sender = "def _send(x, dev):\n    return x.to(dev, non_blocking=True)\n"
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/b.py": sender})
    check(root, "pkg/b.py")
    os.mkfifo(root / "pkg" / "z.py")
    proc = check(root, "pkg/b.py")  # `check` gives up after 300 s; this takes about one
    assert proc.returncode in (0, 1), proc.stderr


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True, capture_output=True
    )


def test_a_dependents_finding_blocks_only_the_commit_that_made_it_new(tmp_path: Path) -> None:
    """Issue 29: the deep hook refused a comment-only commit over a finding a
    file the commit did not touch already had. The change that made it is
    refused until it is committed (retried or edited, it still fails); once
    ``HEAD`` holds it, a later change to the same module passes."""
    root = tree(
        tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER, ".gitignore": ".pinfix_cache\n"}
    )
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "pinned")
    assert check(root, "pkg").returncode == 0
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    assert found(check(root, "pkg/a.py")) == [("pkg/b.py", 5, "PIN002")]
    assert found(check(root, "pkg/a.py")) == [("pkg/b.py", 5, "PIN002")]  # the commit retried
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", "") + "# edited, not committed\n")
    assert found(check(root, "pkg/a.py")) == [("pkg/b.py", 5, "PIN002")]
    _git(root, "commit", "-qam", "pageable, committed past the hook")
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", "") + "# a comment-only commit\n")
    proc = check(root, "pkg/a.py")
    assert (proc.returncode, found(proc)) == (0, []), proc.stdout
    # A change that makes the dependent's copy blocking in a new place is new again.
    (root / "pkg/b.py").write_text(COPIER + "\n\ndef again(dev):\n    return make().to(dev, non_blocking=True)\n")
    assert found(check(root, "pkg/b.py")) == [("pkg/b.py", 5, "PIN002"), ("pkg/b.py", 9, "PIN002")]


def test_a_dependents_finding_reworded_is_not_new(tmp_path: Path) -> None:
    """What a dependent said before is matched by rule and place: a whole-tree
    run and a recheck may word the same chain differently."""
    root = tree(
        tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER.replace(", pin_memory=True", ""), "pkg/b.py": COPIER}
    )
    assert found(check(root, "pkg")) == [("pkg/b.py", 5, "PIN002")]
    for name, raw in entries(root).items():
        if raw.get("diagnostics") and raw["diagnostics"][0]["path"].endswith("b.py"):
            raw["diagnostics"][0]["message"] = "worded otherwise"
            next(p for p in (root / ".pinfix_cache").rglob(name)).write_text(json.dumps(raw))
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", "") + "# a comment\n")
    proc = check(root, "pkg/a.py")
    assert (proc.returncode, found(proc)) == (0, []), proc.stdout


def _settled(tmp_path: Path):  # type: ignore[no-untyped-def]
    import time

    from pinfix.deepcache import DeepVerdicts

    verdicts = DeepVerdicts(tmp_path / "cache")
    verdicts._settled_before = time.time_ns() + 10**12  # every file has settled
    return verdicts


@pytest.mark.parametrize(
    "where", ["outside the root", "in a hidden folder", "absent, in a hidden folder", "absent", "absent, behind a link"]
)
def test_a_module_the_verdict_read_changes_whatever_the_listing_holds(tmp_path: Path, where: str) -> None:
    """With the project's listing as the entry keeps it, the modules under the root are
    not compared one by one: a module the listing does not hold still is, and one it
    would hold if it were there moves the listing by appearing (a link to a folder too)."""
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    module = project / "m.py"
    module.write_text("def helper():\n    return 1\n")
    other = {
        "outside the root": tmp_path / "lib" / "x.py",
        "in a hidden folder": project / ".vendored" / "x.py",
        "absent, in a hidden folder": project / ".vendored" / "y.py",
        "absent": project / "pkg" / "y.py",
        "absent, behind a link": project / "linked" / "y.py",
    }[where]
    if where == "absent, behind a link":
        (tmp_path / "elsewhere").mkdir()
    else:
        other.parent.mkdir(exist_ok=True)
    if not where.startswith("absent"):
        other.write_text("X = 1\n")
    kept = json.loads(json.dumps(_settled(tmp_path).record(str(module), [f"f:{module}", f"f:{other}", CALLS_OF_MAKE])))
    assert list(kept["outside"]) == ([] if where in ("absent", "absent, behind a link") else [str(other)])
    assert _settled(tmp_path).still_valid(str(module), kept)
    if where == "absent, behind a link":
        (tmp_path / "elsewhere" / "y.py").write_text("X = make()\n")
        (project / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    else:
        other.write_text("X = make()\n")
    assert _settled(tmp_path).still_valid(str(module), kept) is False


def test_an_unchanged_listing_compares_no_module_it_holds(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from pinfix.deepcache import DeepVerdicts

    names = [tmp_path / f"m{i}.py" for i in range(5)]
    for name in names:
        name.write_text("X = 1\n")
    kept = json.loads(json.dumps(_settled(tmp_path).record(str(names[0]), [f"f:{n}" for n in names])))
    assert kept["outside"] == {}
    compared = []
    real = DeepVerdicts._stat_list
    monkeypatch.setattr(DeepVerdicts, "_stat_list", lambda self, name: compared.append(name) or real(self, name))
    assert _settled(tmp_path).still_valid(str(names[0]), kept)
    assert compared == []
    # Once the listing moves (a file under the root added, one read touched), the modules
    # changed since are compared, and the entry, brought up to date, takes the listing of
    # now: the next run compares none.
    (tmp_path / "new.py").write_text("Y = 2\n")
    later = os.stat(names[3]).st_mtime_ns + 5_000_000_000
    os.utime(names[3], ns=(later, later))
    moved = _settled(tmp_path)
    assert moved.still_valid(str(names[0]), kept)
    assert compared == [str(names[3])]
    moved.bring_up_to_date(kept)
    compared.clear()
    assert _settled(tmp_path).still_valid(str(names[0]), json.loads(json.dumps(kept)))
    assert compared == []


def test_a_tree_runs_listing_outlives_the_one_file_runs_after_it(tmp_path: Path) -> None:
    """Each one-file run after an edit keeps a listing of the tree as it is then; the
    listing a tree run's verdicts keep is pruned by its last use, not by when it was made:
    after more one-file runs than listings are kept, a verdict whose search no changed file
    matches still holds (pruned by age, it was checked again whenever asked)."""
    from pinfix.deepcache import KEEP_LISTINGS

    others = {f"pkg/c{i}.py": _LOCAL for i in range(KEEP_LISTINGS + 3)}
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": _PASSER, **others})
    assert check(root, "pkg").returncode == 1
    _mark_entry_of(root, "pkg/b.py")  # its verdict searched for the callers of `relay`
    for rel in others:
        with open(root / rel, "a") as f:
            f.write("# edited\n")
        check(root, rel)
    with open(root / "pkg/a.py", "a") as f:
        f.write("\n\nLIMIT = 4\n")  # a name nothing says: b.py's verdict holds
    assert check(root, "pkg/a.py").returncode == 0  # b.py asked as a dependent: it holds
    (listings,) = (root / ".pinfix_cache").rglob("listings")
    assert len(list(listings.iterdir())) <= KEEP_LISTINGS
    kept = json.loads(check(root, "pkg/b.py").stdout)["findings"]
    assert [f["message"] for f in kept] == ["from the cache"]


def test_a_listing_an_entry_names_is_read_and_marked_used_only_where_pinfix_keeps_them(tmp_path: Path) -> None:
    from pinfix.deepcache import LISTINGS_DIR, DeepVerdicts

    cache = tmp_path / "cache"
    (cache / LISTINGS_DIR).mkdir(parents=True)
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    os.utime(outside, (1, 1))
    ours = cache / LISTINGS_DIR / ("a" * 32)
    ours.write_text(json.dumps({"/m/x.py": [1, 2, 3, 4, 5]}))
    os.utime(ours, (1, 1))
    verdicts = DeepVerdicts(cache)
    assert verdicts._stored_listing("../../outside.json") is None  # an entry may say anything
    assert outside.stat().st_mtime == 1
    assert verdicts._stored_listing("a" * 32) == {"/m/x.py": [1, 2, 3, 4, 5]}  # as JSON gives it
    assert ours.stat().st_mtime > 1  # used now: the last pruned


def test_an_edit_undone_or_followed_by_another_keeps_the_verdicts_that_read_the_module(tmp_path: Path) -> None:
    """A dependent's verdict is brought up to date after an edit that changes nothing it
    says; the module is then compared with the text the verdict was made from: undoing the
    edit, or making another instead, keeps it too (compared with the first edit's text only,
    both looked like changes: a constant removed, a constant turned into a function)."""
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": _PASSER})
    assert check(root, "pkg").returncode == 0
    _mark_entry_of(root, "pkg/b.py")
    for text in (PINNED_MAKER + "\n\nLIMIT = 4\n", PINNED_MAKER, PINNED_MAKER + _NEW_COPY):
        (root / "pkg/a.py").write_text(text)
        check(root, "pkg/a.py")  # b.py asked as a dependent
        kept = json.loads(check(root, "pkg/b.py").stdout)["findings"]
        assert [f["message"] for f in kept] == ["from the cache"], text
    fresh = json.loads(check(root, "--no-cache", "pkg/b.py").stdout)["findings"]
    assert fresh == []


@pytest.mark.parametrize("limit", [32, 0])
def test_modules_brought_up_to_date_join_a_small_map_until_there_are_many(tmp_path: Path, monkeypatch, limit) -> None:
    """A verdict brought up to date after an edit that changes nothing it says records the
    module as it is now beside the 2,000-module text it keeps, not by re-encoding that
    text; past ``MAX_FRESH`` such modules the text takes them in. Either way the next run
    reads the module as it is now, and an edit that changes what it says is still one."""
    import pinfix.deepcache as deepcache

    monkeypatch.setattr(deepcache, "MAX_FRESH", limit)
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": _PASSER})
    assert check(root, "pkg").returncode == 0
    entry = _mark_entry_of(root, "pkg/b.py")
    text = json.loads(entry.read_text())["deep"]["modules"]
    (root / "pkg/a.py").write_text("# a comment first\n" + PINNED_MAKER)
    assert checked_here(root, monkeypatch)("pkg/b.py") == ["from the cache"]  # (a child would not see the limit)
    deep = json.loads(entry.read_text())["deep"]
    now = hashlib.sha256((root / "pkg/a.py").read_bytes()).hexdigest()
    a = str((root / "pkg/a.py").resolve())
    if limit:
        assert deep["modules"] == text and deep["fresh"][a][1] == now
    else:
        assert "fresh" not in deep and json.loads(deep["modules"])[a][1] == now
    assert deepcache.DeepVerdicts(root / ".pinfix_cache").modules_of(deep)[a][1] == now
    assert [f["message"] for f in json.loads(check(root, "pkg/b.py").stdout)["findings"]] == ["from the cache"]
    (root / "pkg/a.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    assert [f["message"] for f in json.loads(check(root, "pkg/b.py").stdout)["findings"]] != ["from the cache"]


SPARE = "\n\ndef spare(x):\n    return x\n"


@pytest.mark.parametrize(
    "before, after, kept",
    [
        (PINNED_MAKER + SPARE, PINNED_MAKER, True),  # a function nothing says, removed
        (PINNED_MAKER + "\n\nLIMIT = 4\n", PINNED_MAKER, True),  # a constant
        # Still said by the module itself (a call of it): what `make` returns may change.
        (
            PINNED_MAKER.replace("return torch.zeros", "return spare(torch.zeros") + ")\n" + SPARE,
            PINNED_MAKER.replace("return torch.zeros", "return spare(torch.zeros") + ")\n",
            False,
        ),
        (PINNED_MAKER + SPARE, PINNED_MAKER.replace("4", "5"), False),  # and something else changed
    ],
)
def test_a_dependent_keeps_its_verdict_when_a_name_nothing_says_is_removed(
    tmp_path: Path, before: str, after: str, kept: bool
) -> None:
    """A function or constant removed from a module another file's verdict read: the
    verdict holds where nothing it read says the name, the module's text of now included
    (before, any removal rechecked every dependent)."""
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": before, "pkg/b.py": COPIER})
    check(root, "pkg")
    _mark_entry_of(root, "pkg/b.py")
    (root / "pkg/a.py").write_text(after)
    check(root, "pkg/a.py")  # b.py asked as a dependent
    messages = [f["message"] for f in json.loads(check(root, "pkg/b.py").stdout)["findings"]]
    assert ("from the cache" in messages) is kept, messages
    fresh = json.loads(check(root, "--no-cache", "pkg/b.py").stdout)["findings"]
    assert [
        f for f in json.loads(check(root, "pkg/b.py").stdout)["findings"] if f["message"] != "from the cache"
    ] == fresh


def test_an_entry_made_just_after_a_checkout_is_brought_up_to_date_once(tmp_path: Path) -> None:
    """Just after a checkout every file is racy: the first deep run keeps each module read
    without its stamp and every file of the listing as changed. Each later run then hashed
    those modules and tested every file against the searches again (7 s instead of 0.6 s
    on vLLM 0.34.0): now the first later run brings the entry up to date, and the next
    compares stamps only."""
    import time

    from pinfix.deepcache import DeepVerdicts

    module = tmp_path / "m.py"
    module.write_text("def helper():\n    return 1\n")
    (tmp_path / "other.py").write_text("x = 1\n")
    young = DeepVerdicts(tmp_path / "cache")
    young._settled_before = 0  # every file changed "just now"
    # (Entries are kept as JSON: stamps come back as lists.)
    kept = json.loads(json.dumps(young.record(str(module), [f"f:{module}", CALLS_OF_MAKE])))
    assert all(stamp is None for stamp, _ in json.loads(kept["modules"]).values())
    later = DeepVerdicts(tmp_path / "cache")
    later._settled_before = time.time_ns() + 10**12  # the files have settled since
    # Racy then, the same bytes now: no change (each file's hash was kept with the listing).
    later.listing(str(module))
    assert later.changed_since(kept["root"], kept["listing"]) == []
    assert later.still_valid(str(module), kept)
    assert later.relisted is not None and later.relisted != kept["listing"]
    assert later.refreshed == {}  # no module compared: none changed since that listing
    later.bring_up_to_date(kept)
    assert kept["listing"] == later.relisted
    kept = json.loads(json.dumps(kept))
    settled = DeepVerdicts(tmp_path / "cache")
    settled._settled_before = time.time_ns() + 10**12
    assert settled.still_valid(str(module), kept)
    assert settled.relisted is None and settled.refreshed == {}
    assert settled.changed_since(kept["root"], kept["listing"]) == []
    # A later edit that a search finds is still a change.
    (tmp_path / "other.py").write_text("x = make()\n")
    edited = DeepVerdicts(tmp_path / "cache")
    assert edited.still_valid(str(module), kept) is False
    # So is an edit of the module read, kept without its stamp (racy then).
    (tmp_path / "other.py").write_text("x = 1\n")
    module.write_text("def helper():\n    return 2\n")
    assert DeepVerdicts(tmp_path / "cache").still_valid(str(module), kept) is False


@pytest.mark.parametrize(
    "added, kept",
    [
        ("X = 1\n", True),
        ("LIMITS: dict = {'a': (1, 2)}\n", True),
        ("def helper(n=3):\n    return n + 1\n", True),
        ("def other(dev):\n    return torch.zeros(2).to(dev, non_blocking=True)\n", True),
        # A name the dependent says: what it looks up may now be this.
        ("def send(dev):\n    return 1\n", False),
        # Statements that do something on import, or change the whole module.
        ("torch.set_num_threads(2)\n", False),
        ("X = torch.zeros(2)\n", False),
        ("@staticmethod\ndef helper():\n    return 1\n", False),
        ("def helper():\n    global make\n    make = None\n", False),
        ("def helper():\n    torch.set_default_device('cuda')\n", False),
        ("__all__ = ['make']\n", False),
    ],
    ids=[
        "constant",
        "annotated",
        "function",
        "function-with-a-copy",
        "name-said",
        "call",
        "value-calls",
        "decorated",
        "global",
        "default-device",
        "dunder",
    ],
)
def test_names_added_to_a_module_read_that_nothing_the_verdict_read_says_keep_it(
    tmp_path: Path, added: str, kept: bool
) -> None:
    """rust-analyzer's early cut-off, by name: a module a verdict read gains statements
    that only bind names nothing it read says (a constant, a new function), appended
    after all it had (so the finding's own positions and quotes of it stand): the
    dependent keeps its verdict instead of being checked again from nothing."""
    maker = PINNED_MAKER.replace(", pin_memory=True", "")
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": maker, "pkg/b.py": COPIER})
    assert found(check(root, "pkg")) == [("pkg/b.py", 5, "PIN002")]
    _mark_entry(root)
    (root / "pkg/a.py").write_text(maker + "\n\n" + added)
    said = [f["message"] for f in json.loads(check(root, "pkg/b.py").stdout)["findings"]]
    # Kept: the marked entry answers. Else checked again (and what it finds is the engine's).
    assert ("from the cache" in said) is kept, said


def test_an_addition_before_the_statements_a_finding_names_is_a_change(tmp_path: Path) -> None:
    maker = PINNED_MAKER.replace(", pin_memory=True", "")
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": maker, "pkg/b.py": COPIER})
    assert found(check(root, "pkg")) == [("pkg/b.py", 5, "PIN002")]
    _mark_entry(root)
    (root / "pkg/a.py").write_text(maker.replace("import torch\n", "import torch\n\nX = 1\n"))
    (again,) = json.loads(check(root, "pkg/b.py").stdout)["findings"]
    assert again["message"] != "from the cache" and "made at pkg/a.py:7" in again["message"]


def test_the_added_names_of_a_module() -> None:
    from pinfix.deepcache import added_names

    old = b"import torch\n\n\ndef make():\n    return torch.zeros(4)\n"
    assert added_names(old, old + b"X = Y = 1\n") == ["X", "Y"]
    assert added_names(old, b"Z = 2\n" + old) == ["Z"]  # anywhere, in order
    assert added_names(old, old) is None  # nothing added
    assert added_names(old, old.replace(b"zeros(4)", b"zeros(5)") + b"X = 1\n") is None  # and changed
    assert added_names(old, b"import torch\n") is None  # removed
    assert added_names(old, old + b"x.y = 1\n") is None  # not a plain name
    assert added_names(old, old + b"import os\n") is None  # an import runs code
    assert added_names(old, old + b"class C:\n    pass\n") is None  # a class body runs code
    assert added_names(old, b"def (") is None


@pytest.mark.parametrize(
    ("new", "same"),
    [
        (b"import torch  # a comment\n\nx = torch.zeros(4)  \n", True),  # comments, blank space in lines
        (b"import torch\n\nx = torch.zeros(4)\n\n# below the last statement\n", True),
        (b"# above the code\nimport torch\n\nx = torch.zeros(4)\n", False),  # every statement moved
        (b"import torch\n\nx = torch.zeros( 4)\n", False),  # one column moved
        (b"import torch\n\nx = torch.zeros(4.0)\n", False),  # an equal number of another type
        (b"import torch\n\nx = torch.zeros(True)\n", False),
        (b"import torch\n\nx = torch.zeros(4, 1)\n", False),
        (b"import torch\n\nx = torch.zeros(4\n", False),  # no longer parses
    ],
)
def test_same_positions_holds_only_for_the_same_tree_with_every_node_where_it_was(new: bytes, same: bool) -> None:
    import pinfix.deepcache as deepcache

    old = b"import torch\n\nx = torch.zeros(4)\n"
    assert deepcache.same_positions(old, new) is same
    assert deepcache.same_positions(new, old) is same


def test_the_meaning_the_added_names_and_the_changed_bodies_of_two_texts_parse_each_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A one-file run asks all three of the same two texts: each text is parsed and dumped once."""
    import pinfix.deepcache as deepcache

    parsed: List[bytes] = []
    bare = deepcache._bare_tree
    monkeypatch.setattr(deepcache, "_bare_tree", lambda data, *rest: parsed.append(data) or bare(data, *rest))
    monkeypatch.setattr(deepcache, "_STATEMENTS", {})
    old = b"import torch\n\n\ndef make():\n    return torch.zeros(4)\n# unique 1\n"
    new = old + b"\n\ndef other():\n    return 1\n"
    assert deepcache.meaning(old) != deepcache.meaning(new)
    assert deepcache.meaning(old) == deepcache.meaning(old.replace(b"\n\n\ndef", b"\n\ndef"))  # positions
    assert deepcache.added_names(old, new) == ["other"]
    assert deepcache.changed_bodies(old, new) is None
    assert parsed == [old, new, old.replace(b"\n\n\ndef", b"\n\ndef")]


def test_the_listing_holds_files_in_order_skips_what_it_should_and_any_depth(tmp_path: Path) -> None:
    from pinfix.semantic.roots import project_file_names

    root = tmp_path / "proj"
    for rel in ["b.py", "a.py", "z/c.py", "m/d.py", "m/n/e.py", ".hidden/f.py", "__pycache__/g.py", "m/h.txt"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    (root / "linked").symlink_to(root / "m", target_is_directory=True)
    links: list = []
    listed = [os.path.relpath(p, root) for p in project_file_names(str(root), links)]
    assert listed == [
        "a.py",
        "b.py",
        os.path.join("m", "d.py"),
        os.path.join("m", "n", "e.py"),
        os.path.join("z", "c.py"),
    ]
    assert links == [str(root / "linked")]  # named, not walked
    # Deeper than the interpreter's recursion limit (lowered here, so pytest's own removal of
    # the tree, itself recursive, stays well within the usual one): listed all the same.
    deep = tmp_path / "deep"
    (deep / os.path.join(*["d"] * 200)).mkdir(parents=True)
    (deep / os.path.join(*["d"] * 200) / "x.py").write_text("")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(120)
    try:
        found = list(project_file_names(str(deep)))
    finally:
        sys.setrecursionlimit(limit)
    assert [p.endswith(os.sep + "x.py") for p in found] == [True]


def test_a_search_many_verdicts_recorded_is_tested_once_for_their_dependents(tmp_path, monkeypatch):
    from pinfix.deepcache import DeepVerdicts

    changed = tmp_path / "a.py"
    changed.write_text("def make():\n    return 1\n\nx = make()\n")
    others = []
    for i in range(5):
        other = tmp_path / f"user{i}.py"
        other.write_text("from a import make\n")
        others.append(str(other))
    search = CALLS_OF_MAKE
    _write_index(tmp_path / "cache", {o: [search, "g:" + record(calls_of("other"), "other")] for o in others})
    verdicts = DeepVerdicts(tmp_path / "cache")
    tested = []
    matches_file = verdicts._matches_file
    monkeypatch.setattr(verdicts, "_matches_file", lambda s, p: tested.append(s) or matches_file(s, p))
    monkeypatch.chdir(tmp_path)
    assert verdicts.dependents(["a.py"]) == [(o, "a.py") for o in others]
    # Each distinct search once for the five verdicts (not once a verdict).
    assert sorted(tested) == sorted([search[2:], record(calls_of("other"), "other")])


def test_the_index_lists_its_files_first_and_a_run_over_all_of_them_reads_no_more(tmp_path, monkeypatch):
    from pinfix.deepcache import INDEX_NAME, DeepVerdicts

    monkeypatch.chdir(tmp_path)
    users = [str(tmp_path / f"user{i}.py") for i in range(3)]
    for user in users:
        Path(user).write_text("x = 1\n")
    written = DeepVerdicts(tmp_path / "cache")
    reads = {users[0]: ["f:/m/a.py", "f:/m/b.py"], users[1]: ["f:/m/b.py", CALLS_OF_MAKE], users[2]: []}
    written._index_updates.update(reads)
    written.save()
    data = (tmp_path / "cache" / INDEX_NAME).read_bytes()
    head, rest = data.split(b"\n")
    assert json.loads(head) == {"format": 2, "files": sorted(users)}
    assert json.loads(rest)["reads"] == ["f:/m/a.py", "f:/m/b.py", CALLS_OF_MAKE]  # each once
    assert DeepVerdicts(tmp_path / "cache").index() == reads
    # The reads spoilt: a run over every file the index holds needs only its first line.
    (tmp_path / "cache" / INDEX_NAME).write_bytes(head + b"\n{not json")
    again = DeepVerdicts(tmp_path / "cache")
    assert again.dependents([os.path.relpath(u) for u in users]) == []
    assert again._index_numbered is None
    assert again.dependents(["user0.py"]) == []  # the rest unreadable: no reads, no dependents
    # Another format (a later pinfix's) says nothing.
    (tmp_path / "cache" / INDEX_NAME).write_text(json.dumps({"format": 3, "files": users}) + "\n{}")
    assert DeepVerdicts(tmp_path / "cache").index_files() == []


def _write_index(directory: Path, index: dict) -> None:
    """An index of the first format (one document: each file's reads), as pinfix wrote it before."""
    from pinfix.deepcache import INDEX_NAME

    directory.mkdir(parents=True, exist_ok=True)
    (directory / INDEX_NAME).write_text(json.dumps(index))


def test_an_index_pinfix_did_not_write_finds_dependents_by_its_strings_only(tmp_path, monkeypatch):
    from pinfix.deepcache import DeepVerdicts

    (tmp_path / "a.py").write_text("def make():\n    return 1\n")
    users = [tmp_path / f"user{i}.py" for i in range(4)]
    for user in users:
        user.write_text("from a import make\n")
    read = "f:" + os.path.realpath(tmp_path / "a.py")
    index = {
        str(users[0]): [5, ["x"], {"k": 1}, None, read],
        str(users[1]): "not a list",
        str(users[2]): [[read]],
        str(users[3]): [CALLS_OF_MAKE, 1.5],
    }
    _write_index(tmp_path / "cache", index)  # in the first format: each file's reads
    verdicts = DeepVerdicts(tmp_path / "cache")
    monkeypatch.chdir(tmp_path)
    assert verdicts.dependents(["a.py"]) == [(str(users[3]), "a.py"), (str(users[0]), "a.py")]


#: A function with a pageable copy of its own (line 10 once appended to COPIER).
_NEW_COPY = "\n\ndef extra(a, dev):\n    import torch\n\n    return torch.from_numpy(a).to(dev, non_blocking=True)\n"
_PASSER = COPIER + "\n\ndef relay(x, dev):\n    return x.to(dev, non_blocking=True)\n"
_LOCAL = "import torch\n\n\ndef send(dev):\n    x = torch.zeros(4)\n    return x.to(dev, non_blocking=True)\n"
_NEW_CALLER = "\n\ndef go(a, dev):\n    import torch\n\n    return relay(torch.from_numpy(a), dev)\n"
_CLEAN = "import torch\n\n\ndef first():\n    return 1\n\n\ndef last(dev):\n    return torch.zeros(2, pin_memory=True).to(dev, non_blocking=True)\n"


def _after(text: str, line: int, inserted: str):  # type: ignore[no-untyped-def]
    """An edit inserting ``inserted`` after line ``line`` of ``text``."""
    lines = text.splitlines(True)
    return "".join(lines[:line]) + inserted.lstrip("\n") + "\n\n" + "".join(lines[line:])


def test_the_index_is_written_only_when_what_a_verdict_read_changed(tmp_path: Path) -> None:
    """A one-file check whose verdict reads what it read before leaves the index file as it
    was (writing it was most of such a run's save); one that reads another module writes it."""
    from pinfix.deepcache import INDEX_NAME, DeepVerdicts

    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": COPIER})
    assert check(root, "pkg").returncode == 0
    (index,) = (root / ".pinfix_cache").rglob(INDEX_NAME)
    before = index.read_bytes()
    index.write_bytes(before + b" ")  # the same JSON: a rewrite would drop the space
    (root / "pkg/b.py").write_text(COPIER.replace("dev", "device"))  # checked again, reading a.py
    assert check(root, "pkg/b.py").returncode == 0
    assert index.read_bytes() == before + b" "
    (root / "pkg/c.py").write_text(PINNED_MAKER.replace("make", "other"))
    (root / "pkg/b.py").write_text(COPIER.replace("from pkg.a import make", "from pkg.c import other as make"))
    assert check(root, "pkg/b.py").returncode == 0
    reads = DeepVerdicts(index.parent).index()[os.path.realpath(root / "pkg/b.py")]
    assert "f:" + os.path.realpath(root / "pkg/c.py") in reads


@pytest.mark.parametrize(
    "before, edit, alone",
    [
        (COPIER, lambda t: t + _NEW_COPY, True),
        (COPIER, lambda t: t + "\n\ndef again(dev):\n    return make().to(dev, non_blocking=True)\n", True),
        (COPIER, lambda t: t + "\n\nLIMIT = 4\nNAME: str = 'x'\n", True),
        # Inserted before the end: in a file whose findings all lie above, or that has none.
        (_PASSER, lambda t: _after(t, 6, _NEW_COPY), True),
        (_CLEAN, lambda t: _after(t, 6, _NEW_COPY), True),
        (_CLEAN, lambda t: _after(t, 3, _NEW_COPY) + "# later\n", True),
        # A finding below what was inserted moves, or a line one names in words: checked again.
        (COPIER, lambda t: _after(t, 2, _NEW_COPY), False),
        (_LOCAL + "\n\nis_pin_memory_available = None\n", lambda t: _after(t, 6, _NEW_COPY), False),
        # A caller of a function the verdict asked the callers of: every answer may change.
        (_PASSER, lambda t: t + _NEW_CALLER, False),
        (_PASSER, lambda t: _after(t, 6, _NEW_CALLER), False),
        # A name a fix imports, one another module read says, a dunder name.
        (_LOCAL, lambda t: t + _NEW_COPY.replace("extra", "is_pin_memory_available"), False),
        (COPIER, lambda t: t + _NEW_COPY.replace("extra", "torch"), False),
        (COPIER, lambda t: t + "\n\n__all__ = ['send']\n", False),
        # Not only names bound: a call on import, a decorator, a suppression comment, an
        # edit besides the insertion, other line ends.
        (COPIER, lambda t: t + "\n\nLATER = make()\n", False),
        (COPIER, lambda t: t + "\n\n@staticmethod\n" + _NEW_COPY.lstrip("\n"), False),
        (COPIER, lambda t: t + _NEW_COPY.replace("non_blocking=True)", "non_blocking=True)  # noqa: PIN001"), False),
        (_CLEAN, lambda t: _after(t, 6, _NEW_COPY).replace("return 1", "return 2"), False),
        (COPIER, lambda t: t + _NEW_COPY.replace("\n", "\r\n"), False),
    ],
    ids=[
        "copy",
        "copy-of-a-said-name",
        "constants",
        "inserted-below-findings",
        "inserted-in-a-clean-file",
        "inserted-and-a-comment",
        "inserted-above-a-finding",
        "inserted-above-a-line-named",
        "caller",
        "caller-inserted",
        "fix-import",
        "said",
        "dunder",
        "call",
        "decorated",
        "noqa",
        "edited-besides",
        "crlf",
    ],
)
def test_code_added_to_the_checked_file_is_checked_alone_where_the_rest_still_holds(
    tmp_path: Path, before: str, edit, alone: bool
) -> None:
    """Statements added that only bind names nothing the verdict read says leave every
    answer it got as it was: only they are checked, and their findings join the kept ones.
    Whatever the shortcut, the findings are those of a check without a cache."""

    def edited(root: Path, mark: bool) -> subprocess.CompletedProcess:
        tree(root, {"pkg/__init__.py": "", "pkg/a.py": _PAGEABLE_MAKER, "pkg/b.py": before})
        with open(root / "pyproject.toml", "a") as settings:  # PIN002's fix imports a name
            settings.write('pin-memory-expr = "is_pin_memory_available()"\n')
            settings.write('pin-memory-import = "pkg.util.is_pin_memory_available"\n')
        (root / "pkg/c.py").write_text(
            "import torch\n\nfrom pkg.b import relay\n\n\ndef use(dev):\n"
            "    return relay(torch.zeros(2, pin_memory=True), dev)\n"
        )
        check(root, "pkg")
        if mark:
            _mark_entry_of(root, "pkg/b.py")
        (root / "pkg/b.py").write_bytes(edit(before).encode())
        return check(root, "pkg/b.py")

    root, again, fresh = _kept_alone(tmp_path, edited, alone)
    assert again.returncode == fresh.returncode == 1, (again.stderr, fresh.stderr)
    if alone:
        # The entry holds the whole file now, with what the check of what was added read:
        # a change of what that read is seen.
        assert found(check(root, "pkg/b.py")) == found(fresh)
        (root / "pkg/a.py").write_text(PINNED_MAKER)
        assert found(check(root, "pkg/b.py")) == found(check(root, "--no-cache", "pkg/b.py"))


def _kept_alone(tmp_path: Path, edited, alone: bool):  # type: ignore[no-untyped-def]
    """Run ``edited(root, mark)`` (a tree made, checked, ``pkg/b.py`` edited and checked
    again) with the cached verdict marked, to see whether it was kept (``alone``), and
    without, against a check without the cache on every field of every finding: the
    unmarked tree's root, its check and the one without the cache."""
    marked = edited(tmp_path / "marked", True)
    assert any(f["message"] == "from the cache" for f in json.loads(marked.stdout)["findings"]) is alone
    root = tmp_path / "plain"
    again = edited(root, False)
    fresh = check(root, "--no-cache", "pkg/b.py")
    assert json.loads(again.stdout)["findings"] == json.loads(fresh.stdout)["findings"]  # every word
    return root, again, fresh


def _mark_entry_of(root: Path, rel: str) -> Path:
    """Add a finding on line 1 to ``rel``'s entry, to see whether a later check answers
    from it (see :func:`_mark_entry`)."""
    digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
    for path in (root / ".pinfix_cache").rglob("*"):
        if path.is_file() and len(path.name) == 64:
            kept = json.loads(path.read_text())
            if kept.get("sha256") == digest:
                marker = {"code": "PIN002", "line": 1, "column": 1, "end_line": 1, "end_column": 2}
                marker.update(message="from the cache", pattern="to/inline", fix_safety=None, fix_note=None)
                kept["diagnostics"].insert(0, marker)
                path.write_text(json.dumps(kept))
                return path
    raise AssertionError(f"no entry for {rel}")


def test_kept_texts_are_pruned_to_the_newest_and_a_run_that_kept_few_seldom_lists_them(
    tmp_path: Path, monkeypatch
) -> None:
    import itertools

    from pinfix import deepcache
    from pinfix.deepcache import DeepVerdicts

    monkeypatch.setattr(deepcache, "KEEP_TEXTS", 3)
    texts = tmp_path / "cache" / deepcache.TEXTS_DIR

    def keep(*bodies: str) -> int:
        """Keep each text in one run; how many texts are kept after it."""
        verdicts = DeepVerdicts(tmp_path / "cache")
        for i, body in enumerate(bodies):
            path = tmp_path / f"m{i}.py"
            path.write_text(body)
            verdicts._keep_text(str(path))
        verdicts.save()
        return sum(1 for p in texts.rglob("*.z"))

    assert keep(*(f"X = {i}\n" for i in range(deepcache.PRUNE_AFTER))) == 3
    # A few kept: the folder is not listed, unless one of them starts with 0 (1 in 16).
    starts: Dict[bool, list] = {True: [], False: []}
    for i in itertools.count(100):
        body = f"Y = {i}\n"
        starts[hashlib.sha256(body.encode()).hexdigest().startswith("0")].append(body)
        if starts[True] and len(starts[False]) >= 2:
            break
    assert keep(starts[False][0]) == 4
    assert keep(starts[False][1]) == 5
    assert keep(starts[True][0]) == 3


_HELPED = _PAGEABLE_MAKER + "\n\ndef helper(n):\n    return n + 1\n"
_SENDER = "def send(x, dev):\n    return x.to(dev, non_blocking=True)\n"
_SENDS = "import torch\n\nfrom pkg.b import send\n\n\ndef helper(dev):\n    return send(torch.zeros(2, pin_memory=True), dev)\n"


@pytest.mark.parametrize(
    "a, b, edited, kept",
    [
        (_HELPED, COPIER, _HELPED.replace("n + 1", "n + 2"), True),
        (_HELPED, COPIER, _HELPED.replace("n + 1", "n + 2") + "# and a comment\n", True),
        # The function changed is one the verdict used, or said elsewhere, or one in which
        # a search it made finds something (the argument given to `send` there changed).
        (_HELPED, COPIER, _HELPED.replace("torch.zeros(4)", "torch.zeros(4, pin_memory=True)"), False),
        (_HELPED + "\n\ndef other():\n    return helper(1)\n", COPIER, None, False),
        (_HELPED, COPIER + "# helper\n", _HELPED.replace("n + 1", "n + 2"), False),
        (_SENDS, _SENDER, _SENDS.replace("zeros(2, pin_memory=True)", "zeros(2)"), False),
        # Not only a body: the signature, a global, a method.
        (_HELPED, COPIER, _HELPED.replace("helper(n)", "helper(n=1)"), False),
        (_HELPED, COPIER, _HELPED.replace("    return n + 1", "    global make\n    return n + 1"), False),
        (
            _PAGEABLE_MAKER + "\n\nclass C:\n    def m(self):\n        return 1\n",
            COPIER,
            _PAGEABLE_MAKER + "\n\nclass C:\n    def m(self):\n        return 2\n",
            False,
        ),
    ],
    ids=[
        "body",
        "body-and-comment",
        "used",
        "called-inside",
        "said",
        "searched-inside",
        "signature",
        "global",
        "method",
    ],
)
def test_a_function_body_changed_that_a_verdict_never_looked_into_keeps_it(
    tmp_path: Path, a: str, b: str, edited, kept: bool
) -> None:
    """A module a verdict read changed only in the body of a function that nothing the
    verdict read says but itself, and in which no search it made finds anything: no answer
    it got looked inside it. The findings are those of a check without the cache either way."""
    edited = edited if edited is not None else a.replace("n + 1", "n + 2")

    def run(root: Path, mark: bool) -> subprocess.CompletedProcess:
        tree(root, {"pkg/__init__.py": "", "pkg/a.py": a, "pkg/b.py": b})
        check(root, "pkg")
        if mark:
            _mark_entry_of(root, "pkg/b.py")
        (root / "pkg/a.py").write_text(edited)
        check(root, "pkg/a.py")  # the pre-commit call: b.py's verdict kept, or rechecked
        return check(root, "pkg/b.py")

    marked = run(tmp_path / "marked", True)
    assert any(f["message"] == "from the cache" for f in json.loads(marked.stdout)["findings"]) is kept
    plain = run(tmp_path / "plain", False)
    fresh = check(tmp_path / "plain", "--no-cache", "pkg/b.py")
    assert json.loads(plain.stdout)["findings"] == json.loads(fresh.stdout)["findings"]


def test_the_changed_bodies_of_a_module() -> None:
    from pinfix.deepcache import changed_bodies

    old = b"import torch\n\n\n@cache\ndef make():\n    return torch.zeros(4)\n\n\ndef two():\n    return 2\n"
    assert changed_bodies(old, old.replace(b"zeros(4)", b"zeros(5)")) == [("make", (4, 6), (4, 6))]
    longer = old.replace(b"return 2", b"x = 2\n    return x")
    assert changed_bodies(old, longer) == [("two", (9, 10), (9, 11))]
    assert changed_bodies(old, old) is None  # nothing changed
    assert changed_bodies(old, old.replace(b"def two()", b"def two(n)")) is None  # its signature
    assert changed_bodies(old, old.replace(b"@cache", b"@other")) is None  # its decorator
    assert changed_bodies(old, old.replace(b"import torch", b"import numpy")) is None  # not a body
    assert changed_bodies(old, old + b"X = 1\n") is None  # added
    assert changed_bodies(old, old.replace(b"return 2", b"global X\n    return 2")) is None


_TWO = (
    "import torch\n\n\ndef send(a, dev):\n    return torch.from_numpy(a).to(dev, non_blocking=True)\n\n\n"
    "def bump(n):\n    return n + 1\n"
)
_RELAY = (
    "import torch\n\n\ndef _relay(x, dev):\n    return x.to(dev, non_blocking=True)\n\n\n"
    "def bump(dev):\n    return _relay(torch.zeros(2, pin_memory=True), dev)\n"
)


@pytest.mark.parametrize(
    "before, after, alone",
    [
        (_TWO, _TWO.replace("n + 1", "n + 2"), True),
        (_TWO, _TWO.replace("    return n + 1", "    m = n * 2\n    return m + 1"), True),
        # A copy of its own in the body rewritten: found again there, the rest kept.
        (_TWO, _TWO.replace("    return n + 1", "    return torch.zeros(n).to('cuda', non_blocking=True)"), True),
        # Above the finding: the same length keeps its place; another length moves it.
        (
            _TWO.replace("def send", "def first():\n    return 1\n\n\ndef send"),
            _TWO.replace("def send", "def first():\n    return 2\n\n\ndef send"),
            True,
        ),
        (
            _TWO.replace("def send", "def first():\n    return 1\n\n\ndef send"),
            _TWO.replace("def send", "def first():\n    x = 2\n    return x\n\n\ndef send"),
            False,
        ),
        # Called by another function of the file; a search of the verdict finds inside it.
        (_TWO.replace("non_blocking=True)", "non_blocking=True), bump(1)"), None, False),
        (_RELAY, _RELAY.replace("zeros(2, pin_memory=True)", "zeros(2)"), False),
        # A suppression comment inside it, a signature, the text around it.
        (_TWO, _TWO.replace("n + 1", "n + 2  # noqa: PIN001"), False),
        (_TWO, _TWO.replace("bump(n)", "bump(n=1)"), False),
        (_TWO, _TWO.replace("n + 1", "n + 2").replace("import torch\n", "import torch  # torch\n"), False),
    ],
    ids=[
        "body",
        "longer",
        "own-copy",
        "above-same-length",
        "above-longer",
        "called",
        "searched",
        "noqa",
        "signature",
        "around",
    ],
)
def test_a_body_rewritten_in_the_checked_file_is_checked_alone_where_nothing_else_looked_into_it(
    tmp_path: Path, before: str, after, alone: bool
) -> None:
    after = after if after is not None else before.replace("n + 1", "n + 2")

    def edited(root: Path, mark: bool) -> subprocess.CompletedProcess:
        tree(root, {"pkg/__init__.py": "", "pkg/b.py": before})
        check(root, "pkg")
        if mark:
            _mark_entry_of(root, "pkg/b.py")
        (root / "pkg/b.py").write_text(after)
        return check(root, "pkg/b.py")

    _kept_alone(tmp_path, edited, alone)


def test_a_texts_meaning_is_kept_beside_it_and_worked_out_once_across_runs(tmp_path, monkeypatch) -> None:
    """A comment in a module many verdicts read: each later run compared the meaning of the
    text they read, of the edited file's text before and of its text now, each parsed
    again. A meaning is kept beside its kept text, for this Python only."""
    import pinfix.deepcache as deepcache
    from pinfix.deepcache import DeepVerdicts

    cache = tmp_path / "cache"
    module = tmp_path / "m.py"
    original = b"def helper():\n    return 1\n"
    module.write_bytes(original)
    kept = DeepVerdicts(cache).record(str(module), [f"f:{module}"])
    worked: List[bytes] = []
    real = deepcache.meaning
    monkeypatch.setattr(deepcache, "meaning", lambda data: worked.append(data) or real(data))
    one, two = original.replace(b"1\n", b"1  # one\n"), original.replace(b"1\n", b"1  # two\n")

    def run(text: bytes, valid: bool = True) -> List[bytes]:
        worked.clear()
        monkeypatch.setattr(deepcache, "_STATEMENTS", {})  # a new process
        module.write_bytes(text)
        assert DeepVerdicts(cache).still_valid(str(module), kept, []) is valid
        return list(worked)

    assert run(one) == [original, one]  # the original's meaning kept, and `one`'s with its text
    assert run(two) == [two]
    assert run(one) == []
    (kept_meaning,) = [p for p in cache.rglob("*.m") if p.name.startswith(hashlib.sha256(original).hexdigest())]
    said = kept_meaning.read_text()
    kept_meaning.write_text(said.replace(" py3.", " py2."))  # another Python's
    assert run(one) == [original]
    kept_meaning.write_text(said.replace(said[:64], hashlib.sha256(one).hexdigest()))  # another text's
    assert run(one) == [original]
    assert kept_meaning.read_text() == said  # worked out again, written again
    assert run(original.replace(b"1", b"2"), valid=False) == [original.replace(b"1", b"2")]


def test_a_comment_line_above_the_code_is_compared_without_either_texts_meaning(tmp_path, monkeypatch) -> None:
    """A comment above the code of a module fifty verdicts read: its lines prove the tree
    the same (`same_code`), so neither text's meaning is worked out (28 ms each in vLLM's
    `torch_utils.py`); a comment-like line inside a string is no comment: the meanings are
    compared and the verdict redone."""
    import pinfix.deepcache as deepcache
    from pinfix.deepcache import DeepVerdicts

    cache = tmp_path / "cache"
    module, other = tmp_path / "m.py", tmp_path / "other.py"
    original = b'import os\n\nNOTE = """\nstaged\n"""\n\n\ndef helper():\n    return os.sep\n'
    module.write_bytes(original)
    other.write_bytes(b"x = 1\n")
    kept = DeepVerdicts(cache).record(str(other), [f"f:{module}"])
    worked: List[bytes] = []
    real = deepcache.meaning
    monkeypatch.setattr(deepcache, "meaning", lambda data: worked.append(data) or real(data))

    def run(text: bytes) -> bool:
        worked.clear()
        monkeypatch.setattr(deepcache, "_STATEMENTS", {})  # a new process
        module.write_bytes(text)
        return DeepVerdicts(cache).still_valid(str(other), kept, [])

    commented = original.replace(b"\n\ndef helper", b"\n\n# the helper below\ndef helper")
    assert run(commented) and worked == []
    in_string = original.replace(b"staged\n", b"staged\n# more\n")
    assert not run(in_string) and worked == [original, in_string]


def test_a_second_comment_above_the_code_is_compared_without_parsing_either_text(tmp_path, monkeypatch) -> None:
    """The lines of a text's strings that span lines are kept beside it once known (from
    its tree, or moved from the text it was proven the same as): a verdict made from such
    a text compares the next comments above the module's code parsing nothing. What is
    kept is read back only as pinfix writes it."""
    import pinfix.deepcache as deepcache
    from pinfix.deepcache import DeepVerdicts

    cache = tmp_path / "cache"
    module, other = tmp_path / "m.py", tmp_path / "other.py"
    original = b'import os\n\nNOTE = """\nstaged\n"""\n\n\ndef helper():\n    return os.sep\n'
    one = original.replace(b"\n\ndef helper", b"\n\n# one\ndef helper")
    module.write_bytes(original)
    other.write_bytes(b"x = 1\n")
    kept = DeepVerdicts(cache).record(str(other), [f"f:{module}"])
    parsed: List[bytes] = []
    real_parse = deepcache.ast.parse
    monkeypatch.setattr(deepcache.ast, "parse", lambda data, *a, **k: parsed.append(data) or real_parse(data, *a, **k))

    def run(text: bytes, entry: Dict[str, object]) -> bool:
        parsed.clear()
        for memo in ("_STATEMENTS", "_TREES"):
            monkeypatch.setattr(deepcache, memo, {})  # a new process
        module.write_bytes(text)
        return DeepVerdicts(cache).still_valid(str(other), entry, [])

    def kept_beside(text: bytes) -> str:
        (path,) = [p for p in cache.rglob("*.m") if p.name.startswith(hashlib.sha256(text).hexdigest())]
        return path.read_text()

    # The first comment: the text now is parsed (no meaning worked out); its strings are
    # kept, and the text read's (the same strings, where they were).
    assert run(one, kept) and parsed == [one]
    assert kept_beside(one).split()[2:] == ["?", "3-5"]
    assert kept_beside(original).split()[2:] == ["?", "3-5"]
    # A verdict left as it was compares the next comment parsing nothing.
    assert run(original.replace(b"import os\n\n", b"import os\n\n# zero\n"), kept) and parsed == []
    # A verdict made again from it (a tree run) compares the next comments parsing nothing,
    # and the texts they make get its strings, moved.
    module.write_bytes(one)
    again = DeepVerdicts(cache).record(str(other), [f"f:{module}"])
    two = one.replace(b"# one\n", b"# one\n# two\n")
    assert run(two, again) and parsed == []
    three = one.replace(b"import os\n\n", b"import os\n\n# three\n# lines\n# above\n")
    assert run(three, again) and parsed == []
    assert kept_beside(three).split()[2:] == ["?", "6-8"]
    # Inside a string it is no comment: the meanings are worked out, and differ.
    assert not run(one.replace(b"staged\n", b"staged\n# more\n"), again) and parsed
    # Kept strings not as pinfix writes them are not read back: the text is parsed again.
    path = [p for p in cache.rglob("*.m") if p.name.startswith(hashlib.sha256(one).hexdigest())][0]
    for forged in (" 5-3", " 3-" + "9" * 5000, " 0-5", " 3-5,", " x"):
        path.write_text(kept_beside(one).replace(" 3-5", forged))
        assert run(two, again) and parsed == [two], forged
        assert kept_beside(one).split()[2:] == ["?", "3-5"]  # worked out again, written again


def test_a_comment_line_above_the_checked_files_code_is_compared_without_a_meaning(tmp_path, monkeypatch) -> None:
    """The same for the checked file itself (`recommented`): a pre-commit call after a
    comment above its code answers from its verdict, no meaning worked out."""
    import pinfix.deepcache as deepcache

    copier = COPIER.replace("\n\ndef send", '\nNOTE = """\nsent\n"""\n\n\ndef send')
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, "pkg/b.py": copier})
    run = checked_here(root, monkeypatch)
    assert run("pkg") == []
    worked: List[bytes] = []
    real = deepcache.meaning
    monkeypatch.setattr(deepcache, "meaning", lambda data: worked.append(data) or real(data))
    monkeypatch.setattr(deepcache, "_STATEMENTS", {})
    analysed: List[str] = []
    import pinfix.engine as engine

    real_process = engine.process_source
    monkeypatch.setattr(engine, "process_source", lambda path, *a: analysed.append(path) or real_process(path, *a))
    monkeypatch.setattr("pinfix.pool.process_source", engine.process_source)
    (root / "pkg/b.py").write_text(copier.replace("\n\ndef send", "\n\n# sends it\ndef send"))
    assert run("pkg/b.py") == []
    assert worked == [] and analysed == []
    (root / "pkg/b.py").write_text(copier.replace("sent\n", "sent\n# not a comment\n"))
    assert run("pkg/b.py") == []
    assert analysed == ["pkg/b.py"] and worked


def test_a_kept_texts_meaning_is_pruned_with_it(tmp_path, monkeypatch) -> None:
    import pinfix.deepcache as deepcache
    from pinfix.deepcache import DeepVerdicts

    cache = tmp_path / "cache"
    modules = []
    for n in range(3):
        module = tmp_path / f"m{n}.py"
        module.write_text(f"X = {n}\n")
        modules.append(str(module))
    verdicts = DeepVerdicts(cache)
    verdicts.record(modules[0], [f"f:{m}" for m in modules])
    for digest in list(verdicts._kept_texts):
        verdicts._meaning(digest, verdicts._kept_text(digest) or b"")
    texts = sorted(p.name for p in cache.rglob("*") if p.suffix in (".z", ".m"))
    assert len(texts) == 6 and {p[:64] for p in texts} == set(verdicts._kept_texts)
    newest = max(cache.rglob("*.z"), key=lambda p: p.stat().st_mtime_ns)
    monkeypatch.setattr(deepcache, "KEEP_TEXTS", 1)
    monkeypatch.setattr(deepcache, "PRUNE_AFTER", 1)
    verdicts._prune_texts()
    assert sorted(p.name for p in cache.rglob("*") if p.suffix in (".z", ".m")) == [
        newest.name[:-2] + ".m",
        newest.name,
    ]


@pytest.mark.parametrize("seed", range(4))
def test_a_text_asked_about_many_words_finds_what_searching_it_finds(tmp_path, seed: int) -> None:
    """Past :data:`NAMES_AFTER` words a text is told apart by the whole names it says: every
    search pinfix makes finds just what it found by its bytes; one it does not make still
    counts as a change in a text holding its word inside a longer name."""
    import random
    import re

    from pinfix.deepcache import NAMES_AFTER, DeepVerdicts
    from pinfix.semantic.deep.searches import stores_to, subclasses_of

    rng = random.Random(seed)
    words = ["make", "remake", "make_x", "x", "to", "torch", "é", "naïve", "Base", "buf"]
    pieces = [
        "{w}(1)",
        "obj.{w} = 2",
        "obj . {w}[0] = 3",
        "class C({w}):",
        "# {w}(",
        "'{w}('",
        "a{w}(",
        "{w}_b(",
        "é{w}(",
        "{w}é(",
        "x.{w} == 1",
    ]
    text = "\n".join(rng.choice(pieces).format(w=rng.choice(words)) for _ in range(40)).encode()
    verdicts = DeepVerdicts(tmp_path)
    searches = [
        record(make(word), word)
        for word in words + ["absent", "mak", "ake"]
        for make in (calls_of, stores_to, subclasses_of)
    ]
    assert len(searches) > NAMES_AFTER
    for search in searches * 2:  # the second round: told apart by the names
        pattern = re.compile(search.partition("\0")[2].encode("latin-1"))
        assert verdicts.matches(search, text) is (pattern.search(text) is not None), search
    assert verdicts._names_in(text) is not None
    assert verdicts.matches("make\0\\bmake\\s*\\(", b"y = remake(1)\n" + text) is True  # never run: a change


@pytest.mark.parametrize("seed", range(4))
def test_the_modules_a_verdict_read_are_looked_up_as_parsing_them_whole_finds(tmp_path: Path, seed: int) -> None:
    """A one-file run looks up the few changed modules in each entry's kept text instead of
    parsing its 2,000 modules: what it finds is what parsing finds, for names that hold
    quotes, separators, backslashes or other names, and for those brought up to date."""
    import random

    from pinfix.deepcache import DeepVerdicts

    rng = random.Random(seed)
    pieces = ["/p/a.py", '", "', '"', "\\", ": ", "/p/", "é", "\\u00e9", "a.py", '": [1], "', "{", ", "]
    names = sorted({"".join(rng.choice(pieces) for _ in range(rng.randint(1, 4))) for _ in range(40)})
    modules = {n: rng.choice([None, [[1, 2, 3, 4, 5], "ab" * 32], [None, "cd" * 32, "ef" * 32]]) for n in names[::2]}
    kept = {"modules": json.dumps(modules)}
    if seed % 2:
        kept["fresh"] = {n: [None, "12" * 32] for n in names[::3]}
    whole = DeepVerdicts(tmp_path / "cache").modules_of(dict(kept))
    asked = rng.sample(names, 20) + ["/p/absent.py"]
    assert DeepVerdicts(tmp_path / "cache").read_of(kept, asked) == {n: whole[n] for n in asked if n in whole}


@pytest.mark.parametrize(
    "behind, commented, rewritten",
    [
        (16, ["pkg/a.py"], False),  # only the file checked changed since: left as it is
        (16, ["pkg/a.py", "pkg/d.py"], False),  # and a file it never read
        (1, ["pkg/a.py", "pkg/d.py"], True),  # more files changed since its listing than MAX_BEHIND
        (16, ["pkg/a.py", "pkg/c.py"], True),  # it took in a module not checked (c.py)
    ],
)
def test_a_dependent_is_rewritten_only_when_it_takes_in_a_module_not_being_edited(
    tmp_path: Path, monkeypatch, behind, commented, rewritten
) -> None:
    """A dependent asked after an edit that changes nothing it says keeps its verdict; it is
    rewritten (the modules and the listing as they are now) only where it took in a module
    other than the files the run checked, or more files changed since its listing than
    ``MAX_BEHIND``: rewriting the 57 verdicts that read a module a comment was added to was a
    sixth of the one-file run, and the next edit of that module made them all behind again.
    A file checked itself is always brought up to date."""
    import pinfix.deepcache as deepcache

    monkeypatch.setattr(deepcache, "MAX_BEHIND", behind)
    files = {"pkg/__init__.py": "", "pkg/a.py": "from pkg.c import make\n", "pkg/c.py": PINNED_MAKER}
    files["pkg/d.py"] = "LIMIT = 4\n"
    root = tree(tmp_path, {**files, "pkg/b.py": _PASSER})
    assert check(root, "pkg").returncode == 0
    entry = _mark_entry_of(root, "pkg/b.py")
    before = entry.read_bytes()
    run = checked_here(root, monkeypatch)
    for rel in commented:
        (root / rel).write_text("# a comment first\n" + files[rel])
    assert run("pkg/a.py") == []  # b.py asked as a dependent: its verdict holds
    assert (entry.read_bytes() != before) is rewritten
    assert run("pkg/b.py") == ["from the cache"]
    assert entry.read_bytes() != before  # checked itself: brought up to date
    (root / "pkg/c.py").write_text(PINNED_MAKER.replace(", pin_memory=True", ""))
    assert run("pkg/b.py") != ["from the cache"]


@pytest.mark.parametrize("broken", [False, True])
def test_dependents_whose_listing_the_others_do_not_share_are_brought_up_to_date(
    tmp_path: Path, monkeypatch, broken: bool
) -> None:
    """Each listing the dependents of a checked file keep costs a run a read and a comparison
    of the tree's stamps: of those left as they were, the ones whose listing most of the
    others do not share (one brought up to date in an earlier run) take the listing of now.
    One whose modules' text is none of pinfix's writing (past the module looked up in it) is
    left as it is, and the run goes on."""
    copier = {f"pkg/{n}.py": COPIER.replace("def send", f"def send_{n}") for n in "bef"}
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": PINNED_MAKER, **copier})
    assert check(root, "pkg").returncode == 0
    run = checked_here(root, monkeypatch)

    def listings() -> Dict[str, str]:
        out = {}
        for rel in copier:
            digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
            for entry in entries(root).values():
                if entry.get("sha256") == digest:
                    out[rel] = entry["deep"]["listing"]
        return out

    (root / "pkg/a.py").write_text("# one\n" + PINNED_MAKER)
    run("pkg/e.py")  # e.py checked itself: it takes the listing of now
    first = listings()
    assert first["pkg/b.py"] == first["pkg/f.py"] != first["pkg/e.py"]
    if broken:
        digest = hashlib.sha256((root / "pkg/e.py").read_bytes()).hexdigest()
        for path in (root / ".pinfix_cache").rglob("*"):
            if path.is_file() and len(path.name) == 64 and json.loads(path.read_text()).get("sha256") == digest:
                kept = json.loads(path.read_text())
                kept["deep"]["modules"] = kept["deep"]["modules"][:-1] + ', "x": [}'
                kept["deep"].pop("fresh", None)
                path.write_text(json.dumps(kept))
    (root / "pkg/a.py").write_text("# two\n" + PINNED_MAKER)
    run("pkg/a.py")  # b.py, e.py and f.py asked as its dependents: all hold
    second = listings()
    if broken:
        assert second == first
        return
    assert second["pkg/b.py"] == first["pkg/b.py"] and second["pkg/f.py"] == first["pkg/f.py"]
    assert second["pkg/e.py"] not in (first["pkg/e.py"], first["pkg/b.py"])
