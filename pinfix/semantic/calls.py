"""Calls: every transfer function the effects table (:mod:`pinfix.effects`) names.

A call's callee is evaluated like any expression; library functions arrive as
:class:`~pinfix.semantic.values.Ref` atoms (``torch.zeros``), tensor methods
through the receiver's atoms. The entry's kind picks the transfer function:
``Makes`` -> :meth:`Calls.makes`, ``Computes`` -> :meth:`Calls.computes`, and so
on. Sinks (``CopiesTo``) record a :class:`~pinfix.semantic.facts.Copy`.
"""

from __future__ import annotations

import ast
from typing import Any, FrozenSet, List, Optional, Sequence, Tuple

from ..effects import (
    ARRAY_METHODS,
    AVAILABILITY_NAMES,
    FUNCTIONS,
    KEYWORD_CALLS,
    NON_BLOCKING_KEYWORD,
    TENSOR_METHODS,
    Availability,
    Collates,
    Computes,
    Constant,
    Converts,
    CopiesTo,
    DefaultDevice,
    Effect,
    HostData,
    Iterates,
    Loads,
    Makes,
    MakesArray,
    MakesBatch,
    Metadata,
    Opens,
    Pins,
    Prepares,
    ReadsFile,
    ReadsOnHost,
    RecordFields,
    Restores,
    Shares,
    ToHost,
    View,
    Waits,
)
from . import narrowing
from .expressions import CONTIGUOUS, Expressions, device_of_text, host_atom, register
from .facts import Copy
from .state import DEFAULT_DEVICE, PENDING, State
from .values import (
    ACCEL,
    ANY_DEVICE,
    ANY_MEMORY,
    CPU,
    DENSE,
    EMPTY,
    GAPPED,
    MAX_CONTAINER_DEPTH,
    PAGEABLE,
    PINNED,
    Array,
    Atom,
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
    Tensor,
    Unknown,
    Value,
    Wrapper,
    join,
    unknown,
)

#: At most this many of a record's fields are read by ``getattr(obj, f.name)``.
MAX_REFLECTED_FIELDS = 64
#: Memory of a tensor that holds no data (``torch.zeros(0)``): its copy moves nothing.
NO_DATA = "empty"


class Arguments:
    """A call's evaluated arguments."""

    __slots__ = ("node", "positional", "keywords", "starred", "double_starred", "spread")

    def __init__(
        self,
        node: ast.Call,
        positional: List[Tuple[ast.expr, Value]],
        keywords: List[Tuple[str, ast.expr, Value]],
        starred: bool,
        double_starred: bool,
        spread: Sequence[Tuple[ast.expr, Value]] = (),
    ):
        self.node = node
        self.positional = positional
        self.keywords = keywords
        self.starred = starred
        self.double_starred = double_starred
        #: What each ``**mapping`` pinfix cannot spell out as keywords holds.
        self.spread = spread

    def spread_keyword(self, name: str) -> Optional[Tuple[ast.expr, Value]]:
        """What the ``**mappings`` pass for the keyword ``name``: the values their dicts hold
        for it, with ``None`` (the parameter's default) where a dict plainly has no such key;
        ``None`` where one may hold keys pinfix does not know (a parameter, ``dict.update``
        of one, a key computed at run time)."""
        found: List[Value] = []
        for node, value in self.spread:
            for atom in value:
                if not isinstance(atom, DictAtom) or not _complete(atom):
                    return None
                held = atom.get(name)
                found.append(held if held is not None else Value((NoneValue(),)))
        return (self.spread[0][0], join(*found)) if found else None

    def keyword(self, name: str) -> Optional[Tuple[ast.expr, Value]]:
        for k, node, value in self.keywords:
            if k == name:
                return node, value
        return None

    def first(self, keyword: Optional[str] = None) -> Optional[Tuple[ast.expr, Value]]:
        if self.positional:
            return self.positional[0]
        return self.keyword(keyword) if keyword else None

    @property
    def values(self) -> List[Value]:
        return [v for _, v in self.positional] + [v for _, _, v in self.keywords]


def _literal_keywords(node: ast.expr) -> bool:
    """Whether ``node`` is a dict display whose keys are all string literals
    (what ``**`` then passes is known: one keyword per entry)."""
    return isinstance(node, ast.Dict) and all(
        isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys
    )


def literal_bool(node: Optional[ast.AST]) -> Optional[bool]:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    return None


def _qualified_label(qualified: str) -> str:
    if qualified.startswith("torch.Tensor."):
        return "." + qualified.rsplit(".", 1)[-1] + "()"
    return qualified + "(...)"


def _names_given(node: ast.Call) -> bool:
    """Whether a call is given a name (the only arguments a validator's checks can narrow)."""
    return any(isinstance(a, ast.Name) for a in node.args) or any(isinstance(k.value, ast.Name) for k in node.keywords)


