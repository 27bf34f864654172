"""Unified diffs that ``git apply`` and ``patch -p1`` apply byte for byte.

Lines are cut only at ``\\n``, as both tools read a file (a ``\\r``, alone or
before ``\\n``, a ``\\x0b``, ``\\x0c`` or U+2028 is part of a line), in the
file's own bytes (its encoding, its BOM), and a last line without ``\\n`` is
marked ``\\ No newline at end of file``.

The cost stays near linear on any input: the common head and tail are found
with block comparisons of the bytes, and the lines between are matched by
anchoring on lines that occur once on each side (as patience diff does), with
``difflib`` only in the small gaps left, where its worst case cannot bite.
"""

from __future__ import annotations

import bisect
from typing import Dict, Hashable, Iterator, List, Sequence, Tuple

#: Gaps with no line unique to both sides are matched line by line only up
#: to this many line pairs; a larger one is shown as replaced (still exact).
GAP_PAIRS = 100_000
_BLOCK = 1 << 16

Opcode = Tuple[str, int, int, int, int]


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n:
        j = min(n, i + _BLOCK)
        if a[i:j] != b[i:j]:
            lo, hi = i, j  # a[:lo] == b[:lo]; a[lo:hi] != b[lo:hi]
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[lo:mid] == b[lo:mid]:
                    lo = mid
                else:
                    hi = mid
            return lo
        i = j
    return n


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    la, lb = len(a), len(b)
    i = 0
    while i < limit:
        j = min(limit, i + _BLOCK)
        if a[la - j : la - i] != b[lb - j : lb - i]:
            lo, hi = i, j  # the last lo bytes agree; somewhere in the last hi they do not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
                    lo = mid
                else:
                    hi = mid
            return lo
        i = j
    return limit


def _lines(data: bytes) -> List[bytes]:
    """``data`` cut after each ``\\n``."""
    parts = data.split(b"\n")
    out = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _rising(pairs: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by their first item) whose second
    items rise too: patience sorting, ``O(k log k)``."""
    tops: List[int] = []  # the smallest last second item of a run of each length
    ends: List[int] = []  # which pair ends it
    back = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(tops, j)
        back[k] = ends[at - 1] if at else -1
        if at == len(tops):
            tops.append(j)
            ends.append(k)
        else:
            tops[at], ends[at] = j, k
    run: List[Tuple[int, int]] = []
    k = ends[-1] if ends else -1
    while k >= 0:
        run.append(pairs[k])
        k = back[k]
    return run[::-1]


def _matches(a: Sequence[Hashable], b: Sequence[Hashable]) -> List[Tuple[int, int]]:
    """Pairs ``(i, j)`` with ``a[i] == b[j]``, rising on both sides."""
    import difflib

    found: List[Tuple[int, int]] = []
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            found.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            found.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        seen: Dict[Hashable, List[int]] = {}
        for i in range(alo, ahi):
            seen.setdefault(a[i], [0, -1, 0, -1])
            entry = seen[a[i]]
            entry[0] += 1
            entry[1] = i
        for j in range(blo, bhi):
            entry = seen.get(b[j])
            if entry is not None:
                entry[2] += 1
                entry[3] = j
        anchors = _rising(sorted((e[1], e[3]) for e in seen.values() if e[0] == 1 and e[2] == 1))
        if anchors:
            prev_a, prev_b = alo, blo
            for i, j in anchors:
                found.append((i, j))
                todo.append((prev_a, i, prev_b, j))
                prev_a, prev_b = i + 1, j + 1
            todo.append((prev_a, ahi, prev_b, bhi))
        elif (ahi - alo) * (bhi - blo) <= GAP_PAIRS:
            matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            for i, j, size in matcher.get_matching_blocks():
                found.extend((alo + i + k, blo + j + k) for k in range(size))
    found.sort()
    return found


def line_opcodes(a: Sequence[Hashable], b: Sequence[Hashable]) -> List[Opcode]:
    """``difflib``-style opcodes turning the lines ``a`` into ``b`` (lines of
    text or bytes), at a near-linear cost where ``difflib.SequenceMatcher``
    grows with the square of the lines on repetitive files (a fix in every
    function). ``equal`` blocks hold equal lines; where several alignments
    are as good, which one is found may differ from ``difflib``'s."""
    codes: List[Opcode] = []
    i = j = 0
    for mi, mj in [*_matches(a, b), (len(a), len(b))]:
        if i < mi or j < mj:
            tag = "replace" if i < mi and j < mj else ("delete" if i < mi else "insert")
            codes.append((tag, i, mi, j, mj))
        if mi < len(a):
            if codes and codes[-1][0] == "equal":
                codes[-1] = ("equal", codes[-1][1], mi + 1, codes[-1][3], mj + 1)
            else:
                codes.append(("equal", mi, mi + 1, mj, mj + 1))
        i, j = mi + 1, mj + 1
    return codes


