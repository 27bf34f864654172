"""Rewrite pageable sources of non_blocking copies to the pinned helper.

``dst.copy_(torch.from_numpy(a), non_blocking=True)`` becomes
``dst.copy_(np_to_pinned_tensor(a), non_blocking=True)`` (PIN001), and the
helper is imported where isort would put it; a CPU factory such as
``torch.tensor(ids)`` feeding such a copy gets ``pin_memory=<expr>`` (PIN002,
``[tool.pinfix] pin-memory-expr``, its import from ``pin-memory-import``).
Run it from any project with::

    python -m libcst.tool codemod --no-format -x pinfix.codemods.pin_pageable_sources.PinPageableSourcesCommand PATH

(it ships as ``pinfix.codemods``; the statements it changes are laid out by
:func:`pinfix.layout.relayout`, so LibCST's formatter step is not wanted).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Collection, Dict, List, Optional

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext

from pinfix.analysis import (
    REQUIRED_METADATA,
    SAFE,
    UNSAFE,
    Finding,
    analyze,
    helper_local_name,
)
from pinfix.config import Config, load_config
from pinfix.h2d import H2DPlan, helper_parts
from pinfix.h2d import local_name as h2d_local_name
from pinfix.imports import (
    Sections,
    add_from_import,
    first_party_detector,
    imported_local_name,
    remove_unused_imports,
)
from pinfix.layout import relayout
from pinfix.style import project_style


class _ReplaceCalls(cst.CSTTransformer):
    def __init__(
        self,
        targets: Dict[cst.Call, str],
        pin: Dict[cst.Call, cst.BaseExpression],
        h2d: Optional[Dict[cst.Call, H2DPlan]] = None,
        h2d_local: str = "",
    ):
        super().__init__()
        self.targets = targets
        self.pin = pin
        self.h2d = h2d or {}
        self.h2d_local = h2d_local
        #: The parts an h2d rewrite keeps, as rewritten themselves (original -> updated).
        self.keep = {id(n) for p in self.h2d.values() for n in (p.data, p.device, p.dtype) if n is not None}
        self.updated: Dict[cst.CSTNode, cst.CSTNode] = {}

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[no-untyped-def]
        result = super().on_leave(original_node, updated_node)
        if id(original_node) in self.keep and isinstance(result, cst.CSTNode):
            self.updated[original_node] = result
        return result

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        plan = self.h2d.get(original_node)
        if plan is not None:
            new = plan.replacement(self.h2d_local, self.updated)
            return new.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        expr = self.pin.get(original_node)
        if expr is not None:
            return _add_keyword(updated_node, "pin_memory", expr)
        local = self.targets.get(original_node)
        if local is None:
            return updated_node
        # Keep the arguments and every bit of whitespace and comment inside them.
        return updated_node.with_changes(func=cst.Name(local))


def _add_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """``f(a, b)`` -> ``f(a, b, keyword=value)``; a trailing comma (and the line
    break after it) stays last."""
    new = cst.Arg(
        keyword=cst.Name(keyword),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    # The space (or line break) before `)` or the trailing comma moves after the new argument.
    new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
    if isinstance(last.comma, cst.Comma):
        new = new.with_changes(comma=last.comma)
    args[-1] = last.with_changes(
        whitespace_after_arg=cst.SimpleWhitespace(""), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    )
    return call.with_changes(args=[*args, new])


def _root_name(func: cst.BaseExpression) -> str:
    """The name a dropped callee reads: ``torch`` of ``torch.from_numpy``."""
    while isinstance(func, cst.Attribute):
        func = func.value
    return func.value if isinstance(func, cst.Name) else ""


def _laid_out(tree: cst.Module, fixed: cst.Module, config: Config) -> cst.Module:
    """``fixed`` with the statements the fix changed laid out as the project's formatter would."""
    fmt = project_style(config.source, config.line_length).format
    code = relayout(
        tree.code, fixed.code, fmt.line_length,
        indent_width=fmt.indent_width, skip_magic_trailing_comma=fmt.skip_magic_trailing_comma,
    )
    return fixed if code == fixed.code else cst.parse_module(code).with_changes(encoding=fixed.encoding)


