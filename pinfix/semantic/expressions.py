"""Expressions: names, attributes, subscripts, displays, operators, comprehensions.

The evaluator (:class:`pinfix.semantic.evaluator.Evaluator`) combines this with
:mod:`.calls` (calls and the effects table) and :mod:`.flow` (statements).
Every sub-expression is evaluated once per evaluation of its statement; a chain
nested deeper than :data:`MAX_DEPTH` is unknown past that depth, so no input
can exhaust the interpreter's stack.
"""

from __future__ import annotations

import ast
from fnmatch import fnmatchcase
from typing import Any, Callable, List, Optional, Tuple

from ..effects import (
    CPU_DEVICE_TYPES,
    NO_DATA_DEVICE_TYPES,
    TENSOR_ATTRIBUTES,
    TENSOR_METHODS,
    Metadata,
    ReadsOnHost,
    View,
)
from . import narrowing
from .facts import FunctionFacts, HostRead
from .scope import COMPREHENSIONS, FunctionInfo, ModuleInfo, child_nodes, target_names
from .source import SourceText
from .state import PATHS, PENDING, State
from .values import (
    ACCEL,
    ANY_DEVICE,
    ANY_MEMORY,
    CPU,
    DENSE,
    EMPTY,
    GAPPED,
    ITEM_OF_PARAMETER,
    PAGEABLE,
    PINNED,
    Array,
    Class,
    Const,
    Device,
    DictAtom,
    DType,
    FieldName,
    FieldOf,
    Flag,
    Func,
    Host,
    Instance,
    NoneValue,
    Opened,
    Origin,
    Pending,
    Ref,
    Seq,
    SliceAtom,
    Step,
    Tensor,
    Unknown,
    Value,
    join,
    unknown,
)

#: Expressions nested deeper than this (``a + a + ... + a``, long call chains)
#: are unknown past it.
MAX_DEPTH = 400

ARITHMETIC = "<arithmetic>"
GATHER = "<advanced indexing>"
CONTIGUOUS = "torch.Tensor.contiguous"
GAPPED_VIEW = "<gapped view of a pinned tensor>"
BY_NAME = "<named CPU tensor>"

_BUILTIN_NAMES = frozenset(dir(__import__("builtins")))


def device_of_text(text: str) -> str:
    """``cpu`` -> CPU; ``cuda:0``, ``xpu`` -> an accelerator; ``meta`` holds no data."""
    kind = text.split(":", 1)[0].strip()
    if kind in CPU_DEVICE_TYPES:
        return CPU
    if kind in NO_DATA_DEVICE_TYPES:
        return "meta"
    return ACCEL


def host_atom(a: Any) -> bool:
    """Plainly host data: an ndarray, a number, a string, a list or tuple of them."""
    if isinstance(a, (Array, Host, Const)):
        return True
    if isinstance(a, Seq) and a.kind in ("list", "tuple"):
        return a.elements.all(host_atom) or not a.elements
    return False


