"""Deep mode: follow a CPU tensor out of the function that copies it.

Plain mode sees one function: a parameter, an attribute or a call's result is
*unknown* there. Deep mode (``pinfix check --deep``, ``deep = true``) answers
those with project-wide summaries, computed on demand and memoised per file:

- :mod:`.modules` finds the file of a module name (the project's import roots);
- :mod:`.resolver` answers ``self.x`` / ``obj.x`` (every assignment to the
  attribute in the class and its project bases) and ``f(...)`` /
  ``self.m(...)`` (every ``return`` of the function, in any project module),
  with the same analysis (:mod:`pinfix.analysis`) run in that function, so one
  set of rules decides pinned, pageable or unknown everywhere.

Unknown stays unknown: only a source every path shows pageable is reported.
"""

from .resolver import ProjectResolver, project_resolver

__all__ = ["ProjectResolver", "project_resolver"]
