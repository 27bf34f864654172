"""The ``[tool.pinfix] h2d-helper`` fix: ``SRC.to(DEVICE, non_blocking=True)``
becomes ``async_tensor_h2d(DATA, DEVICE)``.

vLLM's ``async_tensor_h2d(data, device, dtype=None)`` turns an ndarray into a
tensor with ``torch.from_numpy``, pins a tensor (a copy, made when it is called),
makes anything else with ``torch.tensor(data, dtype=dtype, pin_memory=...)``,
then returns ``t.to(device=device, dtype=dtype, non_blocking=True)``. So:

- ``torch.from_numpy(X).to(D[, T], non_blocking=True)`` -> ``async_tensor_h2d(X, device=D[, dtype=T])``;
- ``torch.tensor(DATA[, dtype=T]).to(D, non_blocking=True)`` -> ``async_tensor_h2d(DATA, device=D[, dtype=T])``
  when ``DATA`` is plainly Python data (a display, a number, ``.tolist()``): the
  helper then runs the very same ``torch.tensor`` call. Not for an ndarray
  (``from_numpy`` rejects negative strides where ``torch.tensor`` copies), not
  with ``.to``'s own dtype (``torch.tensor(d).to(T)`` rounds through the
  inferred dtype, ``torch.tensor(d, dtype=T)`` does not), not with other keywords;
- a CPU tensor expression ``E`` pinfix traced (a local name, a view, a
  conversion) -> ``async_tensor_h2d(E, D[, dtype=T])``: the helper reads ``E``
  when it is called, as ``.to`` does.

The shapes are vLLM's own (0.29.0 / 0.30.0): a device keyword for array and
list data, a positional device for tensors, ``dtype=`` always by keyword.
Anything else (``copy=``, ``memory_format=``, a possible ``.to(other_tensor)``,
comments inside the call that would be lost, the helper's name bound to
something else, the helper's own module) gets no such fix; the finding keeps
the fix it has without the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import ScopeProvider

from .imports import imported_local_name
from .syntax import code_of, comments, keyword_arg, literal_bool, positional_args, single_positional, string_value

if TYPE_CHECKING:
    from .analysis import _ModuleAnalysis, _Origin, _Sink

_TO_KEYWORDS = frozenset({"device", "dtype", "non_blocking"})


@dataclass(frozen=True)
class H2DPlan:
    """How to rewrite one ``.to`` call; the nodes are the original tree's."""

    data: cst.BaseExpression
    device: cst.BaseExpression
    device_keyword: bool
    dtype: Optional[cst.BaseExpression]
    #: ``func`` of calls that disappear (``torch.from_numpy``, ``torch.tensor``):
    #: their imports may become unused.
    dropped: Tuple[cst.BaseExpression, ...] = ()

    def replacement(self, local: str, updated: "dict[cst.CSTNode, cst.CSTNode]") -> cst.Call:
        def arg(value: cst.BaseExpression, keyword: Optional[str] = None) -> cst.Arg:
            value = updated.get(value, value)  # type: ignore[assignment]
            if keyword is None:
                return cst.Arg(value=value)
            equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
            return cst.Arg(keyword=cst.Name(keyword), value=value, equal=equal)

        args = [arg(self.data), arg(self.device, "device" if self.device_keyword else None)]
        if self.dtype is not None:
            args.append(arg(self.dtype, "dtype"))
        return cst.Call(func=cst.Name(local), args=args)


def helper_parts(qualified: str) -> Tuple[str, str]:
    module, _, name = qualified.rpartition(".")
    return module, name


def local_name(module: cst.Module, qualified: str) -> str:
    """The name the helper is (or will be) called by in ``module``."""
    mod, name = helper_parts(qualified)
    return imported_local_name(module, mod, name) or name


