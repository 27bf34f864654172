#!/usr/bin/env bash
# The hardware job in two phases, for a device machine with python3, torch, numpy and pytest
# but no libcst and no network.
#
#   tests/hardware/run-on-device.sh host     # on a machine with pinfix[test] (libcst): rewrite
#   tests/hardware/run-on-device.sh device   # on the device machine: run the tests (< 3 min)
#   tests/hardware/run-on-device.sh          # both, one after the other (a host with a device)
#
# Extra arguments after the phase go to pytest, e.g. --vllm-src=/path/to/vllm.
set -euo pipefail
cd "$(dirname "$0")/../.."
phase="${1:-all}"
[ $# -gt 0 ] && shift
PY="${PYTHON:-python3}"

if [ "$phase" = host ] || [ "$phase" = all ]; then
    "$PY" tests/hardware/prerewrite.py
fi
if [ "$phase" = device ] || [ "$phase" = all ]; then
    test -f tests/hardware/_rewritten/manifest.json || {
        echo "no tests/hardware/_rewritten/manifest.json: run the host phase first" >&2
        exit 2
    }
    "$PY" -c 'import torch; print("torch", torch.__version__, "accelerator:", torch.accelerator.current_accelerator())'
    timeout 170 "$PY" -m pytest tests/hardware tests/runtime \
        -q -rs -p no:cacheprovider "$@"
fi