class Expressions:
    """Expression evaluation (the state-independent parts of the engine's context are
    set by :class:`pinfix.semantic.evaluator.Evaluator`)."""

    module: ModuleInfo
    src: SourceText
    func: FunctionInfo
    facts: FunctionFacts
    settings: Any
    depth: int
    closure: "dict[str, Value]"
    globals: Callable[[str], Optional[Value]]

    # --- evidence helpers --------------------------------------------------------------

    def step(self, kind: str, node: ast.AST, message: str, name: Optional[str] = None) -> Step:
        return Step(kind, node, message, self.src, name)

    def short(self, node: ast.AST, limit: int = 60) -> str:
        return self.src.short(node, limit)

    def made(
        self,
        node: ast.AST,
        effect: Any,
        qualified: str,
        label: str,
        explicit: bool = False,
        scalar: bool = False,
        data: Any = None,
    ) -> Tensor:
        """A fresh pageable CPU tensor made at ``node``."""
        step = self.step("made", node, f"`{self.short(node)}` makes a pageable CPU tensor")
        origin = Origin(node, effect, self.src, label, qualified, data)
        return Tensor(CPU, PAGEABLE, DENSE, origin, scalar=scalar, route=(step, None), explicit=explicit)

    def pinned(self, node: ast.AST, effect: Any, what: str, qualified: str = "") -> Tensor:
        step = self.step("pinned", node, f"`{self.short(node)}` {what}")
        return Tensor(
            CPU, PINNED, DENSE, Origin(node, effect, self.src, self.short(node), qualified), route=(step, None)
        )

    def computed(
        self,
        node: ast.AST,
        inner: Tensor,
        qualified: str,
        label: str,
        what: str,
        effect: Any = None,
        scalar: bool = False,
    ) -> Tensor:
        """A fresh pageable tensor computed on the CPU from ``inner``'s tensor."""
        step = self.step("computed", node, f"`{self.short(node)}` {what}: a fresh pageable CPU tensor")
        origin = Origin(node, effect, self.src, label, qualified)
        return Tensor(
            CPU, PAGEABLE, DENSE, origin, scalar=scalar, route=(step, inner.route), via=inner.via, cond=inner.cond
        )

    # --- dispatch ------------------------------------------------------------------------

    def eval(self, node: ast.AST, state: State) -> Value:
        if self.depth > MAX_DEPTH:
            return unknown("is nested too deeply for pinfix to follow", node)
        handler = _HANDLERS.get(type(node))
        if handler is None:
            return unknown(node=node)
        self.depth += 1
        try:
            return handler(self, node, state)  # type: ignore[no-any-return]
        finally:
            self.depth -= 1

    def eval_constant(self, node: ast.Constant, state: State) -> Value:
        value = node.value
        if value is None:
            return Value((NoneValue(),))
        if value is Ellipsis:
            return Value((Host(),))
        if isinstance(value, (bool, int, float, str)):
            return Value((Const(value),))
        return Value((Host(),))

    # --- names -----------------------------------------------------------------------------

    def eval_name(self, node: ast.Name, state: State) -> Value:
        return self.lookup(node.id, node, state)

    def lookup(self, name: str, node: ast.AST, state: State) -> Value:
        if name in self.func.locals:
            found = state.get(name)
            if found is None or not found:
                return unknown(f"`{name}` is not bound on every way here", node)
            if any(
                isinstance(a, Seq) and a.elements.unknown is not None and a.elements.unknown.why == ITEM_OF_PARAMETER
                for a in found
            ):
                found = found.map(lambda a: self.items_of_parameter(a, name) if isinstance(a, Seq) else None)
            return self.by_name(found, name, node)
        found = state.get(name)
        if found is not None:  # a comprehension's own variable: bound in its state only
            return self.by_name(found, name, node)
        found = self.closure.get(name)
        where = "the enclosing function's"
        if found is None and name in self.module.rebound_globals:
            imported = self.module.global_import(name)
            if imported is not None:
                return self.by_name(Value((Ref(imported),)), name, node)
        if found is None:
            found = self.globals(name)
            where = "the module-level"
        if found is None:
            if name in _BUILTIN_NAMES:
                return Value((Ref("builtins." + name),))
            return unknown(f"`{name}` comes from outside the function", node)
        if found.tensors:
            # Made in another scope: the finding names where, and fixes it there.
            step = self.step("read", node, f"{where} name `{name}`")
            found = found.map(
                lambda a: (
                    Value((a.evolve(route=(step, a.route), via=a.via or step),)) if isinstance(a, Tensor) else None
                )
            )
        return self.by_name(found, name, node)

    def items_of_parameter(self, seq: Seq, name: str) -> Optional[Value]:
        """A sequence parameter's items, named after it (``list[torch.Tensor]``: its
        annotation says nothing of their memory)."""
        if not any(p.name == name for p in self.func.params):
            return None
        named = Unknown(f"is an item of the parameter `{name}`")
        elements = seq.elements.map(
            lambda a: Value((named,)) if isinstance(a, Unknown) and a.why == ITEM_OF_PARAMETER else None
        )
        return Value((Seq(seq.kind, seq.items, elements, seq.site),))

    def by_name(self, value: Value, name: str, node: ast.AST) -> Value:
        """``[tool.pinfix] cpu-tensor-names``: a name the project's convention puts on the CPU."""
        patterns = self.settings.cpu_tensor_names
        if not patterns or not value.unknown or not any(fnmatchcase(name, p) for p in patterns):
            return value
        step = self.step("named", node, f"`{self.short(node)}` is a CPU tensor by its name")
        tensor = Tensor(
            CPU, ANY_MEMORY, DENSE, Origin(node, None, self.src, self.short(node), BY_NAME), route=(step, None)
        )
        return join(Value(tuple(a for a in value if not isinstance(a, Unknown))), Value((tensor,)))

    # --- attributes ---------------------------------------------------------------------------

    def path_of(self, node: ast.AST) -> Optional[str]:
        """``root.attr`` for an attribute of a local name (an access path the state tracks)."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.func.locals:
            return f"{node.value.id}.{node.attr}"
        return None

    def eval_attribute(self, node: ast.Attribute, state: State) -> Value:
        path = self.path_of(node)
        if path is not None:
            known = state.get(path)
            if known:
                return known
        base = self.eval(node.value, state)
        out = base.map(lambda a: self.attribute_of(a, node, state))
        return self.by_name(out, node.attr, node)

    def attribute_of(self, atom: Any, node: ast.Attribute, state: State) -> Value:
        attr = node.attr
        if isinstance(atom, Ref):
            return self.reference(atom.name + "." + attr, node)
        if isinstance(atom, Tensor):
            effect = TENSOR_ATTRIBUTES.get(attr)
            if isinstance(effect, Metadata):
                if effect.gives == "device":
                    return Value((Device(atom.device),))
                if effect.gives == "dtype":
                    return Value((DType(),))
                return Value((Host(),))
            if isinstance(effect, View):
                return self.maybe_gapped(atom, node)
            return unknown(f"pinfix does not know the tensor attribute `.{attr}`", node)
        if isinstance(atom, Array):
            if attr == "T":
                return Value((atom,))
            return Value((Host(),))
        if isinstance(atom, Instance):
            found = atom.field(attr)
            if found is not None:
                return found
            return self.instance_attribute(atom, attr, node)
        if isinstance(atom, Class):
            return self.class_attribute(atom, attr, node)
        if isinstance(atom, Unknown) and attr == "device":
            return Value((Device(ANY_DEVICE),))
        if isinstance(atom, Unknown) and attr == "dtype":
            return Value((DType(),))
        if isinstance(atom, DictAtom) and atom.record:
            found = atom.get(attr)
            return found if found is not None else atom.elements
        if isinstance(atom, FieldOf):
            return Value((FieldName(atom.cls),)) if attr == "name" else unknown(node=node)
        if isinstance(atom, (Const, Host, Seq, DictAtom, NoneValue)):
            return Value((Host(),)) if attr in ("real", "imag", "shape") else unknown(node=node)
        deep = "" if self.settings.deep else " (try --deep)"
        return unknown(f"pinfix cannot see every assignment to `{self.short(node)}`{deep}", node)

    def reference(self, qualified: str, node: ast.AST) -> Value:
        """A library name's value: a dtype, or a reference to call later."""
        from ..effects import Availability, Constant, function_effect

        effect = function_effect(qualified)
        if isinstance(effect, Constant) and effect.value == "dtype":
            return Value((DType(),))
        if isinstance(effect, Availability) and effect.value:
            return Value((Flag(),))
        project = self.project_reference(qualified, node)
        if project is not None:
            return project
        return Value((Ref(qualified),))

    def project_reference(self, qualified: str, node: ast.AST) -> Optional[Value]:
        """Deep mode: a project function or class named by its qualified name (overridden by the evaluator)."""
        return None

    def instance_attribute(self, atom: Instance, attr: str, node: ast.AST) -> Value:
        deep = "" if self.settings.deep else " (try --deep)"
        return unknown(f"pinfix cannot see every assignment to `{self.short(node)}`{deep}", node)

    def class_attribute(self, atom: Class, attr: str, node: ast.AST) -> Value:
        return self.instance_attribute(Instance(atom.info), attr, node)

    # --- subscripts ---------------------------------------------------------------------------

    def eval_subscript(self, node: ast.Subscript, state: State) -> Value:
        base = self.eval(node.value, state)
        index = node.slice
        elements = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        kinds = [self.index_kind(e, state) for e in elements]
        if any(k == "gather" for k, _ in kinds) or (base.only(Array) and all(k == "int" for k, _ in kinds)):
            # Advanced indexing gathers on the host and an array's element is a copy of it;
            # any other index makes a view, which reads nothing.
            self.host_read(base, node, state, computing=True)
        return base.map(lambda a: self.item_of(a, node, elements, kinds))

    def index_kind(self, element: ast.AST, state: State) -> Tuple[str, Optional[Value]]:
        """``slice`` (with its step: ``"step"``), ``full`` (``:``), ``int``, ``gather``
        (a tensor, list or array index), ``none`` (``None``/``...``) or ``other``."""
        if isinstance(element, ast.Slice):
            for part in (element.lower, element.upper):
                if part is not None:
                    self.eval(part, state)
            step = element.step
            if step is not None and not (isinstance(step, ast.Constant) and step.value in (1, None)):
                self.eval(step, state)
                return "step", None
            if element.lower is None and element.upper is None:
                return "full", None
            return "slice", None
        if isinstance(element, ast.Constant):
            if isinstance(element.value, int) and not isinstance(element.value, bool):
                return "int", None
            if element.value is None or element.value is Ellipsis:
                return "none", None
            return "other", None
        if (
            isinstance(element, ast.UnaryOp)
            and isinstance(element.op, ast.USub)
            and isinstance(element.operand, ast.Constant)
        ):
            return "int", None
        value = self.eval(element, state)
        if isinstance(element, ast.Compare) and not any(
            isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in element.ops
        ):
            return "gather", value  # a boolean mask
        if value.all(lambda a: isinstance(a, SliceAtom)):
            return "slice", value
        if value.any(lambda a: isinstance(a, (Tensor, Array)) or (isinstance(a, Seq) and a.kind == "list")):
            return "gather", value
        if value.all(lambda a: isinstance(a, (Const, Host)) and not (isinstance(a, Const) and a.value is None)):
            return "int", value
        return "other", value

    def item_of(
        self, atom: Any, node: ast.Subscript, elements: List[ast.AST], kinds: List[Tuple[str, Optional[Value]]]
    ) -> Value:
        if isinstance(atom, Opened) and atom.sliced:
            # `f.get_slice(name)[:, :k]`: the part read afresh from the file.
            step = self.step("read", node, f"`{self.short(node, 40)}` reads part of a tensor from the file")
            return atom.tensors.map(lambda t: Value((t.step(step),)) if isinstance(t, Tensor) else None)
        if isinstance(atom, Tensor):
            if len(elements) == 1 and isinstance(elements[0], ast.Constant) and isinstance(elements[0].value, str):
                return EMPTY  # `t["key"]` raises: a path on which the value is no tensor (a dict's)
            return self.tensor_item(atom, node, kinds)
        if isinstance(atom, Seq):
            if len(kinds) == 1 and kinds[0][0] == "int" and atom.items is not None:
                index = _int_value(elements[0])
                if index is not None and -len(atom.items) <= index < len(atom.items):
                    return atom.items[index]
            if len(kinds) == 1 and kinds[0][0] in ("slice", "full", "step"):
                return Value((Seq(atom.kind if atom.kind != "gen" else "list", None, atom.elements, atom.site),))
            return atom.elements or unknown(node=node)
        if isinstance(atom, DictAtom):
            key = elements[0]
            if len(elements) == 1 and isinstance(key, ast.Constant):
                found = atom.get(key.value)
                if found is not None:
                    return found
            if atom.record:
                return atom.elements
            return join(atom.elements, unknown(f"`{self.short(node)}` may hold what pinfix did not see stored", node))
        if isinstance(atom, Array):
            if all(k == "int" for k, _ in kinds):
                return Value((Host(),))
            return Value((Array(atom.origin),))
        if isinstance(atom, (Const, Host)):
            return Value((Host(),))
        if isinstance(atom, Ref):
            return Value((Ref(atom.name + "[]"),))  # a type annotation (``list[int]``)
        if isinstance(atom, Unknown):
            return Value((atom,))
        return unknown(node=node)

    def tensor_item(self, atom: Tensor, node: ast.Subscript, kinds: List[Tuple[str, Optional[Value]]]) -> Value:
        layout = _layout([k for k, _ in kinds])
        scalar = bool(kinds) and all(k in ("int", "other") for k, _ in kinds)  # maybe 0-dim
        if any(k == "gather" for k, _ in kinds):
            if atom.device != CPU:
                return Value((Tensor(atom.device, origin=atom.origin, route=atom.route, via=atom.via),))
            gathered = self.computed(
                node, atom, GATHER, "the result of advanced indexing", "gathers (advanced indexing)"
            )
            return Value((gathered,))
        if layout == "unknown":
            if atom.device != CPU:
                return Value((atom.evolve(scalar=False),))
            if atom.memory == PAGEABLE:
                return Value((atom.evolve(converted=atom.converted or self.short(node), scalar=scalar),))
            return unknown(f"`{self.short(node)}` may be a view or a fresh tensor", node)
        if layout == GAPPED and atom.device == CPU and atom.memory != PAGEABLE:
            step = self.step("gapped", node, f"`{self.short(node)}` is a gapped view")
            return Value(
                (
                    atom.evolve(
                        layout=GAPPED,
                        gapped=atom.gapped or self.short(node, 80),
                        scalar=scalar,
                        route=(step, atom.route),
                    ),
                )
            )
        if layout == GAPPED and atom.device == CPU:
            step = self.step("gapped", node, f"`{self.short(node)}` is a gapped view")
            return Value(
                (atom.evolve(gapped=atom.gapped or self.short(node, 80), scalar=scalar, route=(step, atom.route)),)
            )
        return Value((atom.evolve(scalar=scalar),)) if scalar != atom.scalar else Value((atom,))

    def maybe_gapped(self, atom: Tensor, node: ast.AST) -> Value:
        """A view that may not be dense: of pinned memory, a gapped view."""
        if atom.device != CPU or atom.memory != PINNED:
            return Value((atom,))
        step = self.step("gapped", node, f"`{self.short(node)}` may be a non-dense view")
        return Value(
            (atom.evolve(layout=GAPPED, gapped=atom.gapped or self.short(node, 80), route=(step, atom.route)),)
        )

    # --- displays ------------------------------------------------------------------------------

    def eval_sequence(self, node: Any, state: State) -> Value:
        kind = {ast.Tuple: "tuple", ast.List: "list", ast.Set: "set"}[type(node)]
        items: List[Value] = []
        starred = False
        for element in node.elts:
            if isinstance(element, ast.Starred):
                inner = self.eval(element.value, state)
                items.append(self.elements_of(inner, element))
                starred = True
            else:
                items.append(self.eval(element, state))
        return Value((Seq(kind, None if starred else tuple(items), join(*items), node),))

    def eval_dict(self, node: ast.Dict, state: State) -> Value:
        items: List[Tuple[Any, Value]] = []
        values: List[Value] = []
        complete = True
        for key, value in zip(node.keys, node.values):
            v = self.eval(value, state)
            values.append(v)
            if key is None:
                complete = False
                values.append(self.elements_of(v, node))
            elif isinstance(key, ast.Constant) and isinstance(key.value, (str, int)):
                items.append((key.value, v))
            else:
                self.eval(key, state)
                complete = False
        elements = join(*values)
        if not complete:
            elements = join(elements, unknown(node=node))
        return Value((DictAtom(tuple(items), elements, node),))

    def elements_of(self, value: Value, node: ast.AST) -> Value:
        """What iterating over ``value`` gives."""

        def each(a: Any) -> Value:
            if isinstance(a, Seq):
                return a.elements or EMPTY
            if isinstance(a, DictAtom):
                return Value((Host(),))
            if isinstance(a, Tensor):
                return Value((a.evolve(scalar=False),))
            if isinstance(a, Array):
                return Value((Host(),))
            if isinstance(a, (Const, Host)):
                return Value((Host(),))
            if isinstance(a, Unknown):
                return Value((a,))
            return unknown(node=node)

        return value.map(each)

    def eval_comprehension(self, node: Any, state: State) -> Value:
        inner = state.fork()
        for gen in node.generators:
            iterable = self.eval(gen.iter, inner)
            self.bind_target(gen.target, self.elements_of(iterable, gen.iter), inner, gen, comprehension=True)
            for cond in gen.ifs:
                self.eval(cond, inner)
                narrowing.narrow(self, cond, True, inner)
        if inner.dead:
            # No item passes the comprehension's tests where any copy of ours runs.
            result = (
                Value((DictAtom((), EMPTY, node),))
                if isinstance(node, ast.DictComp)
                else Value((Seq("list" if not isinstance(node, ast.SetComp) else "set", (), EMPTY, node),))
            )
        elif isinstance(node, ast.DictComp):
            self.eval(node.key, inner)
            value = self.eval(node.value, inner)
            result = Value((DictAtom((), join(value, unknown(node=node)), node),))
        else:
            element = self.eval(node.elt, inner)
            kind = {ast.ListComp: "list", ast.SetComp: "set", ast.GeneratorExp: "gen"}[type(node)]
            result = Value((Seq(kind, None, element, node),))
        # Walrus targets inside a comprehension bind in the function.
        for name in inner.vars:
            if name in self.func.locals and not name.startswith("#") and self.walrus_target(node, name):
                state.set(name, inner.vars[name])
        if PENDING in inner.vars:
            state.set(PENDING, inner.vars[PENDING])
        return result

    @staticmethod
    def walrus_target(node: ast.AST, name: str) -> bool:
        return any(
            isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name) and n.target.id == name
            for n in ast.walk(node)
        )

    def bind_target(
        self, target: ast.AST, value: Value, state: State, node: ast.AST, comprehension: bool = False
    ) -> None:
        """Bind a comprehension's (or a ``for``'s) target; overridden by :mod:`.flow` for statements."""
        for name in target_names(target):
            state.set(name, value if isinstance(target, ast.Name) else unknown(node=node))

    # --- operators ---------------------------------------------------------------------------------

    def eval_binop(self, node: ast.BinOp, state: State) -> Value:
        left = self.eval(node.left, state)
        right = self.eval(node.right, state)
        return self.arithmetic(node, [left, right], state)

    def eval_unaryop(self, node: ast.UnaryOp, state: State) -> Value:
        operand = self.eval(node.operand, state)
        if isinstance(node.op, ast.Not):
            self.implicit_call("__bool__", operand, node, state)
            return Value((Host(),))
        if isinstance(node.op, ast.UAdd):
            return operand
        return self.arithmetic(node, [operand], state)

    def eval_compare(self, node: ast.Compare, state: State) -> Value:
        operands = [self.eval(node.left, state)] + [self.eval(c, state) for c in node.comparators]
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return Value((Host(),))
        self.host_read(join(*operands), node, state)
        return self.arithmetic(node, operands, state)

    def eval_boolop(self, node: ast.BoolOp, state: State) -> Value:
        """Each part after the first runs where the ones before it let it (``a and b``:
        ``b`` where ``a`` is true), narrowed by them."""
        values = []
        arm: Optional[narrowing.Arm] = None
        going_on = isinstance(node.op, ast.And)
        for i, v in enumerate(node.values):
            where = state
            if i > 0:
                if arm is None:
                    arm = narrowing.Arm(state)
                arm.narrow(self, node.values[i - 1], going_on)
                if arm.state.dead:
                    break
                where = arm.state
            value = self.eval(v, where)
            self.implicit_call("__bool__", value, v, where)
            values.append(value)
        if arm is not None:
            narrowing.rejoin(state, [arm.effects(), state.fork()])
        return join(*values)

    def arithmetic(self, node: ast.AST, operands: List[Value], state: State) -> Value:
        """Arithmetic and comparisons: on CPU tensors, a fresh pageable tensor.

        A 0-dim CPU tensor combines with a device tensor on the device, so the
        result is on the CPU only when an operand is a CPU tensor that is not
        0-dim, or every operand is a CPU tensor or a number."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and not any(o.tensors for o in operands):
            return unknown(node=node)
        self.host_read(join(*operands), node, state, computing=True)
        tensors = [t for o in operands for t in o.tensors]
        if not tensors:
            if all(o.all(lambda a: isinstance(a, (Const, Host))) for o in operands):
                return Value((Host(),))
            if any(o.any(lambda a: isinstance(a, Array)) for o in operands):
                return Value((Array(),))
            seqs = [a for o in operands for a in o.only(Seq)]
            if (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Add)
                and seqs
                and len(seqs) == len([a for o in operands for a in o])
            ):
                return Value((Seq(seqs[0].kind, None, join(*(s.elements for s in seqs)), seqs[0].site),))
            return unknown(node=node)
        return self.tensor_result(node, operands, ARITHMETIC, "the result of arithmetic", "computes a fresh tensor")

    def tensor_result(
        self,
        node: ast.AST,
        operands: List[Value],
        qualified: str,
        label: str,
        what: str,
        effect: Any = None,
        scalar: bool = False,
    ) -> Value:
        """The device of a result computed from ``operands``: CPU when a CPU input
        that is not 0-dim (or every input a CPU tensor or number) says so."""
        out: List[Value] = []
        cpu = [t for o in operands for t in o.tensors if t.device == CPU]
        solid = [t for t in cpu if not t.scalar]
        scalar = scalar or all(t.scalar for o in operands for t in o.tensors)
        numbers = all(o.all(lambda a: isinstance(a, (Tensor, Const, Host))) for o in operands)
        every_cpu = numbers and all(all(t.device == CPU for t in o.tensors) for o in operands)
        chosen = solid[0] if solid else (cpu[0] if cpu and every_cpu else None)
        if chosen is not None:
            out.append(Value((self.computed(node, chosen, qualified, label, what, effect, scalar),)))
        if any(o.all(lambda a: isinstance(a, Tensor) and a.device == CPU and not a.scalar) for o in operands):
            # An input that is a CPU tensor on every path and never 0-dim: torch computes
            # on the CPU (or fails, on a device operand of any shape), so the result is here.
            return join(*out)
        for t in (t for o in operands for t in o.tensors):
            if t.device == ACCEL:
                out.append(Value((Tensor(ACCEL, scalar=scalar),)))
                break
        if any(t.device == ANY_DEVICE for o in operands for t in o.tensors) or (chosen is None and not out):
            out.append(Value((Tensor(ANY_DEVICE, scalar=scalar),)))
        return join(*out)

    def eval_ifexp(self, node: ast.IfExp, state: State) -> Value:
        test = self.eval(node.test, state)
        self.implicit_call("__bool__", test, node.test, state)
        then, orelse = narrowing.Arm(state), narrowing.Arm(state)
        then.narrow(self, node.test, True)
        orelse.narrow(self, node.test, False)
        body = self.eval(node.body, then.state) if not then.state.dead else None
        other = self.eval(node.orelse, orelse.state) if not orelse.state.dead else None
        narrowing.rejoin(state, [then.effects(), orelse.effects()])
        if body is None or other is None:
            return body if body is not None else other if other is not None else EMPTY
        body, other = narrowing.pinning_arms(body, other, lambda: narrowing.unseen_flag(self, node.test, state))
        return self.conditional(body, other, self.short(node.test, 40))

    def conditional(self, first: Value, second: Value, test: str) -> Value:
        """The join of two arms, each tensor marked with the condition it needs (where it is one arm's only)."""
        marked_first = first.map(
            lambda a: (
                Value((a.evolve(cond=f"`{test}` is true"),))
                if isinstance(a, Tensor) and a.cond is None and a.key not in second.keys
                else None
            )
        )
        marked_second = second.map(
            lambda a: (
                Value((a.evolve(cond=f"`{test}` is false"),))
                if isinstance(a, Tensor) and a.cond is None and a.key not in first.keys
                else None
            )
        )
        return join(marked_first, marked_second)

    # --- the rest ------------------------------------------------------------------------------------

    def eval_namedexpr(self, node: ast.NamedExpr, state: State) -> Value:
        value = self.eval(node.value, state)
        self.bind_target(node.target, value, state, node)
        # The expression's value is what the name now holds: what reaches a copy
        # through `(t := ...)` was bound to `t` on the way (a fix must see `t`).
        held = state.get(node.target.id) if isinstance(node.target, ast.Name) else None
        return held if held is not None else value

    def eval_lambda(self, node: ast.Lambda, state: State) -> Value:
        for d in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.eval(d, state)
        from .scope import FunctionInfo

        info = self.module.functions.get(id(node))
        if info is None:
            info = self.module.functions[id(node)] = FunctionInfo(
                node, self.module, self.func, None, self.func.qualname + ".<lambda>"
            )
        self.evaluate_nested(info)
        return Value((Func(info),))

    def evaluate_nested(self, info: Any) -> None:
        """A lambda's body may hold a copy: evaluate it once, with its own parameters."""

    def eval_joinedstr(self, node: ast.JoinedStr, state: State) -> Value:
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                self.implicit_call("__format__", self.eval(v.value, state), node, state)
        return Value((Host(),))

    def eval_starred(self, node: ast.Starred, state: State) -> Value:
        return self.elements_of(self.eval(node.value, state), node)

    def eval_slice(self, node: ast.Slice, state: State) -> Value:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.eval(part, state)
        return Value((SliceAtom(),))

    def eval_yield(self, node: ast.Yield, state: State) -> Value:
        """``yield v``: ``v`` is handed out (a generator fixture's value, for one); what is
        sent back in is not known."""
        self.facts.add_yield(self.eval(node.value, state) if node.value is not None else Value((NoneValue(),)))
        return unknown(node=node)

    def eval_opaque(self, node: ast.AST, state: State) -> Value:
        for child in child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child, state)
        return unknown(node=node)

    # --- host reads (PIN003) -------------------------------------------------------------------------

    def implicit_call(self, method: str, value: Value, node: ast.AST, state: State) -> None:
        """Python calls a tensor's ``method`` itself (``__bool__`` in a truth test, ``not``,
        ``and``/``or``; ``__format__`` in an f-string): a host read where the effects table
        says that method reads on the host."""
        if isinstance(TENSOR_METHODS.get(method), ReadsOnHost):
            self.host_read(value, node, state)

    def host_read(self, value: Value, node: ast.AST, state: State, computing: bool = False) -> None:
        """``node`` reads ``value``'s data on the host: a pending copy into it is a finding."""
        pending = state.get(PENDING)
        if not pending:
            return
        # The tensors it holds, and the arrays viewing a tensor (``t.numpy()``).
        targets = {id(t.origin.node): t.origin for t in value.tensors if t.origin is not None}
        for a in value.only(Array):
            if isinstance(a.origin, Origin):
                targets.setdefault(id(a.origin.node), a.origin)
        for p in pending.only(Pending):
            if p.target in targets:
                direct = targets[p.target].node is node or _holds(node, targets[p.target].node)
                self.facts.add_read(HostRead(node, p, direct, self.func))

    def kill_paths(self, node: ast.AST, state: State) -> None:
        """A call may rebind the attributes of what it is given: forget the access
        paths rooted at any name it mentions."""
        paths = state.get(PATHS)
        if not paths:
            return
        roots = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        kept = [a for a in paths.only(Const) if a.value.split(".", 1)[0] not in roots]
        if len(kept) == len(paths):
            return
        for a in paths.only(Const):
            if a not in kept:
                state.delete(a.value)
        state.set(PATHS, Value(tuple(kept)))


