"""Rewrite pageable sources of non_blocking copies to the pinned helper.

``dst.copy_(torch.from_numpy(a), non_blocking=True)`` becomes
``dst.copy_(np_to_pinned_tensor(a), non_blocking=True)`` (PIN001), and the
helper is imported where isort would put it; a CPU factory such as
``torch.tensor(ids)`` feeding such a copy gets ``pin_memory=<expr>`` (PIN002,
``[tool.pinfix] pin-memory-expr``, its import from ``pin-memory-import``).
Run it with::

    python -m libcst.tool codemod pin_pageable_sources.PinPageableSourcesCommand PATH

(with ``codemods`` listed under ``modules`` in ``.libcst.codemod.yaml``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Collection, List, Optional

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext

from pinfix.config import Config, load_config, settings_of
from pinfix.edits import Applicability
from pinfix.engine import analyse
from pinfix.findings import FileReport
from pinfix.fixes import FixError, fix_findings
from pinfix.rules import Finding


class PinPageableSourcesCommand(CodemodCommand):
    DESCRIPTION = "Make the sources of non_blocking host-to-device copies pinned (pinfix PIN001, PIN002)."

    def __init__(
        self,
        context: CodemodContext,
        helper: Optional[str] = None,
        unsafe_fixes: Optional[bool] = None,
        strict: Optional[bool] = None,
        config: Optional[Config] = None,
        codes: Optional[Collection[str]] = None,
        h2d_helper: Optional[str] = None,
    ) -> None:
        super().__init__(context)
        #: Apply only the fixes of these rule codes (all when ``None``).
        self.codes = frozenset(codes) if codes is not None else None
        base = (
            config if config is not None else load_config(Path(context.filename).parent if context.filename else None)
        )
        self.config = base.with_overrides(
            helper=helper, unsafe_fixes=unsafe_fixes, strict=strict, h2d_helper=h2d_helper
        )
        #: Every finding of the last module transformed, and those the transform fixed.
        self.findings: List[Finding] = []
        self.applied: List[Finding] = []

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--helper", default=None, help="module.path.name of the pinned helper")
        arg_parser.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply unsafe fixes")
        arg_parser.add_argument("--h2d-helper", default=None, help="module.path.name of async_tensor_h2d-like helper")
        arg_parser.add_argument("--strict", action="store_true", default=None, help="also fix non_blocking=<expr>")

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """The engine on the module's text, then the shared applier (:func:`pinfix.fixes.apply_fixes`)."""
        filename = self.context.filename or "<codemod>"
        report = FileReport(filename)
        found = analyse(filename, tree.bytes, self.config, report)
        if found is None:
            return tree
        src, self.findings = found
        path = Path(self.context.filename) if self.context.filename else None
        required = Applicability.required(bool(self.config.unsafe_fixes))
        try:
            result = fix_findings(src, self.findings, settings_of(self.config), path, required, self.codes)
        except FixError:
            result = None
        if result is None:
            self.applied = []
            return tree
        self.applied = [self.findings[i] for i in result.applied]
        if result.warning:
            self.warn(result.warning)  # the project's formatter was not used; LibCST prints it
        return cst.parse_module(result.text) if result.applied else tree
