"""Which settings apply to each file, and which files are excluded.

As in ruff, each file gets the settings of the nearest settings file above it
(``.pinfix.toml``, ``pinfix.toml``, or a ``pyproject.toml`` with
``[tool.pinfix]``), then the command line's on top; ``--config FILE`` makes
one file apply everywhere. A file with no settings file above it gets the
defaults, rooted at its nearest ``pyproject.toml`` (ruff would use the working
directory's settings instead; the helper a fix imports belongs to the file's
own project). The run's own settings (cache, output format) are the working
directory's.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from .config import (
    DEFAULT_EXCLUDE,
    Config,
    SettingsFile,
    config_of,
    default_config,
    load_settings_file,
    plain_name,
    project_root,
    pyproject_in,
    relative_to_root,
    settings_in,
)


def build_output(directory: str) -> bool:
    """Whether a directory named ``build`` is a build's output rather than a
    package of the project (ruff stopped excluding ``build`` because of the
    latter): it is one unless it holds an ``__init__.py``."""
    return not os.path.isfile(os.path.join(directory, "__init__.py"))


class Project:
    """The settings of every directory a run touches, each found once."""

    def __init__(
        self,
        overrides: Sequence[Mapping[str, Any]] = (),
        config_file: Optional[Path] = None,
        cwd: Optional[Path] = None,
    ):
        self.overrides = list(overrides)
        self.fixed: Optional[SettingsFile] = load_settings_file(config_file) if config_file is not None else None
        self.cwd = (cwd or Path.cwd()).resolve()
        #: probe -> directory -> what it found there or above (a settings file, ...)
        self._found: Dict[Callable[[str], Any], Dict[str, Any]] = {}
        #: settings file (or project root, for the defaults) -> its settings
        self._configs: Dict[str, Config] = {}
        #: directory, as asked for -> its settings
        self._by_directory: Dict[str, Config] = {}
        #: directory (absolute, real) -> which of its entries are excluded (see :meth:`excluded_in`)
        self._excluders: Dict[str, Callable[[str, bool], bool]] = {}
        #: ``pyproject.toml`` -> the project root it makes (see :meth:`_project_root`)
        self._roots: Dict[str, Tuple[Path, Optional[Path]]] = {}
        #: The run's own settings: the working directory's.
        self.base = self.config_for_directory(str(self.cwd))

    def _nearest(self, directory: str, probe: Callable[[str], Any]) -> Any:
        """:func:`pinfix.config.nearest`, each directory probed once per run."""
        memo = self._found.setdefault(probe, {})
        missing = []
        current = directory
        found = None
        while True:
            if current in memo:
                found = memo[current]
                break
            missing.append(current)
            found = probe(current)
            if found is not None:
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for seen in missing:
            memo[seen] = found
        return found

    def config_for_directory(self, directory: str) -> Config:
        known = self._by_directory.get(directory)
        if known is None:
            known = self._by_directory[directory] = self._config_for(os.path.abspath(directory))
        return known

    def _config_for(self, directory: str) -> Config:
        found = self.fixed if self.fixed is not None else self._nearest(directory, settings_in)
        if found is not None:
            key = str(found.path)
            if key not in self._configs:
                self._configs[key] = config_of(found, self.overrides)
            return self._configs[key]
        root, _ = self._project_root(directory)
        key = str(root)  # one config per project root
        if key not in self._configs:
            self._configs[key] = default_config(directory, self.overrides, self.cwd, self._nearest)
        return self._configs[key]

    def _project_root(self, directory: str) -> Tuple[Path, Optional[Path]]:
        """:func:`pinfix.config.project_root`, once per ``pyproject.toml`` it finds
        (its answer then depends on nothing else): a walk asks it for every folder."""
        pyproject = self._nearest(directory, pyproject_in)
        if pyproject is None:
            return project_root(directory, self.cwd, self._nearest)
        known = self._roots.get(pyproject)
        if known is None:
            known = self._roots[pyproject] = project_root(directory, self.cwd, self._nearest)
        return known

    def config_for(self, path: "Path | str") -> Config:
        """The settings of the file at ``path``."""
        head, name = os.path.split(path)
        if name in ("", os.curdir, os.pardir):  # not a file's name: the folder above what it means
            return self.config_for_directory(os.path.dirname(os.path.abspath(path)))
        # A file's folder as written (``""``: the working directory), without a join per file.
        return self.config_for_directory(head)

    def excluded(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (absolute, real) is excluded by the settings of the
        directory that holds it; patterns are relative to their settings file."""
        directory, name = os.path.split(path)
        return self.excluded_in(directory)(name, is_dir)

    def excluded_in(self, directory: str) -> Callable[[str, bool], bool]:
        """``(name, is a directory) -> excluded?`` for the entries of ``directory``
        (absolute, real), as :func:`is_excluded` answers for each path alone. A walk
        asks this for every file: what the folders on the path say is the same for
        all the files of a folder, so it is decided once here, and only the name and
        the pattern list are looked at per file."""
        found = self._excluders.get(directory)
        if found is None:
            found = self._excluders[directory] = self._excluder(directory)
        return found

    def _excluder(self, directory: str) -> Callable[[str, bool], bool]:
        config = self.config_for_directory(directory)
        if not config.all_excludes:
            return _nothing_excluded

        def whole(name: str, is_dir: bool) -> bool:
            return is_excluded(config, os.path.join(directory, name), is_dir, real=True)

        plain, spec = _matcher(config.all_excludes)
        where = relative_to_root(directory, config.root, resolve=False)
        if where is None:  # outside the settings' root: only a plain name can exclude
            return lambda name, is_dir: (is_dir or name in plain) and whole(name, is_dir)
        prefix = where + "/" if where else ""
        folder = _folders_excluded(config, plain, where.split("/") + [""]) if where else False
        match = spec.match_file if spec is not None else None

        def excluded(name: str, is_dir: bool) -> bool:
            if is_dir or name in plain:
                return whole(name, is_dir)
            return folder or (match is not None and bool(match(prefix + name)))

        return excluded

    def explicitly_excluded(self, path: "Path | str", is_dir: bool = False) -> bool:
        """``--force-exclude``: whether a path named on the command line is
        excluded, by its own name or a directory above it (up to its root)."""
        config = self.config_for(path)
        return is_excluded(config, os.path.abspath(path), is_dir, real=False)


