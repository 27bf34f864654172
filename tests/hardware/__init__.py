"""The hardware job (marker ``hardware``); see docs/runtime.md."""
