"""pinfix.layout against the real ``ruff format``: generated and handwritten statements.

For every statement the formatter here lays out, its output must equal ruff's, and a statement
ruff leaves unchanged must stay unchanged. Then :func:`relayout` on whole modules: only the
statements a fix changed are laid out again, and only when they were formatter-stable before.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from pinfix.layout import FormatStyle, Unsupported, format_statement, relayout
from tests.layout_cases import StatementGenerator

RUFF = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")


def ruff_format(text: str, line_length: int = 88, *extra: str) -> str:
    proc = subprocess.run(
        [RUFF, "format", "--isolated", "--line-length", str(line_length), *extra, "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def ruff_statements(statements: List[str], line_length: int, *extra: str) -> List[str]:
    """Each statement (written inside a function) as ruff formats it, with its indentation."""
    body = "def f():\n" + "".join(textwrap.indent(s, "    ") + "\n" for s in statements)
    out = ruff_format(body, line_length, *extra)
    lines = out.split("\n")
    return ["\n".join(lines[s.lineno - 1 : s.end_lineno]) for s in ast.parse(out).body[0].body]  # type: ignore[attr-defined]


HANDWRITTEN = [
    # the shapes pinfix's fixes produce
    "self.req_id_per_token_buffer[:n].copy_(np_to_pinned_tensor(req_id_per_token), non_blocking=True)",
    "positions = torch.tensor(some_positions_list, dtype=torch.int64, device='cpu', pin_memory=is_pin_memory_available())",
    "query_start_loc = async_tensor_h2d(self.input_batch.num_computed_tokens_cpu_tensor[req_indices], self.device, dtype=torch.int64)",
    "x = self.positions[:total] - async_tensor_h2d(self.input_batch.num_computed_tokens_cpu_tensor[req_indices], self.device, dtype=torch.int64)",
    "return async_tensor_h2d([req.num_tokens for req in reqs] if False else token_ids_list, device=self.device, dtype=torch.int32)",
    "self.seq_lens_buffer[:num_reqs] += np_to_pinned_tensor(seq_lens_np).to(self.device, non_blocking=True)",
    "out = foo(a, b,)",
    "out = foo(aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bar(bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, ccccccccccccccccccccc))",
    "total = first_value_in_the_sum + some_function_call(argument_one, argument_two) + third_value",
    "mask = (index_tensor >= lower_bound_of_range) & (index_tensor < upper_bound_of_the_range_value)",
    "values = data_frame_values[:, :number_of_columns_to_keep] * scale_factor_for_values_here",
    "self.block_table[req_index, start:end] = np_to_pinned_tensor(block_ids_for_this_request_in_order)",
    "x = torch.zeros(num_tokens_total_for_batch, dtype=torch.int64, pin_memory=is_pin_memory_available())",
    "result = not_a_call",
]


def _check(inputs: List[str], line_length: int, *extra: str) -> tuple:
    want = ruff_statements(inputs, line_length, *extra)
    style = FormatStyle(line_length=line_length, skip_magic_trailing_comma="--config" in extra)
    compared = skipped = 0
    for statement, expected in zip(inputs, want):
        for text in (textwrap.indent(statement, "    "), expected):
            try:
                mine = format_statement(text, style)
            except Unsupported:
                skipped += 1
                continue
            compared += 1
            assert mine == expected, f"input:\n{text}\nours:\n{mine}\nruff:\n{expected}"
    return compared, skipped


@pytest.mark.parametrize("line_length", [88, 120, 60])
def test_handwritten_statements_match_ruff(line_length):
    compared, _ = _check(HANDWRITTEN, line_length)
    assert compared >= len(HANDWRITTEN)  # most are laid out, not declined


@pytest.mark.parametrize("seed,line_length", [(1, 88), (2, 88), (3, 120), (4, 60), (5, 100)])
def test_generated_statements_match_ruff(seed, line_length):
    gen = StatementGenerator(seed)
    statements = [gen.statement() for _ in range(150)]
    compared, skipped = _check(statements, line_length)
    # The generator stays inside the supported subset most of the time.
    assert compared > 4 * skipped


def test_skip_magic_trailing_comma_matches_ruff():
    statements = ["x = foo(a, b,)", "foo(aaa, [1, 2,],)", "y = bar[a, b,]"]
    compared, _ = _check(statements, 88, "--config", "format.skip-magic-trailing-comma = true")
    assert compared == 2 * len(statements)


def test_ruff_stable_statements_stay_unchanged():
    for text in ruff_statements(HANDWRITTEN, 88):
        try:
            assert format_statement(text) == text
        except Unsupported:
            pass


@pytest.mark.parametrize(
    "text",
    [
        "x = foo(a,  # comment\n    b)",
        "x = foo(a, \\\n    b)",
        "x = (a + b) * c",
        "x = f'{a}'",
        'x = """doc"""',
        "x = [i for i in y]",
        "x = a.b().c().d()",
        "for i in x: pass",
    ],
)
def test_unsupported_shapes_are_declined(text):
    with pytest.raises(Unsupported):
        format_statement(text)


MODULE = """\
import torch


def build(self, n, req_id_per_token, ids):
    self.buffer[:n].copy_(torch.from_numpy(req_id_per_token), non_blocking=True)
    positions = torch.tensor(ids, dtype=torch.int64, device="cpu")
    untouched  =  1
    return positions
