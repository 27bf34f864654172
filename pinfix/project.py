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
from pathlib import Path
from functools import lru_cache
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from .config import (
    DEFAULT_EXCLUDE,
    Config,
    SettingsFile,
    config_for_directory,
    load_settings_file,
    plain_name,
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
        #: directory -> its nearest settings file (``None``: none above it)
        self._nearest: Dict[str, Optional[SettingsFile]] = {}
        self._configs: Dict[Tuple[Optional[str], str], Config] = {}
        #: The run's own settings: the working directory's.
        self.base = self.config_for_directory(str(self.cwd))

    def _nearest_settings(self, directory: str) -> Optional[SettingsFile]:
        missing = []
        current = directory
        found: Optional[SettingsFile] = None
        while True:
            if current in self._nearest:
                found = self._nearest[current]
                break
            missing.append(current)
            found = settings_in(Path(current))
            if found is not None:
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for seen in missing:
            self._nearest[seen] = found
        return found

    def config_for_directory(self, directory: str) -> Config:
        directory = os.path.abspath(directory)
        found = self.fixed if self.fixed is not None else self._nearest_settings(directory)
        key = (str(found.path) if found is not None else None, directory if found is None else "")
        config = self._configs.get(key)
        if config is None:
            config = config_for_directory(Path(directory), self.overrides, fixed=found, cwd=self.cwd)
            if found is None:  # defaults: one per project root
                same = next((c for c in self._configs.values() if c.source is None and c.root == config.root), None)
                config = same or config
            self._configs[key] = config
        return config

    def config_for(self, path: "Path | str") -> Config:
        """The settings of the file at ``path``."""
        return self.config_for_directory(os.path.dirname(os.path.abspath(path)))

    def excluded(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (absolute) is excluded by the settings of the
        directory that holds it; patterns are relative to their settings file."""
        config = self.config_for_directory(os.path.dirname(path))
        return is_excluded(config, path, is_dir, real=True)

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