class Calls(Expressions):
    """Calls, sinks and the table's transfer functions."""

    def eval_call(self, node: ast.Call, state: State) -> Value:
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self.eval(func.value, state)
            args = self.arguments(node, state)
            result = self.method_call(node, func, receiver, args, state)
            if _names_given(node):
                checker, bound = self.called_methods(receiver, func.attr, node)
                if checker:
                    narrowing.checked(self, checker, node, state, bound)
        else:
            callee = self.eval(func, state)
            args = self.arguments(node, state)
            result = callee.map(lambda a: self.call_atom(a, node, args, state))
            checker = self.called_functions(callee, node) if _names_given(node) else []
            if checker:
                narrowing.checked(self, checker, node, state)
        if node.keywords and result.unknown is not None:
            said = self.said_by_keyword(node, args)
            if said is not None:
                result = result.map(lambda a: said if isinstance(a, Unknown) else None)
        return result

    def said_by_keyword(self, node: ast.Call, args: Arguments) -> Optional[Value]:
        """What a call pinfix cannot see into says it returns by a keyword (``return_tensors="pt"``)."""
        for name, _, value in args.keywords:
            for atom in value.only(Const):
                effect = KEYWORD_CALLS.get((name, atom.value)) if isinstance(atom.value, str) else None
                if isinstance(effect, MakesBatch):
                    tensor = self.made(
                        node,
                        effect,
                        f"<{name}={atom.value!r}>",
                        f"`{self.short(node.func, 40)}(..., {name}={atom.value!r})`",
                    )
                    return Value((DictAtom((), Value((tensor,)), node, record=True),))
        return None

    def arguments(self, node: ast.Call, state: State) -> Arguments:
        positional: List[Tuple[ast.expr, Value]] = []
        keywords: List[Tuple[str, ast.expr, Value]] = []
        starred = double = False
        spread: List[Tuple[ast.expr, Value]] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.eval(a.value, state)
                starred = True
            else:
                positional.append((a, self.eval(a, state)))
        for k in node.keywords:
            if k.arg is None and _literal_keywords(k.value):
                # `**{'non_blocking': True}`: the literal's entries are keywords like any other
                # (a later duplicate replaces an earlier one, as in the dict).
                assert isinstance(k.value, ast.Dict)
                entries = {key.value: (v, self.eval(v, state)) for key, v in zip(k.value.keys, k.value.values)}  # type: ignore[union-attr]
                keywords += [(name, v, value) for name, (v, value) in entries.items()]
                continue
            value = self.eval(k.value, state)
            if k.arg is None:
                double = True
                spread.append((k.value, value))
            else:
                keywords.append((k.arg, k.value, value))
        return Arguments(node, positional, keywords, starred, double, spread)

    # --- callees -----------------------------------------------------------------------------------

    def called_functions(self, callee: Value, node: ast.Call) -> List[Any]:
        """The project functions (not bound methods) ``callee`` is on every way, an
        imported one resolved as :meth:`call_atom` resolves it (:meth:`project_callee`);
        ``[]`` where one way is something else."""
        out = []
        for atom in callee:
            found = self.project_callee(atom, node) if isinstance(atom, Ref) else None
            for way in found if found is not None else (atom,):
                if not (isinstance(way, Func) and way.receiver is None):
                    return []
                out.append(way.info)
        return out

    def called_methods(self, receiver: Value, name: str, node: ast.Call) -> Tuple[List[Any], bool]:
        """The project functions ``receiver.name(...)`` calls on every way, and whether they
        are called on an object (a module's function: ``mod.check(t)``; a method of the
        one class every way's object is of: ``self.check(t)``); ``[]`` where not known."""
        if receiver and receiver.all(lambda a: isinstance(a, Ref)):
            return self.called_functions(Value(tuple(Ref(a.name + "." + name) for a in receiver)), node), False
        classes = {id(a.cls): a.cls for a in receiver if isinstance(a, Instance)}
        if len(classes) == 1 and receiver.all(lambda a: isinstance(a, Instance)):
            found = self.method_named(next(iter(classes.values())), name)
            return ([found], True) if found is not None else ([], False)
        return [], False

    def method_named(self, cls: Any, name: str) -> Any:
        """The method ``name`` of the project class ``cls`` (its own; deep mode's, through its bases)."""
        return cls.methods.get(name)

    def project_callee(self, atom: Ref, node: ast.Call) -> Optional[Value]:
        """What the project defines under a called name neither the table nor a pinned
        producer names (``None``: nothing, or only another name: a library call)."""
        if atom.name in FUNCTIONS or atom.name in self.settings.pinned_producers:
            return None
        found = self.project_reference(atom.name, node)
        return found if found is not None and not found.any(lambda a: isinstance(a, Ref)) else None

    def imported_values(self, value: Value, node: ast.Call) -> Value:
        """Deep mode: each name imported from a project module (``from pkg.a import BUF``)
        as what that module binds it to, resolved as a called name is (read where a copy
        reads it: a module's imports are resolved when used, and not all are)."""
        if not value.any(lambda a: isinstance(a, Ref)):
            return value
        return value.map(lambda a: self.project_callee(a, node) if isinstance(a, Ref) else None)

    def call_atom(self, atom: Any, node: ast.Call, args: Arguments, state: State) -> Value:
        if isinstance(atom, Ref):
            found = self.project_callee(atom, node)
            if found is not None:
                return found.map(lambda a: self.call_atom(a, node, args, state))
            return self.library_call(atom.name, node, args, state)
        if isinstance(atom, Func):
            return self.project_call(atom, node, args, state)
        if isinstance(atom, Class):
            return self.construct(atom, node, args, state)
        self.escape(args, state)
        if isinstance(atom, Unknown):
            deep = "" if self.settings.deep else " (try --deep)"
            return unknown(f"pinfix cannot see what `{self.short(node.func)}()` returns{deep}", node)
        return unknown(node=node)

    def project_call(self, atom: Func, node: ast.Call, args: Arguments, state: State) -> Value:
        """A project function's result (deep mode overrides this)."""
        self.escape(args, state)
        deep = "" if self.settings.deep else " (try --deep)"
        return unknown(f"pinfix cannot see what `{self.short(node.func)}()` returns{deep}", node)

    def construct(self, atom: Class, node: ast.Call, args: Arguments, state: State) -> Value:
        self.escape(args, state)
        return Value((Instance(atom.info),))

    def escape(self, args: Arguments, state: State) -> None:
        """What an unknown callee is given may be waited on or rebound there:
        pending copies into it are settled, access paths through it forgotten."""
        self.kill_paths(args.node, state)
        pending = state.get(PENDING)
        if not pending:
            return
        given = {id(t.origin.node) for v in args.values for t in v.tensors if t.origin is not None}
        kept = tuple(p for p in pending.only(Pending) if p.target not in given)
        if len(kept) != len(pending):
            state.set(PENDING, Value(kept))

    def library_call(self, qualified: str, node: ast.Call, args: Arguments, state: State) -> Value:
        settings = self.settings
        if qualified in settings.pinned_producers:
            return Value((self.pinned(node, Pins(), "returns pinned memory", qualified),))
        effect = FUNCTIONS.get(qualified)
        if effect is None and qualified.rsplit(".", 1)[-1] in AVAILABILITY_NAMES:
            effect = Availability()
        if effect is None:
            return self.builtin_call(qualified, node, args, state)
        return self.apply(effect, qualified, node, args, state, receiver=None)

    def builtin_call(self, qualified: str, node: ast.Call, args: Arguments, state: State) -> Value:
        name = qualified[len("builtins.") :] if qualified.startswith("builtins.") else None
        if name in ("list", "tuple", "set", "sorted", "reversed", "frozenset"):
            first = args.first()
            kind = "tuple" if name == "tuple" else "set" if name in ("set", "frozenset") else "list"
            elements = self.elements_of(first[1], node) if first else EMPTY
            return Value((Seq(kind, None, elements, node),))
        if name == "dict":
            if not args.positional and not args.starred and not args.double_starred:
                # `dict(batch_size=4, pin_memory=True)`: its keys are the keywords.
                return Value(
                    (
                        DictAtom(
                            tuple((k, v) for k, _, v in args.keywords), join(*(v for _, _, v in args.keywords)), node
                        ),
                    )
                )
            return Value((DictAtom((), unknown(node=node), node),))
        if name in ("enumerate", "zip"):
            parts = [self.elements_of(v, node) for _, v in args.positional]
            items = ((Value((Host(),)),) + tuple(parts)) if name == "enumerate" else tuple(parts)
            return Value((Seq("list", None, Value((Seq("tuple", items, join(*items)),)), node),))
        if name == "iter":
            first = args.first()
            return Value((Seq("gen", None, self.elements_of(first[1], node), node),)) if first else unknown(node=node)
        if name in ("map", "filter"):
            return Value((Seq("list", None, unknown(node=node), node),))
        if name == "next":
            first = args.first()
            return self.elements_of(first[1], node) if first else unknown(node=node)
        if name == "slice":
            return Value((SliceAtom(),))
        if name == "getattr":
            return self.getattr_call(node, args)
        if qualified.startswith(("numpy.", "math.")):
            return Value((Array(),)) if qualified.startswith("numpy.") else Value((Host(),))
        self.escape(args, state)
        deep = "" if self.settings.deep or qualified.startswith(("torch.", "numpy.", "builtins.")) else " (try --deep)"
        return unknown(f"pinfix cannot see what `{self.short(node.func)}()` returns{deep}", node)

    # --- methods ------------------------------------------------------------------------------------

    def method_call(self, node: ast.Call, func: ast.Attribute, receiver: Value, args: Arguments, state: State) -> Value:
        method = func.attr
        effect = TENSOR_METHODS.get(method)
        if isinstance(effect, CopiesTo):
            function_form = receiver.all(lambda a: isinstance(a, Ref) and a.name == "torch.Tensor")
            return self.sink(node, effect, receiver, args, state, function_form)
        return receiver.map(lambda a: self.method_of(a, method, node, args, state))

    def method_of(self, atom: Any, method: str, node: ast.Call, args: Arguments, state: State) -> Value:
        if isinstance(atom, Ref):
            qualified = atom.name + "." + method
            found = self.project_reference(qualified, node)
            if found is not None:
                return found.map(lambda a: self.call_atom(a, node, args, state))
            return self.library_call(qualified, node, args, state)
        if isinstance(atom, Tensor):
            effect = TENSOR_METHODS.get(method)
            if effect is None:
                self.escape(args, state)
                return (
                    Value((Tensor(atom.device),))
                    if atom.device != CPU
                    else unknown(f"pinfix does not know the tensor method `.{method}()`", node)
                )
            return self.apply(effect, "torch.Tensor." + method, node, args, state, receiver=atom)
        if isinstance(atom, Array):
            effect = ARRAY_METHODS.get(method)
            if isinstance(effect, MakesArray):
                return Value((Array(atom.origin),))
            if isinstance(effect, ReadsOnHost):
                self.host_read(Value((atom,)), node, state)
            return Value((Host(),)) if effect is not None else unknown(node=node)
        if isinstance(atom, Seq):
            return self.sequence_method(atom, method, node, args, state)
        if isinstance(atom, DictAtom):
            return self.dict_method(atom, method, node, args, state)
        if isinstance(atom, (Instance, Class, Func)):
            return self.object_method(atom, method, node, args, state)
        if isinstance(atom, Opened):
            return self.opened_method(atom, method, node)
        if isinstance(atom, Wrapper):
            if method not in atom.effect.methods:
                self.escape(args, state)
                return unknown(f"pinfix does not follow `{self.short(node.func, 40)}()`", node)
            given = args.keyword(atom.effect.placement)
            placed = (
                atom.placed
                if given is None and not args.double_starred
                else self.placement(args, atom.effect.placement, bool(atom.placed))
            )
            if given is not None and isinstance(given[0], (ast.List, ast.Tuple)):
                placed = None  # one flag per object: pinfix does not match them up
            return self.prepared(node, args, placed, atom.effect.placement)
        if isinstance(atom, (Const, Host, NoneValue, Device, DType, SliceAtom, Flag)):
            return Value((Host(),))
        # An unknown receiver: what the method makes whatever it is called on.
        effect = TENSOR_METHODS.get(method)
        if isinstance(effect, (Pins, ToHost, Waits, ReadsOnHost, Metadata, MakesArray)):
            return self.apply(effect, "torch.Tensor." + method, node, args, state, receiver=None)
        if isinstance(effect, (View, Converts, Computes)) and isinstance(atom, Unknown):
            # A view or computation of what pinfix cannot see: the same reason, the step as evidence.
            step = self.step("computed", node, f"`.{method}()` of it")
            return Value((Unknown(atom.why, atom.node, (step, atom.route)),))
        self.escape(args, state)
        if isinstance(atom, Unknown):
            return Value((atom,))  # `obj.make()` of what pinfix cannot see: the same reason
        deep = "" if self.settings.deep else " (try --deep)"
        return unknown(f"pinfix cannot see what `{self.short(node.func)}()` returns{deep}", node)

    def object_method(self, atom: Any, method: str, node: ast.Call, args: Arguments, state: State) -> Value:
        """A method of a project object (deep mode overrides this)."""
        self.escape(args, state)
        assert isinstance(node.func, ast.Attribute)
        if method == "register_buffer" and isinstance(atom, Instance) and len(args.positional) > 1:
            # `nn.Module.register_buffer("buf", t)` stores `t` as `self.buf`.
            name = args.positional[0][1].only(Const)
            if name and isinstance(name[0].value, str):
                self.facts.stores.append((Value((atom,)), name[0].value, args.positional[1][1], node))
                path = self.path_of(ast.Attribute(value=node.func.value, attr=name[0].value, ctx=ast.Load()))
                if path is not None:
                    self.store_path(path, args.positional[1][1], state, node)  # type: ignore[attr-defined]
            return Value((NoneValue(),))
        self.kill_paths(node.func.value, state)
        deep = "" if self.settings.deep else " (try --deep)"
        return unknown(f"pinfix cannot see what `{self.short(node.func)}()` returns{deep}", node)

    def sequence_method(self, atom: Seq, method: str, node: ast.Call, args: Arguments, state: State) -> Value:
        if method in ("append", "add", "insert", "extend", "update"):
            grown = args.positional[-1][1] if args.positional else EMPTY
            if method in ("extend", "update"):
                grown = self.elements_of(grown, node)
            self.grow(node, atom, grown, state)
            return Value((NoneValue(),))
        if method == "pop":
            return atom.elements or unknown(node=node)
        if method == "copy":
            return Value((Seq(atom.kind, atom.items, atom.elements, node),))
        return Value((Host(),))

    def dict_method(self, atom: DictAtom, method: str, node: ast.Call, args: Arguments, state: State) -> Value:
        if method in ("get", "pop", "setdefault"):
            first = args.positional[0][0] if args.positional else None
            if isinstance(first, ast.Constant):
                found = atom.get(first.value)
                if found is not None:
                    return found
            default = args.positional[1][1] if len(args.positional) > 1 else Value((NoneValue(),))
            return join(atom.elements, default)
        if method == "values":
            return Value((Seq("list", None, atom.elements, node),))
        if method == "items":
            pair = Seq("tuple", (Value((Host(),)), atom.elements), join(Value((Host(),)), atom.elements))
            return Value((Seq("list", None, Value((pair,)), node),))
        if method == "update":
            grown = args.positional[0][1] if args.positional else EMPTY
            grown = grown.map(lambda a: a.elements if isinstance(a, DictAtom) else unknown(node=node))
            # `d.update(k=v)`: values under keys the dict's known keys do not say.
            if args.keywords or args.double_starred:
                grown = join(grown, *(v for _, _, v in args.keywords), unknown(node=node))
            self.grow(node, atom, grown, state)
            return Value((NoneValue(),))
        return Value((Host(),))

    def grow(self, node: ast.Call, atom: Any, added: Value, state: State) -> None:
        """``xs.append(t)``: the list named by the receiver now also holds ``added``."""
        assert isinstance(node.func, ast.Attribute)
        target = node.func.value
        if isinstance(atom, Seq):
            grown: Any = Seq(atom.kind, None, join(atom.elements, added), atom.site)
        else:
            grown = DictAtom(atom.items, join(atom.elements, added), atom.site)
        self.replace_in(target, atom, grown, state)

    def replace_in(self, target: ast.AST, old: Any, new: Any, state: State) -> None:
        """Put ``new`` where the name or access path ``target`` held ``old``."""
        key = target.id if isinstance(target, ast.Name) and target.id in self.func.locals else self.path_of(target)
        if key is None:
            return
        current = state.get(key)
        if not current:
            return
        state.set(key, Value(tuple(new if a is old else a for a in current)))

    # --- the effects -----------------------------------------------------------------------------------

    def apply(
        self, effect: Effect, qualified: str, node: ast.Call, args: Arguments, state: State, receiver: Optional[Tensor]
    ) -> Value:
        if isinstance(effect, Makes):
            return self.makes(effect, qualified, node, args, state)
        if isinstance(effect, Pins):
            what = (
                "pins it" if receiver is not None or qualified.startswith("torch.Tensor.") else "returns pinned memory"
            )
            return Value((self.pinned(node, effect, what, qualified),))
        if isinstance(effect, View):
            return self.view(effect, node, args, receiver)
        if isinstance(effect, Converts):
            return self.converts(effect, node, receiver, state)
        if isinstance(effect, Computes):
            return self.computes(effect, qualified, node, args, state, receiver)
        if isinstance(effect, Collates):
            return self.collates(effect, qualified, node, args, state)
        if isinstance(effect, CopiesTo):
            return self.library_sink(effect, node, args, state)
        if isinstance(effect, Iterates):
            first = args.first("iterable")
            return Value((Seq("gen", None, self.elements_of(first[1], node), node),)) if first else unknown(node=node)
        if isinstance(effect, Loads):
            return self.loader(effect, qualified, node, args, state)
        if isinstance(effect, Opens):
            return self.opens(effect, qualified, node, args, state)
        if isinstance(effect, Restores):
            self.escape(args, state)
            return unknown(
                f"`{self.short(node.func, 40)}(...)` puts each tensor back on the device it was saved from", node
            )
        if isinstance(effect, Prepares):
            if effect.role == "object":
                placed = self.placement(args, effect.placement, effect.default)
                host = args.keyword(effect.host_keyword) if effect.host_keyword else None
                if host is not None and literal_bool(host[0]) is not False:
                    placed = None
                return Value((Wrapper(effect, placed),))
            return self.prepared(node, args, self.placement(args, effect.placement, effect.default), effect.placement)
        if isinstance(effect, ReadsFile):
            return self.reads_file(effect, qualified, node, args, state)
        if isinstance(effect, ToHost):
            return self.to_host(node, receiver, state)
        if isinstance(effect, Shares):
            return self.shares(effect, node, receiver, state)
        if isinstance(effect, MakesArray):
            if receiver is not None:
                # `t.numpy()` views the tensor's memory: reading the array reads the tensor.
                return Value((Array(receiver.origin),))
            self.host_read(join(*args.values), node, state, computing=True)
            return Value((Array(node),))
        if isinstance(effect, HostData):
            return Value((Host(),))
        if isinstance(effect, ReadsOnHost):
            read = Value((receiver,)) if receiver is not None else join(*args.values)
            self.host_read(read, node, state)
            self.synchronized(state, keep=read)
            return Value((Host(),))
        if isinstance(effect, Waits):
            self.synchronized(state)
            return Value((NoneValue(),))
        if isinstance(effect, Metadata):
            return Value((Host(),))
        if isinstance(effect, Constant):
            if effect.value == "device":
                return self.device_value(node, args)
            return Value((DType(),))
        if isinstance(effect, Availability):
            return Value((Flag(),))
        if isinstance(effect, DefaultDevice):
            if not effect.sets:
                # Read back: what this function set, else whatever the process set (unknown).
                return state.get(DEFAULT_DEVICE) or Value((Device(ANY_DEVICE),))
            given = args.first("device")
            state.set(
                DEFAULT_DEVICE, self.devices(given[1], state) if given is not None else Value((Device(ANY_DEVICE),))
            )
            return Value((NoneValue(),))
        if isinstance(effect, RecordFields):
            return self.fields_call(node, args)
        return unknown(node=node)

    def fields_call(self, node: ast.Call, args: Arguments) -> Value:
        """``dataclasses.fields(x)``: a tuple of the fields of ``x``'s record class."""
        first = args.first("class_or_instance")
        if first is None:
            return unknown(node=node)

        def fields_of(atom: Atom) -> Value:
            cls = atom.cls if isinstance(atom, Instance) else atom.info if isinstance(atom, Class) else None
            if cls is None or not cls.is_record:
                return unknown(node=node)
            return Value((Seq("tuple", None, Value((FieldOf(cls),)), node),))

        return first[1].map(fields_of)

    def record_field_names(self, cls: Any) -> Optional[List[str]]:
        """The names of a record's fields (``None``: a base may add some; deep mode reads
        the project's bases)."""
        if cls.bases and cls.is_dataclass:
            return None
        return [name for name, _ in cls.fields()]

    def getattr_call(self, node: ast.Call, args: Arguments) -> Value:
        """``getattr(obj, name[, default])``: ``obj.name`` for a literal name, or for each of a
        record's field names (``f.name`` for ``f`` in ``dataclasses.fields(obj)``), joined
        with the default."""
        if len(args.positional) not in (2, 3) or args.keywords or args.starred or args.double_starred:
            return unknown(node=node)
        names: List[str] = []
        for atom in args.positional[1][1]:
            if isinstance(atom, Const) and isinstance(atom.value, str) and atom.value.isidentifier():
                names.append(atom.value)
            elif isinstance(atom, FieldName):
                fields = self.record_field_names(atom.cls)
                if fields is None:
                    return unknown(f"pinfix cannot see every field of `{atom.cls.name}`", node)
                names.extend(fields[:MAX_REFLECTED_FIELDS])
            else:
                return unknown(node=node)

        def read(atom: Atom) -> Value:
            if not isinstance(atom, (Instance, Class)):
                return unknown(node=node)
            out = []
            for name in dict.fromkeys(names):
                known = atom.field(name) if isinstance(atom, Instance) else None
                if known is None:
                    known = (
                        self.instance_attribute(atom, name, node)
                        if isinstance(atom, Instance)
                        else self.class_attribute(atom, name, node)
                    )
                out.append(known)
            return join(*out)

        found = args.positional[0][1].map(read)
        return join(found, args.positional[2][1]) if len(args.positional) == 3 else found

    def synchronized(self, state: State, keep: Optional[Value] = None) -> None:
        """A wait (or a blocking read, which waits for the stream): nothing is pending any more."""
        if state.get(PENDING):
            state.set(PENDING, EMPTY)

    def device_value(self, node: ast.Call, args: Arguments) -> Value:
        first = args.first("type")
        if first is not None:
            text = first[1].only(Const)
            if text and isinstance(text[0].value, str):
                return Value((Device(_device_kind(text[0].value)),))
        return Value((Device(ANY_DEVICE),))

    def makes(self, effect: Makes, qualified: str, node: ast.Call, args: Arguments, state: State) -> Value:
        label = _qualified_label(qualified)
        if effect.shares_argument and self.module.registers_host_memory:
            why = f"`{self.short(node)}` views host memory, and this module page-locks host memory it is given (a `cudaHostRegister`-like call)"
            return unknown(why, node)
        pin = args.keyword("pin_memory")
        if args.starred or args.double_starred:
            # `torch.zeros(*size, pin_memory=flag)`: *size cannot override a keyword.
            if effect.factory and pin is not None and literal_bool(pin[0]) is not False and not args.double_starred:
                return Value((self.pinned(node, effect, "is pinned", qualified),))
            return unknown(f"`{self.short(node)}` passes `*args` pinfix cannot read", node)
        if effect.sized and _literally_empty(args, effect.varargs_size):
            return Value((Tensor(CPU, NO_DATA, DENSE, Origin(node, effect, self.src, label, qualified)),))
        explicit = False
        devices: Value = Value((Device(CPU),))
        if effect.factory or effect.host_data_only:
            given = args.keyword("device")
            devices = self.devices(given[1], state) if given is not None else self.default_device(state)
        if effect.factory and pin is not None:
            if literal_bool(pin[0]) is False:
                explicit = True
            elif not pin[1].all(lambda a: isinstance(a, Const) and a.value is False):
                pinned = self.on_devices(devices, lambda: self.pinned(node, effect, "is pinned", qualified))
                if narrowing.truth_of(self, pin[0], state) is True or narrowing.unseen_flag(self, pin[0], state):
                    return pinned  # an availability flag or one pinfix cannot see, as `if flag: x = x.pin_memory()` reads it
                # A flag pinfix traces and that is no availability flag: pageable where it is false.
                scalar = qualified == "torch.tensor" and args.positional and _maybe_scalar_data(args.positional[0][0])
                data = args.positional[0][1] if args.positional else None
                pageable = self.on_devices(
                    devices, lambda: self.made(node, effect, qualified, label, True, bool(scalar), data)
                )
                return self.conditional(pinned, pageable, self.short(pin[0], 40))
        if effect.like and args.keyword("device") is None:
            first = args.first()
            base = first[1] if first is not None else EMPTY
            return base.map(lambda a: self.like_of(a, node, effect, qualified, label, explicit))
        if effect.host_data_only:
            data = args.first("data") or args.keyword("obj")
            if data is None:
                return unknown(node=node)

            def each(a: Any) -> Value:
                if isinstance(a, Tensor):
                    return Value((a,))  # as_tensor returns a tensor it is given
                if host_atom(a):
                    return self.on_devices(
                        devices, lambda: self.made(node, effect, qualified, label, scalar=_maybe_scalar_data(data[0]))
                    )
                return Value((a,)) if isinstance(a, Unknown) else unknown(node=node)

            return data[1].map(each)
        scalar = qualified == "torch.tensor" and args.positional and _maybe_scalar_data(args.positional[0][0])
        data = args.positional[0][1] if args.positional else None
        return self.on_devices(devices, lambda: self.made(node, effect, qualified, label, explicit, bool(scalar), data))

    def default_device(self, state: State) -> Value:
        """Where a factory given no device allocates here: the device the function set,
        else the CPU, unless the module sets the default device somewhere (unknown)."""
        found = state.get(DEFAULT_DEVICE)
        if found:
            return found
        return Value((Device(ANY_DEVICE if self.module.sets_default_device else CPU),))

    def on_devices(self, devices: Value, make: Any) -> Value:
        """``make()`` where the device is the CPU, a tensor elsewhere on the others."""
        out = []
        for a in devices:
            kind = a.kind if isinstance(a, Device) else ANY_DEVICE
            if kind == CPU:
                out.append(Value((make(),)))
            elif kind == "meta":
                out.append(Value((Tensor(ANY_DEVICE),)))
            else:
                out.append(Value((Tensor(kind),)))
        return join(*out)

    def devices(self, value: Value, state: State) -> Value:
        """A ``device=`` argument's possible devices."""

        def each(a: Any) -> Value:
            if isinstance(a, Device):
                return Value((a,))
            if isinstance(a, Const) and isinstance(a.value, str):
                return Value((Device(_device_kind(a.value)),))
            if isinstance(a, Const) and isinstance(a.value, int) and not isinstance(a.value, bool):
                return Value((Device(ACCEL),))
            if isinstance(a, NoneValue):
                return Value((Device(CPU),))
            return Value((Device(ANY_DEVICE),))

        return value.map(each)

    def like_of(self, a: Any, node: ast.Call, effect: Makes, qualified: str, label: str, explicit: bool) -> Value:
        if isinstance(a, Tensor):
            if a.device == CPU:
                made = self.made(node, effect, qualified, label, explicit)
                return Value((made.evolve(route=(made.route[0], a.route), via=a.via),))  # type: ignore[index]
            return Value((Tensor(a.device),))
        return unknown(f"`{self.short(node)}` follows its argument's device", node)

    def view(self, effect: View, node: ast.Call, args: Arguments, receiver: Optional[Tensor]) -> Value:
        if receiver is None:
            return unknown(node=node)
        if effect.dense == "always":
            return Value((receiver,))
        if effect.dense == "first-dim" and args.positional and _int_literal(args.positional[0][0]) == 0:
            return Value((receiver,))
        return self.maybe_gapped(receiver, node)

    def converts(self, effect: Converts, node: ast.Call, receiver: Optional[Tensor], state: State) -> Value:
        if receiver is None:
            return unknown(node=node)
        if receiver.device != CPU:
            return Value((Tensor(receiver.device, route=receiver.route, via=receiver.via),))
        self.host_read(Value((receiver,)), node, state, computing=True)
        if effect.contiguous and receiver.layout == GAPPED:
            return Value(
                (
                    self.computed(
                        node,
                        receiver,
                        CONTIGUOUS,
                        "`.contiguous()`",
                        "copies the gapped view into a fresh tensor",
                        effect,
                    ),
                )
            )
        if effect.contiguous and receiver.gapped and receiver.memory == PAGEABLE:
            return Value((receiver,))
        if receiver.memory == PAGEABLE:
            text = self.short(node.func, 40).rsplit(".", 1)[-1]
            return Value((receiver.evolve(converted=receiver.converted or f".{text}()"),))
        if receiver.memory == NO_DATA:
            return Value((receiver,))
        return unknown(f"`{self.short(node)}` may or may not copy into fresh memory", node)

    def computes(
        self,
        effect: Computes,
        qualified: str,
        node: ast.Call,
        args: Arguments,
        state: State,
        receiver: Optional[Tensor],
    ) -> Value:
        out = args.keyword("out")
        if out is not None:
            return out[1]  # the result is the `out=` tensor itself
        if receiver is not None:
            operands = [Value((receiver,))]
            others = [v for v in args.values if v.tensors]
            operands += others
        elif effect.inputs == "sequence":
            first = args.first("tensors")
            if first is None:
                return unknown(node=node)
            operands = [self.elements_of(first[1], node)]
        elif effect.inputs == "first":
            if not args.positional:
                first = args.first("input")
                if first is None:
                    return unknown(node=node)
                operands = [first[1]]
            else:
                operands = [args.positional[0][1]]
                rest = [v for _, v in args.positional[1:] if v.tensors]
                if operands[0].tensors and all(t.scalar for t in operands[0].tensors) and rest:
                    operands = rest  # a 0-dim first input follows the others' device
        else:
            operands = [v for v in args.values if v.tensors] or [join(*args.values)]
        if not any(o.tensors for o in operands):
            inner = next((o.unknown for o in operands if o.unknown is not None), None)
            callee = self.short(node.func, 40)
            if inner is None:
                return unknown(f"pinfix cannot see what `{callee}()` returns", node)
            # The root reason stays the message; what was computed from it is evidence.
            step = self.step("computed", node, f"`{callee}()` computes from it")
            return Value((Unknown(inner.why, inner.node, (step, inner.route)),))
        self.host_read(join(*operands), node, state, computing=True)
        label = _qualified_label(qualified)
        return self.tensor_result(node, operands, qualified, label, "computes a fresh tensor", effect, effect.scalar)

    def collates(self, effect: Collates, qualified: str, node: ast.Call, args: Arguments, state: State) -> Value:
        """``default_collate(items)``: fresh pageable tensors, shaped as an item is, where every
        item holds only host data and CPU tensors (anything else: unknown)."""
        first = args.first("batch")
        if first is None:
            return unknown(node=node)
        items = self.elements_of(first[1], node)
        callee = self.short(node.func, 40)
        if not items or not _host_only(items, MAX_CONTAINER_DEPTH):
            return unknown(f"pinfix cannot tell where what `{callee}()` collates lives", node)
        self.host_read(first[1], node, state, computing=True)
        tensor = Value((self.made(node, effect, qualified, f"`{callee}(...)`"),))

        def shaped(item: Atom) -> Value:
            if isinstance(item, DictAtom):
                return Value((DictAtom((), tensor, node, record=True),))
            if isinstance(item, Seq):
                return Value((Seq("list", None, tensor, node),))
            return tensor

        return join(*(shaped(a) for a in items))

    def loader(self, effect: Loads, qualified: str, node: ast.Call, args: Arguments, state: State) -> Value:
        """``DataLoader(dataset, ..., pin_memory=...)``: what iterating it yields, batch by batch."""
        callee = self.short(node.func, 40)
        pin = args.keyword("pin_memory")
        if pin is None and effect.pin_slot < len(args.positional):
            pin = args.positional[effect.pin_slot]
        if pin is None and args.double_starred and not args.starred:
            # `DataLoader(ds, **cfg)` of a dict whose keys pinfix knows: its `pin_memory` entry, if any.
            # The dict must be made in the call or be a local only stored into by literal keys
            # (a dict handed to other code or given `setdefault` may gain keys pinfix does not see).
            plain = self.plain_dicts()
            spelt = all(isinstance(n, ast.Call) or (isinstance(n, ast.Name) and n.id in plain) for n, _ in args.spread)
            pin = args.spread_keyword("pin_memory") if spelt else None
            if pin is None:
                return unknown(f"`{callee}(...)` passes `**kwargs` that may set `pin_memory=`", node)
            if pin[1].all(lambda a: isinstance(a, NoneValue)):
                pin = None  # no dict has the key: the default, False
        if pin is None and args.starred:
            return unknown(f"`{callee}(...)` passes `*args`/`**kwargs` that may set `pin_memory=`", node)
        # A `pin_memory=` written out (False, None, a name bound to False): the fix would not add a second one.
        explicit = pin is not None
        pageable = (
            pin is None
            or literal_bool(pin[0]) is False
            or pin[1].all(lambda a: (isinstance(a, Const) and a.value is False) or isinstance(a, NoneValue))
        )
        label = f"`{callee}(...)` batches"
        if not pageable:
            tensor = self.pinned(node, effect, "pins each batch it yields", qualified)
            return Value((Seq("gen", None, collated(Value((tensor,)), node), node),))
        how = "with `pin_memory=False`" if pin is not None else "without `pin_memory=True`"

        def fresh(route: Any, what: str) -> Tensor:
            step = self.step("made", node, f"`{self.short(node)}` yields {what} ({how})")
            return self.made(node, effect, qualified, label, explicit=explicit).evolve(route=(step, route))

        collate = args.keyword("collate_fn")
        if collate is None and effect.collate_slot < len(args.positional):
            collate = args.positional[effect.collate_slot]
        default = Value((fresh(None, "batches collated into fresh pageable memory"),))
        if collate is None:
            return Value((Seq("gen", None, collated(default, node), node),))

        def batches(atom: Any) -> Value:
            if isinstance(atom, NoneValue) or (
                isinstance(atom, Ref) and isinstance(FUNCTIONS.get(atom.name), Collates)
            ):
                return collated(default, node)
            if isinstance(atom, Ref):
                found = self.project_reference(atom.name, node)
                if found is not None and found.all(lambda a: isinstance(a, Func)):
                    return found.map(batches)
            if isinstance(atom, Func):
                returned = self.collate_returns(atom, node, collate[0], state)
                if returned is not None:
                    what = f"what `{atom.info.name}` returns, fresh pageable memory"
                    return _handed_out(returned, lambda t: fresh(t.route, what), MAX_CONTAINER_DEPTH)
            return unknown(f"the batches of `{callee}(...)` are what its `collate_fn` returns", node)

        return Value((Seq("gen", None, collate[1].map(batches), node),))

    def plain_dicts(self) -> FrozenSet[str]:
        """The function's local names used only as dicts whose keys the flow sees (once per function)."""
        memo = self.ctx.plain_dicts
        found = memo.get(id(self.func.node))
        if found is None:
            found = memo[id(self.func.node)] = _plain_dict_names(self.func.node, self.func.locals)
        return found

    def collate_returns(self, atom: Func, node: ast.Call, given: ast.expr, state: State) -> Optional[Value]:
        """What a ``collate_fn`` of the project returns for a list of the dataset's items (host
        data and CPU tensors of unknown memory, bare or in tuples, lists and dicts: what a
        dataset hands a loader's workers). Plain mode reads a function of the same module
        (once per function); deep mode asks the project. ``None``: pinfix cannot read it."""
        info = atom.info
        if not info.params or info.params[0].kind in ("vararg", "kwarg"):
            return None
        step = self.step("made", given, f"`{self.short(given, 40)}` is given a list of the dataset's items")
        item = Tensor(CPU, ANY_MEMORY, DENSE, route=(step, None))
        items = Value((Seq("list", None, join(Value((Host(),)), collated(Value((item,)), given)), given),))
        if self.settings.deep:
            result = self.project_call(atom, node, Arguments(node, [(given, items)], [], False, False), state)
            return None if result.unknown is not None and not result.tensors else result
        if info.module is not self.module or atom.receiver is not None:
            return None
        memo = self.ctx.collated
        if id(info.node) not in memo:
            memo[id(info.node)] = None  # a collate_fn that builds a loader with itself reads as unknown
            facts = self.ctx.evaluator(info, {info.params[0].name: items}).run()
            memo[id(info.node)] = facts.returns
        return memo[id(info.node)]

    def reads_file(self, effect: ReadsFile, qualified: str, node: ast.Call, args: Arguments, state: State) -> Value:
        """``torch.load(f, map_location="cpu")``: the saved tensors, on the device named."""
        callee = self.short(node.func, 40)
        why, devices = self.read_onto(effect.device_keyword, effect.device_slot, effect.saved_device, node, args, state)
        if why is not None:
            return why
        label = f"`{callee}(...)`"
        return collated(self.on_devices(devices, lambda: self.made(node, effect, qualified, label)), node)

    def read_onto(
        self, keyword: str, slot: int, saved_device: bool, node: ast.Call, args: Arguments, state: State
    ) -> Tuple[Optional[Value], Value]:
        """Where a call reading tensors from a file puts them: ``(None, devices)`` from its
        device ``keyword`` or positional ``slot`` (the CPU when it names none, unless
        ``saved_device``: each tensor goes back where it was saved), or ``(why, _)``, an
        unknown saying why pinfix cannot tell."""
        callee = self.short(node.func, 40)
        given = args.keyword(keyword)
        if given is None and slot < len(args.positional):
            given = args.positional[slot]
        if given is None and (args.starred or args.double_starred):
            return unknown(f"`{callee}(...)` passes `*args`/`**kwargs` that may name a device", node), EMPTY
        if given is None and saved_device:
            return unknown(f"`{callee}(...)` puts each tensor back on the device it was saved from", node), EMPTY
        if given is None:
            return None, Value((Device(CPU),))
        if not given[1].all(lambda a: isinstance(a, (Device, Const, NoneValue))):
            return unknown(f"pinfix cannot tell where `{callee}(...)` puts what it reads", node), EMPTY
        return None, self.devices(given[1], state)

    def opens(self, effect: Opens, qualified: str, node: ast.Call, args: Arguments, state: State) -> Value:
        """``safe_open(path, framework="pt", device=...)``: a handle whose reads are fresh tensors
        on that device (the CPU by default: pageable memory)."""
        callee = self.short(node.func, 40)
        why, devices = self.read_onto(effect.device_keyword, effect.device_slot, False, node, args, state)
        if why is not None:
            return why
        label = f"`{callee}(...)`"
        step = self.step("made", node, f"`{self.short(node)}` opens a file whose reads are fresh pageable CPU tensors")
        read = self.on_devices(devices, lambda: self.made(node, effect, qualified, label).evolve(route=(step, None)))
        return Value((Opened(effect, read, node),))

    def placement(self, args: Arguments, keyword: str, default: bool) -> Optional[bool]:
        """Whether a wrapper puts batches on the device: its ``keyword`` if given (``None``: a
        value pinfix cannot tell), else ``default``."""
        given = args.keyword(keyword)
        if given is None:
            return None if args.double_starred else default
        value = literal_bool(given[0])
        if value is None and given[1].all(lambda a: isinstance(a, Const) and isinstance(a.value, bool)):
            values = {a.value for a in given[1].only(Const)}
            value = values.pop() if len(values) == 1 else None
        return value

    def prepared(self, node: ast.Call, args: Arguments, placed: Optional[bool], keyword: str) -> Value:
        """What ``accelerator.prepare(model, opt, loader)`` / ``prepare_data_loader(loader)`` return:
        each loader wrapped, yielding what it yields (its pinning kept), or its batches on the
        device where the wrapper places them; anything else unknown. One object is returned as
        itself, several as a tuple."""
        callee = self.short(node.func, 40)

        def wrapped(atom: Any) -> Value:
            if not (isinstance(atom, Seq) and atom.kind == "gen"):
                return unknown(f"pinfix does not follow what `{callee}()` makes of it", node)
            if placed is False:
                return Value((atom,))
            if placed is None:
                return unknown(f"`{callee}(...)` may put each batch on the device (`{keyword}=`)", node)
            return Value((Seq("gen", None, collated(Value((Tensor(ACCEL),)), node), node),))

        objects = [v.map(wrapped) for _, v in args.positional]
        if args.starred or not objects:
            return unknown(f"pinfix does not follow what `{callee}()` returns", node)
        return objects[0] if len(objects) == 1 else Value((Seq("tuple", tuple(objects), join(*objects), node),))

    def opened_method(self, atom: Opened, method: str, node: ast.Call) -> Value:
        """A method of an open file of tensors: a read gives its tensors, ``get_slice`` a slice handle."""
        if atom.sliced:
            return Value((Host(),))
        if method in atom.effect.reads:
            step = self.step("read", node, f"`{self.short(node, 40)}` reads a tensor from the file")
            return atom.tensors.map(lambda t: Value((t.step(step),)) if isinstance(t, Tensor) else None)
        if method in atom.effect.slices:
            return Value((Opened(atom.effect, atom.tensors, atom.site, sliced=True),))
        if method == "__enter__":
            return Value((atom,))
        return Value((Host(),))

    def shares(self, effect: Shares, node: ast.Call, receiver: Optional[Tensor], state: State) -> Value:
        """``t.share_memory_()``: a CPU tensor's data now lives in shared pageable memory (the
        name it was called on too); a device tensor stays where it is."""
        if receiver is None:
            return unknown(node=node)
        if receiver.device != CPU:
            return Value((receiver,))
        moved = self.made(node, effect, "torch.Tensor.share_memory_", ".share_memory_()")
        assert isinstance(node.func, ast.Attribute)
        self.replace_in(node.func.value, receiver, moved, state)
        return Value((moved,))

    def to_host(self, node: ast.Call, receiver: Optional[Tensor], state: State) -> Value:
        """``t.cpu()``: a CPU tensor stays as it is; a device tensor's data lands in fresh pageable memory."""
        self.synchronized(state)
        if receiver is not None and receiver.device == CPU:
            return Value((receiver,))
        return Value((self.made(node, ToHost(), "torch.Tensor.cpu", ".cpu()"),))

    # --- sinks -----------------------------------------------------------------------------------------

    def sink(
        self, node: ast.Call, effect: CopiesTo, receiver: Value, args: Arguments, state: State, function_form: bool
    ) -> Value:
        positional = args.positional
        if function_form:
            if not positional:
                return unknown(node=node)
            dst_node, receiver = positional[0]
            positional = positional[1:]
        nb_keyword = args.keyword(NON_BLOCKING_KEYWORD)
        if args.starred and nb_keyword is None:
            # `*rest` may shift every positional slot: the copy's parts cannot be placed.
            return self.not_a_copy(node, effect, receiver, positional, args, state)
        nb_node: Optional[ast.expr] = None
        nb_value: Optional[Value] = None
        if nb_keyword is not None:
            nb_node, nb_value = nb_keyword
        elif effect.method == "to":
            found = _to_positional_non_blocking(positional)
            if found is not None:
                nb_node, nb_value = found
        else:
            for index in effect.non_blocking_slots:
                if index < len(positional):
                    nb_node, nb_value = positional[index]
        if nb_node is None and args.double_starred:
            # `**kwargs` pinfix cannot read may pass `non_blocking`: the flag is unknown.
            nb_node = next(k.value for k in node.keywords if k.arg is None)
        non_blocking: Optional[bool] = None
        if nb_node is not None:
            literal = literal_bool(nb_node)
            if (
                literal is None
                and nb_value is not None
                and nb_value.all(lambda a: isinstance(a, Const) and a.value is True)
            ):
                literal = True
            if (
                literal is None
                and nb_value is not None
                and nb_value.all(lambda a: isinstance(a, Const) and a.value is False)
            ):
                literal = False
            non_blocking = literal
        if effect.source == "receiver":
            source_node: Optional[ast.expr] = (
                node.func.value
                if isinstance(node.func, ast.Attribute) and not function_form
                else (args.positional[0][0] if args.positional else None)
            )
            # A record's `.to` (a Hugging Face `BatchEncoding` / `BatchFeature`) copies each of its tensors.
            source = receiver.map(
                lambda a: join(Value((a,)), a.elements) if isinstance(a, DictAtom) and a.record else None
            )
            destination = None
        else:
            src = positional[0] if positional else None
            if src is None:
                kw = args.keyword(effect.source_keyword or "")
                src = kw if kw is not None else None
            if src is None:
                return receiver
            source_node, source = src
            destination = receiver
        source = self.imported_values(source, node)
        direction, device_node, result = self.copy_direction(
            node, effect, source, destination, positional, args, state, non_blocking
        )
        if nb_node is None or non_blocking is False or source_node is None:
            return result
        if effect.method == "to" and direction == "none":
            return result
        copy = Copy(
            node,
            effect.method,
            function_form,
            source_node,
            source,
            destination,
            non_blocking,
            nb_node,
            direction,
            device_node,
            self.func,
        )
        landed = destination if effect.method == "copy_" else result
        if landed is not None and landed.all(lambda a: isinstance(a, Tensor) and a.device == ACCEL):
            copy.target = ACCEL
        self.facts.add_copy(copy)
        if direction == "d2h" and non_blocking is True:
            result = self.pending_copy(node, copy, source_node, destination, result, state)
        return result

    def library_sink(self, effect: CopiesTo, node: ast.Call, args: Arguments, state: State) -> Value:
        """``send_to_device(batch, dev, non_blocking=True)``: every tensor in ``batch`` (through
        its tuples, lists and dicts) copied to ``dev``; the result holds them there."""
        given = args.first(effect.source_keyword)
        device = args.keyword(effect.device_slot[1]) if effect.device_slot else None
        if device is None and effect.device_slot and effect.device_slot[0] < len(args.positional):
            device = args.positional[effect.device_slot[0]]
        nb = args.keyword(NON_BLOCKING_KEYWORD)
        if given is None or device is None:
            return unknown(node=node)
        target = self.destination_of(device[0], device[1])
        moved = collated(Value((Tensor(ACCEL if target == ACCEL else ANY_DEVICE),)), node)
        if effect.implied_except is not None:
            # Non_blocking unless the device is an int index or one of the blocking types.
            if device[1].any(
                lambda a: (
                    isinstance(a, Const)
                    and (isinstance(a.value, int) or str(a.value).split(":")[0] in effect.implied_except)
                )
            ):
                return moved
            nb = (device[0], Value((Const(True),)))
        if target in (CPU, "meta", "dtype") or nb is None or literal_bool(nb[0]) is False:
            return moved
        if nb[1].all(lambda a: isinstance(a, Const) and a.value is False):
            return moved
        non_blocking = (
            True
            if literal_bool(nb[0]) is True or nb[1].all(lambda a: isinstance(a, Const) and a.value is True)
            else None
        )
        source = _contents(given[1], MAX_CONTAINER_DEPTH)
        copy = Copy(node, effect.method, True, given[0], source, None, non_blocking, nb[0], "h2d", device[0], self.func)
        self.facts.add_copy(copy)
        return moved

    def not_a_copy(
        self,
        node: ast.Call,
        effect: CopiesTo,
        receiver: Value,
        positional: Sequence[Tuple[ast.expr, Value]],
        args: Arguments,
        state: State,
    ) -> Value:
        """What a sink's call returns where its parts cannot be placed (``copy_(*args)``):
        ``copy_`` its receiver, the others what they return whatever the flag."""
        if effect.method == "copy_":
            return receiver
        direction, _, result = self.copy_direction(node, effect, receiver, None, positional, args, state, None)
        return result

    def copy_direction(
        self,
        node: ast.Call,
        effect: CopiesTo,
        source: Value,
        destination: Optional[Value],
        positional: Sequence[Tuple[ast.expr, Value]],
        args: Arguments,
        state: State,
        non_blocking: Optional[bool],
    ) -> Tuple[str, Optional[ast.expr], Value]:
        """``(direction, device node, result)``: ``h2d`` when the copy may move host
        memory to a device on some path."""
        if effect.method == "copy_":
            assert destination is not None
            src_cpu = source.all(lambda a: isinstance(a, Tensor) and a.device == CPU)
            dst_cpu = destination.all(lambda a: isinstance(a, Tensor) and a.device == CPU)
            if dst_cpu and src_cpu:
                return "h2h", None, destination
            if dst_cpu:
                return "d2h", None, destination
            return "h2d", None, destination
        if effect.method in ("cuda", "xpu"):
            return "h2d", positional[0][0] if positional else None, Value((Tensor(ACCEL),))
        # `.to(...)`: what it names first decides: a device, a dtype, another tensor.
        device = args.keyword("device")
        if device is None and positional and literal_bool(positional[0][0]) is None:
            device = positional[0]
        dtype_given = args.keyword("dtype") is not None
        if device is None:
            return "none", None, self.conversion(source, node, state, dtype_given)
        target = self.destination_of(device[0], device[1])
        if target == "dtype":
            return "none", None, self.conversion(source, node, state, True)
        if target == CPU:
            moved = self.to_cpu_result(node, source, non_blocking, state)
            return (
                ("h2h" if source.all(lambda a: isinstance(a, Tensor) and a.device == CPU) else "d2h"),
                device[0],
                moved,
            )
        if target == "meta":
            return "none", device[0], Value((Tensor(ANY_DEVICE),))
        return "h2d", device[0], Value((Tensor(ACCEL if target == ACCEL else ANY_DEVICE),))

    def destination_of(self, node: ast.expr, value: Value) -> str:
        """What ``.to(X)`` names: ``cpu``, ``accelerator``, ``meta``, ``dtype`` or ``unknown`` (taken as a device)."""
        kinds = set()
        for a in value:
            if isinstance(a, DType):
                kinds.add("dtype")
            elif isinstance(a, Device):
                kinds.add(a.kind)
            elif isinstance(a, Const) and isinstance(a.value, str):
                kinds.add(_device_kind(a.value))
            elif isinstance(a, Const) and isinstance(a.value, int):
                kinds.add(ACCEL)
            elif isinstance(a, Tensor):
                kinds.add(a.device)  # `.to(other)`: other's device
            else:
                kinds.add(_by_spelling(node))
        if kinds == {"dtype"}:
            return "dtype"
        if kinds == {CPU}:
            return CPU
        if kinds == {"meta"}:
            return "meta"
        if ACCEL in kinds and kinds <= {ACCEL, "dtype"}:
            return ACCEL
        kinds.discard("dtype")
        return ANY_DEVICE if kinds else "dtype"

    def conversion(self, source: Value, node: ast.Call, state: State, dtype: bool) -> Value:
        return source.map(lambda a: self.converts(Converts(), node, a, state) if isinstance(a, Tensor) else None)

    def to_cpu_result(self, node: ast.Call, source: Value, non_blocking: Optional[bool], state: State) -> Value:
        """``t.to("cpu")``: a CPU tensor is returned as it is; a device tensor's data
        lands in fresh memory (pinned when non_blocking, as torch allocates it)."""

        def each(a: Any) -> Value:
            if isinstance(a, Tensor) and a.device == CPU:
                return Value((a,))
            step = self.step("made", node, f"`{self.short(node)}` is on the CPU")
            return Value(
                (
                    Tensor(
                        CPU,
                        PINNED if non_blocking is True else ANY_MEMORY,
                        DENSE,
                        Origin(node, None, self.src, self.short(node), "<to-cpu>"),
                        route=(step, None),
                    ),
                )
            )

        if non_blocking is not True:
            self.synchronized(state)
        return source.map(each)

    def pending_copy(
        self,
        node: ast.Call,
        copy: Copy,
        source_node: ast.expr,
        destination: Optional[Value],
        result: Value,
        state: State,
    ) -> Value:
        """A non_blocking device-to-host copy: its destination is pending until a wait."""
        pending = list(state.get(PENDING) or EMPTY)
        if copy.method == "copy_":
            assert destination is not None
            targets = [
                t
                for t in destination.tensors
                if t.device == CPU and t.memory == PAGEABLE and t.origin is not None and t.pending is None
            ]
            root = node.func.value if isinstance(node.func, ast.Attribute) else None
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            name = root.id if isinstance(root, ast.Name) else "the destination"
            for t in targets:
                pending.append(Pending(node, id(t.origin.node), name))
        else:
            for t in result.tensors:
                if t.origin is not None and t.origin.node is node:
                    pending.append(Pending(node, id(node), ""))
        state.set(PENDING, Value(tuple(pending)))
        return result


