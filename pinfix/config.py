"""Settings: what each one is, how it is checked, and where it is read from.

:data:`SETTINGS` is the one table of settings. Validation, the command line's
options for them (``pinfix/cli.py``) and the table in the README
(``python -m pinfix.docs``) are all made from it, so they cannot drift.

Settings are read as TOML data, never run: from ``[tool.pinfix]`` in a
``pyproject.toml``, or from the top level of a ``pinfix.toml`` /
``.pinfix.toml`` (as ruff reads ``ruff.toml``). Every value is checked once,
when it is read, and a bad one is a :class:`ConfigError` whose message names
the file and the key.
"""

from __future__ import annotations

import builtins
import errno
import keyword
import os
import re
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from .effects import DEFAULT_HELPER
from .settings import FORMATTERS

if TYPE_CHECKING:
    from .settings import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib


class ConfigError(Exception):
    """A setting that cannot be used; the message names where it came from."""


# --- Rules ------------------------------------------------------------------

#: The code of the rule that reports unused, unknown or malformed ``noqa``
#: codes of pinfix's own rules (ruff's ``RUF100``).
NOQA_CODE = "PIN100"


class _RuleNames(Mapping[str, str]):
    """Every rule code -> its name, read from :mod:`pinfix.rules` when first asked:
    a run whose files the pre-filter all rules out never loads the rules (and the
    analysis they import)."""

    def __init__(self) -> None:
        self._names: Optional[Dict[str, str]] = None

    def _table(self) -> Dict[str, str]:
        if self._names is None:
            from .rules import RULE_NAMES

            self._names = {**RULE_NAMES, NOQA_CODE: "UnusedNoqa"}
        return self._names

    def __getitem__(self, code: str) -> str:
        return self._table()[code]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


#: Every rule code and its name (the Fixit rule's class name).
RULES: Mapping[str, str] = _RuleNames()
#: Rules on when nothing is selected. PIN004 (informational) and PIN100
#: (noqa hygiene) are opt-in, as ruff's RUF100 is.
DEFAULT_RULES: FrozenSet[str] = frozenset({"PIN001", "PIN002", "PIN003"})
#: The informational rule that ``show-unknown`` switches on.
UNKNOWN_CODE = "PIN004"


def expand_selector(selector: str) -> FrozenSet[str]:
    """The rule codes a selector names: ``ALL``, a code, or a prefix (``PIN``,
    ``PIN00``). An empty answer is the caller's error to report."""
    sel = selector.strip().upper()
    if sel == "ALL":
        return frozenset(RULES)
    return frozenset(code for code in RULES if sel and code.startswith(sel))


def _specificity(selector: str) -> int:
    sel = selector.strip().upper()
    return 0 if sel == "ALL" else len(sel)


@dataclass(frozen=True)
class RuleLayer:
    """One source's rule selection (a settings file, or the command line)."""

    select: Optional[Tuple[str, ...]] = None
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()


def resolve_rules(layers: Iterable[RuleLayer], start: FrozenSet[str] = DEFAULT_RULES) -> FrozenSet[str]:
    """The enabled codes after each layer in turn, as ruff decides: a layer's
    ``select`` replaces what came before; within a layer the most specific
    selector naming a rule wins, and ``ignore`` wins a tie."""
    enabled = set(start)
    for layer in layers:
        choices: Dict[str, Tuple[int, bool]] = {}
        enabling = [*(layer.select or ()), *layer.extend_select]
        for selectors, on in ((enabling, True), (layer.ignore, False)):
            for selector in selectors:
                rank = _specificity(selector)
                for code in expand_selector(selector):
                    best = choices.get(code)
                    if best is None or rank > best[0] or (rank == best[0] and not on):
                        choices[code] = (rank, on)
        if layer.select is not None:
            enabled = set()
        for code, (_, on) in choices.items():
            (enabled.add if on else enabled.discard)(code)
    return frozenset(enabled)


# --- Default file exclusion ---------------------------------------------------

#: Directories never walked into unless ``exclude`` is set (ruff's list, plus
#: pinfix's own cache). ``build`` is excluded only when it is not a Python
#: package (see :func:`pinfix.project.build_output`).
DEFAULT_EXCLUDE: Tuple[str, ...] = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pinfix_cache",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

#: Output formats; ``text`` is the old name of ``concise``.
OUTPUT_FORMATS: Tuple[str, ...] = ("full", "concise", "text", "json", "sarif", "github", "gitlab", "junit")

CACHE_DIR_NAME = ".pinfix_cache"


