"""What the hardware job needs besides the tests: the builders, their rewrites, the batches.

Rewritten sources come from one of two places, so the device phase needs no libcst:

* on disk, under ``tests/hardware/_rewritten/`` (written by ``prerewrite.py`` on the host), with
  a manifest holding the sha256 of each original, so a stale rewrite is refused;
* otherwise rewritten now, in process, with ``pinfix.api.fix_text`` (needs libcst).

This module imports neither torch nor libcst at import time: ``prerewrite.py`` runs it on a host
that may have no torch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Optional

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "sparse_mla"
REWRITTEN_DIR = Path(__file__).resolve().parent / "_rewritten"
MANIFEST = "manifest.json"
HELPER = "vllm.utils.torch_utils.np_to_pinned_tensor"

# The buffer's capacity and the batches, as query_start_loc (cumulative token offsets):
# empty, one request, growing, shrinking (the ROCm builder re-zeroes its tail), the buffer's
# maximum, and down to one token again.
MAX_TOKENS = 64
BATCHES = [
    [0],
    [0, 5],
    [0, 3, 7],
    [0, 4, 9, 20],
    [0, 2, 3],
    [0, 30, 64],
    [0, 1],
]


@dataclass(frozen=True)
class BuilderSpec:
    name: str
    source: Path
    class_name: str


BUILDERS = [
    BuilderSpec("xpu", EXAMPLES / "xpu_builder.py", "XPUSparseMLAMetadataBuilder"),
    BuilderSpec("rocm", EXAMPLES / "rocm_builder.py", "ROCMSparseMLAMetadataBuilder"),
]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rewrite(source: str) -> str:
    """The codemod applied to ``source`` (no path: nothing in the repo's config excludes it)."""
    from pinfix.api import fix_text

    return fix_text(source, helper=HELPER)


def write_rewritten(specs, out_dir: Path = REWRITTEN_DIR) -> dict:
    """Host phase: rewrite every spec's source into ``out_dir`` and record the manifest."""
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for spec in specs:
        original = spec.source.read_text()
        target = out_dir / f"{spec.name}_rewritten.py"
        target.write_text(rewrite(original))
        manifest[spec.name] = {"source": str(spec.source), "sha256": sha256(original), "file": target.name}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return manifest


class StaleRewrite(RuntimeError):
    pass


def rewritten_path(spec: BuilderSpec, tmp_dir: Path, out_dir: Path = REWRITTEN_DIR) -> tuple[Path, str]:
    """A file holding the rewritten builder, and where it came from ("disk" or "libcst").

    Raises ``StaleRewrite`` when the pre-rewritten file no longer matches its original, and
    ``ImportError`` when there is neither a file on disk nor libcst to make one.
    """
    original = spec.source.read_text()
    manifest_file = out_dir / MANIFEST
    if manifest_file.exists():
        entry = json.loads(manifest_file.read_text()).get(spec.name)
        if entry is not None:
            if entry["sha256"] != sha256(original):
                raise StaleRewrite(
                    f"{out_dir / entry['file']} was rewritten from an older {spec.source.name}; "
                    "re-run the host phase: python tests/hardware/prerewrite.py"
                )
            return out_dir / entry["file"], "disk"
    target = tmp_dir / f"{spec.name}_rewritten.py"
    target.write_text(rewrite(original))
    return target, "libcst"


def load_module(path: Path, name: str) -> ModuleType:
    """Import a file under its own module name, so original and rewrite live side by side."""
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def vllm_helper_importable() -> Optional[str]:
    """``None`` when ``vllm.utils.torch_utils.np_to_pinned_tensor`` imports, else why not."""
    if importlib.util.find_spec("vllm") is None:
        return "vllm is not installed"
    try:
        from vllm.utils.torch_utils import np_to_pinned_tensor  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any failure means "use the shim"
        return f"vllm.utils.torch_utils does not import: {type(e).__name__}: {e}"
    return None
