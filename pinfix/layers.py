"""The layers of the code and the import contract over them, as data.

data -> engine -> rules -> fixes -> shell -> front ends: a module may import
modules of its own layer or below, never above. ``tests/test_layers.py`` holds the
code to this contract, and ``python -m pinfix.docs`` makes the layout table of
``docs/architecture.md`` from it (one row per module, its docstring's first line).
"""

from __future__ import annotations

from typing import List, Tuple

#: Each layer, lowest first, with the modules in it (``pkg.*``: a package and
#: everything in it). Every module is listed; every name listed exists.
LAYERS: List[Tuple[str, Tuple[str, ...]]] = [
    (
        "data",
        (
            "pinfix",
            "pinfix.effects",
            "pinfix.settings",
            "pinfix.edits",
            "pinfix.findings",
            "pinfix.regular",
            "pinfix.diffs",
            "pinfix.layers",
        ),
    ),
    ("engine", ("pinfix.semantic.*", "pinfix.prefilter")),
    ("rules", ("pinfix.rules.*",)),
    ("fixes", ("pinfix.fixes.*", "pinfix.imports", "pinfix.layout", "pinfix.style", "pinfix.formatter")),
    (
        "shell",
        (
            "pinfix.engine",
            "pinfix.pool",
            "pinfix.project",
            "pinfix.suppression",
            "pinfix.files",
            "pinfix.writing",
            "pinfix.cache",
            "pinfix.deepcache",
            "pinfix.config",
            "pinfix.output",
            "pinfix.api",
        ),
    ),
    ("front ends", ("pinfix.cli", "pinfix.__main__", "pinfix.docs", "lint_rules.*", "codemods.*", "pinfix.runtime.*")),
]

#: The engine's modules, lowest first: each imports only modules before it.
SEMANTIC_ORDER = (
    "pinfix.semantic",
    "pinfix.semantic.values",
    "pinfix.semantic.source",
    "pinfix.semantic.roots",
    "pinfix.semantic.bodies",
    "pinfix.semantic.scope",
    "pinfix.semantic.fixtures",
    "pinfix.semantic.slices",
    "pinfix.semantic.state",
    "pinfix.semantic.aliasing",
    "pinfix.semantic.facts",
    "pinfix.semantic.narrowing",
    "pinfix.semantic.expressions",
    "pinfix.semantic.calls",
    "pinfix.semantic.flow",
    "pinfix.semantic.evaluator",
    "pinfix.semantic.module",
    "pinfix.semantic.deep",
    "pinfix.semantic.deep.searches",
    "pinfix.semantic.deep.summary",
    "pinfix.semantic.deep.store",
    "pinfix.semantic.deep.index",
    "pinfix.semantic.deep.words",
    "pinfix.semantic.deep.project",
)

#: Cycles there are today (each to be removed; none may be added): the engine's
#: evaluator names ModuleContext for the type checker.
KNOWN_CYCLES = (frozenset({"pinfix.semantic.evaluator", "pinfix.semantic.module"}),)


__all__ = ["KNOWN_CYCLES", "LAYERS", "SEMANTIC_ORDER"]
