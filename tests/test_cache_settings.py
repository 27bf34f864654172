"""The check cache is keyed by every setting that changes what pinfix reports:
deep mode among them (a deep run must never reuse a plain run's answer)."""

from pathlib import Path

from pinfix.cache import ResultCache
from pinfix.config import Config


def test_settings_change_the_cache_key(tmp_path: Path) -> None:
    base = ResultCache(tmp_path, Config(root=tmp_path))
    for changed in (
        Config(root=tmp_path, deep=True),
        Config(root=tmp_path, strict=True),
        Config(root=tmp_path, show_unknown=True),
        Config(root=tmp_path, extra_pinned_producers=("m.alloc.grab",)),
    ):
        other = ResultCache(tmp_path, changed)
        assert other.salt != base.salt
        assert other._entry("a.py", b"x") != base._entry("a.py", b"x")
    assert ResultCache(tmp_path, Config(root=tmp_path)).salt == base.salt
