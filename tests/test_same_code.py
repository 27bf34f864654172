"""`deepcache.same_code`: a comment or a blank line added or removed proves two texts
say the same to the analysis without working out either's meaning, and only where
that holds (a line inside a string, after a backslash or among the encoding lines is
not what it looks like)."""

from __future__ import annotations

from typing import List, Tuple

import pytest

from pinfix.deepcache import _uncoded_changes, meaning, moved_spans, same_code, string_spans

#: A module with every token that spans lines, and lines that look like comments inside them.
MODULE = b'''\
# -*- coding: utf-8 -*-
"""Helpers for the staging buffers.

# not a comment: the module's docstring
"""
import torch

TEMPLATE = """
copy {n} bytes

# also part of the string
"""
RAW = b\'\'\'
# bytes that look like a comment
\'\'\'
TOTAL = 1 + \\
    2


def stage(x, n):
    label = f"""
    # inside an f-string
    {n} items"""
    parts = [
        x,  # the tensor
        # a comment between items
        n,
    ]
    joined = ("first part "
              # between two strings glued together
              "second part")
    if n > 1:
        # a comment in a block

        return torch.cat(parts), label, joined
    return x.to("cuda", non_blocking=True)


class Buffers:
    """A class's docstring
    # with a comment-like line
    """

    def make(self):
        # the maker
        return torch.zeros(4)
'''


def variants(text: bytes) -> List[Tuple[str, bytes]]:
    """``text`` with a comment or a blank line inserted before each line (and at the end),
    and with each blank or comment-like line removed."""
    lines = text.splitlines(True)
    out = []
    for i in range(len(lines) + 1):
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())] if i < len(lines) else b""
        for added in (b"# a note\n", indent + b"# an indented note\n", b"\n"):
            out.append((f"insert {added!r} at {i}", b"".join(lines[:i] + [added] + lines[i:])))
    for i, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith(b"#"):
            out.append((f"remove line {i}", b"".join(lines[:i] + lines[i + 1 :])))
    return out


def test_a_proof_never_says_the_same_of_texts_whose_meanings_differ() -> None:
    then = meaning(MODULE)
    assert then is not None
    proven = differ = 0
    for what, text in variants(MODULE):
        if same_code(MODULE, text):
            proven += 1
            assert meaning(text) == then, what
        elif meaning(text) != then:
            differ += 1
    # Both kinds are met: most places take a comment as one; inside strings it is text.
    assert proven > 60 and differ > 15, (proven, differ)


def test_a_comment_above_the_code_is_proven_without_a_meaning() -> None:
    new = MODULE.replace(b"import torch\n", b"# staging helpers below\nimport torch\n")
    assert same_code(MODULE, new)
    assert same_code(new, MODULE)  # and removed again
    assert same_code(MODULE, MODULE + b"\n# at the end\n")


@pytest.mark.parametrize(
    "old, new",
    [
        # Inside a string that spans lines: part of the string (its meaning changes).
        (MODULE, MODULE.replace(b"copy {n} bytes\n", b"copy {n} bytes\n# one more\n")),
        (MODULE, MODULE.replace(b"\n# also part of the string\n", b"\n")),
        (MODULE, MODULE.replace(b"    # inside an f-string\n", b"")),
        # After a line a backslash continues: the next line starts another statement.
        (b"a = 1\ntotal = a \\\n+ 2\n", b"a = 1\ntotal = a \\\n# split here\n+ 2\n"),
        # Among the first two lines: an encoding declaration there decodes the file otherwise.
        (b"x = '\xe9'\n", b"# -*- coding: latin-1 -*-\nx = '\xe9'\n"),
    ],
    ids=["into-a-string", "out-of-a-string", "out-of-an-f-string", "after-a-backslash", "encoding"],
)
def test_lines_that_only_look_like_comments_prove_nothing(old: bytes, new: bytes) -> None:
    assert not same_code(old, new)
    assert meaning(old) != meaning(new)


def test_what_it_cannot_tell_is_left_to_the_meanings() -> None:
    # A comment between two strings glued together is a comment, but the glued string
    # spans its line: not proven (the meanings, compared, say the same).
    glued = MODULE.replace(b"              # between two strings glued together\n", b"")
    assert not same_code(MODULE, glued)
    assert meaning(MODULE) == meaning(glued)
    # A line of code changed, a directive comment, a text that does not parse, lone CRs.
    assert not same_code(MODULE, MODULE.replace(b"torch.zeros(4)", b"torch.zeros(5)"))
    assert not same_code(MODULE, MODULE.replace(b"import torch\n", b"import torch\n# noqa: F401\n"))
    assert not same_code(b"x = (\n", b"# a note\nx = (\n")
    assert not same_code(b"a = 1\rb = 2\r", b"a = 1\r# c\rb = 2\r")


def test_the_old_texts_strings_prove_as_the_new_texts_tree_does() -> None:
    """With the old text's strings known (kept with its meaning), nothing is parsed: the
    same variants proven or refused, never wrongly, and the strings of the new text are
    the old ones moved by the lines added and removed above them."""
    spans = string_spans(MODULE)
    assert spans is not None and len(spans) >= 6  # the docstrings, TEMPLATE, RAW, the f-string, the glued one
    then = meaning(MODULE)
    proven = 0
    for what, text in variants(MODULE):
        if same_code(MODULE, text, spans=spans):
            proven += 1
            assert meaning(text) == then, what
            blocks = _uncoded_changes(MODULE.splitlines(True), text.splitlines(True)) or []
            assert moved_spans(spans, blocks) == string_spans(text), what
    assert proven > 60
    # Removed again: the new text's strings prove the way back.
    new = MODULE.replace(b"import torch\n", b"# staging helpers below\nimport torch\n")
    assert same_code(new, MODULE, spans=string_spans(new))
    assert not same_code(MODULE, MODULE.replace(b"copy {n} bytes\n", b"copy {n} bytes\n# more\n"), spans=spans)