def collated(tensors: Value, node: ast.AST) -> Value:
    """What holds ``tensors`` in a structure pinfix cannot see (a collated batch, a
    checkpoint): a tensor, or a tuple, list or dict (read by key or attribute) of them,
    two levels deep: unpacking, indexing, ``.items()`` and ``.values()`` reach them."""
    inner = join(
        tensors, Value((Seq("list", None, tensors, node),)), Value((DictAtom((), tensors, node, record=True),))
    )
    return join(tensors, Value((Seq("tuple", None, inner, node),)), Value((DictAtom((), inner, node, record=True),)))


def _handed_out(value: Value, fresh: Any, depth: int) -> Value:
    """``value`` with each fresh pageable CPU tensor (through its tuples, lists and dicts,
    ``depth`` levels down) replaced by ``fresh(tensor)``: what a loader hands out of what its
    ``collate_fn`` returns (pinned by the loader where ``pin_memory=`` is true, so the loader
    is where the fix goes)."""

    def each(a: Any) -> Optional[Value]:
        if isinstance(a, Tensor) and a.device == CPU and a.memory == PAGEABLE:
            return Value((fresh(a),))
        if depth <= 0:
            return None
        if isinstance(a, Seq):
            items = tuple(_handed_out(v, fresh, depth - 1) for v in a.items) if a.items is not None else None
            return Value((Seq(a.kind, items, _handed_out(a.elements, fresh, depth - 1), a.site),))
        if isinstance(a, DictAtom):
            entries = tuple((k, _handed_out(v, fresh, depth - 1)) for k, v in a.items)
            return Value((DictAtom(entries, _handed_out(a.elements, fresh, depth - 1), a.site, a.record),))
        return None

    return value.map(each)


