"""The engine: what host/device memory each expression holds, at each point, and why.

One question, answered for every non_blocking copy of a module: what memory
does its CPU side hold here, on each path, and how did it get there
(:class:`~pinfix.semantic.values.Value`, with evidence chains). Rules
(:mod:`pinfix.rules`) only ask; they never read syntax themselves beyond what
the facts give them.

- :mod:`.values`: the abstract values (tensors, arrays, containers, ...);
- :mod:`.source`, :mod:`.scope`: text and positions; bindings and scopes;
- :mod:`.state`: environments; :mod:`.expressions`, :mod:`.calls`, :mod:`.flow`:
  the transfer functions, driven by :mod:`pinfix.effects`;
- :mod:`.evaluator`, :mod:`.module`: one function, one module; :mod:`.roots`: where a
  module's file is (import roots); :mod:`.deep`: deep mode;
- :mod:`.facts`: what rules read.

The names below are imported when first asked for (PEP 562): a module that only
needs :mod:`.roots` (where a project's files are; the check cache's listing)
does not load the analysis with it.
"""

from importlib import import_module
from typing import Any

#: Public name -> the submodule that defines it.
_EXPORTS = {
    "Copy": "facts",
    "FunctionFacts": "facts",
    "HostRead": "facts",
    "ModuleFacts": "facts",
    "analyze_module": "module",
    "hot_lines": "module",
    "SourceError": "source",
    "SourceText": "source",
}

__all__ = [
    "Copy",
    "FunctionFacts",
    "HostRead",
    "ModuleFacts",
    "SourceError",
    "SourceText",
    "analyze_module",
    "hot_lines",
]


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value