"""


def test_relayout_lays_out_only_changed_formatter_stable_statements():
    new = MODULE.replace("torch.from_numpy", "np_to_pinned_tensor_with_a_longer_name").replace(
        'device="cpu")', 'device="cpu", pin_memory=is_pin_memory_available())'
    )
    out = relayout(MODULE, new, 88)
    assert "    untouched  =  1\n" in out  # not changed by the fix: left alone
    assert (
        "    self.buffer[:n].copy_(\n        np_to_pinned_tensor_with_a_longer_name(req_id_per_token), non_blocking=True\n    )\n"
        in out
    )
    assert max(len(line) for line in out.splitlines()) <= 88
    # Everything but the untouched line is what ruff makes of the fixed module.
    assert out.replace("untouched  =  1", "untouched = 1") == ruff_format(new)


def test_relayout_wraps_a_call_the_fix_pushed_past_the_limit_in_an_unformatted_statement():
    old = "def f(a):\n    x = (\n        a.to(dev,   non_blocking=True)\n    )\n"
    new = old.replace(
        "a.to(dev,   non_blocking=True)",
        "async_tensor_h2d(a_rather_long_argument_name_here, device=dev, dtype=torch.int64)",
    )
    out = relayout(old, new, 60)
    assert max(len(line) for line in out.splitlines()) <= 60
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(new))
    assert out.startswith("def f(a):\n    x = (\n        async_tensor_h2d(\n")


def test_relayout_leaves_a_statement_the_formatter_would_change_in_its_edit_layout():
    old = "def f(a):\n    x = foo( a )\n"
    new = "def f(a):\n    x = bar( a )\n"
    assert relayout(old, new, 88) == new


@pytest.mark.parametrize(
    "old",
    [
        "def f(a):\n    # fmt: off\n    x = foo(aaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbb)\n",
        "def f(a):\n    x = foo(aaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbb)  # fmt: skip\n",
    ],
)
def test_relayout_respects_fmt_off_and_skip(old):
    new = old.replace("foo(", "foooooooooooooooooooooooooooo(")
    assert relayout(old, new, 60) == new
    # (the same statement without the marker is laid out)
    plain = "def f(a):\n    x = foo(aaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbb)\n"
    assert relayout(plain, plain.replace("foo(", "foooooooooooooooooooooooooooo("), 60) != plain.replace(
        "foo(", "foooooooooooooooooooooooooooo("
    )


def test_relayout_never_changes_what_the_code_means_and_takes_bad_input():
    assert relayout("x = (", "x = ((", 88) == "x = (("
    assert relayout("", "", 88) == ""


VLLM_SETTINGS = """
[tool.pinfix]
helper = "vllm.utils.torch_utils.np_to_pinned_tensor"
pin-memory-expr = "is_pin_memory_available()"
pin-memory-import = "vllm.utils.platform_utils.is_pin_memory_available"
h2d-helper = "vllm.utils.torch_utils.async_tensor_h2d"
cpu-tensor-names = ["*_cpu", "*_cpu_tensor"]
"""

RUNNER = """\
import numpy as np
import torch


class Runner:
    def prepare(self, req_indices, ids, n):
        positions = self.positions[:n] - torch.from_numpy(self.input_batch.num_computed_tokens[req_indices]).to(self.device, torch.int64, non_blocking=True)
        self.req_id_per_token_buffer[:n].copy_(torch.from_numpy(np.asarray(ids, dtype=np.int32)), non_blocking=True)
        seq_lens = torch.tensor(ids, dtype=torch.int32, device="cpu").to(self.device, non_blocking=True)
        return positions, seq_lens
"""


def test_fixes_keep_a_formatted_file_formatted(project):
    """The issue's case: the h2d rewrite collapsed a wrapped call onto one 126-character line."""
    from pinfix.api import fix_text
    from pinfix.config import load_config

    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n" + VLLM_SETTINGS)
    source = ruff_format(RUNNER)
    path = project / "vllm" / "v1" / "runner.py"
    path.write_text(source)
    after = fix_text(source, path=str(path), config=load_config(project), unsafe_fixes=True)
    assert after != source and "async_tensor_h2d(" in after and "np_to_pinned_tensor(" in after
    assert max(len(line) for line in after.splitlines()) <= 88
    assert ruff_format(after) == after


@pytest.mark.parametrize(
    "toml,expected",
    [
        ("", (77, 4, False)),
        (
            "[tool.ruff]\nline-length = 120\nindent-width = 2\n[tool.ruff.format]\nskip-magic-trailing-comma = true\n",
            (120, 2, True),
        ),
        ("[tool.black]\nline-length = 100\nskip-magic-trailing-comma = true\n", (100, 4, True)),
        ("[tool.ruff]\nline-length = 110\n[tool.black]\nline-length = 100\n", (110, 4, False)),
    ],
)
def test_formatter_settings_are_read_from_the_project(tmp_path, toml, expected):
    from pinfix.style import project_style

    (tmp_path / "pyproject.toml").write_text(toml)
    fmt = project_style(tmp_path / "pyproject.toml", default_line_length=77).format
    assert (fmt.line_length, fmt.indent_width, fmt.skip_magic_trailing_comma) == expected