def _int_value(node: ast.AST) -> Optional[int]:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int)
    ):
        return -node.operand.value
    return None


def _holds(outer: ast.AST, inner: ast.AST) -> bool:
    return any(n is inner for n in ast.walk(outer))


def _layout(kinds: List[str]) -> str:
    """``dense`` for ``x[i]``, ``x[:n]``, ``x[i, a:b]``, ``x[:n, :]`` (a contiguous
    block of a contiguous tensor); ``gapped`` for a step or a narrowed dimension
    after a wider one (``x[::2]``, ``x[:, :k]``, ``x[:, 0]``); ``unknown`` for
    anything else (``None``, ``...``, an index pinfix cannot read)."""
    narrowed = False
    for i, kind in enumerate(kinds):
        if kind == "step":
            return GAPPED
        if kind == "full":
            continue
        if kind in ("slice", "int"):
            if narrowed or any(k == "full" for k in kinds[:i]):
                return GAPPED
            if kind == "slice":
                narrowed = True
            continue
        return "unknown"
    return DENSE


_HANDLERS: "dict[type, Callable[..., Value]]" = {
    ast.Constant: Expressions.eval_constant,
    ast.Name: Expressions.eval_name,
    ast.Attribute: Expressions.eval_attribute,
    ast.Subscript: Expressions.eval_subscript,
    ast.Tuple: Expressions.eval_sequence,
    ast.List: Expressions.eval_sequence,
    ast.Set: Expressions.eval_sequence,
    ast.Dict: Expressions.eval_dict,
    ast.ListComp: Expressions.eval_comprehension,
    ast.SetComp: Expressions.eval_comprehension,
    ast.GeneratorExp: Expressions.eval_comprehension,
    ast.DictComp: Expressions.eval_comprehension,
    ast.BinOp: Expressions.eval_binop,
    ast.UnaryOp: Expressions.eval_unaryop,
    ast.Compare: Expressions.eval_compare,
    ast.BoolOp: Expressions.eval_boolop,
    ast.IfExp: Expressions.eval_ifexp,
    ast.NamedExpr: Expressions.eval_namedexpr,
    ast.Lambda: Expressions.eval_lambda,
    ast.JoinedStr: Expressions.eval_joinedstr,
    ast.Starred: Expressions.eval_starred,
    ast.Slice: Expressions.eval_slice,
    ast.Await: Expressions.eval_opaque,
    ast.Yield: Expressions.eval_yield,
    ast.YieldFrom: Expressions.eval_opaque,
    ast.FormattedValue: Expressions.eval_opaque,
}


def register(node_type: type, handler: Callable[..., Value]) -> None:
    """Add a handler (calls live in :mod:`.calls`)."""
    _HANDLERS[node_type] = handler


__all__ = ["Expressions", "register", "MAX_DEPTH", "device_of_text", "host_atom", "COMPREHENSIONS"]