# --- The settings ---------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One setting: its key, what it holds, its default and what it does."""

    key: str
    #: ``bool``, ``int``, ``str``, ``member`` (``package.module.name``),
    #: ``members``, ``modules``, ``names``, ``expression``, ``patterns``,
    #: ``rules``, ``per-file-ignores``, ``path`` or ``choice``.
    kind: str
    #: The default as the README shows it.
    default: str
    help: str
    #: The command-line option that sets it, if any (``--strict``).
    option: Optional[str] = None
    #: ``int``: the range allowed; ``choice``: the values allowed.
    low: int = 0
    high: int = 0
    choices: Tuple[str, ...] = ()
    #: ``member`` / ``members``: what the dotted name looks like, for messages.
    shape: str = "package.module.function"

    @property
    def attribute(self) -> str:
        return {"pinned-producers": "extra_pinned_producers"}.get(self.key, self.key.replace("-", "_"))


SETTINGS: Tuple[Setting, ...] = (
    Setting(
        "select",
        "rules",
        "`PIN001`, `PIN002`, `PIN003`",
        "rules to report: codes or prefixes (`PIN`, `ALL`); replaces the default set",
        "--select",
    ),
    Setting("extend-select", "rules", "none", "rules to report on top of `select` (e.g. `PIN100`)", "--extend-select"),
    Setting("ignore", "rules", "none", "rules never to report", "--ignore"),
    Setting(
        "per-file-ignores",
        "per-file-ignores",
        "none",
        'rules to ignore in matching files: `{"tests/**" = ["PIN002"]}` (gitignore-style patterns, relative to the settings file)',
    ),
    Setting(
        "show-unknown",
        "bool",
        "`false`",
        'also note copies whose source memory cannot be told (PIN004; the same as `extend-select = ["PIN004"]`)',
        "--show-unknown",
    ),
    Setting("strict", "bool", "`false`", "also report `non_blocking=<expression>`", "--strict"),
    Setting("deep", "bool", "`false`", "follow tensors across functions, attributes and files", "--deep"),
    Setting("pinned-producers", "members", "none", "functions (`package.module.name`) that return pinned CPU memory"),
    Setting(
        "cpu-tensor-names",
        "names",
        "none",
        "name patterns (fnmatch) of variables and attributes that hold CPU tensors by the project's convention (vLLM: `*_cpu`)",
    ),
    Setting(
        "helper",
        "member",
        f"`{DEFAULT_HELPER}` where the project is vLLM or depends on it; else none",
        "the pinned drop-in for `torch.from_numpy`, `package.module.name`; none: the fix appends `.pin_memory()` (unsafe)",
        "--helper",
    ),
    Setting(
        "h2d-helper",
        "member",
        "none (off)",
        "a `(data, device, dtype=None)` helper that pins and copies; `.to(dev, non_blocking=True)` sinks are rewritten to it",
        "--h2d-helper",
    ),
    Setting(
        "pin-memory-expr",
        "expression",
        "none (`True`, an unsafe fix)",
        "PIN002's fix: the value written as `pin_memory=<expr>`; its names must be builtins or `pin-memory-import`'s",
    ),
    Setting(
        "pin-memory-import",
        "member",
        "none",
        "where `pin-memory-expr`'s name comes from, `package.module.name`",
        shape="package.module.name",
    ),
    Setting(
        "unsafe-fixes",
        "bool",
        "`false`",
        "also apply fixes that could change behaviour (each finding says why)",
        "--unsafe-fixes",
    ),
    Setting(
        "known-first-party",
        "modules",
        "none",
        "top-level packages isort treats as first-party, beyond those found on disk",
    ),
    Setting(
        "formatter",
        "choice",
        "`auto`",
        "how a fix's changed lines are laid out: `ruff` or `black` runs the project's own formatter on those lines only, `builtin` pinfix's layout; `auto`: the formatter the project configures (`[tool.ruff.format]` or a `ruff.toml`, else `[tool.black]`) if it is installed, else `builtin`",
        choices=FORMATTERS,
    ),
    Setting("line-length", "int", "`[tool.ruff] line-length`, else 88", "where a merged import wraps", low=1, high=320),
    Setting(
        "exclude",
        "patterns",
        "ruff's list: " + ", ".join(f"`{name}`" for name in DEFAULT_EXCLUDE),
        "gitignore-style patterns never checked; replaces the default list",
        "--exclude",
    ),
    Setting("extend-exclude", "patterns", "none", "patterns to exclude on top of `exclude`", "--extend-exclude"),
    Setting(
        "force-exclude",
        "bool",
        "`false`",
        "apply the exclusions to files named on the command line too (the pre-commit hooks pass it)",
        "--force-exclude",
    ),
    Setting(
        "max-dependents",
        "int",
        "`8`",
        "deep mode with the cache: at most this many files whose verdict read a checked file are rechecked, those that read the fewest files first (`0`: all); a note names the rest",
        low=0,
        high=1_000_000,
    ),
    Setting(
        "cache-dir",
        "path",
        "`.pinfix_cache` at the project root",
        "where `check` keeps its results (relative to the settings file, and inside its project; also `PINFIX_CACHE_DIR`)",
        "--cache-dir",
    ),
    Setting(
        "output-format",
        "choice",
        "`full` on a terminal, else `concise`",
        "how findings are printed (also `PINFIX_OUTPUT_FORMAT`)",
        "--output-format",
        choices=OUTPUT_FORMATS,
    ),
)