def plan(an: "_ModuleAnalysis", call: cst.Call, sink: "_Sink", origin: "_Origin") -> Optional[Tuple[H2DPlan, Optional[str]]]:
    """The rewrite of ``call`` and, when it is unsafe, why; ``None``: no such fix here."""
    qualified = an.config.h2d_helper
    trace = origin.trace
    if qualified is None or sink.spec.method != "to" or sink.non_blocking is not True or trace is None:
        return None
    if trace.pinned or trace.source is None or trace.via is not None or trace.gapped:
        return None
    if _is_module(an.path, helper_parts(qualified)[0]):
        return None
    func = call.func
    if not isinstance(func, cst.Attribute) or "torch.Tensor.to" in an.qualified_names(func):
        return None
    parsed = _to_arguments(an, call)
    if parsed is None:
        return None
    device, device_given_by_keyword, dtype = parsed
    source = sink.source
    direct = origin.bound_name is None and isinstance(source, cst.Call) and any(c is source for c in origin.calls)
    dropped: Tuple[cst.BaseExpression, ...] = ()
    if direct:
        assert isinstance(source, cst.Call)
        name = origin.source.qualified_name
        if name == "torch.from_numpy":
            only = single_positional(source)
            if only is None:
                return None
            data = only.value
        elif name == "torch.tensor":
            found = _tensor_data(an, source, dtype)
            if found is None:
                return None
            data, dtype = found
        else:
            return None  # a factory keeps its own `pin_memory=` fix
        dropped = (source.func,)
        the_plan = H2DPlan(data, device, True, dtype, dropped)
    else:
        the_plan = H2DPlan(source, device, False, dtype)
    if _loses_comments(call, the_plan):
        return None
    local = local_name(an.module, qualified)
    if an.name_taken(call, local, qualified) is not None:
        return None
    reason = None if direct or _plainly_accelerator(an, device) else _other_use(an, sink, trace)
    return the_plan, reason


def _to_arguments(an: "_ModuleAnalysis", call: cst.Call) -> Optional[Tuple[cst.BaseExpression, bool, Optional[cst.BaseExpression]]]:
    """``(device, by keyword, dtype)`` of ``.to(device[, dtype][, non_blocking])``;
    ``None`` for any other signature (``copy=``, ``memory_format=``, ``to(other)``)."""

    if any(a.star for a in call.args):
        return None
    if any(a.keyword is not None and a.keyword.value not in _TO_KEYWORDS for a in call.args):
        return None
    positional = positional_args(call)
    device_kw, dtype_kw = keyword_arg(call, "device"), keyword_arg(call, "dtype")
    dtype = dtype_kw.value if dtype_kw is not None else None
    if device_kw is not None:
        if positional:
            return None
        return device_kw.value, True, dtype
    if not positional or len(positional) > 3 or not _plainly_device(an, positional[0].value):
        return None
    rest = [a.value for a in positional[1:]]
    if rest and literal_bool(rest[-1]) is not None:
        rest = rest[:-1]  # the positional non_blocking
    if len(rest) > 1 or any(literal_bool(v) is not None for v in rest):
        return None
    if rest:
        if dtype is not None:
            return None
        dtype = rest[0]
    return positional[0].value, False, dtype


def _plainly_device(an: "_ModuleAnalysis", expr: cst.BaseExpression) -> bool:
    """A positional ``.to`` argument that is a device, not a tensor (``to(other)``
    would also take the other tensor's dtype)."""
    if isinstance(expr, (cst.SimpleString, cst.Integer)):
        return True
    if isinstance(expr, cst.Call):
        return "torch.device" in an.qualified_names(expr.func)
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "device" or expr.attr.value.endswith("_device")
    if isinstance(expr, cst.Name):
        return "device" in expr.value or expr.value in ("dev", "target_dev")
    return False


def _plainly_accelerator(an: "_ModuleAnalysis", expr: cst.BaseExpression) -> bool:

    text = string_value(expr)
    if text is None and isinstance(expr, cst.Call) and "torch.device" in an.qualified_names(expr.func):
        first = [a for a in expr.args if a.keyword is None]
        text = string_value(first[0].value) if first else None
    return text is not None and text.split(":", 1)[0].strip() not in ("cpu", "meta")


