"""pytest fixtures as sources (pinfix/semantic/fixtures.py): a test's parameter holds what
the fixture of that name returns or yields, where pytest's choice is plain; elsewhere it
stays unknown. Each case is a whole test module, checked in plain and deep mode."""

import io
import json
import os
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from pinfix.api import check_text
from pinfix.cli import main
from pinfix.config import Config

HEAD = "import numpy as np\nimport pytest\nimport torch\nfrom pytest import fixture\n\n\n"
PAGEABLE = "torch.from_numpy(np.ones(4))"

#: (a test module after HEAD, the line of the copy pinfix must report)
FOUND = {
    "returned": (
        f"@pytest.fixture\ndef batch():\n    return {{'x': {PAGEABLE}}}\n\n\n"
        "def test_copy(batch):\n    return {k: v.cuda(non_blocking=True) for k, v in batch.items()}\n",
        13,
    ),
    "yielded": (
        f"@pytest.fixture()\ndef host():\n    t = {PAGEABLE}\n    yield t\n    del t\n\n\n"
        "def test_copy(host, device):\n    return host.to(device, non_blocking=True)\n",
        15,
    ),
    "renamed": (
        f"@pytest.fixture(scope='module', name='host')\ndef make_host():\n    return {PAGEABLE}\n\n\n"
        "def test_copy(host):\n    return host.cuda(non_blocking=True)\n",
        13,
    ),
    "imported decorator": (
        f"@fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "def test_copy(host):\n    return host.cuda(non_blocking=True)\n",
        13,
    ),
    "fixture of a fixture": (
        f"@pytest.fixture\ndef base():\n    return {PAGEABLE}\n\n\n"
        "@pytest.fixture\ndef host(base):\n    return base[1:]\n\n\n"
        "def test_copy(host):\n    return host.cuda(non_blocking=True)\n",
        18,
    ),
    "class fixture": (
        "class TestCopies:\n"
        f"    @pytest.fixture\n    def host(self):\n        return {PAGEABLE}\n\n"
        "    def test_copy(self, host):\n        return host.cuda(non_blocking=True)\n",
        13,
    ),
    "the last definition": (
        "@pytest.fixture\ndef host():\n    return torch.ones(4).pin_memory()\n\n\n"
        f"@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "def test_copy(host):\n    return host.cuda(non_blocking=True)\n",
        18,
    ),
}

#: Test modules where pytest may fill the parameter otherwise, or no fixture fills it.
UNKNOWN = {
    "parametrized": (
        f"@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "@pytest.mark.parametrize('n, host', [(1, torch.ones(4).pin_memory())])\n"
        "def test_copy(n, host):\n    return host.cuda(non_blocking=True)\n"
    ),
    "parametrized as a list": (
        f"@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "@pytest.mark.parametrize(['host'], [(None,)])\ndef test_copy(host):\n    return host.cuda(non_blocking=True)\n"
    ),
    "names not literal": (
        f"NAMES = 'host'\n\n\n@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "@pytest.mark.parametrize(NAMES, [None])\ndef test_copy(host):\n    return host.cuda(non_blocking=True)\n"
    ),
    "the class parametrized": (
        f"@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "@pytest.mark.parametrize('host', [None])\nclass TestCopies:\n"
        "    def test_copy(self, host):\n        return host.cuda(non_blocking=True)\n"
    ),
    "a generate_tests hook": (
        f"def pytest_generate_tests(metafunc):\n    pass\n\n\n@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "def test_copy(host):\n    return host.cuda(non_blocking=True)\n"
    ),
    "a generate_tests hook, a class fixture": (
        "def pytest_generate_tests(metafunc):\n    pass\n\n\nclass TestCopies:\n"
        f"    @pytest.fixture\n    def host(self):\n        return {PAGEABLE}\n\n"
        "    def test_copy(self, host):\n        return host.cuda(non_blocking=True)\n"
    ),
    "a default": (
        f"@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "def test_copy(host=torch.ones(2).pin_memory()):\n    return host.cuda(non_blocking=True)\n"
    ),
    "positional-only": (
        f"@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "def test_copy(host, /):\n    return host.cuda(non_blocking=True)\n"
    ),
    "under mock.patch": (
        f"from unittest import mock\n\n\n@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "@mock.patch('torch.ones')\ndef test_copy(host):\n    return host.cuda(non_blocking=True)\n"
    ),
    "replaced by a later def": (
        f"@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "def host():\n    return None\n\n\n"
        "def test_copy(host):\n    return host.cuda(non_blocking=True)\n"
    ),
    "not a test": (
        f"@pytest.fixture\ndef host():\n    return {PAGEABLE}\n\n\n"
        "def copy(host):\n    return host.cuda(non_blocking=True)\n"
    ),
    "pinned": (
        "@pytest.fixture\ndef host():\n    return torch.ones(4).pin_memory()\n\n\n"
        "def test_copy(host):\n    return host.cuda(non_blocking=True)\n"
    ),
    "a plain function of that name": (
        f"def host():\n    return {PAGEABLE}\n\n\ndef test_copy(host):\n    return host.cuda(non_blocking=True)\n"
    ),
    "request": (
        f"@pytest.fixture\ndef request():\n    return {PAGEABLE}\n\n\n"
        "def test_copy(request):\n    return request.cuda(non_blocking=True)\n"
    ),
    "fixtures of each other": (
        "@pytest.fixture\ndef a(b):\n    return b\n\n\n@pytest.fixture\ndef b(a):\n    return a\n\n\n"
        "def test_copy(a):\n    return a.cuda(non_blocking=True)\n"
    ),
    "options given whole": (
        f"OPTIONS = {{'name': 'other'}}\n\n\n@pytest.fixture(**OPTIONS)\ndef host():\n    return {PAGEABLE}\n\n\n"
        "def test_copy(host):\n    return host.cuda(non_blocking=True)\n"
    ),
}


