"""The source bound to a local name first.

`upload` is a safe fix: the name has no other use. `upload_and_keep` is
unsafe: `host` is returned too, and the pinned helper copies the array where
`torch.from_numpy` shares it (applied only with `--unsafe-fixes`).
"""

import numpy as np
import torch
from vllm.utils.torch_utils import np_to_pinned_tensor


def upload(buffer: torch.Tensor, values: np.ndarray) -> None:
    host = np_to_pinned_tensor(values)
    buffer[: len(values)].copy_(host, non_blocking=True)


def upload_and_keep(buffer: torch.Tensor, values: np.ndarray) -> torch.Tensor:
    host = torch.from_numpy(values)
    buffer[: len(values)].copy_(host, non_blocking=True)
    return host
