"""Deep mode's word index (pinfix/semantic/deep/words.py): what it answers is what a
scan of every file answers, when it is built and when it is read back after files
changed; the shell keeps it only in pinfix's own cache directory (issue 27: a
pre-commit call after a one-line edit no longer reads the whole tree)."""

import io
import json
import os
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import pinfix.semantic.deep.words as words
from pinfix.cli import main
from pinfix.deepcache import WordKeeper
from pinfix.semantic.deep.words import Keeper, WordIndex, kept_name, words_of

OLD = time.time() - 3600


@pytest.fixture(autouse=True)
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written here just now count as settled (no program can set a change time back);
    the racy window's own test puts it back."""
    monkeypatch.setattr(words, "UNSETTLED_SECONDS", -3600)


class MemoryKeeper(Keeper):
    def __init__(self) -> None:
        self.kept: Dict[str, bytes] = {}
        #: Writes of an index (its word list, written with it, is counted apart).
        self.writes = 0
        self.list_writes = 0

    def load(self, name: str) -> Optional[bytes]:
        return self.kept.get(name)

    def keep(self, name: str, data: bytes) -> None:
        self.kept[name] = data
        if name.endswith(".list"):
            self.list_writes += 1
        else:
            self.writes += 1


def write(root: Path, files: Dict[str, str], when: float = OLD) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (when, when))


def answers(index: WordIndex) -> Dict[bytes, List[str]]:
    """Every word any file says (and a few no file says) -> the files the index names."""
    everything = set()
    for name in index.names:
        everything |= words_of(Path(name).read_bytes())
    everything |= {b"absent_word", b"x"}
    return {w: [index.names[i] for i in index.files_saying(w)] for w in sorted(everything)}


def scanned(root: Path) -> Dict[bytes, List[str]]:
    fresh = WordIndex(root)  # built from the files as they are now
    return answers(fresh)


FILES = {
    "pkg/__init__.py": "",
    "pkg/a.py": "def stage(x):\n    return x\n",
    "pkg/b.py": "from .a import stage\ny = stage(1)\n",
    "pkg/sub/c.py": "class Runner:\n    buf = None\n",
}


