"""The h2d-helper fix: ``torch.from_numpy(a).to(dev, non_blocking=True)`` ->
``helper(a, dev)`` (``[tool.pinfix] h2d-helper``, vLLM's ``async_tensor_h2d``), a helper
that pins and copies in one call."""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Any, List, Optional, Sequence, Tuple

from ..edits import SAFE, UNSAFE, Edit, Fix
from ..effects import Makes
from ..rules.pageable import Route
from ..semantic.facts import holds, on_cpu
from ..semantic.scope import FunctionInfo, ModuleInfo, last_name, other_binding
from ..semantic.values import ACCEL, Step, Tensor
from .site import FixSite, defines, helper_local_name, literal_bool, root_name

_TO_KEYWORDS = frozenset({"device", "dtype", "non_blocking"})


def h2d_fix(site: FixSite, tensors: List[Tensor], route: Route, inline: bool) -> Optional[Fix]:
    settings = site.settings
    qualified = settings.h2d_helper
    copy = site.copy
    call = copy.call
    if qualified is None or copy.method != "to" or copy.non_blocking is not True or copy.function_form:
        return None
    primary = tensors[0]
    if primary.via is not None or primary.gapped or any(t.via is not None for t in tensors):
        return None
    # The helper pins what it is given: every way here must bring a CPU tensor.
    if not on_cpu(copy.source):
        return None
    if defines(site.ctx.path, qualified.rpartition(".")[0]):
        return None
    parsed = to_arguments(site, call)
    if parsed is None:
        return None
    device, device_keyword, dtype = parsed
    source = copy.source_node
    origin = primary.origin
    # The copy's receiver is the very call that made the memory (not arithmetic,
    # an index or a view written inline: those are passed to the helper as they are).
    direct = (
        inline and origin is not None and origin.node is source and isinstance(source, ast.Call) and len(tensors) == 1
    )
    dropped: List[str] = []
    if direct and origin is not None and isinstance(source, ast.Call):
        if origin.qualified == "torch.from_numpy":
            if len(source.args) != 1 or source.keywords or isinstance(source.args[0], ast.Starred):
                return None
            data: ast.AST = source.args[0]
        elif origin.qualified == "torch.tensor":
            found = tensor_data(site, source, dtype)
            if found is None:
                return None
            data, dtype = found
        else:
            return None  # a factory keeps its own `pin_memory=` fix
        root = root_name(source.func)
        if root:
            dropped.append(root)
        keyword = True
    else:
        data = source
        keyword = False
    if loses_comments(site, call, [data, device] + ([dtype] if dtype is not None else [])):
        return None
    local = h2d_local(site.module, qualified)
    if other_binding(site.module, site.func, local, qualified) is not None:
        return None
    reason = None
    if direct and origin is not None and isinstance(origin.effect, Makes) and origin.effect.shares_argument:
        reason = site.to_itself()
    elif not direct and copy.target != ACCEL:
        reason = other_use(site, route)
    seg = site.src.segment
    args = [seg(data), (f"device={seg(device)}" if keyword else seg(device))]
    if dtype is not None:
        args.append(f"dtype={seg(dtype)}")
    start, end = site.src.span(call)
    new = f"{local}({', '.join(args)})"
    imports = () if helper_local_name(site.module, qualified) else (tuple(qualified.rsplit(".", 1)),)  # type: ignore[assignment]
    return Fix(UNSAFE if reason else SAFE, reason, (Edit(start, end, new),), imports, tuple(dropped))  # type: ignore[arg-type]