@lru_cache(maxsize=64)
def _matcher(patterns: Tuple[str, ...]) -> Tuple[FrozenSet[str], Any]:
    """Plain names (compared with path components) and a pathspec for the rest."""
    plain = frozenset(p for p in patterns if plain_name(p))
    rest = [p for p in patterns if not plain_name(p)]
    if not rest:
        return plain, None
    import pathspec

    return plain, pathspec.GitIgnoreSpec.from_lines(rest)


def _nothing_excluded(name: str, is_dir: bool) -> bool:
    return False


def _folders_excluded(config: Config, plain: FrozenSet[str], parts: List[str]) -> bool:
    """Whether a plain name among the folders of a file's ``parts`` excludes it (as in
    :func:`is_excluded`: a ``build`` folder only when it is a build's output)."""
    hits = plain.intersection(parts[:-1])
    if hits == {"build"} and config.exclude == DEFAULT_EXCLUDE and not _build_output_in(config.root, parts, False):
        return False
    return bool(hits)


def is_excluded(config: Config, path: str, is_dir: bool, real: bool = True) -> bool:
    """Whether ``path`` is excluded by ``config``'s patterns (``real``: the
    path is already absolute with no symlink in it, as a walk makes them)."""
    patterns = config.all_excludes
    if not patterns:
        return False
    rel = relative_to_root(path, config.root, resolve=not real)
    if not rel:
        return False
    plain, spec = _matcher(patterns)
    parts = rel.split("/")
    hits = plain.intersection(parts if is_dir else parts[:-1])
    if not is_dir and parts[-1] in plain:
        hits = hits | {parts[-1]}
    if hits == {"build"} and config.exclude == DEFAULT_EXCLUDE and not _build_output_in(config.root, parts, is_dir):
        hits = set()
    if hits:
        return True
    return spec is not None and spec.match_file(rel + ("/" if is_dir else ""))


def _build_output_in(root: Path, parts: List[str], is_dir: bool) -> bool:
    """Whether a ``build`` directory on the way to ``parts`` is a build's output."""
    for i, part in enumerate(parts if is_dir else parts[:-1]):
        if part == "build" and build_output(os.path.join(str(root), *parts[: i + 1])):
            return True
    return False
