"""torch resolved by qualified name: module aliases and imported functions count."""

import numpy as np
import torch as th
from torch import from_numpy


def aliased_module(buffer: th.Tensor, a: np.ndarray) -> None:
    buffer.copy_(th.from_numpy(a), non_blocking=True)


def imported_function(buffer: th.Tensor, a: np.ndarray) -> None:
    buffer.copy_(from_numpy(a), non_blocking=True)
