"""`python -m pinfix`: the `pinfix` command, safe to run inside any source tree."""

import os
import sys

# `python -m pinfix` puts the working directory first on sys.path; inside a
# tree such as torch's own, its packages would shadow the standard library's.
# pinfix never imports the code it analyses.
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]

try:
    from .cli import command  # noqa: E402
except KeyboardInterrupt:  # interrupted while starting up
    sys.stderr.write("pinfix: interrupted\n")
    sys.exit(130)

sys.exit(command())
