"""The hardware job (marker ``hardware``); see docs/hardware.md."""
