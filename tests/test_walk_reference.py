"""The walk (pinfix/files.py, with the settings' excludes from pinfix/project.py)
yields exactly what a slow, obvious reference yields: ``os.walk`` over the tree,
every ``.gitignore`` between the repository's top and a path read afresh for that
path and asked through pathspec alone, and each path's exclusion decided by the
full rule (:func:`pinfix.project.is_excluded`) from its own directory's settings.

The walk's shortcuts (one listing per directory, per-folder answers, the regex
pre-test in front of pathspec) must never change which files are walked."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set

import pathspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinfix.cli import main
from pinfix.files import ALWAYS_SKIPPED, walk
from pinfix.project import Project, is_excluded


def _spec_of(path: Path) -> Optional[pathspec.GitIgnoreSpec]:
    if not path.is_file():
        return None
    return pathspec.GitIgnoreSpec.from_lines(path.read_text().splitlines())


def reference(paths: Sequence[Path], cwd: Path, follow_symlinks: bool = False) -> List[str]:
    """The files a walk of ``paths`` must yield, in its order (sorted, each
    directory's files before its subdirectories), decided the slow way."""
    project = Project(cwd=cwd)
    out: List[str] = []
    seen: Set[str] = set()

    def git_top(start: Path) -> Optional[Path]:
        for directory in (start, *start.parents):
            if (directory / ".git").exists():
                return directory
        return None

    for given_path in paths:
        tree = given_path.resolve()
        top = git_top(tree) or tree

        def ignored(path: Path, is_dir: bool, top: Path = top) -> bool:
            real = os.path.realpath(path.parent)
            config = project.config_for_directory(real)
            if is_excluded(config, os.path.join(real, path.name), is_dir, real=True):
                return True
            suffix = "/" if is_dir else ""
            specs = []
            info = _spec_of(top / ".git" / "info" / "exclude")
            if info is not None:
                specs.append((top, info))
            chain = [Path(real)]
            while chain[-1] != top:
                chain.append(chain[-1].parent)
            for directory in reversed(chain):
                spec = _spec_of(directory / ".gitignore")
                if spec is not None:
                    specs.append((directory, spec))
            rel = Path(real, path.name)
            return any(spec.match_file(rel.relative_to(base).as_posix() + suffix) for base, spec in specs)

        for dirpath, dirnames, filenames in os.walk(given_path):
            here = Path(dirpath)
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in ALWAYS_SKIPPED and not (here / d).is_symlink() and not ignored(here / d, True)
            )
            for name in sorted(filenames):
                path = here / name
                if not name.endswith(".py"):
                    continue
                key = os.path.realpath(path)
                if path.is_symlink() and (not follow_symlinks or tree not in Path(key).parents):
                    continue
                if ignored(path, False) or key in seen:
                    continue
                seen.add(key)
                out.append(str(path))
    return out


def walked(paths: Sequence[Path], cwd: Path, follow_symlinks: bool = False) -> List[str]:
    project = Project(cwd=cwd)
    errors: list = []
    found = [
        str(p)
        for p in walk(
            [str(p) for p in paths],
            errors,
            root=project.base.root,
            excluded_in=project.excluded_in,
            follow_symlinks=follow_symlinks,
        )
    ]
    assert errors == []
    return found