def to_arguments(site: FixSite, call: ast.Call) -> Optional[Tuple[ast.AST, bool, Optional[ast.AST]]]:
    """``(device, by keyword, dtype)`` of ``.to(device[, dtype][, non_blocking])``;
    ``None`` for any other signature (``copy=``, ``memory_format=``, ``to(other)``)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None or k.arg not in _TO_KEYWORDS for k in call.keywords
    ):
        return None
    keywords = {k.arg: k.value for k in call.keywords}
    dtype = keywords.get("dtype")
    positional = list(call.args)
    if "device" in keywords:
        if positional:
            return None
        return keywords["device"], True, dtype
    if not positional or len(positional) > 3 or not plainly_device(site, positional[0]):
        return None
    rest = positional[1:]
    if rest and literal_bool(rest[-1]) is not None:
        rest = rest[:-1]
    if len(rest) > 1 or any(literal_bool(v) is not None for v in rest):
        return None
    if rest:
        if dtype is not None:
            return None
        dtype = rest[0]
    return positional[0], False, dtype


def plainly_device(site: FixSite, node: ast.AST) -> bool:
    """A positional ``.to`` argument that is a device, not a tensor (``to(other)``
    would also take the other tensor's dtype)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)) and not isinstance(node.value, bool):
        return True
    if isinstance(node, ast.Call):
        return last_name(node.func) == "device"
    if isinstance(node, ast.Attribute):
        return node.attr == "device" or node.attr.endswith("_device")
    if isinstance(node, ast.Name):
        return "device" in node.id or node.id in ("dev", "target_dev")
    return False


def tensor_data(
    site: FixSite, source: ast.Call, to_dtype: Optional[ast.AST]
) -> Optional[Tuple[ast.AST, Optional[ast.AST]]]:
    """``torch.tensor(DATA[, dtype=T])`` the helper would make the same way."""
    if len(source.args) != 1 or isinstance(source.args[0], ast.Starred):
        return None
    dtype_kw = None
    for k in source.keywords:
        if k.arg == "dtype":
            dtype_kw = k.value
        elif (
            k.arg == "device"
            and isinstance(k.value, ast.Constant)
            and isinstance(k.value.value, str)
            and k.value.value.split(":")[0] == "cpu"
        ):
            continue
        else:
            return None  # requires_grad=, pin_memory=, an accelerator device=
    if to_dtype is not None and (dtype_kw is None or ast.dump(dtype_kw) != ast.dump(to_dtype)):
        return None  # `.to(T)` converts after torch.tensor inferred its own dtype
    data = source.args[0]
    if not python_data(site, data):
        return None
    return data, dtype_kw


def python_data(site: FixSite, node: ast.AST) -> bool:
    """Plainly a Python list, tuple or number (not an ndarray, not a tensor)."""
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) and node.func.attr == "tolist" and not node.args
    if isinstance(node, ast.Name):
        origin = site.copy.blocking[0].origin if site.copy.blocking else None
        value = origin.data if origin is not None else None
        return value is not None and value.all(plain_data)
    return False


def loses_comments(site: FixSite, call: ast.Call, kept: Sequence[ast.AST]) -> bool:
    text = site.src.segment(call)
    if "#" not in text:
        return False
    start = site.src.span(call)[0]
    spans = [site.src.span(k) for k in kept]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return True
    lines = [0]
    for line in text.splitlines(keepends=True):
        lines.append(lines[-1] + len(line))
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            at = start + lines[tok.start[0] - 1] + tok.start[1]
            if not any(s <= at < e for s, e in spans):
                return True
    return False


def other_use(site: FixSite, route: Route) -> Optional[str]:
    """A use of a name on the way to the copy, other than the way itsite."""
    copy = site.copy
    for step in route.bindings:
        name = step.name
        if name is None or "." in name:
            continue
        for use in site.ctx.facts.reached_uses(site.func, step.node, name):
            if not isinstance(use.ctx, ast.Load) or holds(copy.call, use):
                continue
            if any(holds(statement_value(b, site.func), use) for b in route.bindings):
                continue
            return (
                f"`{name}` is also used at line {use.lineno}; the helper returns a pinned copy, where "
                f"`.to` returns the tensor itself if the device is the CPU"
            )
    return None


def h2d_local(module: ModuleInfo, qualified: str) -> str:
    return helper_local_name(module, qualified) or qualified.rpartition(".")[2]


def statement_value(step: Step, func: FunctionInfo) -> ast.AST:
    """The value assigned at a binding step (its statement's right-hand side)."""
    target = step.node
    for stmt in func.own_nodes():
        if isinstance(stmt, ast.Assign) and any(t is target or holds(t, target) for t in stmt.targets):
            return stmt.value
        if (
            isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr))
            and stmt.target is target
            and stmt.value is not None
        ):
            return stmt.value
    return target


def plain_data(atom: Any) -> bool:
    from ..semantic.values import Const, Host, Seq

    if isinstance(atom, (Const, Host)):
        return not isinstance(atom, Const) or isinstance(atom.value, (int, float))
    if isinstance(atom, Seq) and atom.kind in ("list", "tuple"):
        return atom.elements.all(plain_data) or not atom.elements
    return False
