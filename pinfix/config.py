"""``[tool.pinfix]`` settings, read as data from the nearest ``pyproject.toml``."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, FrozenSet, Optional, Tuple

from .effects import DEFAULT_HELPER

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib


class ConfigError(Exception):
    """A configuration file that cannot be used; the message names it."""


@dataclass(frozen=True)
class Config:
    #: ``module.path.name`` of the pinned drop-in for ``torch.from_numpy``.
    helper: str = DEFAULT_HELPER
    #: gitignore-style patterns, relative to ``root``, never walked into.
    exclude: Tuple[str, ...] = ()
    #: Also report ``non_blocking=<expression>`` that is not a literal.
    strict: bool = False
    #: Apply fixes that could change behaviour (see each finding's reason).
    unsafe_fixes: bool = False
    #: Top-level packages isort treats as first-party, beyond what it can see on disk.
    known_first_party: Tuple[str, ...] = ()
    #: Where isort wraps a ``from`` import (``[tool.ruff] line-length`` when set).
    line_length: int = 88
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
    #: Deep mode: also report sources whose memory cannot be told (informational).
    show_unknown: bool = False
    #: Directory of the ``pyproject.toml`` the settings came from (or the cwd).
    root: Path = field(default_factory=Path.cwd)
    #: Where the settings came from, for messages.
    source: Optional[Path] = None

    @property
    def helper_module(self) -> str:
        return self.helper.rpartition(".")[0]

    @property
    def helper_name(self) -> str:
        return self.helper.rpartition(".")[2]

    @property
    def pinned_producers(self) -> FrozenSet[str]:
        return frozenset((self.helper, *self.extra_pinned_producers))

    def with_overrides(self, **changes: Any) -> "Config":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


_KEYS = {
    "helper": str,
    "exclude": list,
    "extend-exclude": list,
    "strict": bool,
    "unsafe-fixes": bool,
    "known-first-party": list,
    "line-length": int,
    "pin-memory-expr": str,
    "pin-memory-import": str,
    "pinned-producers": list,
    "cpu-tensor-names": list,
    "h2d-helper": str,
    "deep": bool,
    "show-unknown": bool,
}


def _require_dotted(where: Path, what: str, name: str, shape: str = "package.module.function") -> None:
    """A dotted name of a module's member, or a :class:`ConfigError` saying so."""
    if "." not in name or not all(part.isidentifier() for part in name.split(".")):
        raise ConfigError(f"{where}: [tool.pinfix] {what} must look like '{shape}', got {name!r}")


def _validate(table: Dict[str, Any], where: Path) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in table.items():
        expected = _KEYS.get(key)
        if expected is None:
            raise ConfigError(f"{where}: unknown key [tool.pinfix] {key!r} (known: {', '.join(sorted(_KEYS))})")
        if not isinstance(value, expected) or (
            expected is list and not all(isinstance(v, str) for v in value)
        ):
            kind = "a list of strings" if expected is list else expected.__name__
            raise ConfigError(f"{where}: [tool.pinfix] {key} must be {kind}")
        out[key] = value
    for key in ("helper", "h2d-helper"):
        if out.get(key) is not None:
            _require_dotted(where, key, out[key])
    for producer in out.get("pinned-producers", ()):
        _require_dotted(where, "pinned-producers entries", producer)
    expr = out.get("pin-memory-expr")
    if expr is not None:
        import ast

        try:
            ast.parse(expr, mode="eval")
        except SyntaxError:
            raise ConfigError(f"{where}: [tool.pinfix] pin-memory-expr must be a Python expression, got {expr!r}") from None
    imported = out.get("pin-memory-import")
    if imported is not None:
        _require_dotted(where, "pin-memory-import", imported, "package.module.name")
        if expr is None:
            raise ConfigError(f"{where}: [tool.pinfix] pin-memory-import needs pin-memory-expr")
    return out


def find_pyproject(start: Path) -> Optional[Path]:
    """The nearest ``pyproject.toml`` at or above ``start``."""
    start = start.resolve()
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Optional[Path] = None, explicit: Optional[Path] = None) -> Config:
    """Settings from ``explicit`` or the nearest ``pyproject.toml`` above ``start``."""
    path = explicit if explicit is not None else find_pyproject(start or Path.cwd())
    if path is None:
        return Config(root=(start or Path.cwd()).resolve())
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    table = data.get("tool", {}).get("pinfix", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.pinfix] must be a table")
    values = _validate(table, path)
    ruff = data.get("tool", {}).get("ruff", {})
    line_length = values.get("line-length", ruff.get("line-length") if isinstance(ruff, dict) else None)
    return Config(
        helper=values.get("helper", DEFAULT_HELPER),
        exclude=tuple(values.get("exclude", ())) + tuple(values.get("extend-exclude", ())),
        strict=values.get("strict", False),
        unsafe_fixes=values.get("unsafe-fixes", False),
        known_first_party=tuple(values.get("known-first-party", ())),
        pin_memory_expr=values.get("pin-memory-expr"),
        pin_memory_import=values.get("pin-memory-import"),
        extra_pinned_producers=tuple(values.get("pinned-producers", ())),
        cpu_tensor_names=tuple(values.get("cpu-tensor-names", ())),
        h2d_helper=values.get("h2d-helper"),
        deep=values.get("deep", False),
        show_unknown=values.get("show-unknown", False),
        line_length=line_length if isinstance(line_length, int) and line_length > 0 else 88,
        root=path.parent.resolve(),
        source=path,
    )


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
    )