#: Dict methods that read a dict and never add a key to it.
_READING_DICT_METHODS = frozenset({"get", "keys", "items", "values", "copy", "pop", "__contains__"})


def _plain_dict_names(func: ast.AST, local: FrozenSet[str]) -> FrozenSet[str]:
    """The local names of ``func`` that every use treats as a dict whose keys the flow sees:
    bound by assignment, stored into and read by literal keys, read by reading methods
    (``get``, ``items``...), passed as ``**name``. Any other use (an argument, ``setdefault``,
    ``update``, ``|=``, ``del``, a use in a nested function) may add keys pinfix does not see."""
    ok: dict[str, bool] = {}
    body = getattr(func, "body", [])
    # (node, parent, inside a nested scope), walked without recursion: one visit per node.
    stack: list[Tuple[ast.AST, Optional[ast.AST], bool]] = [
        (stmt, None, False) for stmt in (body if isinstance(body, list) else [body])
    ]
    while stack:
        node, parent, nested = stack.pop()
        if isinstance(node, ast.Name) and node.id in local:
            ok[node.id] = ok.get(node.id, True) and not nested and _plain_use(node, parent)
        inner = nested or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        stack.extend((child, node, inner) for child in ast.iter_child_nodes(node))
    return frozenset(name for name, plain in ok.items() if plain)