def write(path: Path, text: str = "x = 1\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


TRICKY_FILES = [
    "top.py",
    "keep.py",
    "drop_me.py",
    "notes.txt",
    "gen_top.py",
    "pkg/__init__.py",
    "pkg/a.py",
    "pkg/gen_a.py",
    "pkg/b.pyc",
    "pkg/logs/x.py",
    "pkg/Logs/y.py",
    "pkg/build/__init__.py",
    "pkg/build/inside.py",  # a package named build: walked
    "build/lib/out.py",  # a build's output: excluded by default
    "pkg/sub/deep/one.py",
    "pkg/sub/deep/two.py",
    "pkg/sub/deep/keep_two.py",
    "pkg/sub/cache/c.py",
    "pkg/sub/tmp_thing.py",
    "pkg/sub/x9y.py",
    "pkg/sub/#hash.py",
    "pkg/sub/space .py",
    "docs/a/b/gen/doc.py",
    "docs/gen/doc.py",
    "docs/keep.py",
    "third/d.py",
    "third/sub/e.py",
    "tools/x.py",
    "tools/deep/er/x.py",
    "tools/deep/y.py",
    "nested/dir/n.py",
    "x/nested/dir/n.py",
    "anchored/only/here.py",
    "sub/anchored/only/here.py",
    "venv/lib/f.py",
    "src/venv.py",
    "node_modules/h.py",
    "__pycache__/p.py",
    ".git/hooks/h.py",
    "inner/pyproject.toml",
    "inner/mod.py",
    "inner/skipme/s.py",
    "inner/gen_inner.py",
    "inner/third/t.py",
    "neg/a.py",
    "neg/b.py",
    "neg/sub/c.py",
]
GITIGNORES: Dict[str, str] = {
    "": "*.pyc\ndrop_me.py\n[Ll]ogs/\n/anchored/only/\nnested/dir/\ndocs/**/gen\n**/cache/\ntmp*\n"
    "x?y.py\n\\#hash.py\nspace\\ .py\n# a comment\n\n  \nneg/*.py\n!neg/b.py\nneg/sub/*.py\n",
    "pkg/sub/deep": "*.py\n!keep_*.py\n",
    "inner": "skipme/\n",
    "neg/sub": "!c.py\n",
}


def tricky_tree(root: Path) -> Path:
    tree = root / "repo"
    for rel in TRICKY_FILES:
        write(
            tree / rel,
            "[tool.pinfix]\nextend-exclude = ['gen_*.py', 'third']\n" if rel.endswith(".toml") else "x = 1\n",
        )
    write(tree / "pyproject.toml", "[tool.pinfix]\nextend-exclude = ['gen_*.py', 'third/*', 'tools/**/x.py', 'venv']\n")
    (tree / ".git" / "info").mkdir(parents=True)
    (tree / ".git" / "info" / "exclude").write_text("keep.py\n")
    for where, text in GITIGNORES.items():
        (tree / where / ".gitignore").write_text(text)
    os.symlink(tree / "pkg", tree / "linked_pkg")  # a symlinked directory: never walked
    os.symlink(tree / "top.py", tree / "alias.py")  # the same file again
    os.symlink(tree / "pkg" / "a.py", tree / "pkg" / "sub" / "z_link.py")
    outside = root / "outside.py"
    write(outside)
    os.symlink(outside, tree / "out_link.py")  # never followed out of the tree
    return tree


def test_the_walk_matches_the_reference_on_a_tricky_tree(tmp_path: Path) -> None:
    tree = tricky_tree(tmp_path)
    for follow in (False, True):
        expected = reference([tree], tree, follow)
        assert walked([tree], tree, follow) == expected
    names = {os.path.relpath(p, tree) for p in reference([tree], tree)}
    # The tree exercises what it means to: these are decided by the rules above, not walked.
    for gone in (
        "drop_me.py",
        "keep.py",
        "pkg/logs/x.py",
        "pkg/Logs/y.py",
        "build/lib/out.py",
        "pkg/gen_a.py",
        "pkg/sub/deep/one.py",
        "docs/a/b/gen/doc.py",
        "anchored/only/here.py",
        "inner/skipme/s.py",
        "inner/gen_inner.py",
        "inner/third/t.py",
        "third/sub/e.py",
        "neg/a.py",
        "alias.py",
    ):
        assert gone not in names, gone
    for kept in (
        "top.py",
        "pkg/build/inside.py",
        "pkg/sub/deep/keep_two.py",
        "sub/anchored/only/here.py",
        "neg/b.py",
        "pkg/a.py",
        "tools/deep/y.py",
        "src/venv.py",
    ):
        assert kept in names, kept


def test_a_walk_from_below_the_top_and_of_two_paths_matches_the_reference(tmp_path: Path) -> None:
    tree = tricky_tree(tmp_path)
    # Walked from inside an excluded folder (venv, a build's output), the folders
    # above still exclude each file.
    for paths, cwd in (
        ([tree / "pkg"], tree),
        ([tree / "pkg" / "sub"], tree / "pkg"),
        ([tree / "pkg", tree], tree),
        ([tree / "venv" / "lib"], tree),
        ([tree / "build" / "lib", tree / "pkg" / "build"], tree),
    ):
        assert walked(paths, cwd) == reference(paths, cwd), paths
    assert walked([tree / "venv" / "lib"], tree) == []


def test_show_files_lists_the_reference_sorted(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tree = tricky_tree(tmp_path)
    monkeypatch.chdir(tree)
    out, err = io.StringIO(), io.StringIO()
    assert main(["show-files", "."], out, err) == 0, err.getvalue()
    assert out.getvalue() == "".join(
        p + "\n" for p in sorted(os.path.relpath(p, tree) for p in reference([Path(".")], tree))
    )


# --- Generated trees ----------------------------------------------------------------

NAMES = ["a", "b", "build", "gen_x", "logs", "deep", "keep"]
FILE_NAMES = ["m.py", "gen_m.py", "keep.py", "x.py", "n.txt", "a.py"]
LINES = [
    "*.py",
    "!keep.py",
    "a/",
    "/a",
    "b/*.py",
    "**/deep/",
    "gen_*",
    "!gen_m.py",
    "logs",
    "x.py",
    "/x.py",
    "deep/**/m.py",
    "[ab]/",
    "?.py",
    "!a/",
    "keep/",
    "*/m.py",
    "!*/",
    "build/",
]
EXCLUDES = ["gen_*.py", "deep", "a/*", "**/keep/m.py", "logs"]


@st.composite
def trees(draw: st.DrawFn) -> Dict[str, str]:
    """Relative path -> text: files up to three folders deep and ``.gitignore`` files among them."""
    folders = draw(
        st.lists(
            st.lists(st.sampled_from(NAMES), min_size=0, max_size=3).map("/".join), min_size=1, max_size=6, unique=True
        )
    )
    files: Dict[str, str] = {}
    for folder in folders:
        prefix = folder + "/" if folder else ""
        for name in draw(st.lists(st.sampled_from(FILE_NAMES), max_size=4, unique=True)):
            files[prefix + name] = "x = 1\n"
        if draw(st.booleans()):
            files[prefix + ".gitignore"] = "\n".join(draw(st.lists(st.sampled_from(LINES), max_size=4))) + "\n"
    excludes = draw(st.lists(st.sampled_from(EXCLUDES), max_size=2, unique=True))
    if excludes:
        files["pyproject.toml"] = "[tool.pinfix]\nextend-exclude = [" + ", ".join(repr(e) for e in excludes) + "]\n"
    return files


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_the_walk_matches_the_reference_on_generated_trees(files: Dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "t"
        tree.mkdir()
        (tree / ".git").mkdir()
        for rel, text in files.items():
            if (tree / rel).parent.is_file() or (tree / rel).is_dir():
                continue  # a name used as a file and as a folder: keep the first
            try:
                write(tree / rel, text)
            except (NotADirectoryError, FileExistsError, IsADirectoryError):
                continue
        assert walked([tree], tree) == reference([tree], tree)
