"""`.to(...)` in its signatures: positional device, `device=` keyword, with a dtype."""

import numpy as np
import torch


def positions(offsets: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(offsets).to(device, non_blocking=True)


def positions_long(offsets: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(offsets).to(device=device, dtype=torch.int64, non_blocking=True)


def positions_positional(offsets: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(offsets).to(device, torch.int64, True)
