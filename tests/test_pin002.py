"""PIN002 / PIN003 through the CLI's pipeline: fixes (input -> expected, ruff
clean, idempotent), reported-not-fixed cases, SARIF and ``pinfix rule``."""

import io
import json
from pathlib import Path

import pytest

from pinfix.api import check_text
from pinfix.cli import main
from pinfix.config import load_config
from tests.support import fix_in_project as _fix
from tests.support import project_file as _path
from tests.support import ruff_clean_before_and_after

VLLM_CONFIG = (
    "[tool.pinfix]\n"
    'pin-memory-expr = "is_pin_memory_available()"\n'
    'pin-memory-import = "vllm.utils.platform_utils.is_pin_memory_available"\n'
)

# Fixes with the vLLM setting: safe, applied by default.
CASES = {
    "tensor_inline_new_import": (
        """\
import torch

from vllm.logger import init_logger


def f(token_indices: list, device: torch.device) -> torch.Tensor:
    init_logger()
    return torch.tensor(token_indices, dtype=torch.int32).to(device, non_blocking=True)
""",
        """\
import torch

from vllm.logger import init_logger
from vllm.utils.platform_utils import is_pin_memory_available


def f(token_indices: list, device: torch.device) -> torch.Tensor:
    init_logger()
    return torch.tensor(
        token_indices, dtype=torch.int32, pin_memory=is_pin_memory_available()
    ).to(device, non_blocking=True)
""",
    ),
    "bound_arange_merged_import": (
        """\
import torch

from vllm.utils.platform_utils import is_uva_available


def f(n: int, dst: torch.Tensor) -> None:
    idx = torch.arange(n, dtype=torch.int64)
    dst[:n].copy_(idx, non_blocking=True)
    is_uva_available()
""",
        """\
import torch

from vllm.utils.platform_utils import is_pin_memory_available, is_uva_available


def f(n: int, dst: torch.Tensor) -> None:
    idx = torch.arange(n, dtype=torch.int64, pin_memory=is_pin_memory_available())
    dst[:n].copy_(idx, non_blocking=True)
    is_uva_available()
""",
    ),
    "already_imported_multiline_trailing_comma": (
        """\
import torch

from vllm.utils.platform_utils import is_pin_memory_available


def f(n: int, dev: torch.device) -> torch.Tensor:
    is_pin_memory_available()
    buf = torch.zeros(
        n,
        dtype=torch.int32,
    )
    return buf[: n // 2].to(dev, non_blocking=True)
""",
        """\
import torch

from vllm.utils.platform_utils import is_pin_memory_available


def f(n: int, dev: torch.device) -> torch.Tensor:
    is_pin_memory_available()
    buf = torch.zeros(
        n,
        dtype=torch.int32,
        pin_memory=is_pin_memory_available(),
    )
    return buf[: n // 2].to(dev, non_blocking=True)
""",
    ),
    "like_of_cpu_tensor_via_view": (
        """\
import torch

from vllm.utils.platform_utils import is_pin_memory_available


def f(n: int, dev: torch.device) -> torch.Tensor:
    base = torch.empty(n, 2, pin_memory=is_pin_memory_available())
    out = torch.ones_like(base).view(-1)
    return out.cuda(dev, True)
""",
        """\
import torch

from vllm.utils.platform_utils import is_pin_memory_available


def f(n: int, dev: torch.device) -> torch.Tensor:
    base = torch.empty(n, 2, pin_memory=is_pin_memory_available())
    out = torch.ones_like(base, pin_memory=is_pin_memory_available()).view(-1)
    return out.cuda(dev, True)
""",
    ),
}

# A last argument followed by a line break before `)`: the break stays before `)`.
CASES["multiline_no_trailing_comma"] = (
    CASES["already_imported_multiline_trailing_comma"][0].replace(
        "dtype=torch.int32,\n    )", "dtype=torch.int32\n    )"
    ),
    CASES["already_imported_multiline_trailing_comma"][1].replace(
        "dtype=torch.int32,\n        pin_memory=is_pin_memory_available(),\n    )",
        "dtype=torch.int32, pin_memory=is_pin_memory_available()\n    )",
    ),
)