def _hunks(codes: List[Opcode], context: int) -> Iterator[List[Opcode]]:
    """The opcodes cut into hunks: each change with up to ``context`` equal
    lines around it, changes closer than twice that sharing a hunk."""
    hunk: List[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag != "equal":
            hunk.append((tag, i1, i2, j1, j2))
            continue
        if hunk and i2 - i1 > 2 * context:
            hunk.append((tag, i1, i1 + context, j1, j1 + context))
            yield hunk
            hunk = []
        if not hunk:  # the lead-in of the next hunk
            start = max(i1, i2 - context)
            hunk.append((tag, start, i2, j1 + start - i1, j2))
        else:
            hunk.append((tag, i1, i2, j1, j2))
    if any(code[0] != "equal" for code in hunk):
        if hunk[-1][0] == "equal":
            tag, i1, i2, j1, j2 = hunk[-1]
            hunk[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
        yield hunk


def _at_line_start(data: bytes, at: int) -> bool:
    return at == 0 or data[at - 1 : at] == b"\n"


def _hunk_range(start: int, stop: int) -> str:
    """``start,length`` of a hunk side, 1-based; an empty side names the line before it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def unified_diff(old: bytes, new: bytes, path: str, context: int = 3) -> bytes:
    """A unified diff from ``a/path`` to ``b/path`` (``b""`` when they are equal)."""
    if old == new:
        return b""
    head = _common_prefix(old, new)
    tail = _common_suffix(old, new, min(len(old), len(new)) - head)
    # Whole lines only: back to the start of the first line that differs, on to
    # the end of the last; then the context lines around them.
    start = old.rfind(b"\n", 0, head) + 1
    for _ in range(context):
        if start == 0:
            break
        start = old.rfind(b"\n", 0, start - 1) + 1
    end_old = len(old) - tail
    if not (_at_line_start(old, end_old) and _at_line_start(new, len(new) - tail)):
        found = old.find(b"\n", end_old)
        end_old = len(old) if found < 0 else found + 1
    for _ in range(context):
        if end_old == len(old):
            break
        found = old.find(b"\n", end_old)
        end_old = len(old) if found < 0 else found + 1
    end_new = len(new) - (len(old) - end_old)
    first_line = old.count(b"\n", 0, start)
    a, b = _lines(old[start:end_old]), _lines(new[start:end_new])
    name = path.encode("utf-8", "surrogateescape")
    out = [b"--- a/" + name + b"\n", b"+++ b/" + name + b"\n"]

    def emit(mark: bytes, line: bytes) -> None:
        out.append(mark + line)
        if not line.endswith(b"\n"):
            out.append(b"\n\\ No newline at end of file\n")

    for hunk in _hunks(line_opcodes(a, b), context):
        i1, j1, i2, j2 = hunk[0][1], hunk[0][3], hunk[-1][2], hunk[-1][4]
        out.append(
            f"@@ -{_hunk_range(first_line + i1, first_line + i2)} +{_hunk_range(first_line + j1, first_line + j2)} @@\n".encode()
        )
        for tag, s1, e1, s2, e2 in hunk:
            if tag == "equal":
                for line in a[s1:e1]:
                    emit(b" ", line)
                continue
            for line in a[s1:e1]:
                emit(b"-", line)
            for line in b[s2:e2]:
                emit(b"+", line)
    return b"".join(out)
