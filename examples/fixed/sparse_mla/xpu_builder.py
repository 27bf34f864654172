"""The XPU sparse-MLA metadata builder's ``req_id_per_token`` path, in small.

Every ``build()`` maps each query token of the batch to the index of its request, e.g.
``query_start_loc = [0, 2, 5]`` gives ``[0, 0, 1, 1, 1]``.  The mapping is computed with numpy
on the host, the whole persistent device buffer is zeroed (so a captured graph never reads a
stale tail), and the mapping is copied into the buffer's head with ``non_blocking=True``.

The copy's source is ``torch.from_numpy(...)``: pageable memory, so the "non-blocking" copy
makes the host wait.  This file is deliberately left in that state; ``pinfix fix`` rewrites it.
"""

from dataclasses import dataclass

import numpy as np
import torch
from vllm.utils.torch_utils import np_to_pinned_tensor


@dataclass
class BatchInputs:
    """What the scheduler hands the builder: the batch layout, on the host and on the device."""

    query_start_loc_cpu: torch.Tensor  # int32, num_reqs + 1 cumulative token offsets
    query_start_loc: torch.Tensor  # the same, already on the device
    num_actual_tokens: int


@dataclass
class SparseMLAMetadata:
    num_reqs: int
    num_actual_tokens: int
    query_start_loc: torch.Tensor
    req_id_per_token: torch.Tensor  # a view of the builder's persistent buffer


class XPUSparseMLAMetadataBuilder:
    """Owns the persistent ``req_id_per_token_buffer`` sized for the largest batch."""

    def __init__(self, max_num_batched_tokens: int, device: torch.device):
        self.device = torch.device(device)
        self.req_id_per_token_buffer = torch.empty(
            (max_num_batched_tokens,), dtype=torch.int32, device=self.device
        )

    def build(self, batch: BatchInputs) -> SparseMLAMetadata:
        num_tokens = batch.num_actual_tokens
        starts = np.asarray(batch.query_start_loc_cpu, dtype=np.int32)
        seg_lengths = np.diff(starts)
        req_id_per_token = np.repeat(
            np.arange(seg_lengths.shape[0], dtype=np.int32), seg_lengths
        )
        # The whole buffer is zeroed on every build.
        self.req_id_per_token_buffer.fill_(0)
        self.req_id_per_token_buffer[: req_id_per_token.shape[0]].copy_(
            np_to_pinned_tensor(req_id_per_token), non_blocking=True
        )
        return SparseMLAMetadata(
            num_reqs=seg_lengths.shape[0],
            num_actual_tokens=num_tokens,
            query_start_loc=batch.query_start_loc,
            req_id_per_token=self.req_id_per_token_buffer[:num_tokens],
        )
