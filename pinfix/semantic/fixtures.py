"""pytest fixtures: what a test's parameter holds when pytest fills it.

pytest calls a test function (``def test_x(batch): ...``) with, for each parameter, the
value of the fixture of that name: what the function decorated ``@pytest.fixture`` (or
``@pytest.fixture(name="batch")``) returns, or yields for a generator fixture. A test
that copies that value ``non_blocking`` copies what the fixture made, often pageable
memory (``torch.from_numpy``, ``torch.arange``). This module finds, from the syntax of
one module, the fixture that fills a parameter; the evaluator evaluates it.

Only where pytest's choice is plain: a function named ``test...`` or a fixture (each
fixture's own parameters are fixtures too), not a lambda nor under a ``mock.patch``
decorator (which fills the first parameters), whose parameter has no default, is not
positional-only, and is named by no ``@pytest.mark.parametrize`` on it or its class (a
parametrized argument comes first; one whose names are not literal makes every name
uncertain), in a module that defines no ``pytest_generate_tests`` hook (which may
parametrize any name). The fixture is the class's own fixture method of that name, else
the module's top-level one (the last defined wins, as pytest takes the module's
attribute); in deep mode, else the nearest ``conftest.py``'s above the module
(:meth:`pinfix.semantic.deep.project.DeepProject.conftest_fixture`). Fixtures of plugins
are not looked for: such a parameter stays unknown.
"""

from __future__ import annotations

import ast
import weakref
from typing import Dict, Optional, Set

from .scope import FunctionInfo, ModuleInfo, last_name

#: The parameter pytest fills with the fixture machinery itself, never a user fixture.
_REQUEST = "request"
#: Each module's top-level fixtures by name, found once.
_FIXTURES: "weakref.WeakKeyDictionary[ModuleInfo, Dict[str, FunctionInfo]]" = weakref.WeakKeyDictionary()


def fixture_name(func: FunctionInfo) -> Optional[str]:
    """The name ``func`` is a fixture under (``None``: it is none): ``@pytest.fixture``,
    ``@fixture``, with or without arguments; ``name="..."`` renames it."""
    if isinstance(func.node, ast.Lambda):
        return None
    for decorator in func.node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        if last_name(target) != "fixture" or (
            isinstance(target, ast.Attribute) and last_name(target.value) != "pytest"
        ):
            continue
        if call is None:
            return func.name
        for keyword in call.keywords:
            if keyword.arg == "name":
                given = keyword.value
                return given.value if isinstance(given, ast.Constant) and isinstance(given.value, str) else None
            if keyword.arg is None:
                return None  # **options: the name may be among them
        return func.name
    return None


def _parametrized(decorators: list) -> Optional[Set[str]]:
    """The argument names ``@pytest.mark.parametrize`` decorators give (``None``: one
    gives names that are not literal)."""
    names: Set[str] = set()
    for decorator in decorators:
        if not isinstance(decorator, ast.Call) or last_name(decorator.func) != "parametrize":
            continue
        given = decorator.args[0] if decorator.args else None
        for keyword in decorator.keywords:
            if keyword.arg == "argnames":
                given = keyword.value
        if isinstance(given, ast.Constant) and isinstance(given.value, str):
            names.update(n.strip() for n in given.value.split(","))
        elif isinstance(given, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in given.elts
        ):
            names.update(e.value.strip() for e in given.elts)  # type: ignore[union-attr]
        else:
            return None
    return names


def module_fixtures(module: ModuleInfo) -> Dict[str, FunctionInfo]:
    """The module's top-level fixtures by name (none where it defines ``pytest_generate_tests``)."""
    found = _FIXTURES.get(module)
    if found is None:
        found = {}
        if "pytest_generate_tests" not in module.top:
            for func in module.functions.values():
                # (The module's attribute of that name: a later def or class of the name replaces it.)
                if func.parent is module.body and module.top.get(func.name) is func:
                    name = fixture_name(func)
                    if name is not None and (name not in found or func.node.lineno > found[name].node.lineno):
                        found[name] = func
        _FIXTURES[module] = found
    return found


def asks_fixture(func: FunctionInfo, name: str) -> bool:
    """Whether pytest fills ``func``'s parameter ``name`` with the fixture of that name,
    plainly (see the module's docstring)."""
    if name == _REQUEST or isinstance(func.node, ast.Lambda):
        return False
    if not (func.name.startswith("test") or fixture_name(func) is not None):
        return False
    if func.self_name == name or (func.kind == "classmethod" and func.params and func.params[0].name == name):
        return False
    # pytest asks fixtures for the parameters without a default, by keyword (not the
    # positional-only ones); `mock.patch` decorators fill the first ones themselves.
    param = next((p for p in func.params if p.name == name), None)
    if param is None or param.kind not in ("positional", "kwonly") or param.default is not None:
        return False
    if any(last_name(d.func if isinstance(d, ast.Call) else d).startswith("patch") for d in func.node.decorator_list):
        return False
    decorators = list(func.node.decorator_list)
    if func.cls is not None:
        decorators += list(func.cls.node.decorator_list)
    parametrized = _parametrized(decorators)
    return parametrized is not None and name not in parametrized and "pytest_generate_tests" not in func.module.top


def filled_by(func: FunctionInfo, name: str) -> Optional[FunctionInfo]:
    """The fixture of ``func``'s own module that pytest fills its parameter ``name`` with:
    its class's, else the module's (``None``: none there, or not one pinfix can tell)."""
    if not asks_fixture(func, name):
        return None
    if func.cls is not None:
        for method in func.cls.methods.values():
            if method is not func and fixture_name(method) == name:
                return method
    found = module_fixtures(func.module).get(name)
    return found if found is not func else None


__all__ = ["asks_fixture", "filled_by", "fixture_name", "module_fixtures"]
