"""The ROCm (AITER) sparse-MLA metadata builder's ``req_id_per_token`` path, in small.

Same mapping as the XPU builder (each query token to its request index, computed with numpy),
but the persistent buffer starts zeroed and only the tail that the previous, longer batch left
behind is re-zeroed: ``buffer[new_len:prev_len].fill_(0)``.  Then the head is filled with a
``non_blocking=True`` copy from ``torch.from_numpy(...)``, which is pageable memory, so the
copy blocks the host.  Left in that "before" state on purpose; ``pinfix fix`` rewrites it.
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


class ROCMSparseMLAMetadataBuilder:
    """Owns the persistent ``req_id_per_token_buffer`` and remembers how much of it is in use."""

    def __init__(self, max_num_batched_tokens: int, device: torch.device):
        self.device = torch.device(device)
        self.req_id_per_token_buffer = torch.zeros(
            (max_num_batched_tokens,), dtype=torch.int32, device=self.device
        )
        self._prev_req_extent = 0

    def build(self, batch: BatchInputs) -> SparseMLAMetadata:
        num_tokens = batch.num_actual_tokens
        starts = np.asarray(batch.query_start_loc_cpu, dtype=np.int32)
        seg_lengths = np.diff(starts)
        req_id_per_token = np.repeat(
            np.arange(seg_lengths.shape[0], dtype=np.int32), seg_lengths
        )
        # Only the part the previous batch used beyond this one is re-zeroed.
        new_req_extent = int(req_id_per_token.shape[0])
        if self._prev_req_extent > new_req_extent:
            self.req_id_per_token_buffer[new_req_extent : self._prev_req_extent].fill_(0)
        self._prev_req_extent = new_req_extent
        self.req_id_per_token_buffer[:new_req_extent].copy_(
            np_to_pinned_tensor(req_id_per_token), non_blocking=True
        )
        return SparseMLAMetadata(
            num_reqs=seg_lengths.shape[0],
            num_actual_tokens=num_tokens,
            query_start_loc=batch.query_start_loc,
            req_id_per_token=self.req_id_per_token_buffer[:num_tokens],
        )
