"""`hot_lines`: the lines a copy may be on (where analyze_module starts), found by
substring search, are those a regular expression of the same spellings finds."""

from __future__ import annotations

import bisect
import random
import re
from typing import List

import pytest

from pinfix.effects import IMPLIED_NON_BLOCKING
from pinfix.semantic.module import _STRICT_HOT, hot_lines

#: The lines' spelling as one expression (what they were found by before).
_HOT = re.compile(
    rb"|".join([rb"non_blocking", rb"\bTrue\s*[,)]", *(re.escape(n.encode()) for n in sorted(IMPLIED_NON_BLOCKING))])
)

PIECES = [
    b"non_blocking",
    b"non_blocking=True",
    b"True",
    b"True)",
    b"True ,",
    b"xTrue,",
    b"_True)",
    b"True\n)",
    b"True\r\n,",
    b"move_data_to_device(",
    b".to(",
    b". cuda (",
    b".copy_(",
    b"x",
    b" ",
    b",",
    b"(",
    b")",
    b"\n",
    b"\r\n",
    b"\r",
    b"# c\n",
    "é".encode(),
]


def by_expression(data: bytes, strict: bool) -> List[int]:
    """What the lines were before: every match of one expression, each line start found."""
    pattern = _HOT if not strict else re.compile(_HOT.pattern + rb"|" + _STRICT_HOT.pattern)
    offsets = [m.start() for m in pattern.finditer(data)]
    starts = [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", data)]
    return sorted({bisect.bisect_right(starts, o) for o in offsets})


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("strict", [False, True])
def test_the_lines_are_those_one_expression_finds(seed: int, strict: bool) -> None:
    rng = random.Random(seed)
    found = 0
    for _ in range(300):
        data = b"".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 60)))
        expected = by_expression(data, strict)
        assert hot_lines(data, strict) == expected, data
        found += bool(expected)
    assert found > 100


def test_a_copy_is_found_on_its_line_whatever_the_line_ends() -> None:
    text = b"import torch\n\n\ndef f(x):\n    return x.to('cuda', non_blocking=True)\n"
    assert hot_lines(text) == [5]
    assert hot_lines(text.replace(b"\n", b"\r\n")) == [5]
    assert hot_lines(text.replace(b"\n", b"\r")) == [5]
    assert hot_lines(b"x.to(d, True)\ny = 1\nz.cuda(d,\n  True)\n") == [1, 4]
    assert hot_lines(b"x.to(d)\n", strict=True) == [1] and hot_lines(b"x.to(d)\n") == []


def swept(intervals, size):  # type: ignore[no-untyped-def]
    """What each line's scope was before: one sweep over the lines with a heap of the
    intervals begun (the last by index that holds the line)."""
    from heapq import heappop, heappush

    begun = sorted(range(len(intervals)), key=lambda i: intervals[i][0])
    heap: List[int] = []
    found = [-1] * size
    k = 0
    for line in range(size):
        while k < len(begun) and intervals[begun[k]][0] <= line:
            heappush(heap, -begun[k])
            k += 1
        while heap and intervals[-heap[0]][1] < line:
            heappop(heap)
        if heap:
            found[line] = -heap[0]
    return found


@pytest.mark.parametrize("seed", range(8))
def test_each_lines_scope_is_the_last_interval_holding_it(seed: int) -> None:
    from pinfix.semantic.module import _last_holding

    rng = random.Random(seed)
    for _ in range(200):
        size = rng.randrange(1, 60)
        intervals = []
        for _ in range(rng.randrange(0, 12)):
            a = rng.randrange(-2, size + 3)
            intervals.append((a, a + rng.randrange(-1, 20)))
        assert list(_last_holding(intervals, size)) == swept(intervals, size), (intervals, size)


@pytest.mark.parametrize("seed", range(6))
def test_line_starts_are_after_each_of_pythons_line_ends(seed: int) -> None:
    from pinfix.semantic.source import line_starts

    rng = random.Random(seed)
    pieces = ["a", "bc", " ", "\n", "\r", "\r\n", "\n\r", "\x0c", "\u2028", "\x85", "é"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))
        expected = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
        assert list(line_starts(text)) == expected, repr(text)
