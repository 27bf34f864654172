"""One evaluation of one function: its parameters bound, its body run once through.

:class:`Evaluator` joins the three jobs of the engine (:mod:`.expressions`,
:mod:`.calls`, :mod:`.flow`) and binds what a function starts with: its
parameters (``self`` is an instance of its class; an annotation such as
``list[int]`` or ``np.ndarray`` says what a parameter holds; anything else is
unknown, or, in deep mode, what the callers pass), the names it reads from
enclosing functions and from its module.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, Optional

from . import narrowing
from .facts import FunctionFacts
from .fixtures import filled_by
from .flow import BUDGET_PER_STATEMENT, Flow
from .scope import FunctionInfo, Param, last_name
from .state import State
from .values import ANY_DEVICE, Array, Class, Device, DType, Flag, Host, Instance, Seq, Step, Value, mark, unknown

if TYPE_CHECKING:
    from .module import ModuleContext
    from .slices import Slice


class Evaluator(Flow):
    def __init__(
        self,
        ctx: "ModuleContext",
        func: FunctionInfo,
        params: Optional[Dict[str, Value]] = None,
        relevant: Optional["Slice"] = None,
    ):
        self.ctx = ctx
        self.relevant = relevant
        self.module = func.module
        self.src = func.module.src
        self.settings = ctx.settings
        self.func = func
        self.facts = FunctionFacts(func)
        self.depth = 0
        self.loops = []
        self.widened = False
        self.budget = BUDGET_PER_STATEMENT * (func.statements or 1) + 200
        self.params = params
        self.closure = ctx.closure_of(func)
        self.globals = lambda name: ctx.global_value(func.module, name)

    def evaluate_nested(self, info: FunctionInfo) -> None:
        self.ctx.later(info)

    def run(self) -> FunctionFacts:
        state = State()
        all_values = state.record()
        self.bind_parameters(state)
        node = self.func.node
        if isinstance(node, ast.Lambda):
            self.facts.add_return(self.eval(node.body, state))
        else:
            relevant = self.relevant
            self.run_block(relevant.run if relevant is not None and relevant.run is not None else self.func.body, state)
        self.facts.all_values = all_values
        return self.facts

    def bind_parameters(self, state: State) -> None:
        func = self.func
        given = self.params or {}
        me = func.self_name
        for p in func.params:
            if p.name in given:
                state.set(p.name, given[p.name])
            elif p.name == me and func.cls is not None:
                state.set(p.name, Value((Instance(func.cls),)))
            elif func.kind == "classmethod" and p.index == 0 and func.cls is not None:
                state.set(p.name, Value((Class(func.cls),)))
            else:
                state.set(p.name, self.parameter_value(p))
        if not isinstance(func.node, ast.Lambda):
            asserts = func.entry_asserts
            if asserts is None:  # found once: a function is evaluated many times
                asserts = func.entry_asserts = narrowing.preconditions(func.body, {p.name for p in func.params})
            for stmt in asserts:
                narrowing.narrow(self, stmt.test, True, state)

    def parameter_value(self, p: Param) -> Value:
        """What a parameter holds: the pytest fixture that fills it, else as far as its
        annotation says (deep mode adds the callers)."""
        if p.kind in ("posonly", "positional", "kwonly"):
            fixture = filled_by(self.func, p.name)
            given = self.fixture_value(fixture, p) if fixture is not None else None
            if given is not None:
                return given
        if p.kind == "vararg":
            return Value((Seq("tuple", None, unknown(f"`{p.name}` is a parameter", p.node)),))
        if p.kind == "kwarg":
            from .values import DictAtom

            return Value((DictAtom((), unknown(f"`{p.name}` is a parameter", p.node)),))
        if narrowing.availability_parameter(p):
            return Value((Flag(),))
        known = annotation_value(p.annotation)
        if known is not None:
            return known
        return unknown(f"`{p.name}` is a parameter", p.node)

    def fixture_value(self, fixture: FunctionInfo, p: Param) -> Optional[Value]:
        """What the pytest fixture ``fixture`` gives the parameter ``p``: what it returns, or
        yields (``None``: not known, or it is being evaluated)."""
        return fixture_given(fixture, self.ctx.evaluate(fixture), p.name)


def fixture_given(fixture: FunctionInfo, facts: Optional[FunctionFacts], name: str) -> Optional[Value]:
    """What the pytest fixture ``fixture``, evaluated as ``facts``, gives a parameter ``name``:
    what it returns, or yields, marked as reaching the test through it (``None``: not known)."""
    if facts is None:
        return None
    given = facts.yields if fixture.is_generator else facts.returns
    if given is None:
        return None
    step = Step("argument", fixture.node, f"the pytest fixture `{name}`", fixture.module.src)
    return mark(given, step, via=True)


_LISTS = {"list", "List", "tuple", "Tuple", "Sequence", "MutableSequence"}
_HOST_ITEMS = {"int", "float", "bool"}


def annotation_value(annotation: Optional[ast.expr]) -> Optional[Value]:
    """The value an annotation promises, where it says something pinfix uses:
    ``list[int]`` (host data), ``np.ndarray``, ``int``, ``torch.dtype``, ``torch.device``."""
    if annotation is None:
        return None
    node = annotation
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    name = last_name(node)
    if isinstance(node, ast.Subscript):
        outer = last_name(node.value)
        if outer in _LISTS:
            inner = node.slice
            items = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
            host = all(
                last_name(i) in _HOST_ITEMS or (isinstance(i, ast.Constant) and i.value is Ellipsis) for i in items
            )
            elements = Value((Host(),)) if host else unknown("is an item of a parameter")
            return Value((Seq("list" if outer not in ("tuple", "Tuple") else "tuple", None, elements),))
        if outer in ("NDArray",):
            return Value((Array(),))
        return None
    if name in _LISTS:
        return Value((Seq("list", None, Value((Host(),))),))
    if name in ("ndarray", "NDArray"):
        return Value((Array(),))
    if name in ("int", "float", "bool", "str"):
        return Value((Host(),))
    if name == "dtype":
        return Value((DType(),))
    if name == "device":
        return Value((Device(ANY_DEVICE),))
    return None
