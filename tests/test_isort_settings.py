"""Imports a fix adds or leaves behind, under the project's own isort settings, checked with ruff.

Each case is a project with one ``[tool.ruff.lint.isort]`` (or ``[tool.isort]``) setting and a
file that is ``ruff check --select I,F`` clean with it; after ``pinfix fix`` the file must still
be clean, read with the same settings (ruff runs in the project, not ``--isolated``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from pinfix.api import fix_text
from pinfix.config import load_config
from pinfix.engine import process_source
from pinfix.findings import Mode

RUFF = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")

BODY = """

def f(buf, a):
    buf.copy_(torch.from_numpy(a), non_blocking=True)
"""


def ruff_I_F(project: Path, path: Path) -> List[str]:
    # ruff reads only its own tables: a [tool.isort] project is checked with the same settings in ruff's names.
    text = (project / "pyproject.toml").read_text()
    extra = []
    if "[tool.isort]" in text and "force_single_line = true" in text:
        extra = ["--config", "lint.isort.force-single-line = true"]
    proc = subprocess.run(
        [RUFF, "check", "--no-cache", "--select", "I,F", "--output-format", "concise", *extra, str(path)],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert "error:" not in proc.stderr.lower(), proc.stderr
    return [line.split(": ", 1)[1] for line in proc.stdout.splitlines() if line.count(":") >= 3]


def fixed(project: Path, settings: str, source: str, name: str = "m") -> str:
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n" + settings)
    path = project / "vllm" / "v1" / f"{name}.py"
    path.write_text(source)
    assert ruff_I_F(project, path) == [], "the input must be clean under these settings"
    after = fix_text(source, path=str(path), config=load_config(project))
    path.write_text(after)
    assert ruff_I_F(project, path) == [], after
    assert fix_text(after, path=str(path), config=load_config(project)) == after  # idempotent
    return after


MERGE_SOURCE = (
    """\
import torch

