"""`.cuda(...)` and `.xpu(...)` with non_blocking, keyword or positional."""

import numpy as np
import torch
from vllm.utils.torch_utils import np_to_pinned_tensor


def to_cuda(a: np.ndarray) -> torch.Tensor:
    return np_to_pinned_tensor(a).cuda(non_blocking=True)


def to_cuda_positional(a: np.ndarray) -> torch.Tensor:
    return np_to_pinned_tensor(a).cuda(0, True)


def to_xpu(a: np.ndarray) -> torch.Tensor:
    return np_to_pinned_tensor(a).xpu(non_blocking=True)