# Reported, not fixed by default: (source, code, fix safety, part of the note).
NOT_FIXED = {
    "unconfigured_true_is_unsafe": (
        "import torch\n\n\ndef f(n, dev):\n    return torch.arange(n).to(dev, non_blocking=True)\n",
        "PIN002",
        "unsafe",
        "pin-memory-expr",
    ),
    "explicit_false": (
        "import torch\n\n\ndef f(n, dev):\n    return torch.arange(n, pin_memory=False).to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "pin_memory=False",
    ),
    "used_after_copy": (
        "import torch\n\n\ndef f(n, dst):\n    x = torch.zeros(n)\n    dst.copy_(x, non_blocking=True)\n    x[0] = 1\n",
        "PIN002",
        "unsafe",
        "race",
    ),
    "conversion_between": (
        "import torch\n\n\ndef f(ids, dev):\n    x = torch.tensor(ids)\n    return x.long().to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "allocates a new pageable tensor",
    ),
    "cpu_method": (
        "import torch\n\n\ndef f(t, dev):\n    return t.cpu().to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "pin_memory",
    ),
    "as_tensor_list": (
        "import torch\n\n\ndef f(dev):\n    return torch.as_tensor([1, 2]).to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "pin_memory",
    ),
    "gapped_pinned": (
        "import torch\n\n\ndef f(n, dev):\n    b = torch.empty(n, 4, pin_memory=True)\n    return b[:, :2].to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "gapped",
    ),
    "from_numpy_gapped": (
        "import torch\n\n\ndef f(a, dev):\n    return torch.from_numpy(a)[::2].to(dev, non_blocking=True)\n",
        "PIN001",
        None,
        "gapped",
    ),
    "d2h_read": (
        "import torch\n\n\ndef f(t):\n    y = t.to('cpu', non_blocking=True)\n    return y.tolist()\n",
        "PIN003",
        None,
        "report only",
    ),
    # Computed on the CPU: a fresh tensor that no pin_memory= can reach (report only).
    "cat_of_factories": (
        "import torch\n\n\ndef f(n, dev):\n    return torch.cat([torch.arange(n), torch.ones(n)]).to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "computed result",
    ),
    "arithmetic_bound": (
        "import torch\n\n\ndef f(n, dev):\n    x = torch.arange(n) * 2 + 1\n    return x.to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "computed result",
    ),
    "gather_of_pinned": (
        "import torch\n\n\ndef f(n, dev):\n    b = torch.zeros(n, pin_memory=True)\n    return b[[1, 0]].to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "computed result",
    ),
    "clone_of_pinned": (
        "import torch\n\n\ndef f(n, dev):\n    b = torch.zeros(n).pin_memory()\n    return b.clone().to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "computed result",
    ),
    "expand_of_pinned": (
        "import torch\n\n\ndef f(n, dev):\n    b = torch.zeros(1, n, pin_memory=True)\n    return b.expand(3, -1).to(dev, non_blocking=True)\n",
        "PIN002",
        None,
        "gapped",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pin_memory_fix(project: Path, name: str) -> None:
    (project / "pyproject.toml").write_text(VLLM_CONFIG)
    before, expected = CASES[name]
    findings = check_text(before, path=str(_path(project, name)), config=load_config(project))
    assert [(f.code, f.fix_safety) for f in findings] == [("PIN002", "safe")]
    after = _fix(project, name, before)
    assert after == expected
    assert _fix(project, name, after) == after
    assert check_text(after, path=str(_path(project, name)), config=load_config(project)) == []
    assert ruff_clean_before_and_after(_path(project, name), project, before, after)


def test_unconfigured_fix_writes_true_with_unsafe_fixes(project: Path) -> None:
    source = NOT_FIXED["unconfigured_true_is_unsafe"][0]
    after = _fix(project, "u", source, unsafe_fixes=True)
    assert "torch.arange(n, pin_memory=True).to(dev, non_blocking=True)" in after
    assert _fix(project, "u", after, unsafe_fixes=True) == after


@pytest.mark.parametrize("name", sorted(NOT_FIXED))
def test_reported_not_fixed(project: Path, name: str) -> None:
    source, code, safety, why = NOT_FIXED[name]
    (finding,) = check_text(source, path=str(_path(project, name)), config=load_config(project))
    assert (finding.code, finding.fix_safety) == (code, safety)
    assert why in (finding.fix_note or "") or why in finding.message
    assert _fix(project, name, source) == source


def test_staging_buffer_advice_where_no_fix(project: Path) -> None:
    (finding,) = check_text(NOT_FIXED["cpu_method"][0], config=load_config(project))
    assert "persistent pinned buffer" in finding.message and "CpuGpuBuffer" in finding.message


def test_pin003_message_says_why(project: Path) -> None:
    (finding,) = check_text(NOT_FIXED["d2h_read"][0], config=load_config(project))
    assert finding.line == 6 and "before the device-to-host copy has finished" in finding.message


def test_sarif_lists_every_rule(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text(NOT_FIXED["cpu_method"][0] + NOT_FIXED["d2h_read"][0].replace("import torch\n", "", 1))
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", "--output-format", "sarif", str(f)], out=out, err=err) == 1
    (run,) = json.loads(out.getvalue())["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["PIN001", "PIN002", "PIN003", "PIN004", "PIN100"]
    assert all("## Fix safety" in r["fullDescription"]["text"] for r in rules)
    assert sorted(r["ruleId"] for r in run["results"]) == ["PIN002", "PIN003"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in run["results"])


@pytest.mark.parametrize("code", ["PIN002", "PIN003"])
def test_rule_doc(code: str) -> None:
    out = io.StringIO()
    assert main(["rule", code], out=out, err=io.StringIO()) == 0
    text = out.getvalue()
    assert text.startswith(code) and all(
        h in text for h in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety")
    )


def test_config_rejects_bad_pin_memory_settings(project: Path) -> None:
    from pinfix.config import ConfigError

    (project / "pyproject.toml").write_text('[tool.pinfix]\npin-memory-expr = "is_pin("\n')
    with pytest.raises(ConfigError, match="pin-memory-expr"):
        load_config(project)
    (project / "pyproject.toml").write_text('[tool.pinfix]\npin-memory-import = "x.y"\n')
    with pytest.raises(ConfigError, match="needs pin-memory-expr"):
        load_config(project)


@pytest.mark.parametrize(
    "setting, message",
    [
        ('helper = "np_to_pinned_tensor"', "helper must look like 'package.module.function'"),
        ('h2d-helper = "x.1y"', "h2d-helper must look like 'package.module.function'"),
        ('pinned-producers = ["ok.mod.f", "staged"]', "pinned-producers entries must look like"),
        (
            'pin-memory-expr = "flag()"\npin-memory-import = "flag"',
            "pin-memory-import must look like 'package.module.name'",
        ),
    ],
)
def test_config_rejects_names_that_are_not_dotted(project: Path, setting: str, message: str) -> None:
    from pinfix.config import ConfigError

    (project / "pyproject.toml").write_text(f"[tool.pinfix]\n{setting}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(project)


@pytest.mark.parametrize(
    "call",
    [
        "DataLoader(ds, pin_memory=False)",
        "DataLoader(ds, pin_memory=None)",
        "DataLoader(ds, 4, False, None, None, 0, None, None)",  # pin_memory=None by position
    ],
)
def test_dataloader_with_pin_memory_written_out_is_reported_without_a_fix(call: str) -> None:
    """A written-out `pin_memory=` that does not pin: reported, and the fix does not add a second one."""
    from pinfix.api import fix_text

    source = f"from torch.utils.data import DataLoader\n\n\ndef f(ds, dev):\n    for b in {call}:\n        b.to(dev, non_blocking=True)\n"
    (found,) = [f for f in check_text(source) if f.code == "PIN002"]
    assert found.fix_safety is None and "`pin_memory=` is written out" in (found.fix_note or "")
    assert fix_text(source) == source
