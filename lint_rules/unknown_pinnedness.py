"""PIN004: a non_blocking copy whose CPU side pinfix cannot tell pinned or pageable (informational)."""

from __future__ import annotations

from typing import List

import libcst as cst
from fixit import LintRule, Valid

from pinfix.analysis import REQUIRED_METADATA
from pinfix.config import load_config

from ._report import report_findings

_H = "import torch\n\n\n"


class UnknownPinnedness(LintRule):
    """
    PIN004: the source of a non_blocking copy may be pageable; pinfix cannot tell (informational).

    ## What it does
    Only with ``--show-unknown`` (``show-unknown = true`` in ``[tool.pinfix]``), and most useful
    with ``--deep``: notes each host-to-device copy requested with ``non_blocking=True`` whose
    CPU source pinfix can show neither pinned nor pageable: a parameter, an attribute with an
    assignment it cannot read, the result of a call outside the project, a value it does not
    follow. The note says which of these stopped it.

    ## Why is this bad?
    It may not be. PIN001 and PIN002 report only sources that every path shows pageable, so
    their precision stays high; this note lists the rest, for a reviewer who wants to check
    each copy once (vLLM's runtime checker finds such sources only on the code paths a test
    runs). A note never fails a run: ``pinfix check`` exits 0 when notes are all it has.

    ## Example
    ```python
    def upload(host, dev):
        return host.to(dev, non_blocking=True)  # is `host` pinned? the caller decides
    ```

    ## Fix safety
    No fix: pin the tensor where it is made, or add the producer to
    ``[tool.pinfix] pinned-producers`` when it always returns pinned memory.
    """

    METADATA_DEPENDENCIES = REQUIRED_METADATA

    # With the default settings (no ``show-unknown``) the rule stays silent.
    VALID = [
        Valid(_H + "def f(host, dev):\n    return host.to(dev, non_blocking=True)\n"),
        Valid(_H + "def f(n, dev):\n    return torch.zeros(n, pin_memory=True).to(dev, non_blocking=True)\n"),
    ]
    INVALID = []  # type: ignore[var-annotated]

    def __init__(self) -> None:
        super().__init__()
        # Fixit gives rules no file path: settings come from the working directory's project.
        self.config = load_config()

    def visit_Module(self, node: cst.Module) -> None:
        if self.config.show_unknown:
            report_findings(self, node, "PIN004")


__all__: List[str] = ["UnknownPinnedness"]
