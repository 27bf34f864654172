"""Nothing here is a finding: pinfix check exits 0 on this file."""

import numpy as np
import torch


def from_numpy(a: np.ndarray) -> np.ndarray:  # a local function, not torch's
    return a


def blocking(buffer: torch.Tensor, a: np.ndarray) -> None:
    buffer.copy_(torch.from_numpy(a))  # no non_blocking: synchronous by request
    buffer.copy_(torch.from_numpy(a), non_blocking=False)


def stays_on_host(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a).to("cpu", non_blocking=True)


def already_pinned(buffer: torch.Tensor, a: np.ndarray) -> None:
    buffer.copy_(torch.from_numpy(a).pin_memory(), non_blocking=True)


def local_function(buffer: torch.Tensor, a: np.ndarray) -> None:
    buffer.copy_(from_numpy(a), non_blocking=True)


def decided_elsewhere(buffer: torch.Tensor, a: np.ndarray, non_blocking: bool) -> None:
    buffer.copy_(torch.from_numpy(a), non_blocking=non_blocking)  # reported with --strict


def suppressed(buffer: torch.Tensor, a: np.ndarray) -> None:
    buffer.copy_(torch.from_numpy(a), non_blocking=True)  # noqa: PIN001
