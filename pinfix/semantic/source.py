"""One file's text and the stdlib ``ast`` of it: positions, lines, segments.

The stdlib parser gives columns as UTF-8 byte offsets into each line; findings
and edits need characters (columns) and indexes into the text. Lines end where
CPython's tokenizer ends them: ``\\r\\n``, ``\\r`` or ``\\n`` (not at a form feed,
``\\x1c`` or U+2028, where ``str.splitlines`` would).
"""

from __future__ import annotations

import ast
import codecs
import io
import re
import tokenize
from array import array
from itertools import accumulate
from typing import Any, List, Optional, Sequence, Tuple

from ..findings import file_identity, same_file

_LINE_END = re.compile(r"\r\n|\r|\n")


#: What ``str.splitlines`` breaks lines at besides Python's line ends.
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def line_starts(text: str) -> "array[int]":
    """The offset of each line's first character, lines ended as Python ends them
    (``\\r\\n``, ``\\r``, ``\\n``): after each line end, and 0. From the lengths of
    ``str.splitlines``' lines where the text holds none of the other breaks it makes
    (a generator over every line end: 0.20 s over a thousand of vLLM's modules, 0.15 s so)."""
    starts = array("q", (0,))
    if _OTHER_BREAKS.search(text) is not None:
        starts.extend(m.end() for m in _LINE_END.finditer(text))
        return starts
    starts.extend(accumulate(map(len, text.splitlines(True))))
    if text and text[-1] not in "\r\n":
        starts.pop()  # the last line has no end: no line starts after it
    return starts


class SourceError(Exception):
    """The bytes cannot be decoded or parsed; the message says why and where."""

    def __init__(self, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.line = line
        self.column = column


def decode(data: bytes) -> Tuple[str, str]:
    """``(text, encoding)`` of Python source bytes (PEP 263, a UTF-8 BOM)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:
        raise SourceError(f"cannot decode: {e.msg if hasattr(e, 'msg') else e}") from None
    try:
        codecs.lookup(encoding)
        text = data.decode(encoding)
    except (LookupError, UnicodeDecodeError) as e:
        raise SourceError(f"cannot decode: {e}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if encoding == "utf-8-sig":
        encoding = "utf-8"  # the BOM is the file's, kept apart from the text
    return text, encoding


class SourceText:
    """A file's text, its line starts and (once parsed) its syntax tree.

    ``path`` names the file (a name of pinfix's own, such as ``<string>``, for
    text that is no file); :attr:`path` holds its identity (:func:`file_identity`),
    which evidence carries and :func:`same_source` compares."""

    def __init__(self, text: str, path: str, encoding: str = "utf-8", data: Optional[bytes] = None):
        self.text = text
        #: The file's identity: absolute, symbolic links resolved.
        self.path = file_identity(path)
        self.encoding = encoding
        self.data = data
        # As machine integers (a list of int objects took 35 MB over the modules deep
        # mode read of vLLM 0.34.0).
        self.line_starts: Sequence[int] = line_starts(text)

    @classmethod
    def from_bytes(cls, data: bytes, path: str) -> "SourceText":
        text, encoding = decode(data)
        return cls(text, path, encoding, data)

    def parse(self) -> ast.Module:
        """The stdlib tree of this text; :class:`SourceError` where CPython rejects it."""
        try:
            source: Any = self.data if self.data is not None else self.text
            return ast.parse(source)
        except SyntaxError as e:
            line = e.lineno or 0
            column = e.offset or 0
            raise SourceError(f"syntax error at {line}:{column}: {e.msg}", line, column) from None
        except (ValueError, RecursionError, MemoryError, OverflowError) as e:
            reason = str(e) or type(e).__name__
            if isinstance(e, RecursionError):
                reason = "too deeply nested for the parser"
            raise SourceError(f"cannot parse: {reason}") from None

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based), without its line end."""
        if line < 1 or line > len(self.line_starts):
            return ""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return _LINE_END.sub("", self.text[start:end], count=1) if end > start else ""

    def column(self, line: int, byte_col: int) -> int:
        """The 0-based character column of a UTF-8 byte offset into line ``line``."""
        text = self.line_text(line)
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))

    def offset(self, line: int, byte_col: int) -> int:
        """The index into :attr:`text` of a (line, UTF-8 byte offset) position."""
        return self.line_starts[line - 1] + self.column(line, byte_col)

    def span(self, node: Any) -> Tuple[int, int]:
        """``node``'s start and end indexes into :attr:`text`."""
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node: Any) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def short(self, node: Any, limit: int = 60) -> str:
        """``node``'s code on one line, cut to ``limit`` characters (for messages)."""
        text = " ".join(self.segment(node).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def lines(self) -> List[str]:
        return [self.line_text(i) for i in range(1, len(self.line_starts) + 1)]


def same_source(a: SourceText, b: SourceText) -> bool:
    """Whether two texts are of one file (whichever objects hold them)."""
    return same_file(a.path, b.path)


def holds(outer: ast.AST, inner: ast.AST) -> bool:
    """Whether ``inner`` lies within ``outer``'s span."""
    if outer is inner:
        return True
    try:
        return (outer.lineno, outer.col_offset) <= (inner.lineno, inner.col_offset) and (
            inner.end_lineno,
            inner.end_col_offset,
        ) <= (outer.end_lineno, outer.end_col_offset)  # type: ignore[attr-defined]
    except AttributeError:
        return False