def test_a_kept_index_is_read_back_and_answers_the_same(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    keeper = MemoryKeeper()
    built = WordIndex(tmp_path, keeper)
    assert not built.reused and keeper.writes == 1
    again = WordIndex(tmp_path, keeper)
    assert again.reused and again.direct == [] and keeper.writes == 1
    assert answers(again) == answers(built) == scanned(tmp_path)
    assert again.files_saying(b"stage") == [1, 2]  # a.py, b.py (the listing: __init__, a, b, sub/c)


def test_files_changed_added_and_removed_since_are_read_again(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    keeper = MemoryKeeper()
    WordIndex(tmp_path, keeper)
    write(tmp_path, {"pkg/b.py": "y = 1\n", "pkg/new.py": "z = stage(2)\n"}, when=OLD + 10)
    (tmp_path / "pkg" / "sub" / "c.py").unlink()
    again = WordIndex(tmp_path, keeper)
    assert again.reused
    assert sorted(again.names[i] for i in again.direct) == [str(tmp_path / "pkg" / n) for n in ("b.py", "new.py")]
    assert answers(again) == scanned(tmp_path)
    assert [Path(again.names[i]).name for i in again.files_saying(b"stage")] == ["a.py", "new.py"]
    assert again.files_saying(b"Runner") == []


def test_a_file_changed_within_the_racy_window_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, FILES)
    keeper = MemoryKeeper()
    monkeypatch.setattr(words, "UNSETTLED_SECONDS", 2)  # every file here was just written (its change time)
    WordIndex(tmp_path, keeper)
    # The same size and times as far as a coarse clock goes: the kept stamp is not trusted.
    path = tmp_path / "pkg" / "b.py"
    st = path.stat()
    path.write_text("y = other(1)\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = WordIndex(tmp_path, keeper)
    assert again.reused and len(again.direct) == len(again.names) == 4
    assert answers(again) == scanned(tmp_path)
    assert str(path) not in [again.names[i] for i in again.files_saying(b"stage")]


def test_past_so_many_changed_files_the_index_is_built_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, FILES)
    keeper = MemoryKeeper()
    WordIndex(tmp_path, keeper)
    monkeypatch.setattr(words, "MAX_CHANGED", 1)
    write(tmp_path, {"pkg/a.py": "a = 1\n", "pkg/b.py": "b = 2\n"}, when=OLD + 10)
    again = WordIndex(tmp_path, keeper)
    assert not again.reused and again.direct == [] and keeper.writes == 2
    assert answers(again) == scanned(tmp_path)


@pytest.mark.parametrize(
    "kept",
    [
        b"",
        b"not marshal at all",
        __import__("marshal").dumps((words.INDEX_FORMAT + 1, "", [], [], "H", {})),
        __import__("marshal").dumps((words.INDEX_FORMAT, "/another/root", [], [], "H", {})),
        __import__("marshal").dumps((words.INDEX_FORMAT, "ROOT", ["x"], [], "H", {})),  # stamps do not fit the names
        __import__("marshal").dumps((words.INDEX_FORMAT, "ROOT", [], [], "Q", {})),
    ],
)
def test_a_kept_index_that_is_not_one_is_built_again(tmp_path: Path, kept: bytes) -> None:
    write(tmp_path, FILES)
    keeper = MemoryKeeper()
    keeper.kept[kept_name(tmp_path)] = kept.replace(b"ROOT", str(tmp_path).encode())
    index = WordIndex(tmp_path, keeper)
    assert not index.reused and keeper.writes == 1
    assert answers(index) == scanned(tmp_path)


@pytest.mark.parametrize("posting", [[1, 2], b"\x01", "stage", None])
def test_a_posting_that_is_not_one_is_answered_by_reading_the_files(tmp_path: Path, posting: object) -> None:
    # Written by hand (a cache directory may come from anywhere): that word's answer is
    # found as a scan finds it; the other words still come from the index.
    write(tmp_path, FILES)
    keeper = MemoryKeeper()
    WordIndex(tmp_path, keeper)
    fmt, root, names, stamps, code, postings = __import__("marshal").loads(keeper.kept[kept_name(tmp_path)])
    postings[b"stage"] = posting
    postings["Runner"] = b"\x00\x00"  # a key that is no word: never asked about
    keeper.kept[kept_name(tmp_path)] = __import__("marshal").dumps((fmt, root, names, stamps, code, postings))
    again = WordIndex(tmp_path, keeper)
    assert again.reused and answers(again) == scanned(tmp_path)
    assert again.files_saying(b"stage") == [1, 2]


def test_postings_that_name_no_file_are_left_out(tmp_path: Path) -> None:
    # A kept index whose postings name files past its listing (written by hand, or damaged).
    write(tmp_path, FILES)
    keeper = MemoryKeeper()
    WordIndex(tmp_path, keeper)
    fmt, root, names, stamps, code, postings = __import__("marshal").loads(keeper.kept[kept_name(tmp_path)])
    postings[b"stage"] = __import__("array").array(code, [1, 2, 999]).tobytes()
    keeper.kept[kept_name(tmp_path)] = __import__("marshal").dumps((fmt, root, names, stamps, code, postings))
    again = WordIndex(tmp_path, keeper)
    assert again.reused and again.files_saying(b"stage") == [1, 2]


def test_the_shell_keeps_indexes_in_its_directory_only(tmp_path: Path) -> None:
    directory = tmp_path / "settings"
    directory.mkdir()
    keeper = WordKeeper(directory)
    keeper.keep("words-x.marshal", b"data")
    assert keeper.load("words-x.marshal") == b"data"
    assert [p.name for p in directory.iterdir()] == ["words-x.marshal"]  # no temporary file left
    # Never read through a link (a cache committed to a repository may hold one).
    secret = tmp_path / "secret"
    secret.write_bytes(b"not pinfix's")
    (directory / "words-y.marshal").symlink_to(secret)
    assert keeper.load("words-y.marshal") is None
    # A link where the directory should be: nothing read or written through it.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linked").symlink_to(elsewhere)
    linked = WordKeeper(tmp_path / "linked")
    linked.keep("words-z.marshal", b"data")
    assert list(elsewhere.iterdir()) == [] and linked.load("words-z.marshal") is None


def test_a_deep_check_after_an_edit_reads_the_kept_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/make.py": "import torch\n\n\ndef make(n):\n    return torch.zeros(n)\n",
            "pkg/use.py": (
                "from .make import make\n\n\ndef _send(t, dev):\n    return t.to(dev, non_blocking=True)\n\n\n"
                "def run(dev):\n    return _send(make(4), dev)\n"
            ),
        },
    )
    builds: List[Path] = []
    build = WordIndex._build
    monkeypatch.setattr(WordIndex, "_build", lambda self, *a: builds.append(self.root) or build(self, *a))
    monkeypatch.chdir(tmp_path)

    def check(*paths: str) -> List[tuple]:
        out, err = io.StringIO(), io.StringIO()
        main(["check", "--deep", "-j1", "--no-progress", "--output-format", "json", *paths], out=out, err=err)
        return sorted((Path(f["path"]).name, f["line"]) for f in json.loads(out.getvalue())["findings"])

    assert check("pkg") == [("use.py", 5)]
    assert builds == [tmp_path] and list(Path(os.environ["PINFIX_CACHE_DIR"]).rglob(kept_name(tmp_path)))
    # A new pageable copy in the file: the index is read back (the edited file read
    # again on its own), and the copy is reported beside the old finding.
    use = tmp_path / "pkg" / "use.py"
    use.write_text(
        "import torch\n\n"
        + use.read_text()
        + "\n\ndef other(a, dev):\n    return torch.from_numpy(a).to(dev, non_blocking=True)\n"
    )
    assert check("pkg/use.py") == [("use.py", 7), ("use.py", 15)]
    assert builds == [tmp_path]  # read back, not built again


