"""The pre-filters are sound: with them off (``PINFIX_NO_PREFILTER=1``) pinfix
reports exactly what it reports with them on, over a generated corpus that
holds every pattern of every rule (and their look-alikes) in several
spellings; and they still skip files that cannot hold a finding."""

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

from pinfix import effects
from pinfix.prefilter import KIND_ROLES, may_contain_finding, origin_names
from pinfix.rules.pin001 import PageableNonBlockingCopy
from pinfix.rules.pin002 import PageableCpuSource
from pinfix.rules.pin003 import UnsynchronizedHostRead
from tests.support import REPO

RULES = (PageableNonBlockingCopy, PageableCpuSource, UnsynchronizedHostRead)

# Re-spell torch's names: attribute on an alias, or imported (aliased) names.
SPELLINGS = [
    ("import torch as th\n", lambda code: code.replace("torch.", "th.")),
    (
        "from torch import arange as ar, tensor as tt, zeros as zz, from_numpy as fnp\n",
        lambda code: (
            code.replace("torch.arange(", "ar(")
            .replace("torch.tensor(", "tt(")
            .replace("torch.zeros(", "zz(")
            .replace("torch.from_numpy(", "fnp(")
        ),
    ),
]


def _cases():
    for rule in RULES:
        for i, case in enumerate(itertools.chain(rule.VALID, rule.INVALID)):
            yield f"{rule.__name__}_{i}", case.code


# Code with no candidate sink around the case: the slice blanks these bodies
# (decorated methods, nested classes, multi-line headers, one-line bodies,
# `global`), and must keep every line and column of the rest where it was.
PADDING_BEFORE = '''
import functools


@functools.lru_cache(maxsize=None)
def cached(n):
    """Docstring."""
    return [i for i in range(n)]


class Holder:
    @classmethod
    @functools.wraps(cached)
    def build(cls, a,
              b=2):  # multi-line header
        if a:
            return b
        # a comment in the body

    def one_liner(self): return 1

    class Inner:
        def deep(self):
            x = """a string
            over lines"""
            return x


COUNTER = 0


def bump():
    global COUNTER
    COUNTER += 1
'''
PADDING_AFTER = """

@functools.lru_cache
class Later:
    value = 1

    @property
    def prop(self):
        return self.value
"""


def _corpus(root: Path) -> int:
    n = 0
    for name, code in _cases():
        (root / f"{name}.py").write_text(code)
        n += 1
        for j, (head, respell) in enumerate(SPELLINGS):
            (root / f"{name}_s{j}.py").write_text(head + "import torch\n" + respell(code))
            n += 1
        # Surrounded by code the slice blanks.
        lines = code.split("\n")
        cut = next((k for k, ln in enumerate(lines) if ln.startswith(("def ", "class ", "@"))), len(lines))
        padded = "\n".join(lines[:cut]) + PADDING_BEFORE + "\n\n" + "\n".join(lines[cut:]) + PADDING_AFTER
        (root / f"{name}_p.py").write_text(padded)
        n += 1
        # Move the function body into a method and a nested function.
        if "\ndef f(" in code:
            nested = code.replace("\ndef f(", "\nclass C:\n    @staticmethod\n    def f(", 1)
            head, _, body = nested.partition("def f(")
            body_lines = body.split("\n")
            body = "\n".join([body_lines[0]] + ["    " + ln if ln else ln for ln in body_lines[1:]])
            (root / f"{name}_m.py").write_text(head + "def f(" + body)
            n += 1
    for example in (REPO / "examples").rglob("*.py"):
        (root / f"example_{example.parent.name}_{example.name}").write_text(example.read_text())
        n += 1
    return n


def _check(root: Path, prefilter: bool, *flags: str) -> list:
    env = dict(os.environ)
    env.pop("PINFIX_NO_PREFILTER", None)
    if not prefilter:
        env["PINFIX_NO_PREFILTER"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "pinfix", "check", "--output-format", "json", "--jobs", "1", *flags, str(root)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    )
    assert proc.returncode in (0, 1), proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["errors"] == []
    return sorted((f["path"], f["line"], f["column"], f["code"], f["message"]) for f in payload["findings"])


def test_prefilter_is_sound_on_generated_corpus(tmp_path: Path) -> None:
    n = _corpus(tmp_path)
    with_prefilter = _check(tmp_path, True)
    without = _check(tmp_path, False)
    assert with_prefilter == without
    codes = {f[3] for f in without}
    assert codes == {"PIN001", "PIN002", "PIN003"} and len(without) > n // 3


def test_prefilter_still_skips() -> None:
    # No origin of CPU memory spelt: the byte stage alone rejects it.
    assert not may_contain_finding(b"def f(x, d):\n    return x.to(d, non_blocking=True)\n")
    # No sink spelt.
    assert not may_contain_finding(b"import torch\n\ndef f(d):\n    return torch.zeros(3).to(d)\n")
    text = b"import torch\n\ndef f(d):\n    y = torch.zeros(3)\n    z = y[:2].long()\n    return z.to(d, non_blocking=True)\n"
    assert may_contain_finding(text)


