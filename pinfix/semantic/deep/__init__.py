"""Deep mode: the whole project, from per-module summaries.

- :mod:`.summary`: what one module says (imports, classes, functions, call sites,
  attribute stores), from one parse, depending on no other module: plain data;
- :mod:`.store`: summaries kept by their file's content hash (memoised in the
  process, and in pinfix's cache directory when a run has one);
- :mod:`.index`: the project's reverse indexes built from the summaries (who calls
  a name, who stores an attribute, which classes name a base): exact, no caps;
- :mod:`.project`: the project the evaluator asks (:class:`.project.DeepProject`).
"""
