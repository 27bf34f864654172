"""Each rule's documentation, read from its Fixit rule's docstring without importing Fixit.

The rules' documentation lives once, as the docstrings of the Fixit rules in
``pinfix.lint_rules`` (Fixit shows them too). The CLI (``pinfix rule``, SARIF output)
must work where Fixit is not installed (it is the ``pinfix[fixit]`` extra), so the
docstrings are read from the rule modules' source with :mod:`ast`, never by importing them.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
from functools import lru_cache
from pathlib import Path
from typing import Dict

from .patterns import RULE_NAMES


@lru_cache(maxsize=1)
def _class_docs() -> Dict[str, str]:
    # find_spec imports the parent package (pinfix) only, not pinfix.lint_rules itself.
    spec = importlib.util.find_spec("pinfix.lint_rules")
    docs: Dict[str, str] = {}
    for directory in (spec.submodule_search_locations or []) if spec is not None else []:
        for source in sorted(Path(directory).glob("*.py")):
            try:
                tree = ast.parse(source.read_bytes(), filename=str(source))
            except (OSError, SyntaxError, ValueError):
                continue
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    doc = ast.get_docstring(node, clean=False)
                    if doc:
                        docs.setdefault(node.name, inspect.cleandoc(doc))
    return docs


def rule_doc(code: str) -> str:
    """The documentation of rule ``code`` (``PIN001``...); ``""`` when it cannot be found."""
    name = RULE_NAMES.get(code.upper())
    return _class_docs().get(name, "") if name is not None else ""