def test_every_kind_of_effect_has_a_role() -> None:
    """A new kind of effect must say what it is to the shortcut."""
    kinds = {
        k
        for k in vars(effects).values()
        if isinstance(k, type) and issubclass(k, effects.Effect) and k is not effects.Effect
    }
    assert kinds == set(KIND_ROLES)


def _origins():
    for table in (effects.FUNCTIONS, effects.TENSOR_METHODS):
        for key, effect in sorted(table.items()):
            if KIND_ROLES[type(effect)] == "origin":
                yield key, effect


ORIGINS = list(_origins())


def test_origin_spellings_come_from_the_table() -> None:
    assert {k.rsplit(".", 1)[-1] for k, _ in ORIGINS} <= origin_names()
    assert len(ORIGINS) > 20


def _origin_source(key: str) -> str:
    """A file where ``key`` (a table entry that makes CPU memory) feeds a non_blocking copy."""
    name = key.rsplit(".", 1)[-1]
    if key in effects.TENSOR_METHODS:
        if name == "pin_memory":
            return "import torch\n\n\ndef f(t, d):\n    return t.pin_memory()[::2].to(d, non_blocking=True)\n"
        if name == "share_memory_":  # of a CPU tensor pinfix can see
            return "import torch\n\n\ndef f(n, d):\n    return torch.empty(n, pin_memory=True).share_memory_().to(d, non_blocking=True)\n"
        return f"import torch\n\n\ndef f(t, d):\n    return t.{name}().to(d, non_blocking=True)\n"
    module, _, _ = key.rpartition(".")
    args = "[1, 2]" if not name.endswith("_like") else "torch.zeros(2)"
    call = f"{key}({args})"
    effect = effects.FUNCTIONS.get(key)
    if isinstance(effect, effects.Loads):
        call = f"next(iter({call}))"  # a batch of the loader
    elif isinstance(effect, effects.Opens):
        call = f"{key}('f', framework='pt').{effect.reads[0]}('w')"
    elif isinstance(effect, effects.ReadsFile):
        call = f"{key}('f', {effect.device_keyword}='cpu')"
    return f"import {module}\nimport torch\n\n\ndef f(d):\n    return {call}[::2].to(d, non_blocking=True)\n"


def test_every_origin_entry_passes_the_byte_stage_and_is_reported(tmp_path: Path) -> None:
    """Each table entry that makes CPU memory, fed to a copy: the byte stage lets
    the file through, and the engine reports it (a PIN001/PIN002 finding)."""
    from pinfix.api import check_text

    missing = []
    for key, _ in ORIGINS:
        source = _origin_source(key)
        assert may_contain_finding(source.encode()), key
        if not [f for f in check_text(source) if f.code in ("PIN001", "PIN002")]:
            missing.append(key)
    assert missing == []


def test_a_helper_that_copies_non_blocking_unasked_passes_the_byte_stage() -> None:
    """Lightning's `move_data_to_device` copies with non_blocking=True without the word in the file."""
    source = b"import torch\nfrom lightning.fabric.utilities import move_data_to_device\n\n\ndef f(ids):\n    return move_data_to_device(torch.tensor(ids), 'cuda')\n"
    assert may_contain_finding(source)
    assert not may_contain_finding(source.replace(b"move_data_to_device", b"move_it"))


def test_the_table_entries_are_frozen_records_of_their_fields() -> None:
    """Each kind is a record of the fields its class annotates (the base's first), as
    ``@dataclass(frozen=True)`` would make it: the table's entries are compared, hashed
    and used as keys, and must not change after the table is built."""
    import pytest

    made = effects.Makes(helper_fix=True, factory=True)
    assert effects.Makes.fields[:2] == ("code", "helper_fix") and "shares_argument" in effects.Makes.fields
    assert made == effects.Makes(helper_fix=True, factory=True) and hash(made) == hash(
        effects.Makes("PIN002", True, True)
    )
    assert made != effects.Makes(helper_fix=True) and made != effects.Pins() and effects.Pins() != effects.Effect()
    assert len({made, effects.Makes(helper_fix=True, factory=True), effects.View(dense="maybe")}) == 2
    assert (made.code, made.like, made.varargs_size) == ("PIN002", False, True)  # the defaults
    assert repr(effects.View(dense="maybe")) == "View(code='PIN002', dense='maybe')"
    with pytest.raises(AttributeError):
        made.factory = False  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del made.code
    with pytest.raises(TypeError):
        effects.View(dense="maybe", density=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        effects.View("PIN001", "maybe", "extra")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        effects.View("PIN001", code="PIN002")  # type: ignore[call-arg]
    with pytest.raises(TypeError):

        class Bare(effects.Effect):  # a field without a default
            size: int
