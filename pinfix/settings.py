"""What the analysis, the rules and the fixes need to know of the settings.

A plain frozen record at the bottom of the layers: the shell
(:mod:`pinfix.config`) reads ``[tool.pinfix]`` and builds one; the engine,
rules and fixes never read configuration files themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import FrozenSet, Optional, Tuple

from .effects import DEFAULT_HELPER

#: The values of the ``formatter`` setting (:mod:`pinfix.formatter`).
FORMATTERS = ("auto", "ruff", "black", "builtin")


@dataclass(frozen=True)
class Settings:
    #: ``module.path.name`` of the pinned drop-in for ``torch.from_numpy``;
    #: ``None``: none, and the fix appends ``.pin_memory()`` instead.
    helper: Optional[str] = DEFAULT_HELPER
    #: Functions (``module.path.name``) that return pinned CPU memory, beyond ``helper``.
    extra_pinned_producers: Tuple[str, ...] = ()
    #: fnmatch patterns of names that hold CPU tensors by the project's convention.
    cpu_tensor_names: Tuple[str, ...] = ()
    #: PIN002's fix: ``pin_memory=<expr>``; ``None``: ``True`` (unsafe).
    pin_memory_expr: Optional[str] = None
    #: ``module.path.name`` to import for ``pin_memory_expr``.
    pin_memory_import: Optional[str] = None
    #: ``(data, device, dtype=None)`` helper that pins and copies (vLLM's ``async_tensor_h2d``).
    h2d_helper: Optional[str] = None
    #: Also report ``non_blocking=<expression>``.
    strict: bool = False
    #: Follow tensors across functions, attributes and files.
    deep: bool = False
    #: Note copies whose source memory cannot be told (PIN004).
    show_unknown: bool = False
    #: Apply unsafe fixes too.
    unsafe_fixes: bool = False
    #: isort: top-level packages that are first-party beyond what is found on disk.
    known_first_party: Tuple[str, ...] = ()
    #: Where a merged import wraps, and a rewritten line may not go past.
    line_length: int = 88
    #: The project's root (isort's first-party detection, deep mode's module roots).
    root: Path = field(default_factory=Path.cwd)
    #: The ``pyproject.toml`` whose formatter and isort settings fixes follow.
    style_file: Optional[Path] = None
    #: How a fix's changed lines are laid out: ``auto``, ``ruff``, ``black`` or ``builtin``.
    formatter: str = "auto"

    @property
    def helper_module(self) -> str:
        return (self.helper or "").rpartition(".")[0]

    @property
    def helper_name(self) -> str:
        return (self.helper or "").rpartition(".")[2]

    @property
    def fix_imports(self) -> Tuple[str, ...]:
        """The names a fix may import into a module (a name bound there already makes
        the fix different)."""
        return tuple(q.rpartition(".")[2] for q in (self.helper, self.pin_memory_import, self.h2d_helper) if q)

    @property
    def pinned_producers(self) -> FrozenSet[str]:
        """vLLM's helper always (what it returns is pinned, configured or not), the
        configured helper and ``pinned-producers``."""
        return frozenset((DEFAULT_HELPER, *((self.helper,) if self.helper else ()), *self.extra_pinned_producers))
