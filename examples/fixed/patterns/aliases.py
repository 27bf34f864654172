"""torch resolved by qualified name: module aliases and imported functions count."""

import numpy as np
import torch as th
from vllm.utils.torch_utils import np_to_pinned_tensor


def aliased_module(buffer: th.Tensor, a: np.ndarray) -> None:
    buffer.copy_(np_to_pinned_tensor(a), non_blocking=True)


def imported_function(buffer: th.Tensor, a: np.ndarray) -> None:
    buffer.copy_(np_to_pinned_tensor(a), non_blocking=True)
