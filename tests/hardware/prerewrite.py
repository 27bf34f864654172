"""Host phase of the hardware job: rewrite the builders with the codemod, onto disk.

    python tests/hardware/prerewrite.py [--out DIR]

The device machine has no libcst; the tests there pick the rewritten files up from
``tests/hardware/_rewritten/`` (checked against the originals' sha256).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import hw_support


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=hw_support.REWRITTEN_DIR)
    args = parser.parse_args()
    manifest = hw_support.write_rewritten(hw_support.BUILDERS, args.out)
    for name, entry in sorted(manifest.items()):
        print(f"rewrote {entry['source']} -> {args.out / entry['file']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
