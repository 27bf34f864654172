"""Random statements in the subset pinfix.layout lays out, for comparison with ruff format."""

from __future__ import annotations

import random
from typing import List

_OPS = ["+", "-", "*", "/", "//", "%", "@", "|", "&", "^", "<<", ">>"]
_CMP = ["==", "!=", "<", "<=", ">", ">=", "is", "is not", "in", "not in"]


class StatementGenerator:
    def __init__(self, seed: int, long_names: bool = True):
        self.rng = random.Random(seed)
        self.long_names = long_names

    def name(self) -> str:
        n = self.rng.choice([1, 3, 5, 8, 12, 20, 30] if self.long_names else [1, 3, 5])
        first = self.rng.choice("abcdefghxyz_")
        return (first + "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz_0123456789") for _ in range(n - 1))).rstrip(
            "_"
        ) or "v"

    def atom(self) -> str:
        r = self.rng.random()
        if r < 0.6:
            return self.name()
        if r < 0.75:
            return str(self.rng.choice([0, 1, 2, 64, 1024, 3.5]))
        if r < 0.85:
            return self.rng.choice(['"abc"', '"a longer string literal"', "True", "None"])
        return "self." + self.name()

    def expr(self, depth: int) -> str:
        if depth <= 0:
            return self.atom()
        r = self.rng.random()
        if r < 0.35:
            return self.call(depth)
        if r < 0.45:
            return self.primary(depth) + "." + self.name()
        if r < 0.55:
            return self.primary(depth) + "[" + self.index(depth - 1) + "]"
        if r < 0.7:
            n = self.rng.choice([2, 2, 3])
            op = self.rng.choice(_OPS)
            return f" {op} ".join(self.operand(depth - 1) for _ in range(n))
        if r < 0.75:
            return self.operand(depth - 1) + f" {self.rng.choice(_CMP)} " + self.operand(depth - 1)
        if r < 0.8:
            return "[" + ", ".join(self.expr(depth - 1) for _ in range(self.rng.randint(0, 3))) + "]"
        if r < 0.85:
            return "-" + self.primary(depth)
        return self.atom()

    def operand(self, depth: int) -> str:
        # No operations as operands (they would need parentheses).
        e = self.expr(depth)
        for token in _OPS + _CMP + [" and ", " or "]:
            if f" {token} " in e and not (e.endswith(")") or e.endswith("]")):
                return self.atom()
        if " " in e and not (e[-1] in ")]" and e.split("(")[0].replace(".", "").replace("_", "").isalnum()):
            return self.atom()
        return e

    def primary(self, depth: int) -> str:
        r = self.rng.random()
        if r < 0.6:
            return self.name() if r < 0.3 else "self." + self.name()
        if r < 0.9:
            return self.name() + "." + self.name()
        return self.name() + "[" + self.index(0) + "]." + self.name()

    def index(self, depth: int) -> str:
        r = self.rng.random()
        if r < 0.3:
            return ":" + self.atom()
        if r < 0.4:
            return ":, :" + self.name()
        if r < 0.5:
            return self.name() + " + 1 :"
        return self.expr(max(depth, 0))

    def call(self, depth: int) -> str:
        func = self.primary(depth)
        positional: List[str] = []
        keywords: List[str] = []
        for _ in range(self.rng.choice([0, 1, 1, 2, 2, 3, 4])):
            r = self.rng.random()
            if r < 0.6:
                positional.append(self.expr(depth - 1))
            elif r < 0.9:
                keywords.append(self.name() + "=" + self.expr(depth - 1))
            else:
                positional.append("*" + self.name())
        args = positional + keywords
        trailing = "," if args and self.rng.random() < 0.1 else ""
        return f"{func}({', '.join(args)}{trailing})"

    def statement(self, depth: int = 3) -> str:
        r = self.rng.random()
        value = self.expr(depth)
        if r < 0.3:
            return self.call(depth)
        if r < 0.6:
            return f"{self.name()} = {value}"
        if r < 0.7:
            return f"self.{self.name()}[:{self.name()}] = {value}"
        if r < 0.8:
            return f"{self.name()} += {value}"
        return f"return {value}"