def findings(code: str, deep: bool) -> List[Tuple[int, str]]:
    """The lines of the pageable copies pinfix reports (PIN001 for ``from_numpy``'s view,
    PIN002 for what is made from it)."""
    config = Config().with_overrides(deep=deep)
    found = check_text(HEAD + textwrap.dedent(code), config=config)
    return [(f.line, "pageable") for f in found if f.code in ("PIN001", "PIN002")]


@pytest.mark.parametrize("deep", [False, True], ids=["plain", "deep"])
@pytest.mark.parametrize("case", sorted(FOUND))
def test_a_fixture_fills_the_test_parameter_of_its_name(case: str, deep: bool) -> None:
    code, line = FOUND[case]
    assert findings(code, deep) == [(line, "pageable")]


@pytest.mark.parametrize("deep", [False, True], ids=["plain", "deep"])
@pytest.mark.parametrize("case", sorted(UNKNOWN))
def test_a_parameter_pytest_may_fill_otherwise_stays_unknown(case: str, deep: bool) -> None:
    assert findings(UNKNOWN[case], deep) == []


def test_the_finding_says_which_fixture_the_memory_came_through() -> None:
    code, line = FOUND["renamed"]
    (finding,) = check_text(HEAD + code)
    assert "reaches the copy through the pytest fixture `host`" in finding.message
    assert any("the pytest fixture `host`" in step.message for step in finding.evidence)


def test_a_generator_hands_out_what_it_yields() -> None:
    from pinfix.semantic import SourceText
    from pinfix.semantic.module import ModuleContext
    from pinfix.semantic.scope import ModuleInfo
    from pinfix.semantic.values import Tensor
    from pinfix.settings import Settings

    text = HEAD + "def gen(a):\n    yield a\n    yield torch.zeros(2)\n    return torch.ones(1)\n"
    src = SourceText.from_bytes(text.encode(), "m.py")
    module = ModuleInfo(src, src.parse(), Path("m.py"))
    facts = ModuleContext(module, Settings()).evaluate(module.top["gen"])
    assert facts is not None and facts.yields is not None and facts.returns is not None
    made = [a for a in facts.yields if isinstance(a, Tensor)]
    assert len(made) == 1 and made[0].origin is not None and made[0].origin.line == 9
    assert len(list(facts.yields)) == 2  # the parameter's unknown, and the fresh tensor


# --- conftest.py fixtures (deep mode) ------------------------------------------------------------

CONFTEST = f"import numpy as np\nimport pytest\nimport torch\n\n\n@pytest.fixture\ndef host():\n    return {PAGEABLE}\n"
PINNED_CONFTEST = (
    "import pytest\nimport torch\n\n\n@pytest.fixture\ndef host():\n    return torch.ones(4).pin_memory()\n"
)
USES = "def test_copy(host):\n    return host.cuda(non_blocking=True)\n"


def write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def run(root: Path, *extra: str) -> List[Tuple[str, int]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["check", "--no-progress", "--no-cache", "--output-format", "json", *extra, str(root)], out=out, err=err
    )
    assert code in (0, 1), err.getvalue()
    found = json.loads(out.getvalue())["findings"]
    return sorted((Path(f["path"]).resolve().relative_to(root.resolve()).as_posix(), f["line"]) for f in found)


def test_deep_mode_takes_the_fixture_of_the_nearest_conftest(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pyproject.toml": "[tool.pinfix]\n",
            "tests/conftest.py": CONFTEST,
            "tests/unit/test_a.py": USES,
            "tests/other/conftest.py": PINNED_CONFTEST,  # nearer, and pinned
            "tests/other/test_b.py": USES,
            "tests/mine/test_c.py": PINNED_CONFTEST.replace("def host", "def host") + "\n\n" + USES,  # its own
        },
    )
    assert run(root, "--deep") == [("tests/unit/test_a.py", 2)]
    assert run(root) == []  # plain mode reads no other file
    (finding,) = json.loads(_json(root, "--deep"))["findings"]
    assert "through the pytest fixture `host`" in finding["message"] and "conftest.py" in finding["message"]


def test_no_conftest_above_the_project_is_looked_for(tmp_path: Path) -> None:
    root = write(tmp_path, {"conftest.py": CONFTEST, "proj/pyproject.toml": "", "proj/tests/test_a.py": USES})
    assert run(root / "proj", "--deep") == []
    (root / "proj/pyproject.toml").unlink()
    assert run(root / "proj", "--deep") == [("tests/test_a.py", 2)]


def test_a_conftest_made_later_changes_the_cached_verdict(tmp_path: Path) -> None:
    root = write(tmp_path, {"pyproject.toml": "[tool.pinfix]\ndeep = true\n", "tests/test_a.py": USES})

    def cached() -> List[int]:
        out, err = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        os.chdir(root)
        try:
            main(["check", "--no-progress", "--output-format", "json", "tests/test_a.py"], out=out, err=err)
        finally:
            os.chdir(cwd)
        return [f["line"] for f in json.loads(out.getvalue())["findings"]]

    assert cached() == []
    (root / "tests/conftest.py").write_text(CONFTEST)
    assert cached() == [2]


def _json(root: Path, *extra: str) -> str:
    out = io.StringIO()
    main(
        ["check", "--no-progress", "--no-cache", "--output-format", "json", *extra, str(root)],
        out=out,
        err=io.StringIO(),
    )
    return out.getvalue()