def _plain_use(name: ast.Name, parent: Optional[ast.AST]) -> bool:
    if isinstance(parent, ast.Assign) and name in parent.targets:
        return True
    if isinstance(parent, ast.Subscript) and parent.value is name:
        return isinstance(parent.slice, ast.Constant) and not isinstance(parent.ctx, ast.Del)
    if isinstance(parent, ast.keyword) and parent.arg is None:
        return True
    if isinstance(parent, ast.Attribute) and parent.value is name:
        return parent.attr in _READING_DICT_METHODS
    return False


def _complete(atom: DictAtom) -> bool:
    """Whether pinfix knows every key of the dict ``atom``: each value it may hold is one its
    known keys hold (a display of literal keys, ``dict(k=v)``, ``d["k"] = v``); ``**other``,
    ``d[key] = v`` and ``d.update(...)`` add values under keys pinfix does not know."""
    held = {id(a) for _, v in atom.items for a in v}
    return all(id(a) in held for a in atom.elements)


def _contents(value: Value, depth: int) -> Value:
    """``value`` with the items of its tuples, lists and dicts (``depth`` levels down) joined in:
    what a helper that recurses into containers copies."""
    if depth <= 0:
        return value
    inner = [_contents(a.elements, depth - 1) for a in value if isinstance(a, (Seq, DictAtom))]
    return join(value, *inner)