from vllm.utils.torch_utils import async_tensor_h2d, direct_register_custom_op
"""
    + BODY
    + "    async_tensor_h2d(direct_register_custom_op)\n"
)


@pytest.mark.parametrize(
    "settings,expected",
    [
        (
            "",
            "from vllm.utils.torch_utils import (\n    async_tensor_h2d,\n    direct_register_custom_op,\n    np_to_pinned_tensor,\n)\n",
        ),
        (
            "[tool.ruff]\nline-length = 120\n",
            "from vllm.utils.torch_utils import async_tensor_h2d, direct_register_custom_op, np_to_pinned_tensor\n",
        ),
        (
            "[tool.ruff.lint.isort]\nforce-single-line = true\n",
            "from vllm.utils.torch_utils import direct_register_custom_op\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\n",
        ),
        ("[tool.ruff.isort]\nforce-single-line = true\n", "from vllm.utils.torch_utils import np_to_pinned_tensor\n"),
        (
            '[tool.isort]\nprofile = "black"\nforce_single_line = true\n',
            "from vllm.utils.torch_utils import np_to_pinned_tensor\n",
        ),
    ],
)
def test_merge_or_not_by_settings(project, settings, expected):
    source = MERGE_SOURCE
    if "force" in settings:
        source = source.replace(
            "import async_tensor_h2d, direct_register_custom_op",
            "import async_tensor_h2d\nfrom vllm.utils.torch_utils import direct_register_custom_op",
        )
    after = fixed(project, settings, source)
    assert expected in after


def test_profile_black(project):
    after = fixed(project, '[tool.isort]\nprofile = "black"\n', MERGE_SOURCE)
    assert "    np_to_pinned_tensor,\n)" in after


def test_known_first_party_and_third_party(project):
    source = "import torch\n\nimport mylib\n" + BODY + "    mylib.x(torch.int32)\n"
    settings = '[tool.ruff.lint.isort]\nknown-first-party = ["mylib"]\nknown-third-party = ["vllm"]\n'
    after = fixed(project, settings, source)
    assert after.startswith("import torch\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\n\nimport mylib\n")


def test_section_order_and_no_sections(project):
    source = "import os\n\nimport torch\n" + BODY + "    os.getcwd(torch.int32)\n"
    after = fixed(
        project, "[tool.ruff.lint.isort]\nno-sections = true\n", source.replace("import os\n\n", "import os\n")
    )
    assert "import os\nimport torch\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\n" in after
    order = 'section-order = ["future", "standard-library", "first-party", "third-party", "local-folder"]'
    source2 = "import os\n\nimport torch\n" + BODY + "    os.getcwd(torch.int32)\n"
    after2 = fixed(project, f"[tool.ruff.lint.isort]\n{order}\n", source2)
    assert "import os\n\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\n\nimport torch\n" in after2


def test_force_sort_within_sections(project):
    source = "import torch\nfrom vllm import envs\nimport vllm.zz\n" + BODY + "    envs.x(vllm.zz)\n"
    after = fixed(
        project, '[tool.ruff.lint.isort]\nforce-sort-within-sections = true\nknown-third-party = ["vllm"]\n', source
    )
    assert "from vllm import envs\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\nimport vllm.zz\n" in after


def test_order_by_type_and_case_sensitive(project):
    source = (
        "import torch\n\nfrom vllm.utils.torch_utils import STR_DTYPE, Foo, zeta\n"
        + BODY
        + "    zeta(STR_DTYPE, Foo)\n"
    )
    after = fixed(
        project,
        "[tool.ruff.lint.isort]\norder-by-type = false\n",
        source.replace("STR_DTYPE, Foo, zeta", "Foo, STR_DTYPE, zeta"),
    )
    assert "import Foo, np_to_pinned_tensor, STR_DTYPE, zeta\n" in after
    after = fixed(project, "[tool.ruff.lint.isort]\ncase-sensitive = true\n", source)
    assert "import STR_DTYPE, Foo, np_to_pinned_tensor, zeta\n" in after


def test_combine_as_imports_and_force_wrap_aliases(project):
    source = "import torch\n\nfrom vllm.utils.torch_utils import direct as d\n" + BODY + "    d()\n"
    # Default: `x as y` stays its own statement (merging into it was an I001).
    after = fixed(project, "", source)
    assert (
        "from vllm.utils.torch_utils import direct as d\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\n"
        in after
    )
    after = fixed(project, "[tool.ruff.lint.isort]\ncombine-as-imports = true\n", source)
    assert "from vllm.utils.torch_utils import direct as d, np_to_pinned_tensor\n" in after
    after = fixed(project, "[tool.ruff.lint.isort]\ncombine-as-imports = true\nforce-wrap-aliases = true\n", source)
    assert "import (\n    direct as d,\n    np_to_pinned_tensor,\n)\n" in after


def test_split_on_trailing_comma(project):
    source = "import torch\n\nfrom vllm.utils.torch_utils import (\n    direct,\n)\n" + BODY + "    direct()\n"
    after = fixed(project, "", source)
    assert "import (\n    direct,\n    np_to_pinned_tensor,\n)\n" in after
    collapsed = source.replace("(\n    direct,\n)", "direct")
    after = fixed(project, "[tool.ruff.lint.isort]\nsplit-on-trailing-comma = false\n", collapsed)
    assert "from vllm.utils.torch_utils import direct, np_to_pinned_tensor\n" in after


def test_lines_after_imports(project):
    # torch is left unused and removed: the new import starts the block, followed by the
    # project's number of blank lines (ruff's default would be two before a def).
    source = '"""Doc."""\n\nimport torch\n\ndef f(buf, a):\n    buf.copy_(torch.from_numpy(a), non_blocking=True)\n'
    after = fixed(project, "[tool.ruff.lint.isort]\nlines-after-imports = 1\n", source)
    assert after.startswith('"""Doc."""\n\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\n\ndef f')


def test_unsupported_setting_is_named_and_the_import_kept_separate(project):
    settings = "[tool.ruff.lint.isort]\nfrom-first = true\n"
    source = "from vllm.utils.torch_utils import direct\nimport torch\n" + BODY + "    direct()\n"
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n" + settings)
    path = project / "vllm" / "v1" / "m.py"
    path.write_text(source)
    after = fix_text(source, path=str(path), config=load_config(project))
    assert "from vllm.utils.torch_utils import np_to_pinned_tensor\n" in after
    # ruff's own fix accepts it as it is or puts it in place.
    path.write_text(after)
    subprocess.run([RUFF, "check", "--no-cache", "--select", "I", "--fix", "-q", str(path)], cwd=project)
    assert ruff_I_F(project, path) == []
    report = process_source(str(path), source.encode(), load_config(project), Mode(fix=True, diff_only=True))
    assert any("from-first" in (d.fix_note or "") for d in report.diagnostics)


# --- issue 14: imports and comments ---------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        "import os\n\nimport torch\n",
        "from __future__ import annotations\n\nimport torch\n",
        "from typing import TYPE_CHECKING\n\nimport torch\n",
        "from __future__ import annotations\n\nimport os\n\nimport torch\n",
    ],
)
def test_torch_removed_keeps_the_sections_apart(project, head):
    source = (
        head + BODY + ("    os.getcwd()\n" if "os" in head else "") + ("    TYPE_CHECKING\n" if "TYPE" in head else "")
    )
    after = fixed(project, "", source)
    assert "import torch" not in after
    assert "\n\nfrom vllm.utils.torch_utils import np_to_pinned_tensor\n" in after


def test_import_torch_submodule_left_unused_is_removed(project):
    source = "import torch.nn\n" + BODY
    after = fixed(project, "", source)
    assert "import torch" not in after


def test_a_comment_on_the_last_merged_name_stays_there(project):
    source = (
        "import torch\n\nfrom vllm.utils.torch_utils import (\n    async_tensor_h2d,\n"
        "    is_pin_memory_available,  # noqa: F401 re-exported\n)\n" + BODY + "    async_tensor_h2d()\n"
    )
    after = fixed(project, "", source)
    assert "    is_pin_memory_available,  # noqa: F401 re-exported\n    np_to_pinned_tensor,\n)\n" in after


def test_a_comment_on_the_first_name_is_not_duplicated(project):
    source = (
        "import torch\n\nfrom vllm.utils.torch_utils import (\n    async_tensor_h2d,  # first\n"
        "    zzz,\n)\n" + BODY + "    async_tensor_h2d(zzz)\n"
    )
    after = fixed(project, "", source)
    assert after.count("# first") == 1
    assert "    async_tensor_h2d,  # first\n    np_to_pinned_tensor,\n    zzz,\n)\n" in after


def test_an_import_kept_for_side_effects_stays(project):
    source = "import torch  # noqa: F401 keep for side effects\nfrom torch import from_numpy\n" + BODY.replace(
        "torch.from_numpy", "from_numpy"
    )
    after = fixed(project, "", source)
    assert "import torch  # noqa: F401 keep for side effects\n" in after
    assert "from torch import from_numpy" not in after


def test_a_comment_line_above_a_removed_import_stays(project):
    source = "import os\n\n# torch is needed for the copy\nimport torch\n" + BODY + "    os.getcwd()\n"
    after = fix_text(source, path=str(project / "vllm" / "v1" / "c.py"), config=load_config(project))
    assert "# torch is needed for the copy\n" in after
    assert "import torch\n" not in after


def test_isort_table_is_read_in_ruff_terms(tmp_path):
    from pinfix.style import project_style

    def style(text: str):
        (tmp_path / "pyproject.toml").write_text(text)
        return project_style(tmp_path / "pyproject.toml").isort

    black = style('[tool.isort]\nprofile = "black"\nknown_first_party = "a, b"\nforce_sort_within_sections = true\n')
    assert (black.known_first_party, black.force_sort_within_sections, black.unsupported) == (("a", "b"), True, ())
    plain = style("[tool.isort]\nsections = ['FUTURE', 'STDLIB', 'FIRSTPARTY', 'THIRDPARTY', 'LOCALFOLDER']\n")
    assert plain.section_order[2] == "first-party"
    assert plain.unsupported == ("multi-line-output",)  # isort's own grid wrapping
    ruff_wins = style("[tool.ruff.lint.isort]\nforce-single-line = true\n\n[tool.isort]\nprofile = 'black'\n")
    assert ruff_wins.force_single_line