SETTINGS_BY_KEY: Mapping[str, Setting] = {s.key: s for s in SETTINGS}
#: Settings only the command line's base settings (the working directory's)
#: decide for a whole run, as in ruff.
RUN_SETTINGS = frozenset({"cache-dir", "output-format", "force-exclude", "max-dependents"})


# --- Checking values ---------------------------------------------------------------


def _where(origin: str, key: str) -> str:
    """``FILE: [tool.pinfix]: key``, or the option alone (``--helper``)."""
    return origin if origin == f"--{key}" else f"{origin}: {key}"


def _dotted(value: Any, origin: str, key: str, least: int = 2, shape: str = "package.module.name") -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{_where(origin, key)} must be a string like '{shape}', got {_show(value)}")
    parts = value.split(".")
    if len(parts) < least or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        bad = [p for p in parts if p.isidentifier() and keyword.iskeyword(p)]
        why = f" ('{bad[0]}' is a Python keyword)" if bad else ""
        raise ConfigError(f"{_where(origin, key)} must look like '{shape}', got {value!r}{why}")
    return value


def _show(value: Any) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a table"}
    return f"{kind.get(type(value), type(value).__name__)} ({value!r})"


def _string_list(value: Any, origin: str, key: str) -> List[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{_where(origin, key)} must be a list of strings, got {_show(value)}")
    return list(value)


def check_patterns(patterns: Sequence[str], origin: str, key: str) -> Tuple[str, ...]:
    """Gitignore-style patterns that compile (``[z-a]`` does not)."""
    complex_ = [p for p in patterns if not plain_name(p)]
    if complex_:
        import pathspec

        for pattern in complex_:
            try:
                pathspec.GitIgnoreSpec.from_lines([pattern])
            except Exception as e:  # pathspec raises re.error, ValueError, ...
                raise ConfigError(f"{_where(origin, key)}: invalid pattern {pattern!r} ({e})") from None
    return tuple(patterns)


_GLOB = re.compile(r"[*?\[\]\\!/]")


def plain_name(pattern: str) -> bool:
    """A pattern that is just a file or directory name (``venv``, ``.git``):
    matched by comparing path components, without pathspec."""
    return bool(pattern) and not pattern.startswith("#") and not _GLOB.search(pattern) and pattern.strip() == pattern


def _rules(value: Any, origin: str, key: str) -> Tuple[str, ...]:
    selectors = _string_list(value, origin, key)
    for selector in selectors:
        if not expand_selector(selector):
            import difflib

            near = difflib.get_close_matches(selector.upper(), list(RULES), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f" (known: ALL, PIN, {', '.join(RULES)})"
            raise ConfigError(f"{_where(origin, key)}: unknown rule selector {selector!r}{hint}")
    return tuple(s.strip().upper() for s in selectors)


def _expression(value: Any, origin: str, key: str) -> str:
    """An expression that can be written as ``pin_memory=<value>`` into any
    call and compiles there (no ``await``, ``yield``, ``:=``, comment or
    tuple without parentheses)."""
    import ast

    if not isinstance(value, str):
        raise ConfigError(f"{_where(origin, key)} must be a string holding a Python expression, got {_show(value)}")
    text = value.strip()
    if not text or "\n" in text or "\r" in text or "#" in text and _has_comment(text):
        raise ConfigError(f"{_where(origin, key)} must be a one-line Python expression without comments, got {value!r}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ConfigError(f"{_where(origin, key)} must be a Python expression, got {value!r}") from None
    if isinstance(tree.body, ast.Tuple) and not text.startswith("("):
        raise ConfigError(f"{_where(origin, key)} must be a single expression (parenthesise a tuple), got {value!r}")
    try:
        call = ast.parse(f"_(pin_memory={text})", mode="eval").body
    except SyntaxError:
        raise ConfigError(
            f"{_where(origin, key)} must be a Python expression usable as `pin_memory=<expr>`, got {value!r}"
        ) from None
    if not (isinstance(call, ast.Call) and not call.args and len(call.keywords) == 1):
        raise ConfigError(f"{_where(origin, key)} must be a single expression (parenthesise a tuple), got {value!r}")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Starred)):
            what = {ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield", ast.NamedExpr: ":="}.get(
                type(node), "*"
            )
            raise ConfigError(f"{_where(origin, key)}: `{what}` cannot be written into every call, got {value!r}")
    return text


def _has_comment(text: str) -> bool:
    import io
    import tokenize

    try:
        return any(t.type == tokenize.COMMENT for t in tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return True


def free_names(expression: str) -> FrozenSet[str]:
    """The names ``expression`` reads that it does not bind itself."""
    import ast

    tree = ast.parse(expression, mode="eval")
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            bound.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
        elif isinstance(node, ast.comprehension):
            bound.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return frozenset(
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound
    )


def _per_file_ignores(value: Any, origin: str, key: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(
            f'{_where(origin, key)} must be a table of pattern = [rules] (e.g. "tests/**" = ["PIN002"]), got {_show(value)}'
        )
    out = []
    for pattern, selectors in value.items():
        check_patterns([pattern], origin, key)
        out.append((pattern, _rules(selectors, origin, f"{key} {pattern!r}")))
    return tuple(out)


def check_value(setting: Setting, value: Any, origin: str) -> Any:
    """``value`` as the setting holds it, or a :class:`ConfigError`."""
    key, kind = setting.key, setting.kind
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{_where(origin, key)} must be true or false, got {_show(value)}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{_where(origin, key)} must be an integer, got {_show(value)}")
        if not setting.low <= value <= setting.high:
            raise ConfigError(f"{_where(origin, key)} must be between {setting.low} and {setting.high}, got {value}")
        return value
    if kind in ("path", "choice"):
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{_where(origin, key)} must be a non-empty string, got {_show(value)}")
        if kind == "choice" and value not in setting.choices:
            raise ConfigError(f"{_where(origin, key)} must be one of {', '.join(setting.choices)}, got {value!r}")
        return value
    if kind == "member":
        return _dotted(value, origin, key, shape=setting.shape)
    if kind == "members":
        return tuple(
            _dotted(v, origin, f"{key} entries", shape=setting.shape) for v in _string_list(value, origin, key)
        )
    if kind == "modules":
        return tuple(_dotted(v, origin, f"{key} entry", 1, "package") for v in _string_list(value, origin, key))
    if kind == "names":
        names = _string_list(value, origin, key)
        if not all(n.strip() for n in names):
            raise ConfigError(f"{_where(origin, key)} entries must not be empty")
        return tuple(names)
    if kind == "expression":
        return _expression(value, origin, key)
    if kind == "patterns":
        return check_patterns(_string_list(value, origin, key), origin, key)
    if kind == "rules":
        return _rules(value, origin, key)
    if kind == "per-file-ignores":
        return _per_file_ignores(value, origin, key)
    raise AssertionError(kind)  # pragma: no cover - the table names only the kinds above


def check_table(table: Mapping[str, Any], origin: str) -> Dict[str, Any]:
    """Every key known (or a "did you mean"), every value checked, and the
    settings that depend on each other consistent."""
    out: Dict[str, Any] = {}
    for key, value in table.items():
        setting = SETTINGS_BY_KEY.get(key)
        if setting is None:
            import difflib

            near = difflib.get_close_matches(key, list(SETTINGS_BY_KEY), n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else f" (known: {', '.join(sorted(SETTINGS_BY_KEY))})"
            raise ConfigError(f"{origin}: unknown setting {key!r}{hint}")
        out[key] = check_value(setting, value, origin)
    return out


def check_consistent(values: Mapping[str, Any], origin: str) -> None:
    """``pin-memory-expr`` names only builtins and what ``pin-memory-import``
    brings; ``pin-memory-import`` brings something the expression uses."""
    expr, imported = values.get("pin-memory-expr"), values.get("pin-memory-import")
    if imported is not None and expr is None:
        raise ConfigError(f"{origin}: pin-memory-import needs pin-memory-expr")
    if expr is None:
        return
    name = imported.rpartition(".")[2] if imported else None
    missing = sorted(n for n in free_names(expr) if n != name and not hasattr(builtins, n))
    if missing:
        hint = (
            f"set pin-memory-import to the `package.module.{missing[0]}` it comes from"
            if imported is None
            else f"pin-memory-import brings only `{name}`"
        )
        raise ConfigError(f"{origin}: pin-memory-expr {expr!r} uses `{missing[0]}`, which a fix cannot import: {hint}")
    if name is not None and name not in free_names(expr):
        raise ConfigError(f"{origin}: pin-memory-import brings `{name}`, which pin-memory-expr {expr!r} does not use")


# --- The settings of one file ---------------------------------------------------------


@dataclass(frozen=True)
class Config:
    #: ``module.path.name`` of the pinned drop-in for ``torch.from_numpy``;
    #: ``None``: none (the fix appends ``.pin_memory()``). Read from a settings
    #: file, unset means vLLM's where the project is vLLM or depends on it.
    helper: Optional[str] = DEFAULT_HELPER
    #: gitignore-style patterns, relative to ``root``, never walked into.
    exclude: Tuple[str, ...] = field(default=DEFAULT_EXCLUDE, metadata={"key": False})
    #: More patterns, on top of ``exclude``.
    extend_exclude: Tuple[str, ...] = field(default=(), metadata={"key": False})
    #: Also report ``non_blocking=<expression>`` that is not a literal.
    strict: bool = False
    #: Apply fixes that could change behaviour (see each finding's reason).
    unsafe_fixes: bool = False
    #: Top-level packages isort treats as first-party, beyond what it can see on disk.
    known_first_party: Tuple[str, ...] = ()
    #: Where isort wraps a ``from`` import (``[tool.ruff] line-length`` when set).
    line_length: int = 88
    #: How a fix's changed lines are laid out: ``auto``, ``ruff``, ``black`` or
    #: ``builtin`` (:mod:`pinfix.formatter`).
    formatter: str = "auto"
    #: PIN002 fix: the expression written as ``pin_memory=<expr>`` into a CPU
    #: factory. ``None``: ``True`` is written, and the fix is unsafe (it fails
    #: on machines without an accelerator).
    pin_memory_expr: Optional[str] = None
    #: ``module.path.name`` to import for ``pin_memory_expr`` (optional).
    pin_memory_import: Optional[str] = None
    #: Functions (``module.path.name``) whose result is pinned CPU memory,
    #: beyond ``helper``; a copy from one is never a finding.
    extra_pinned_producers: Tuple[str, ...] = ()
    #: Name patterns (fnmatch) of variables and attributes that hold CPU tensors
    #: by the project's convention (vLLM: ``*_cpu``, ``*_cpu_tensor``).
    cpu_tensor_names: Tuple[str, ...] = ()
    #: ``module.path.name`` of a ``(data, device, dtype=None)`` helper that pins
    #: and copies to the device (vLLM: ``vllm.utils.torch_utils.async_tensor_h2d``).
    #: When set, ``.to(device, non_blocking=True)`` sinks are rewritten to call it.
    h2d_helper: Optional[str] = None
    #: Deep mode: follow tensors into attributes and other functions and files.
    deep: bool = False
    #: Report PIN004 (informational): sources whose memory cannot be told.
    #: Kept equal to ``"PIN004" in rules``.
    show_unknown: bool = False
    #: The rule codes reported (after ``select``, ``extend-select``, ``ignore``).
    rules: FrozenSet[str] = DEFAULT_RULES
    #: ``(pattern, selectors)``: rules not reported in files matching the
    #: gitignore-style pattern (relative to ``root``).
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    #: Apply ``exclude`` to files named on the command line too.
    force_exclude: bool = field(default=False, metadata={"key": False})
    #: Deep mode with the cache: the most dependents a run rechecks (``0``: all).
    max_dependents: int = field(default=8, metadata={"key": False})
    #: Where ``check`` keeps its cache (``None``: ``root / .pinfix_cache``).
    cache_dir: Optional[Path] = field(default=None, metadata={"key": False})
    #: ``None``: ``full`` on a terminal, ``concise`` otherwise.
    output_format: Optional[str] = field(default=None, metadata={"key": False})
    #: The project root: the settings file's directory (or the nearest
    #: ``pyproject.toml``'s, or the working directory). Exclusions and
    #: first-party packages are found relative to it.
    root: Path = field(default_factory=Path.cwd)
    #: Where the settings came from, for messages (``None``: defaults).
    #: (Fields marked ``key: False`` change no finding: the check cache ignores them.)
    source: Optional[Path] = field(default=None, metadata={"key": False})

    def __post_init__(self) -> None:
        rules = frozenset(self.rules) | ({UNKNOWN_CODE} if self.show_unknown else frozenset())
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "show_unknown", UNKNOWN_CODE in rules)

    @property
    def pinned_producers(self) -> FrozenSet[str]:
        return frozenset((DEFAULT_HELPER, *((self.helper,) if self.helper else ()), *self.extra_pinned_producers))

    @property
    def all_excludes(self) -> Tuple[str, ...]:
        return self.exclude + self.extend_exclude

    def with_overrides(self, **changes: Any) -> "Config":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def codes_for(self, path: str) -> FrozenSet[str]:
        """The rules reported in ``path``: ``rules`` less its per-file ignores."""
        if not self.per_file_ignores:
            return self.rules
        rel = relative_to_root(path, self.root)
        if rel is None:
            return self.rules
        dropped: set = set()
        for pattern, selectors in self.per_file_ignores:
            if pattern_matches(pattern, rel, is_dir=False):
                for selector in selectors:
                    dropped |= expand_selector(selector)
        return self.rules - dropped

    def cache_directory(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else self.root / CACHE_DIR_NAME


def relative_to_root(path: str, root: Path, resolve: bool = True) -> Optional[str]:
    """``path`` relative to ``root``, with ``/`` separators; ``None`` outside
    it. ``resolve``: follow symlinks first (``root`` is resolved)."""
    absolute = os.path.realpath(path) if resolve else path
    base = str(root)
    if absolute == base:
        return ""
    if not absolute.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return absolute[len(base.rstrip(os.sep)) + 1 :].replace(os.sep, "/")


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([pattern])


def pattern_matches(pattern: str, rel: str, is_dir: bool) -> bool:
    """Whether gitignore-style ``pattern`` matches ``rel`` (relative to the
    pattern's root, ``/``-separated) or a directory above it."""
    if plain_name(pattern):
        parts = rel.split("/")
        return pattern in (parts if is_dir else parts[:-1]) or (not is_dir and parts[-1] == pattern)
    return bool(_compiled(pattern).match_file(rel + ("/" if is_dir else "")))


# --- Reading settings files ---------------------------------------------------------------

#: Settings files, in the order one directory is searched (as ruff's
#: ``.ruff.toml``, ``ruff.toml``, ``pyproject.toml``).
SETTINGS_FILES: Tuple[str, ...] = (".pinfix.toml", "pinfix.toml", "pyproject.toml")


def read_toml(path: Path, named: bool = False) -> Dict[str, Any]:
    """The TOML table of a settings file, at most :data:`MAX_SETTINGS_BYTES` of it.
    ``named``: the user named it (``--config``), so a pipe (``<(...)``) is read
    too; a file found by the search must be a regular file (a FIFO is never waited on)."""
    from .regular import MAX_SETTINGS_BYTES, NotRegularFile, read_bounded, read_regular

    try:
        data = read_bounded(path, MAX_SETTINGS_BYTES) if named else read_regular(path, limit=MAX_SETTINGS_BYTES)
        return tomllib.loads(data.decode("utf-8"))
    except NotRegularFile:
        raise ConfigError(f"{path}: not a regular file") from None
    except OSError as e:
        if e.errno == errno.EFBIG:
            raise ConfigError(f"{path}: larger than {MAX_SETTINGS_BYTES >> 20} MiB; not a settings file") from None
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None


def _tool_table(data: Mapping[str, Any], path: Path, name: str) -> Optional[Dict[str, Any]]:
    tool = data.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table, got {_show(tool)}")
    table = tool.get(name)
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{name}] must be a table, got {_show(table)}")
    return table


@dataclass(frozen=True)
class SettingsFile:
    """The checked settings of one file, and the ruff line length beside them."""

    path: Path
    values: Mapping[str, Any]
    ruff_line_length: Optional[int] = None


def read_settings(path: Path, data: Optional[Mapping[str, Any]] = None) -> Optional[SettingsFile]:
    """The settings ``path`` holds (``data``: its table, read already); ``None`` for a
    ``pyproject.toml`` without ``[tool.pinfix]`` (it is not a settings file, as for ruff)."""
    if data is None:
        data = read_toml(path)
    if path.name == "pyproject.toml":
        table = _tool_table(data, path, "pinfix")
        if table is None:
            return None
        origin = f"{path}: [tool.pinfix]"
    else:
        table, origin = data, str(path)
    values = check_table(table, origin)
    check_consistent(values, origin)
    return SettingsFile(path, values, _ruff_line_length(path, data))


def _ruff_line_length(path: Path, data: Mapping[str, Any]) -> Optional[int]:
    """ruff's ``line-length`` in the same file, or in a ruff settings file or
    ``pyproject.toml`` beside a ``pinfix.toml`` (read where every formatter and
    isort setting is: :mod:`pinfix.style`)."""
    from .style import ruff_line_length

    return ruff_line_length(path, dict(data))


def ruff_line_length_of(pyproject: Path) -> Optional[int]:
    """``[tool.ruff] line-length`` of a ``pyproject.toml``, if it sets a usable one."""
    return _ruff_line_length(pyproject, read_toml(pyproject))


def settings_in(directory: "Path | str") -> Optional[SettingsFile]:
    """The settings file of ``directory`` itself, if it has one (``os.path``:
    a walk asks this of every directory)."""
    for name in SETTINGS_FILES:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            found = read_settings(Path(candidate))
            if found is not None:
                return found
    return None


def nearest(directory: str, probe: Callable[[str], Any]) -> Any:
    """What ``probe`` finds in ``directory`` or the nearest directory above it."""
    current = os.path.abspath(directory)
    while True:
        found = probe(current)
        parent = os.path.dirname(current)
        if found is not None or parent == current:
            return found
        current = parent


def pyproject_in(directory: str) -> Optional[str]:
    candidate = os.path.join(directory, "pyproject.toml")
    return candidate if os.path.isfile(candidate) else None


def git_top(directory: str) -> Optional[str]:
    return directory if os.path.exists(os.path.join(directory, ".git")) else None


def project_root(
    directory: str, cwd: Optional[Path] = None, find: Callable[[str, Callable[[str], Any]], Any] = nearest
) -> Tuple[Path, Optional[Path]]:
    """Where a file with no settings file above it has its project, and the
    ``pyproject.toml`` there: the nearest directory with a ``pyproject.toml``,
    else the repository's top, else ``cwd`` when the file is in it, else its
    own directory. ``find`` is :func:`nearest`, or a memoised one."""
    pyproject = find(directory, pyproject_in)
    if pyproject is not None:
        return Path(os.path.realpath(pyproject)).parent, Path(pyproject)
    top = find(directory, git_top)
    if top is not None:
        return Path(os.path.realpath(top)), None
    real = Path(os.path.realpath(directory))
    if cwd is not None and (real == cwd or cwd in real.parents):
        return cwd, None
    return real, None


def default_config(
    directory: str,
    overrides: Sequence[Mapping[str, Any]] = (),
    cwd: Optional[Path] = None,
    find: Callable[[str, Callable[[str], Any]], Any] = nearest,
) -> Config:
    """The defaults (and ``overrides``) for a file with no settings file above it."""
    root, pyproject = project_root(directory, cwd, find)
    length = ruff_line_length_of(pyproject) if pyproject is not None else None
    return build_config(overrides, root, ruff_line_length=length, origin="--config")


def parse_override(text: str) -> Dict[str, Any]:
    """``--config 'key = value'``: one setting, as TOML."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"--config {text!r} is neither a settings file nor a `key = value` setting ({e})") from None
    if len(table) != 1:
        raise ConfigError(f"--config {text!r} must set exactly one setting, as `key = value`")
    return check_table(table, f"--config {text!r}")


def _requirement_name(text: str) -> str:
    """The normalised project name a requirement string names (``vllm>=0.9`` -> ``vllm``)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else ""


#: The files that say what a project is and needs.
METADATA_FILES = ("pyproject.toml", "setup.cfg", "setup.py")


@lru_cache(maxsize=None)
def uses_vllm(root: Path) -> bool:
    """Whether the project at ``root`` is vLLM or depends on it, by the metadata
    of ``root`` or, where it has none, of the nearest directory above that has
    some (read as data, never run): a ``vllm`` package; the name or a
    requirement in ``pyproject.toml`` (``[project]``, Poetry's dependencies),
    ``setup.cfg``, ``setup.py`` (its string literals, parsed) or a
    ``requirements*.txt``."""
    for directory in (root, *root.parents):
        if (directory / "vllm" / "__init__.py").is_file():
            return True
        if any((directory / name).is_file() for name in METADATA_FILES) or any(directory.glob("requirements*.txt")):
            return _names_vllm(directory)
    return False


def _names_vllm(root: Path) -> bool:
    """Whether the metadata files in ``root`` name vLLM as the project or a requirement."""
    import ast
    import configparser

    named: List[str] = []
    try:
        data = read_toml(root / "pyproject.toml") if (root / "pyproject.toml").is_file() else {}
    except ConfigError:
        data = {}
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    named.append(str(project.get("name", "")))
    named.extend(str(r) for r in project.get("dependencies", []) or [])
    for extra in (project.get("optional-dependencies") or {}).values():
        named.extend(str(r) for r in extra or [])
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    named.extend(str(k) for k in (poetry.get("dependencies") or {}) if isinstance(poetry, dict))
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(setup_cfg, encoding="utf-8")
            named.append(parser.get("metadata", "name", fallback=""))
            named.extend(parser.get("options", "install_requires", fallback="").splitlines())
            if parser.has_section("options.extras_require"):
                named.extend(line for _, value in parser.items("options.extras_require") for line in value.splitlines())
        except (configparser.Error, UnicodeDecodeError, OSError):
            pass
    setup_py = root / "setup.py"
    if setup_py.is_file():
        try:
            tree = ast.parse(setup_py.read_bytes())
            named.extend(
                n.value
                for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 200
            )
        except (SyntaxError, ValueError, OSError, RecursionError):
            pass
    for requirements in [*root.glob("requirements*.txt"), *root.glob("requirements/*.txt")]:
        try:
            named.extend(requirements.read_text(encoding="utf-8", errors="replace").splitlines())
        except OSError:
            pass
    return any(_requirement_name(text) == "vllm" for text in named)


def build_config(
    files: Sequence[Mapping[str, Any]],
    root: Path,
    source: Optional[Path] = None,
    ruff_line_length: Optional[int] = None,
    origin: str = "settings",
) -> Config:
    """A :class:`Config` from layers of checked values (a file's, then the
    command line's), each later one overriding; rules resolve layer by layer."""
    merged: Dict[str, Any] = {}
    layers: List[RuleLayer] = []
    for values in files:
        merged.update(values)
        extend = tuple(values.get("extend-select", ())) + ((UNKNOWN_CODE,) if values.get("show-unknown") else ())
        layers.append(RuleLayer(values.get("select"), extend, tuple(values.get("ignore", ()))))
    check_consistent(merged, origin)
    rules = resolve_rules(layers)
    kwargs: Dict[str, Any] = {}
    for key, value in merged.items():
        if key in ("select", "extend-select", "ignore", "show-unknown"):
            continue
        kwargs[SETTINGS_BY_KEY[key].attribute] = value
    if "cache_dir" in kwargs:
        kwargs["cache_dir"] = Path(os.path.expanduser(kwargs["cache_dir"]))
        if not kwargs["cache_dir"].is_absolute():
            kwargs["cache_dir"] = root / kwargs["cache_dir"]
    if "line-length" not in merged and ruff_line_length is not None:
        kwargs["line_length"] = ruff_line_length
    if "helper" not in merged:
        kwargs["helper"] = DEFAULT_HELPER if uses_vllm(root) else None
    return Config(**kwargs, rules=rules, show_unknown=UNKNOWN_CODE in rules, root=root, source=source)


def config_of(found: SettingsFile, overrides: Sequence[Mapping[str, Any]] = ()) -> Config:
    """The settings of a settings file, then ``overrides``."""
    return build_config(
        [found.values, *overrides], found.path.parent.resolve(), found.path, found.ruff_line_length, str(found.path)
    )


def load_settings_file(path: Path) -> SettingsFile:
    """``--config FILE``: a ``pinfix.toml`` (top-level keys) or a
    ``pyproject.toml`` (``[tool.pinfix]``, which may be absent)."""
    if path.is_dir():
        raise ConfigError(f"--config {path}: is a directory")
    if not path.exists():
        raise ConfigError(f"--config {path}: no such file")
    data = read_toml(path, named=True)  # read once: a pipe gives its bytes once
    found = read_settings(path, data)
    return found if found is not None else SettingsFile(path, {}, _ruff_line_length(path, data))


def load_config(start: Optional[Path] = None, explicit: Optional[Path] = None) -> Config:
    """Settings from ``explicit`` or the settings file nearest ``start`` (a
    directory; the working directory by default)."""
    directory = str((start or Path.cwd()).resolve())
    found = load_settings_file(explicit) if explicit is not None else nearest(directory, settings_in)
    return config_of(found) if found is not None else default_config(directory)


def describe(config: Config) -> List[Tuple[str, str]]:
    """``(key, value)`` of every setting as it applies, for ``show-settings``."""
    out: List[Tuple[str, str]] = []
    for setting in SETTINGS:
        if setting.key in ("select", "extend-select", "ignore", "show-unknown"):
            continue
        value = getattr(config, setting.attribute)
        out.append((setting.key, _toml(value)))
    out.insert(0, ("rules", _toml(sorted(config.rules))))
    return out


def _toml(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        if value and isinstance(value[0], tuple):
            return "{" + ", ".join(f"{_toml(k)} = {_toml(v)}" for k, v in value) + "}"
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, (str, Path)):
        return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def settings_markdown() -> str:
    """The README's table of settings."""
    rows = ["| setting | option | default | what |", "| --- | --- | --- | --- |"]
    for setting in SETTINGS:
        option = f"`{setting.option}`" if setting.option else ""
        rows.append(f"| `{setting.key}` | {option} | {setting.default} | {setting.help} |")
    return "\n".join(rows) + "\n"


def settings_of(config: Config) -> "Settings":
    """What the analysis, the rules and the fixes need of ``config``."""
    from .settings import Settings

    return Settings(
        helper=config.helper,
        extra_pinned_producers=tuple(config.extra_pinned_producers),
        cpu_tensor_names=tuple(config.cpu_tensor_names),
        pin_memory_expr=config.pin_memory_expr,
        pin_memory_import=config.pin_memory_import,
        h2d_helper=config.h2d_helper,
        strict=config.strict,
        deep=config.deep,
        show_unknown=config.show_unknown,
        unsafe_fixes=config.unsafe_fixes,
        known_first_party=tuple(config.known_first_party),
        line_length=config.line_length,
        root=config.root,
        style_file=_style_file(config),
        formatter=config.formatter,
    )


def _style_file(config: Config) -> Optional[Path]:
    """The ``pyproject.toml`` holding the project's formatter and isort settings
    (named even where only a ruff settings file is there beside it)."""
    from .style import RUFF_FILES

    candidate = config.root / "pyproject.toml"
    if candidate.is_file() or any((config.root / name).is_file() for name in RUFF_FILES):
        return candidate
    return config.source if config.source is not None and config.source.name == "pyproject.toml" else None