class PinPageableSourcesCommand(CodemodCommand):
    DESCRIPTION = "Make the sources of non_blocking host-to-device copies pinned (pinfix PIN001, PIN002)."
    METADATA_DEPENDENCIES = REQUIRED_METADATA

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
        base = config if config is not None else load_config(Path(context.filename).parent if context.filename else None)
        self.config = base.with_overrides(helper=helper, unsafe_fixes=unsafe_fixes, strict=strict, h2d_helper=h2d_helper)
        #: Every finding of the last module transformed, and those the transform fixed.
        self.findings: List[Finding] = []
        self.applied: List[Finding] = []

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--helper", default=None, help="module.path.name of the pinned helper")
        arg_parser.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply unsafe fixes")
        arg_parser.add_argument("--h2d-helper", default=None, help="module.path.name of async_tensor_h2d-like helper")
        arg_parser.add_argument("--strict", action="store_true", default=None, help="also fix non_blocking=<expr>")

    def transform_module(self, tree: cst.Module) -> cst.Module:
        fixed = super().transform_module(tree)
        if fixed is tree or not fixed.body or not tree.body:
            return fixed
        # Removing an unused first import can leave the helper's import first in
        # the file, still carrying the blank line that separated its section.
        first = fixed.body[0]
        if first.leading_lines and not tree.body[0].leading_lines and first.leading_lines[0].comment is None:
            kept = list(first.leading_lines)
            while kept and kept[0].comment is None:
                kept.pop(0)
            fixed = fixed.with_changes(body=[first.with_changes(leading_lines=kept), *fixed.body[1:]])
        return _laid_out(tree, fixed, self.config)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        path = Path(self.context.filename) if self.context.filename else None
        self.findings = analyze(tree, self.get_metadata, self.config, path)
        allowed = {SAFE, UNSAFE} if self.config.unsafe_fixes else {SAFE}
        self.applied = [
            f for f in self.findings if f.fix_safety in allowed and (self.codes is None or f.code in self.codes)
        ]
        if not self.applied:
            return tree
        imported = helper_local_name(tree, self.config)
        local = imported or self.config.helper_name
        targets = {call: local for f in self.applied if f.fix_kind == "helper" for call in f.edits}
        expr = self.config.pin_memory_expr or "True"
        pin = {call: cst.parse_expression(expr) for f in self.applied if f.fix_kind == "pin_memory" for call in f.edits}
        h2d = {call: f.h2d for f in self.applied if f.fix_kind == "h2d" and f.h2d is not None for call in f.edits}
        dropped = [call.func for call in targets] + [func for plan in h2d.values() for func in plan.dropped]
        h2d_helper = self.config.h2d_helper or ""
        h2d_local = h2d_local_name(tree, h2d_helper) if h2d else ""
        tree = tree.visit(_ReplaceCalls(targets, pin, h2d, h2d_local))
        # `from torch import from_numpy`, `import torch` or `import torch.nn` may now be
        # unused (removed before the new imports are placed, so sections stay apart).
        tree = remove_unused_imports(tree, {_root_name(func) for func in dropped} - {""})
        needed = []
        if targets and imported is None:
            needed.append((self.config.helper_module, self.config.helper_name))
        if h2d and imported_local_name(tree, *helper_parts(h2d_helper)) is None:
            needed.append(helper_parts(h2d_helper))
        pin_import = self.config.pin_memory_import
        if pin and pin_import is not None:
            module, _, name = pin_import.rpartition(".")
            if imported_local_name(tree, module, name) is None:
                needed.append((module, name))
        if needed:
            style = project_style(self.config.source, self.config.line_length)
            isort = style.isort
            if isort.unsupported:
                # Not followed: each import is its own statement, which the project's
                # own `ruff check --fix` can place; the fix says so.
                isort = replace(isort, force_single_line=True)
                note = f"import added as its own statement (isort settings not followed: {', '.join(isort.unsupported)})"
                for f in self.applied:
                    f.fix_note = f"{f.fix_note}; {note}" if f.fix_note else note
            sections = Sections(first_party_detector(path, self.config.root, self.config.known_first_party), isort)
            for module, name in needed:
                tree = add_from_import(tree, module, name, sections=sections, line_length=style.format.line_length)
        return tree
