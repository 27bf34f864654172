"""`.to(...)` in its signatures: positional device, `device=` keyword, with a dtype."""

import numpy as np
import torch
from vllm.utils.torch_utils import np_to_pinned_tensor


def positions(offsets: np.ndarray, device: torch.device) -> torch.Tensor:
    return np_to_pinned_tensor(offsets).to(device, non_blocking=True)


def positions_long(offsets: np.ndarray, device: torch.device) -> torch.Tensor:
    return np_to_pinned_tensor(offsets).to(
        device=device, dtype=torch.int64, non_blocking=True
    )


def positions_positional(offsets: np.ndarray, device: torch.device) -> torch.Tensor:
    return np_to_pinned_tensor(offsets).to(device, torch.int64, True)
