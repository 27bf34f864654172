"""The project's own formatter and isort settings, read as data: the one place
pinfix reads ``[tool.ruff]``, ``[tool.black]`` and ``[tool.isort]``.

pinfix's fixes must keep the project's checks green: ``ruff format --check`` (or
black) and ``ruff check --select I`` (or isort). Their settings live in a
``.ruff.toml`` or ``ruff.toml`` (which ruff reads instead of ``[tool.ruff]``
when one is there), ``[tool.ruff]`` / ``[tool.ruff.format]`` /
``[tool.ruff.lint.isort]`` (also the older ``[tool.ruff.isort]``),
``[tool.black]`` and ``[tool.isort]``; this module reads the ones pinfix
follows, and which formatter the project configures. ruff's settings win over
black's and isort's when both are present, as the project's ruff would be the
tool that runs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib


@dataclass(frozen=True)
class FormatStyle:
    """The formatter settings that decide a layout (ruff's names)."""

    line_length: int = 88
    indent_width: int = 4
    #: ``skip-magic-trailing-comma``: a trailing comma no longer forces one item per line.
    skip_magic_trailing_comma: bool = False
    #: ruff's ``quote-style``: ``double``, ``single`` or ``preserve`` (black's
    #: ``skip-string-normalization``: the quotes the source has are kept).
    quote_style: str = "double"


#: isort's default section order (ruff's names).
DEFAULT_SECTIONS = ("future", "standard-library", "third-party", "first-party", "local-folder")


@dataclass(frozen=True)
class IsortSettings:
    """The isort settings import placement follows (ruff's option names)."""

    force_single_line: bool = False
    known_first_party: Tuple[str, ...] = ()
    known_third_party: Tuple[str, ...] = ()
    known_local_folder: Tuple[str, ...] = ()
    combine_as_imports: bool = False
    force_sort_within_sections: bool = False
    #: ``-1``: ruff's default (two before a class or function, else one).
    lines_after_imports: int = -1
    order_by_type: bool = True
    case_sensitive: bool = False
    force_wrap_aliases: bool = False
    split_on_trailing_comma: bool = True
    section_order: Tuple[str, ...] = DEFAULT_SECTIONS
    no_sections: bool = False
    #: Settings present that pinfix does not follow (named in fix notes).
    unsupported: Tuple[str, ...] = ()


#: ruff's settings files, in the order ruff prefers them in one directory.
RUFF_FILES = (".ruff.toml", "ruff.toml")
#: The values of ruff's ``quote-style``.
QUOTE_STYLES = ("double", "single", "preserve")


@dataclass(frozen=True)
class ProjectStyle:
    format: FormatStyle = field(default_factory=FormatStyle)
    isort: IsortSettings = field(default_factory=IsortSettings)
    #: The formatter the project configures: ``ruff`` (``[tool.ruff.format]``, or a
    #: ruff settings file), ``black`` (``[tool.black]``), or ``None``.
    formatter: Optional[str] = None


_ISORT_KEYS = {
    # ruff name: (isort name, type)
    "force-single-line": ("force_single_line", bool),
    "known-first-party": ("known_first_party", list),
    "known-third-party": ("known_third_party", list),
    "known-local-folder": ("known_local_folder", list),
    "combine-as-imports": ("combine_as_imports", bool),
    "force-sort-within-sections": ("force_sort_within_sections", bool),
    "lines-after-imports": ("lines_after_imports", int),
    "order-by-type": ("order_by_type", bool),
    "case-sensitive": ("case_sensitive", bool),
    "force-wrap-aliases": ("force_wrap_aliases", bool),
    "split-on-trailing-comma": ("split_on_trailing_comma", bool),
    "section-order": ("section_order", list),
    "no-sections": ("no_sections", bool),
}
#: Settings that change where or how an import is written and that pinfix does not follow.
_UNSUPPORTED = (
    "force-to-top",
    "from-first",
    "lines-between-types",
    "relative-imports-order",
    "sections",
    "single-line-exclusions",
    "no-lines-before",
    "default-section",
    "length-sort",
    "length-sort-straight",
    "classes",
    "constants",
    "variables",
    "required-imports",
    "force-sort-within-types",
    "extra-standard-library",
    "known-standard-library",
)


def _table(data: Dict[str, Any], *keys: str) -> Dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None  # type: ignore[assignment]
    return data if isinstance(data, dict) else {}


_ISORT_SECTIONS = {
    "FUTURE": "future",
    "STDLIB": "standard-library",
    "THIRDPARTY": "third-party",
    "FIRSTPARTY": "first-party",
    "LOCALFOLDER": "local-folder",
}


def _isort_from(table: Dict[str, Any], isort_names: bool) -> Dict[str, Any]:
    """Settings in ruff's names from a ruff table (dashes) or an isort one (underscores)."""
    if not isort_names:
        return dict(table)
    out: Dict[str, Any] = {}
    for key, value in table.items():
        name = key.replace("_", "-")
        if name.startswith("known-") and isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if name == "sections" and isinstance(value, list):
            names = [_ISORT_SECTIONS.get(str(v).upper()) for v in value]
            if all(names):
                out["section-order"] = names
            else:
                out["sections"] = value  # custom sections: not followed
            continue
        out[name] = value
    profile = out.pop("profile", None)
    wrap_mode = out.pop("multi-line-output", 3 if profile == "black" else 0)
    if profile not in (None, "black"):
        out["unsupported-profile"] = profile
    elif wrap_mode not in (3, "VERTICAL_HANGING_INDENT"):
        # isort's own default wraps in a grid, not in black's one-per-line style.
        out["multi-line-output"] = wrap_mode
    for key in ("line-length", "include-trailing-comma", "use-parentheses", "ensure-newline-before-comments"):
        out.pop(key, None)  # what profile black sets, and the line length (read below)
    return out


def isort_settings(raw: Dict[str, Any]) -> IsortSettings:
    values: Dict[str, Any] = {}
    unsupported = []
    for key, value in raw.items():
        if key in _ISORT_KEYS:
            name, kind = _ISORT_KEYS[key]
            if kind is list and isinstance(value, list) and all(isinstance(v, str) for v in value):
                values[name] = tuple(value)
            elif (
                kind is bool
                and isinstance(value, bool)
                or kind is int
                and isinstance(value, int)
                and not isinstance(value, bool)
            ):
                values[name] = value
        elif key in _UNSUPPORTED or key == "multi-line-output":
            unsupported.append(key)
        elif key == "unsupported-profile":
            unsupported.append(f"profile = {value!r}")
    return IsortSettings(**values, unsupported=tuple(sorted(unsupported)))


def _read(path: Path) -> Dict[str, Any]:
    from .regular import MAX_SETTINGS_BYTES, read_regular

    try:
        return tomllib.loads(read_regular(path, limit=MAX_SETTINGS_BYTES).decode("utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ruff_file(directory: Path) -> Optional[Path]:
    for name in RUFF_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def ruff_line_length(path: Path, data: Optional[Dict[str, Any]] = None) -> Optional[int]:
    """ruff's ``line-length`` for a settings file at ``path`` (``data``: its
    contents, read already): the file's own ``[tool.ruff]`` for a
    ``pyproject.toml``, else that of a ruff settings file or ``pyproject.toml``
    beside it (a ``pinfix.toml``); ``None`` when none sets a usable one."""
    if path.name == "pyproject.toml":
        value = _table(data if data is not None else _read(path), "tool", "ruff").get("line-length")
    else:
        value = None
        ruff_file = _ruff_file(path.parent)
        if ruff_file is not None:
            value = _read(ruff_file).get("line-length")
        elif (path.parent / "pyproject.toml").is_file():
            value = _table(_read(path.parent / "pyproject.toml"), "tool", "ruff").get("line-length")
    value = _int(value)
    return value if value is not None and 0 < value <= 320 else None


@lru_cache(maxsize=64)
def _load(path: Optional[str], stamps: Tuple[float, ...], default_line_length: int) -> ProjectStyle:
    data = _read(Path(path)) if path else {}
    ruff_file = _ruff_file(Path(path).parent) if path else None
    ruff = _read(ruff_file) if ruff_file is not None else _table(data, "tool", "ruff")
    black = _table(data, "tool", "black")
    ruff_format = _table(ruff, "format")
    if ruff_file is not None or "format" in ruff:
        formatter: Optional[str] = "ruff"
    elif "black" in _table(data, "tool"):
        formatter = "black"
    else:
        formatter = None

    def pick(*candidates: Any, kind: type = int) -> Any:
        for c in candidates:
            if isinstance(c, kind) and not (kind is int and isinstance(c, bool)):
                return c
        return None

    line_length = (
        pick(ruff.get("line-length"), black.get("line-length"), black.get("line_length")) or default_line_length
    )
    indent_width = pick(ruff.get("indent-width")) or 4
    skip_magic = pick(
        ruff_format.get("skip-magic-trailing-comma"),
        black.get("skip-magic-trailing-comma"),
        black.get("skip_magic_trailing_comma"),
        kind=bool,
    )
    skip_normalization = pick(black.get("skip-string-normalization"), black.get("skip_string_normalization"), kind=bool)
    quote_style = (
        ruff_format.get("quote-style") if formatter == "ruff" else ("preserve" if skip_normalization else None)
    )
    fmt = FormatStyle(
        line_length=line_length,
        indent_width=indent_width,
        skip_magic_trailing_comma=bool(skip_magic),
        quote_style=quote_style if quote_style in QUOTE_STYLES else "double",
    )

    ruff_isort = _table(ruff, "lint", "isort") or _table(ruff, "isort")
    if ruff_isort or not _table(data, "tool", "isort"):
        raw = _isort_from(ruff_isort, isort_names=False)
    else:
        raw = _isort_from(_table(data, "tool", "isort"), isort_names=True)
    return ProjectStyle(format=fmt, isort=isort_settings(raw), formatter=formatter)


def project_style(pyproject: Optional[Path], default_line_length: int = 88) -> ProjectStyle:
    """The formatter and isort settings of the project whose ``pyproject.toml`` is
    ``pyproject`` (and of the ruff settings file beside it, if any)."""
    if pyproject is None:
        return _load(None, (), default_line_length)
    stamps = []
    for candidate in (pyproject, *(pyproject.parent / name for name in RUFF_FILES)):
        try:
            stamps.append(candidate.stat().st_mtime)
        except OSError:
            stamps.append(-1.0)
    return _load(str(pyproject), tuple(stamps), default_line_length)