def _device_kind(text: str) -> str:
    return device_of_text(text)


def _by_spelling(node: ast.AST) -> str:
    """An argument of ``.to(...)`` pinfix cannot evaluate, read by its spelling: a
    name that says dtype is a dtype; anything else is taken as a device."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    if "dtype" in name.lower() or name.lower() in ("dt", "type"):
        return "dtype"
    return ANY_DEVICE


def _host_only(value: Value, depth: int) -> bool:
    """Whether ``value`` holds only host data, arrays and CPU tensors, through its containers."""
    if depth <= 0:
        return False
    for a in value:
        if isinstance(a, Tensor):
            if a.device != CPU:
                return False
        elif isinstance(a, Seq):
            if not all(_host_only(v, depth - 1) for v in (*(a.items or ()), a.elements) if v):
                return False
        elif isinstance(a, DictAtom):
            if not all(_host_only(v, depth - 1) for v in (*(v for _, v in a.items), a.elements) if v):
                return False
        elif not isinstance(a, (Array, Host, Const, NoneValue)):
            return False
    return True


def _to_positional_non_blocking(positional: Sequence[Tuple[ast.expr, Value]]) -> Optional[Tuple[ast.expr, Value]]:
    """``to(device, dtype, non_blocking)`` or ``to(dtype|other, non_blocking)``: a
    literal bool in slot 2, or in slot 1 after a first argument that is no device
    (``x.to(dev, True)`` is rejected by torch: ``True`` is no dtype)."""
    if len(positional) > 2 and literal_bool(positional[2][0]) is not None:
        return positional[2]
    if len(positional) > 1 and literal_bool(positional[1][0]) is not None:
        first_node, first = positional[0]
        if first.any(lambda a: isinstance(a, (Tensor, DType))) or (
            first.unknown and _by_spelling(first_node) == "dtype"
        ):
            return positional[1]
        if first.unknown and not _device_like(first_node):
            return positional[1]  # `.to(other, True)`: another tensor
    return None


def _device_like(node: ast.AST) -> bool:
    if isinstance(node, (ast.Constant, ast.Call)):
        return True
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "dev" in name.lower()


def _int_literal(node: ast.AST) -> Optional[int]:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _literally_empty(args: Arguments, varargs: bool) -> bool:
    """``zeros(0)``, ``empty(0, 4)``, ``zeros((4, 0))``, ``full([0], 1.0)``, ``zeros(size=[0])``."""
    keyword = args.keyword("size")
    positional = [n for n, _ in args.positional]
    first = keyword[0] if keyword is not None else (positional[0] if positional else None)
    if isinstance(first, (ast.Tuple, ast.List)):
        dims = list(first.elts)
    elif keyword is None and varargs:
        dims = positional
    else:
        dims = [first] if first is not None else []
    return any(_int_literal(d) == 0 for d in dims)


def _maybe_scalar_data(node: ast.AST) -> bool:
    """``torch.tensor(n)``: a 0-dim tensor unless the data is plainly a sequence."""
    return not isinstance(node, (ast.List, ast.Tuple, ast.ListComp))


register(ast.Call, Calls.eval_call)
