"""`.to(...)` in its signatures: positional device, `device=` keyword, with a dtype.

The device is plainly an accelerator here: to a device that may be the CPU, `.to` returns
the tensor on the array's memory itself, and the fix would be unsafe."""

import numpy as np
import torch


def positions(offsets: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(offsets).to("cuda", non_blocking=True)


def positions_long(offsets: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(offsets).to(device="cuda", dtype=torch.int64, non_blocking=True)


def positions_positional(offsets: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(offsets).to("cuda", torch.int64, True)