def _tensor_data(
    an: "_ModuleAnalysis", source: cst.Call, to_dtype: Optional[cst.BaseExpression]
) -> Optional[Tuple[cst.BaseExpression, Optional[cst.BaseExpression]]]:
    """``torch.tensor(DATA[, dtype=T])`` the helper would make the same way."""

    if len(source.args) < 1 or source.args[0].keyword is not None or source.args[0].star:
        return None
    for a in source.args[1:]:
        if a.keyword is None or a.keyword.value == "device" and an.is_plainly_cpu(a.value):
            if a.keyword is None:
                return None  # a second positional
        elif a.keyword.value != "dtype":
            return None  # requires_grad=, pin_memory=, an accelerator device=
    dtype_kw = keyword_arg(source, "dtype")
    if to_dtype is not None and (dtype_kw is None or code_of(dtype_kw.value) != code_of(to_dtype)):
        return None  # `.to(T)` converts after torch.tensor inferred its own dtype
    data = source.args[0].value
    if not _python_data(an, data, 0):
        return None
    return data, dtype_kw.value if dtype_kw is not None else None


def _python_data(an: "_ModuleAnalysis", expr: cst.BaseExpression, depth: int) -> bool:
    """Plainly a Python list, tuple or number (not an ndarray, not a tensor)."""
    if depth > 4:
        return False
    if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp, cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return isinstance(expr.expression, (cst.Integer, cst.Float))
    if isinstance(expr, cst.Call):
        return isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "tolist" and not expr.args
    if isinstance(expr, cst.Name):
        found = an.reaching_values(expr)
        if found is None:
            return _list_parameter(an, expr)
        return all(v is not None and _python_data(an, v, depth + 1) for _, v in found)
    return False


def _list_parameter(an: "_ModuleAnalysis", name: cst.Name) -> bool:
    """A parameter annotated ``list[...]`` / ``tuple[...]`` and never rebound."""
    scope = an.md(ScopeProvider, name, None)
    if scope is None:
        return False
    access = next((a for a in scope.accesses[name.value] if a.node is name), None)
    if access is None or len(access.referents) != 1:
        return False
    (ref,) = access.referents
    param = getattr(ref, "node", None)
    if not isinstance(param, cst.Param) or param.annotation is None or len(scope.assignments[name.value]) != 1:
        return False
    kind = param.annotation.annotation
    if isinstance(kind, cst.Subscript):
        kind = kind.value
    return isinstance(kind, cst.Name) and kind.value in ("list", "List", "tuple", "Tuple")


def _loses_comments(call: cst.Call, the_plan: H2DPlan) -> bool:
    kept = [the_plan.data, the_plan.device] + ([the_plan.dtype] if the_plan.dtype is not None else [])
    inside: Set[int] = {id(c) for node in kept for c in comments(node)}
    return any(id(c) not in inside for c in comments(call))


def _other_use(an: "_ModuleAnalysis", sink: "_Sink", trace) -> Optional[str]:  # type: ignore[no-untyped-def]
    """A use of a name on the way to the copy, other than the way itself."""
    values = [an.assigned_value(b) for b in trace.bindings]
    containers = [sink.source, *[v for v in values if v is not None]]
    for binding in trace.bindings:
        for access in binding.references:
            node = access.node
            if any(node is c or any(a is c for a in an.ancestors(node)) for c in containers):
                continue
            return (
                f"`{binding.name}` is also used at line {an.line(node)}; the helper returns a pinned copy, where "
                f"`.to` returns the tensor itself if the device is the CPU"
            )
    return None


def _is_module(path: Optional[Path], module: str) -> bool:
    """Whether ``path`` is ``module``'s file."""
    if path is None or not module:
        return False
    expected = module.replace(".", "/")
    stem = path.as_posix()
    stem = stem[:-3] if stem.endswith(".py") else stem
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    return stem == expected or stem.endswith("/" + expected)
