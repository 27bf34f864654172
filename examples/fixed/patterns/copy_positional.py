"""`copy_(src, True)`: non_blocking passed positionally."""

import numpy as np
import torch
from vllm.utils.torch_utils import np_to_pinned_tensor


def upload(buffer: torch.Tensor, values: np.ndarray) -> None:
    buffer[: len(values)].copy_(np_to_pinned_tensor(values), True)
