"""The hardware job (marker ``hardware``); see the README, "Hardware job"."""