def test_the_shell_keeper_answers_the_engine_interface() -> None:
    """``WordKeeper`` (shell) is not derived from ``Keeper`` (engine), so that a run whose
    files the pre-filter rules out imports no analysis: it implements every method of it
    with the same parameters."""
    import inspect

    methods = [n for n, f in vars(Keeper).items() if callable(f) and not n.startswith("_")]
    assert sorted(methods) == ["keep", "load"]
    for name in methods:
        assert name in vars(WordKeeper)
        assert inspect.signature(getattr(WordKeeper, name)) == inspect.signature(getattr(Keeper, name)), name


# --- the word list kept beside an index --------------------------------------------------------


def test_the_word_list_kept_with_an_index_says_which_words_any_file_says(tmp_path: Path) -> None:
    from pinfix.regular import stamp_of
    from pinfix.semantic.deep.words import WordList

    write(tmp_path, FILES)
    keeper = MemoryKeeper()
    WordIndex(tmp_path, keeper)
    assert keeper.list_writes == 1
    listed = WordList.kept(tmp_path, keeper)
    assert listed is not None
    said = set().union(*(words_of(Path(n).read_bytes()) for n in WordIndex(tmp_path).names))
    assert said and all(listed.may_say(w) for w in said)
    assert not listed.may_say(b"absent_word") and not listed.may_say(b"stag") and not listed.may_say(b"Runners")
    assert listed.may_say(b"not a word") and listed.may_say(b"")  # anything else: perhaps
    path = str(tmp_path / "pkg" / "a.py")
    assert listed.speaks_for(path, stamp_of(path))
    write(tmp_path, {"pkg/a.py": "absent_word = 1\n"}, when=OLD + 10)
    assert not listed.speaks_for(path, stamp_of(path))  # changed since: its own text is read
    assert not listed.speaks_for(str(tmp_path / "pkg" / "new.py"), None)


def test_an_index_kept_without_its_word_list_gets_one_when_read_back(tmp_path: Path) -> None:
    from pinfix.semantic.deep.words import WordList, list_name

    write(tmp_path, FILES)
    keeper = MemoryKeeper()
    WordIndex(tmp_path, keeper)
    del keeper.kept[list_name(tmp_path)]  # removed, or its writing failed
    again = WordIndex(tmp_path, keeper)
    assert again.reused and keeper.writes == 1 and keeper.list_writes == 2
    listed = WordList.kept(tmp_path, keeper)
    assert listed is not None and listed.may_say(b"stage") and not listed.may_say(b"absent_word")
    WordIndex(tmp_path, keeper)
    assert keeper.list_writes == 2  # kept now: not written again


