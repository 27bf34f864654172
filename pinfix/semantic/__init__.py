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
- :mod:`.evaluator`, :mod:`.module`: one function, one module;
- :mod:`.facts`: what rules read.
"""

from .facts import Copy, FunctionFacts, HostRead, ModuleFacts
from .module import analyze_module, hot_lines
from .source import SourceError, SourceText

__all__ = ["Copy", "FunctionFacts", "HostRead", "ModuleFacts", "SourceError", "SourceText", "analyze_module", "hot_lines"]
