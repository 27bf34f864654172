"""`.cuda(...)` and `.xpu(...)` with non_blocking, keyword or positional."""

import numpy as np
import torch


def to_cuda(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a).cuda(non_blocking=True)


def to_cuda_positional(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a).cuda(0, True)


def to_xpu(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a).xpu(non_blocking=True)