@pytest.mark.parametrize(
    "kept",
    [
        b"",
        b"not marshal at all",
        __import__("marshal").dumps((words.INDEX_FORMAT + 1, "ROOT", {}, b"\nx\n")),
        __import__("marshal").dumps((words.INDEX_FORMAT, "/another/root", {}, b"\nx\n")),
        __import__("marshal").dumps((words.INDEX_FORMAT, "ROOT", [], b"\nx\n")),
        __import__("marshal").dumps((words.INDEX_FORMAT, "ROOT", {}, "x")),
        __import__("marshal").dumps((words.INDEX_FORMAT, "ROOT", {}, b"x\n")),
    ],
)
def test_a_kept_word_list_that_is_not_one_is_not_used(tmp_path: Path, kept: bytes) -> None:
    from pinfix.semantic.deep.words import WordList, list_name

    keeper = MemoryKeeper()
    keeper.kept[list_name(tmp_path)] = kept.replace(b"ROOT", str(tmp_path).encode())
    assert WordList.kept(tmp_path, keeper) is None


def test_the_deep_cache_reads_only_the_modules_the_word_list_cannot_speak_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether any module a verdict read says a name added to another (a pre-commit call
    after a function is added): answered from the word list for the files it speaks for,
    by reading the others (changed since, outside its root); as before wherever the list
    has the name."""
    from pinfix.deepcache import DeepVerdicts

    root = tmp_path / "tree"
    write(root, {**FILES, "pkg/d.py": "import os\n"})
    outside = tmp_path / "elsewhere" / "e.py"
    write(tmp_path, {"elsewhere/e.py": "helper = 1\n"})
    directory = tmp_path / "cache"
    directory.mkdir()
    WordIndex(root.resolve(), WordKeeper(directory))
    write(root, {"pkg/d.py": "import os\nfresh_name = 1\n"}, when=OLD + 10)  # changed since the list
    read: Dict[str, object] = {
        str(root.resolve() / n): None for n in ("pkg/a.py", "pkg/b.py", "pkg/sub/c.py", "pkg/d.py", "pkg/gone.py")
    }
    read[str(outside.resolve())] = None

    def said(names: List[str]) -> tuple:
        verdicts = DeepVerdicts(directory)
        verdicts.listing(str(root / "pkg" / "a.py"))
        opened: List[str] = []
        text = verdicts._text
        monkeypatch.setattr(verdicts, "_text", lambda path: opened.append(path) or text(path))
        return verdicts._said(names, b"", "", read), sorted(Path(p).name for p in opened)

    assert said(["unknown_name"]) == (False, ["d.py", "e.py"])
    assert said(["fresh_name"]) == (True, ["d.py"])  # said by the file changed since
    assert said(["helper"]) == (True, ["d.py", "e.py"])  # said outside the list's root
    assert said(["stage"]) == (True, ["a.py"])  # the list has it: each module read, as before
    assert said(["Runner"]) == (True, ["a.py", "b.py", "c.py"])


@pytest.mark.parametrize("name", ["make", "f", "ｍake_ü", "x1"])
def test_a_search_for_calls_finds_what_a_look_behind_first_found(name: str) -> None:
    # The word is searched for first (a literal: fast), the byte before it tested after.
    import re

    from pinfix.semantic.deep.searches import NOT_AFTER_NAME, calls_of

    word = name.encode()
    before = re.compile(NOT_AFTER_NAME + re.escape(word) + rb"\s*\(")
    pieces = [b"", b" ", b".", b"a", b"_", b"\xc3\xa9", b"(", b"\n", b"1", b"\t"]
    text = b"".join(p + word + q for p in pieces for q in (b"(", b" (", b"\n(", b"x(", b"", b" = 1"))
    text = word + b"(" + text + b"\xc3" + word + b"("
    assert [m.span() for m in calls_of(name).finditer(text)] == [m.span() for m in before.finditer(text)]
    found = calls_of(name).findall(text)
    assert 10 < len(found) < text.count(word) - 20  # calls after a space, a dot, a bracket; no `amake(`
