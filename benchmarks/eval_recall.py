#!/usr/bin/env python3
"""Recall of pinfix on the pageable-source fixes vLLM made by hand, and its findings on a later release.

usage: python benchmarks/eval_recall.py [--sdist-dir /tmp/sdists] [--list-sites] [--json-dir DIR] > eval.md

Downloads (or reuses) the vLLM sdists 0.28.0, 0.29.0, 0.30.0 and 0.34.0 with
``../shared/tools/fetch-sdist`` (relative to the repo root; ``--fetch-tool``), reads them in
place and prints markdown. No vLLM code is kept in this repository.

Part 1, fix sites (0.28.0 -> 0.29.0 and 0.28.0 -> 0.30.0)
-----------------------------------------------------------
For every ``vllm/**/*.py`` present in 0.28.0 and in the newer version, the two texts are
compared with ``difflib.SequenceMatcher`` and grouped into hunks with 3 lines of context.
Comments are stripped before any marker test below (``#`` to end of line, outside strings).

A hunk *qualifies* when it newly introduces a pinning marker: the number of matches of
``np_to_pinned_tensor``, ``async_tensor_h2d``, ``pin_memory=<anything but False>``,
``.pin_memory(``, ``CpuGpuBuffer`` or ``.copy_to_gpu(`` in its added lines exceeds the number in
its removed lines. (Rewording ``pin_memory=PIN_MEMORY`` or moving an existing marker does not
count.) One extra shape qualifies without a marker: a removed non_blocking copy from a *gapped
view* (``buf[:, :n]``, ``buf[::k]``) replaced by added lines with a ``for`` loop of
non_blocking copies (the dense per-row split).

In a qualifying hunk, a *fix site* is one non_blocking copy of 0.28.0 (a ``.to`` / ``.cuda`` /
``.copy_`` call with a ``non_blocking`` keyword in the 0.28.0 AST; its lines are the call's lines,
from the receiver to the closing parenthesis) that overlaps the hunk and

* has a removed line in the hunk (the sink itself was rewritten, e.g. into ``async_tensor_h2d``), or
* is unchanged context, the hunk removes no ``non_blocking`` line, and the sink's source was
  rewritten: the statement binding the source name (last plain assignment before the sink in the
  same function) has a removed line, or an added line assigns that name again (``src =
  src.pin_memory()`` inserted before an unchanged ``dst.copy_(src, non_blocking=True)``).

A removed sink in a hunk that qualifies only by the per-row split counts only if its source is a
gapped view. Sites are keyed by (path, 0.28.0 line, column); a site seen in both diffs is listed
once.

Pattern of a site, from its 0.28.0 source expression (the receiver of ``.to``/``.cuda``, the
first argument of ``.copy_``), after following a bare name back through its last assignment in
the same function and through CPU-preserving wrappers (``x[...]`` with plain slices,
``.view/.reshape/.contiguous/.long/.int/.float/.to(dtype)/.clone/.flatten/.squeeze/.unsqueeze/.t``)
at most 6 steps:

* ``from_numpy inline``: the expression itself is ``torch.from_numpy(...)`` (after wrappers);
* ``from_numpy bound``: it reaches ``torch.from_numpy(...)`` through a name;
* ``torch.tensor / factory``: it reaches ``torch.tensor/as_tensor/asarray`` or a factory
  (``arange zeros ones empty full rand randn randint *_like new_*``);
* ``.cpu()``: it reaches a ``.cpu()`` / ``.numpy()``-round-trip call;
* ``gapped view``: the sink's own expression is a subscript with a step or with a slice in a
  non-leading dimension (``buf[:, :n]``);
* left out as *already pinned*: the source is a call of a function of the same file whose body
  holds a pinning marker (0.30.0 swapped such a helper for ``async_tensor_h2d``: a refactor);
* ``other``: anything else (call results, parameters, attributes, tensor ops such as
  ``torch.cat``/``concat``/``stack``, comparisons); the site list gives a sub-kind.

Kind of site (issue 7), from the same 0.28.0 AST, following the source's names back through all
their bindings in the function (tuple targets, ``for`` targets, items ``.append``-ed to a list; a
binding under ``if``/``for``/``try`` also keeps the one before it, or the parameter) and, for a
computed tensor (``torch.cat``, arithmetic, tensor methods), its tensor operands (operands of one op
share a device, so one local CPU producer decides; ``x.new_zeros``, ``torch.zeros_like(x)`` and
``device=x.device`` follow ``x``):

* ``layout``: the copied expression is a gapped view (``buf[:, :n]``, ``buf[::k]``);
* ``inline``: the copied expression itself makes the memory (``torch.from_numpy(a).to(...)``,
  ``torch.cat([...]).to(...)``, arithmetic inline);
* ``same function``: a bare name whose memory is made in the function (factory, ``from_numpy``,
  ``.cpu()``, or an op on such a tensor);
* ``across functions or files``: the memory, or a computed tensor's inputs, come from a parameter,
  an attribute (``self.x``, ``obj.x``) or the return of a project function/method (not torch,
  NumPy or builtins).

Runs
----
pinfix runs four times on 0.28.0 and on 0.34.0 (``--no-cache``, JSON, cwd = the tree root):
``plain`` and ``deep`` (``--deep``) on the whole tree, with the text pre-filter as shipped, and
``plain-nopf`` / ``deep-nopf`` with ``PINFIX_NO_PREFILTER=1`` on the files that say
``non_blocking`` (passed as relative paths; deep still resolves imports outside them). The
pre-filter must only skip files that cannot hold a finding, so the recall tables use the
unfiltered runs and say whether the pre-filtered ones find fewer sites (then they get their own
table). ``--json-dir`` keeps each run's JSON and reuses it (delete a file to rerun that run).

A site is *found* by a run when a PIN001-003 finding of it lies in the same file within the
sink call's lines (strict; pinfix reports at the source expression, which starts the call for
``.to`` sinks and lies inside it for ``.copy_``), or anywhere in the hunk's 0.28.0 line range
(loose, the hunk may hold several sinks). Tables: recall by kind of site and by pattern (plain
vs deep), sites found per code and run. ``--list-sites`` lists every site with its kind, pattern,
what each run found and, for a site deep mode misses, its root cause from ``ROOT_CAUSES`` (read
by hand); the misses are then grouped by cause. Findings on 0.28.0 on no fix site are listed
with a verdict from ``VERDICTS_BASE``.

Part 2, findings on 0.34.0
--------------------------
Every finding of any run on the 0.34.0 sdist (which runs report it), with a verdict read from
``VERDICTS`` below (keyed by ``(path, line)`` first, then ``(path, code)``): ``true`` (pageable
memory or a gapped view, copied non_blocking host to device; a deliberately bad test case counts),
``false`` (pinned, on the device, or not a host-to-device copy) or ``unclear`` (depends on a runtime
flag or a caller). Findings with no entry print ``unjudged`` and are counted apart, never as true.
Precision per run = true / (true + false + unclear), and true / (true + false). Anomalies (a
pre-filtered run finding what the unfiltered one does not, plain finding what deep does not,
``errors``) are listed at the end.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASE = "0.28.0"
NEWER = ("0.29.0", "0.30.0")
LATEST = "0.34.0"
PATTERNS = ("from_numpy inline", "from_numpy bound", "torch.tensor / factory", ".cpu()", "gapped view", "other")
CODES = ("PIN001", "PIN002", "PIN003")
ALREADY_PINNED: set[tuple[str, int, int]] = set()  # sinks left out: their source was pinned already

# Why deep mode (without the pre-filter) still misses a 0.28.0 fix site, read from the code.
# Key: (path, 0.28.0 line of the sink). Value: (cause group, one line).
PARAM = "parameter: the caller passes the CPU tensor"
FIELD = "field of a parameter object (dataclass)"
TUPLE = "tuple return of a project function"
REBIND = "name rebound in the same function"
FLAG = "pin_memory=<flag> read as pinned; false at runtime"
ROOT_CAUSES: dict[tuple[str, int], tuple[str, str]] = {
    ("vllm/distributed/eplb/eplb_state.py", 1280): (
        PARAM,
        (
            "`new_physical_to_logical_map`; the caller passes `result.new_physical_to_logical_map`, an attribute "
            "of the async worker's result object"
        ),
    ),
    ("vllm/distributed/eplb/eplb_state.py", 1315): (
        PARAM,
        (
            "`new_physical_to_logical_map`; the caller passes the return of `self.policy.rebalance_experts(...)` "
            "(policy class picked at runtime from `EPLB_POLICIES`)"
        ),
    ),
    ("vllm/distributed/eplb/eplb_state.py", 1291): (
        TUPLE,
        (
            "`new_logical, new_replica_count = compute_logical_maps(...)`; inside, `torch.zeros(..., "
            "device=device)` with `device = input.device` (CPU by an assert)"
        ),
    ),
    ("vllm/distributed/eplb/eplb_state.py", 1328): (
        TUPLE,
        "same as line 1291 (`compute_logical_maps` unpacked; `device=<tensor>.device`)",
    ),
    ("vllm/model_executor/layers/pooler/tokwise/methods.py", 134): (
        "loop variable over a project method's list",
        "`.nonzero()` of `token_id_cpu`, a `for` target over `zip(..., pooling_metadata.get_prompt_token_ids_cpu())`",
    ),
    ("vllm/model_executor/models/ernie45_vl.py", 538): (
        PARAM,
        (
            "`grid_thw` (tensor, or a list turned into `torch.tensor`); `cu_seqlens` is then rebound 4 times "
            "(`torch.cat([zeros, cu_seqlens])`)"
        ),
    ),
    ("vllm/model_executor/models/glm_ocr.py", 346): (
        PARAM,
        "`grid_thw` (tensor or list); `cu_seqlens = torch.cat([cu_seqlens.new_zeros(1), cu_seqlens])` rebinds it",
    ),
    ("vllm/model_executor/models/qwen3_omni_moe_thinker.py", 991): (
        PARAM,
        "`grid_thw` (a CPU tensor at runtime); `cu_seqlens = F.pad(cu_seqlens, ...)` rebound in try/except",
    ),
    ("vllm/model_executor/models/qwen2_5_vl.py", 805): (
        TUPLE,
        (
            "`window_index_thw, _ = self.get_window_index_thw(...)` (returns a boolean-mask gather of `torch.arange`); "
            "PIN004 calls it a parameter"
        ),
    ),
    ("vllm/model_executor/models/qwen2_5_vl.py", 1051): (
        TUPLE,
        (
            "`torch.cat(window_index)`, a list appended in a loop with items of a tuple unpacked from "
            "`self.get_rope_by_thw(...)` (an `lru_cache`d method)"
        ),
    ),
    ("vllm/model_executor/models/qwen3_vl.py", 2542): (
        TUPLE,
        "`self.get_mrope_input_positions(...)[0]`: item 0 of a returned tuple, through a delegating method",
    ),
    ("vllm/model_executor/models/qwen2_vl.py", 710): (
        REBIND,
        (
            "`cu_seqlens = torch.from_numpy(...)`, then `if`: `cu_seqlens = torch.cat((cu_seqlens, "
            "torch.full(..., device=cu_seqlens.device)))`"
        ),
    ),
    ("vllm/v1/attention/backends/rocm_aiter_fa.py", 621): (
        REBIND,
        "`idx_to_batch_tensor = idx_to_batch_tensor.sum(dim=1)` (a comparison of `torch.arange`), then `torch.cumsum`",
    ),
    ("vllm/v1/attention/backends/rocm_aiter_fa.py", 576): (
        REBIND,
        (
            "`token_to_seq = torch.arange(..., device=seq_lens_for_extend.device)` then rebound by "
            "`torch.repeat_interleave(token_to_seq, ...)`; `device=<tensor>.device` not resolved either"
        ),
    ),
    ("vllm/v1/attention/backends/rocm_aiter_fa.py", 575): (
        "conditional expression",
        (
            "arithmetic on `seq_lens = (common_attn_metadata.seq_lens.cpu() if ... else None)`: the `.cpu()` inside "
            "`a if c else None` is not followed"
        ),
    ),
    ("vllm/models/dots3_note/nvidia/attention.py", 245): (
        PARAM,
        (
            "`starts_cpu = seq_lens_cpu - kv_lens_cpu` from keyword parameters; the caller passes "
            "`common_attn_metadata.seq_lens_cpu_upper_bound[reqs_start:]`"
        ),
    ),
    ("vllm/models/dots3_note/nvidia/attention.py", 392): (
        FIELD,
        (
            "arithmetic on `common_attn_metadata.query_start_loc_cpu[...]` (CommonAttentionMetadata); also rebound "
            "(`x = x - x[0]`)"
        ),
    ),
    ("vllm/v1/attention/backends/hpc_attn.py", 223): (
        FIELD,
        "arithmetic on `common_attn_metadata.query_start_loc_cpu` (CommonAttentionMetadata)",
    ),
    ("vllm/multimodal/inputs.py", 305): (
        PARAM,
        "`lambda x: x.to(device, non_blocking=True)` mapped by `json_map_leaves` over multimodal tensors",
    ),
    ("vllm/v1/attention/backends/flashinfer.py", 1265): (
        FLAG,
        (
            "`torch.zeros_like(..., pin_memory=self.pin_memory)`, `self.pin_memory = not use_v2_model_runner and "
            "PIN_MEMORY`"
        ),
    ),
    ("vllm/v1/attention/backends/flashinfer.py", 1287): (
        FLAG,
        (
            "`CpuGpuBuffer(..., pin_memory=self.pin_memory)` (false with the V2 model runner); `self.x.cpu` of a "
            "buffer object"
        ),
    ),
    ("vllm/v1/utils.py", 141): (
        FLAG,
        (
            "`CpuGpuBuffer.copy_to_gpu`: `self.cpu = torch.zeros(..., pin_memory=pin_memory)`, a constructor "
            "parameter that flashinfer passes false"
        ),
    ),
    ("vllm/v1/utils.py", 142): (FLAG, "same as line 141 (`self.cpu[:n]`)"),
}

# Verdicts on the 0.28.0 findings that are not on a fix site. Same form as VERDICTS.
VERDICTS_BASE: dict[tuple[str, object], tuple[str, str]] = {
    **{
        (path, line): (
            "true",
            (
                "`pos_ids`: `torch.cat` of `torch.stack`s of `torch.arange` position ids built on the host, "
                "rebound in place, then copied non_blocking to the rotary cache's device"
            ),
        )
        for path, line in (
            ("vllm/model_executor/models/ernie45_vl.py", 453),
            ("vllm/model_executor/models/glm4_1v.py", 742),
            ("vllm/model_executor/models/qwen2_vl.py", 644),
            ("vllm/model_executor/models/qwen3_omni_moe_thinker.py", 860),
        )
    },
    ("vllm/v1/attention/backends/rocm_aiter_fa.py", 574): (
        "true",
        (
            "`cu_seq_lens = torch.zeros(..., device=seq_lens_for_extend.device)`, the device of a `.cpu()` "
            "result: pageable, copied non_blocking next to the two sinks vLLM fixed in 0.30.0"
        ),
    ),
    ("vllm/model_executor/models/hunyuan_vision.py", 514): (
        "true",
        "`cu_seqlens = torch.tensor(list)` then rebound to its `torch.cumsum`: pageable, copied non_blocking",
    ),
    ("tests/v1/worker/test_mamba_utils.py", "PIN002"): (
        "true",
        "a mock CpuGpuBuffer made without pinned memory on purpose; `copy_to_gpu` copies it non_blocking",
    ),
    ("vllm/distributed/kv_transfer/kv_connector/v1/example_hidden_states_connector.py", "PIN002"): (
        "true",
        (
            "`slot_mapping` is arithmetic on `torch.tensor`/`torch.arange`, pageable; the connector accepts the "
            "blocking copy (`gpu_sync_allowed`)"
        ),
    ),
    ("vllm/model_executor/models/qwen2_5_vl.py", 746): (
        "true",
        (
            "`torch.stack(...).repeat(t, 1)` of `torch.arange` ids, pageable, copied to `cos.device`; 0.34.0 makes "
            "the ids on the device instead"
        ),
    ),
    ("vllm/models/dots3_note/nvidia/attention.py", "PIN002"): (
        "true",
        "`torch.zeros(...)` filled by `cumsum(out=)`, pageable; 0.34.0 allocates them with `pin_memory=PIN_MEMORY`",
    ),
    ("vllm/v1/worker/dp_utils.py", 55): (
        "true",
        "pageable `torch.zeros` copied to the DP device; 0.34.0 pins it when the device is CUDA",
    ),
}

# Deep findings (new engine, issue 17) on library code whose pageable source is made by a test that calls it.
# Whether the copy is host-to-device and pageable in production depends on the other callers, not read here.
TEST_CALLER = (
    "unclear",
    "reached only through a test that passes (or assigns) a pageable CPU tensor; production callers not followed",
)
VERDICTS_BASE.update(
    {
        **{
            (path, line): TEST_CALLER
            for path, line in (
                ("vllm/model_executor/layers/attention/mla_attention.py", 1959),
                ("vllm/models/deepseek_v4/amd/rocm.py", 307),
                ("vllm/models/deepseek_v4/amd/rocm.py", 313),
                ("vllm/v1/attention/backends/gdn_attn.py", 440),
                ("vllm/v1/attention/backends/gdn_attn.py", 484),
                ("vllm/v1/attention/backends/linear_attn.py", 258),
                ("vllm/v1/attention/backends/mla/rocm_aiter_mla.py", 648),
                ("vllm/v1/attention/backends/mla/rocm_aiter_mla.py", 667),
                ("vllm/v1/kv_offload/cpu/swap_blocks_triton.py", 69),
                ("vllm/v1/kv_offload/cpu/swap_blocks_triton.py", 70),
                ("vllm/v1/kv_offload/cpu/swap_blocks_triton.py", 71),
            )
        },
        ("vllm/models/kimi_k3/nvidia/kda_metadata.py", 457): (
            "false",
            (
                "`torch.empty(..., device=block_table.device)` after `assert block_table.is_cuda`: made on the device "
                "(pinfix does not read the assert)"
            ),
        ),
        ("vllm/distributed/kv_transfer/kv_connector/v1/example_connector.py", 184): (
            "true",
            "a safetensors `load_file` result (pageable host memory) copied non_blocking to the device",
        ),
        ("vllm/v1/sample/logits_processor/builtin.py", 99): (
            "false",
            (
                "`pin_memory=is_pin_memory` of a constructor parameter; the model runner passes `PIN_MEMORY` through "
                "`build_logitsprocs` and a `ctor(...)` call pinfix does not follow"
            ),
        ),
        **{
            ("vllm/v1/sample/sampler.py", line): (
                "false",
                "`pin_memory=pin` with `pin = self.pin_memory`, set to `PIN_MEMORY` in `__init__`: plain mode does not read it",
            )
            for line in (201, 202)
        },
        ("vllm/v1/utils.py", 661): (
            "true",
            (
                '`copy_slice` of `allowed_token_ids_mask_cpu_tensor`, a plain `torch.zeros(..., device="cpu")` of '
                "the input batch: pageable, copied non_blocking to the device"
            ),
        ),
    }
)

# Verdicts on the 0.34.0 findings, judged by reading the code. Key: (path, line) or (path, code).
# Value: (verdict, reason), verdict one of "true", "false", "unclear".
VERDICTS: dict[tuple[str, object], tuple[str, str]] = {
    ("vllm/models/dots3_note/nvidia/vision.py", 587): (
        "true",
        (
            "`torch.cat` of the list `get_pos_ids_by_grid` returns (`torch.stack` of `torch.arange` ids, appended in "
            "a loop): a fresh pageable tensor, copied non_blocking to `self.device` (vLLM's qwen2_vl-style "
            "encoders made the same ids pinned or on the device after the fix series)"
        ),
    ),
    ("vllm/models/dots3_note/nvidia/vision.py", 605): (
        "true",
        (
            "`F.pad` of a cumsum of `grid_thw_cpu` (checked to be on the CPU just above) makes a fresh pageable "
            "tensor, copied non_blocking to `self.device`"
        ),
    ),
    ("tests/utils_/test_gpu_sync_debug.py", "PIN002"): (
        "true",
        "deliberate bad example for vLLM's runtime sync checker (pageable or gapped non_blocking H2D)",
    ),
    ("tests/utils_/test_gpu_sync_debug.py", 246): (
        "false",
        "torch.zeros(0): an empty copy issues no CUDA call; the test keeps it as a non-sync case",
    ),
    ("tests/v1/worker/test_mamba_utils.py", "PIN002"): (
        "true",
        (
            '`_MockCpuGpuBuffer` allocates `self.cpu` with plain `torch.zeros` ("without pinned memory"); '
            "`copy_to_gpu` copies it non_blocking to `device` (CUDA in the GPU tests)"
        ),
    ),
    ("vllm/distributed/kv_transfer/kv_connector/v1/example_hidden_states_connector.py", "PIN002"): (
        "true",
        (
            "`slot_mapping` is arithmetic on `torch.tensor(block_ids)`/`torch.arange`, pageable; copied to the KV "
            "cache device (the reference connector accepts it under `gpu_sync_allowed`)"
        ),
    ),
    ("vllm/model_executor/models/cohere_compass.py", 1763): (
        "true",
        (
            "`compute_mrope_for_media` returns `torch.stack` of `torch.arange` chains, pageable; copied to "
            "`emb.device` (qwen2_5_vl/qwen3_vl switched the same call to `async_tensor_h2d` in 0.30.0)"
        ),
    ),
    ("vllm/model_executor/models/paddleocr_vl.py", 1126): (
        "false",
        (
            "`torch.concat(..., out=torch.empty(..., pin_memory=PIN_MEMORY))` writes into a pinned buffer and returns "
            "it: the copied memory is pinned (pinfix ignores `out=`)"
        ),
    ),
}

VERDICTS.update(
    {
        ("vllm/distributed/kv_transfer/kv_connector/v1/example_connector.py", 193): (
            "true",
            "a safetensors `load_file` result (pageable host memory) copied non_blocking to the device",
        ),
        ("vllm/v1/worker/dp_utils.py", 74): (
            "unclear",
            (
                '`pin_memory=PIN_MEMORY and torch.device(device).type == "cuda"`: pinned on CUDA, pageable (and '
                "blocking) on other accelerators by design"
            ),
        ),
        **{
            (path, line): TEST_CALLER
            for path, line in (
                ("vllm/lora/layers/base_linear.py", 184),
                ("vllm/lora/layers/base_linear.py", 187),
                ("vllm/lora/layers/column_parallel_linear.py", 354),
                ("vllm/lora/layers/column_parallel_linear.py", 358),
                ("vllm/lora/layers/custom_layer.py", 84),
                ("vllm/lora/layers/logits_processor.py", 147),
                ("vllm/lora/layers/logits_processor.py", 150),
                ("vllm/lora/layers/vocab_parallel_embedding.py", 75),
                ("vllm/model_executor/models/clip.py", 149),
                ("vllm/models/deepseek_v4/amd/rocm.py", 618),
                ("vllm/models/deepseek_v4/amd/rocm.py", 624),
                ("vllm/models/kimi_k3/nvidia/kda_metadata.py", 568),
                ("vllm/v1/attention/backends/flash_attn.py", 1026),
                ("vllm/v1/attention/backends/gdn_attn.py", 785),
                ("vllm/v1/attention/backends/gdn_attn.py", 794),
                ("vllm/v1/attention/backends/mla/rocm_aiter_mla.py", 1888),
                ("vllm/v1/attention/backends/mla/rocm_aiter_mla.py", 1993),
                ("vllm/v1/attention/backends/mla/rocm_aiter_mla.py", 2008),
                ("vllm/v1/attention/backends/triton_attn.py", 292),
                ("vllm/v1/kv_offload/cpu/swap_blocks_triton.py", 69),
                ("vllm/v1/kv_offload/cpu/swap_blocks_triton.py", 70),
                ("vllm/v1/kv_offload/cpu/swap_blocks_triton.py", 71),
            )
        },
        **{
            ("vllm/distributed/eplb/eplb_state.py", line): (
                "false",
                (
                    "the function pins `src` itself under `if PIN_MEMORY and src.is_cpu`; the pageable source comes "
                    "from a test whose destination map is on the CPU too (a CPU-to-CPU copy)"
                ),
            )
            for line in (1408, 1444)
        },
        **{
            ("vllm/utils/torch_utils.py", line): (
                "false",
                (
                    "inside `async_tensor_h2d`, the pinning helper: `from_numpy` memory is restaged pinned under "
                    "`if PIN_MEMORY and not t.is_pinned()`; it stays pageable only where pinned memory is unavailable"
                ),
            )
            for line in (746, 748)
        },
        ("vllm/model_executor/models/paddleocr_vl.py", 812): (
            "false",
            (
                "the `else` of `if cu_seqlens.is_cpu:` (whose branch uses `async_tensor_h2d`): only a tensor already on "
                "the device reaches this copy (pinfix does not narrow on `.is_cpu`)"
            ),
        ),
        ("tests/distributed/test_shm_broadcast.py", 1356): (
            "false",
            (
                "a `from_numpy` view of the shared-memory arena that the test has just registered with the CUDA host "
                "allocator (`_ensure_pinned`, skipped when that fails): page-locked memory"
            ),
        ),
        ("vllm/model_executor/models/cohere_compass.py", 842): (
            "true",
            "`torch.cat` of `rot_pos_ids` results (`torch.from_numpy` of NumPy position grids): pageable, copied non_blocking",
        ),
        ("vllm/v1/attention/backends/short_conv_attn.py", 463): (
            "true",
            (
                "a comparison of `num_decode_draft_tokens_cpu` (a `*_cpu` name, CPU by vLLM's convention): a fresh "
                "pageable mask, copied non_blocking into the device buffer"
            ),
        ),
        ("vllm/v1/attention/ops/rocm_aiter_mla_prefill.py", 36): (
            "true",
            "`torch.cat` of `torch.arange` segments made on the host: pageable, copied non_blocking to the device",
        ),
    }
)

MARKER_RE = re.compile(
    r"np_to_pinned_tensor|async_tensor_h2d|pin_memory\s*=\s*(?!\s*False\b)|\.pin_memory\(|CpuGpuBuffer|\.copy_to_gpu\("
)
FACTORIES = {
    "tensor",
    "as_tensor",
    "asarray",
    "arange",
    "zeros",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "randint",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
}
NEW_FACTORIES = {"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
WRAPPERS = {
    "view",
    "reshape",
    "contiguous",
    "long",
    "int",
    "float",
    "half",
    "bool",
    "to",
    "clone",
    "flatten",
    "squeeze",
    "unsqueeze",
    "t",
    "type",
}


# --------------------------------------------------------------------------- fetching, running


def fetch(tool: Path, version: str, dest: Path) -> Path:
    out = subprocess.run(
        [sys.executable, str(tool), "vllm", version, str(dest)], check=True, capture_output=True, text=True
    ).stdout
    return Path(out.strip().splitlines()[-1])


MODES = ("plain", "plain-nopf", "deep", "deep-nopf", "deep-vllm")
MODE_HELP = {
    "plain": "plain, whole tree (with the text pre-filter, as shipped)",
    "plain-nopf": "plain, `PINFIX_NO_PREFILTER=1`, the files that say `non_blocking`",
    "deep": "`--deep`, whole tree (with the pre-filter)",
    "deep-nopf": "`--deep`, `PINFIX_NO_PREFILTER=1`, the files that say `non_blocking`",
    "deep-vllm": "`--deep` with vLLM's settings (`cpu-tensor-names`, the helpers), whole tree",
}

#: ``[tool.pinfix]`` as a vLLM checkout would set it (the ``deep-vllm`` run).
VLLM_SETTINGS = """\
[tool.pinfix]
helper = "vllm.utils.torch_utils.np_to_pinned_tensor"
h2d-helper = "vllm.utils.torch_utils.async_tensor_h2d"
pin-memory-expr = "is_pin_memory_available()"
pin-memory-import = "vllm.utils.platform_utils.is_pin_memory_available"
cpu-tensor-names = ["*_cpu", "*_cpu_tensor", "*_cpu_buffer"]
"""


def nb_files(tree: Path) -> list[str]:
    """Python files of ``tree`` whose text says ``non_blocking`` (relative paths, sorted)."""
    out = []
    for f in sorted(tree.rglob("*.py")):
        try:
            if b"non_blocking" in f.read_bytes():
                out.append(str(f.relative_to(tree)))
        except OSError:
            continue
    return out


def pinfix_cmd(pinfix: list[str], tree: Path, mode: str) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    cmd = [*pinfix, "check", "--no-progress", "--no-cache", "--output-format", "json"]
    if mode.startswith("deep"):
        cmd.append("--deep")
    if mode == "deep-vllm":
        settings = Path(tempfile.mkdtemp(prefix="pinfix-eval-")) / "pyproject.toml"
        settings.write_text(VLLM_SETTINGS)
        cmd += ["--config", str(settings)]
    if mode.endswith("-nopf"):
        env["PINFIX_NO_PREFILTER"] = "1"
        cmd += nb_files(tree)
    else:
        env.pop("PINFIX_NO_PREFILTER", None)
        cmd.append(".")
    return cmd, env


def run_pinfix(pinfix: list[str], tree: Path, mode: str, json_dir: Path | None) -> dict:
    """Findings of one pinfix run (``mode`` in MODES) on ``tree``, cwd = the tree root.

    With ``json_dir``, the JSON is kept there and reused on a later call (delete it to rerun)."""
    cached = json_dir / f"{tree.name}.{mode}.json" if json_dir else None
    if cached and cached.is_file():
        data = json.loads(cached.read_text())
    else:
        cmd, env = pinfix_cmd(pinfix, tree, mode)
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=tree, env=env)
        if proc.returncode not in (0, 1):
            sys.exit(f"pinfix {mode} failed ({proc.returncode}) on {tree}:\n{proc.stderr[-2000:]}")
        data = json.loads(proc.stdout)
        if cached:
            json_dir.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps(data))
    for f in data["findings"]:
        p = Path(f["path"])
        f["path"] = str(p.relative_to(tree)) if p.is_absolute() else f["path"]
        f["mode"] = mode
    data["tree"], data["mode"] = tree.name, mode
    return data


# --------------------------------------------------------------------------- source helpers


def strip_comments(lines: list[str]) -> list[str]:
    """Lines with ``#`` comments removed (tokenize-based; falls back to the raw line)."""
    out = list(lines)
    try:
        toks = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out
    for tok in toks:
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            if row - 1 < len(out):
                out[row - 1] = out[row - 1][:col]
    return out


def markers(lines: list[str]) -> int:
    return sum(len(MARKER_RE.findall(line)) for line in lines)


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return ""


@dataclass
class _Bound:
    value: ast.AST
    lineno: int
    node: ast.AST


@dataclass
class Sink:
    start: int  # the non_blocking call's first line (its receiver or ``copy_`` target)
    end: int
    col: int
    source: ast.expr
    func: ast.AST | None


class FileInfo:
    """0.28.0 AST facts of one file: its non_blocking sinks and assignments per function."""

    def __init__(self, text: str):
        self.tree = ast.parse(text)
        self.sinks: list[Sink] = []
        parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        self.parents = parents
        # functions of this file whose body already pins (``_flat_int32`` returning np_to_pinned_tensor)
        # names bound by imports from library modules (torch, numpy, math...) vs from the project
        self.lib_names: set[str] = set()
        self.project_names: set[str] = {
            n.name for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    name = (a.asname or a.name).split(".")[0]
                    (self.lib_names if a.name.split(".")[0] in LIB_MODULES else self.project_names).add(name)
            elif isinstance(node, ast.ImportFrom):
                lib = node.level == 0 and (node.module or "").split(".")[0] in LIB_MODULES
                for a in node.names:
                    (self.lib_names if lib else self.project_names).add(a.asname or a.name)
        self.pinning_helpers = {
            node.name
            for node in self.tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and MARKER_RE.search(ast.unparse(node))
        }
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if not any(k.arg == "non_blocking" for k in node.keywords):
                continue
            meth = node.func.attr
            if meth in ("to", "cuda"):
                src = node.func.value
            elif meth == "copy_" and node.args:
                src = node.args[0]
            else:
                continue
            self.sinks.append(
                Sink(node.lineno, node.end_lineno or node.lineno, node.col_offset, src, self._func_of(node))
            )

    def _func_of(self, node: ast.AST) -> ast.AST | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return node
        return None

    def binding_any(self, name: str, before: int, func: ast.AST | None) -> ast.AST | None:
        """Last binding of ``name`` before line ``before`` in ``func``: a plain assignment, a tuple
        target (the whole right side is returned) or a ``for`` target (its iterable)."""
        scope = func if func is not None else self.tree
        best, best_line = None, -1
        for node in ast.walk(scope):
            if getattr(node, "lineno", before) >= before or node.lineno <= best_line:
                continue
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets, value = [node.target], node.value
            elif isinstance(node, (ast.For, ast.comprehension)):
                targets, value = [node.target], node.iter
            else:
                continue
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if name in names:
                best, best_line = (node, value), node.lineno
        if best is None:
            return None
        node, value = best
        return _Bound(value, node.lineno, node)

    def _conditional(self, node: ast.AST, func: ast.AST | None) -> bool:
        while node in self.parents and node is not func:
            node = self.parents[node]
            if isinstance(node, (ast.If, ast.For, ast.While, ast.Try, ast.IfExp)):
                return True
        return False

    def alternatives(self, name: str, before: int, func: ast.AST | None) -> list[tuple[ast.AST | None, int]]:
        """Values ``name`` may hold at line ``before``: its last binding; when that binding is
        conditional, also the one before it (or the parameter, value None); plus the arguments of
        ``name.append(...)``/``.extend(...)``/``name += ...`` between the binding and ``before``."""
        out: list[tuple[ast.AST | None, int]] = []
        b = self.binding_any(name, before, func)
        params = set()
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = func.args
            params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None}
        while b is not None:
            out.append((b.value, b.lineno))
            if not self._conditional(b.node, func):
                break
            prev = self.binding_any(name, b.lineno, func)
            if prev is None and name in params:
                out.append((None, 0))
            b = prev
        start = min((ln for _, ln in out if ln), default=0)
        scope = func if func is not None else self.tree
        for node in ast.walk(scope):
            ln = getattr(node, "lineno", 0)
            if not (start <= ln < before):
                continue
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "extend", "insert")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
                and node.args
            ):
                out.append((node.args[-1], ln))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                out.append((node.value, ln))
        return out

    def binding(self, name: str, before: int, func: ast.AST | None) -> ast.Assign | None:
        scope = func if func is not None else self.tree
        best = None
        for node in ast.walk(scope):
            if (
                isinstance(node, ast.Assign)
                and node.lineno < before
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and (best is None or node.lineno > best.lineno)
            ):
                best = node
        return best


def is_gapped(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Subscript):
        return False
    sl = expr.slice
    dims = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    for i, d in enumerate(dims):
        if isinstance(d, ast.Slice) and (d.step is not None or (i > 0 and (d.lower or d.upper))):
            return True
    return False


def unwrap(expr: ast.expr) -> ast.expr:
    while True:
        if isinstance(expr, ast.Subscript) and not is_gapped(expr):
            expr = expr.value
        elif (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in WRAPPERS
            and not any(k.arg == "device" for k in expr.keywords)
            and not (expr.func.attr == "to" and expr.args and not _is_dtype(expr.args[0]))
        ):
            expr = expr.func.value
        else:
            return expr


def _is_dtype(e: ast.expr) -> bool:
    return dotted(e).startswith("torch.") and not dotted(e).startswith("torch.device")


def _to_cpu(call: ast.Call) -> bool:
    args = list(call.args[:1]) + [k.value for k in call.keywords if k.arg == "device"]
    return any(isinstance(a, ast.Constant) and a.value == "cpu" for a in args)


def origin_kind(expr: ast.expr) -> str | None:
    """Kind of a source expression after unwrapping, or None when it is a bare name."""
    e = unwrap(expr)
    if isinstance(e, ast.Name):
        return None
    if isinstance(e, ast.Call):
        fn = dotted(e.func)
        attr = e.func.attr if isinstance(e.func, ast.Attribute) else ""
        if fn in ("torch.from_numpy",):
            return "from_numpy"
        if (fn.startswith("torch.") and attr in FACTORIES) or attr in NEW_FACTORIES:
            return "factory"
        if attr in ("cpu", "numpy") or (attr == "to" and _to_cpu(e)):
            return "cpu"
        return f"call {fn or attr or '?'}(...)"
    if isinstance(e, ast.Attribute):
        return f"attribute .{e.attr}"
    return type(e).__name__.lower()


def classify(info: FileInfo, sink: Sink) -> tuple[str, str]:
    """(pattern, detail) of a sink's source, following names (see the module docstring)."""
    if is_gapped(sink.source):
        return "gapped view", ast.unparse(sink.source)[:60]
    expr, bound, line = sink.source, False, sink.start
    for _ in range(6):
        kind = origin_kind(expr)
        if kind is not None:
            break
        name = unwrap(expr).id  # type: ignore[union-attr]
        assign = info.binding(name, line, sink.func)
        if assign is None:
            kind = f"parameter or outer name `{name}`"
            break
        expr, bound, line = assign.value, True, assign.lineno
    else:
        kind = "deep chain"
    if kind.startswith("call ") and kind[5:-5] in info.pinning_helpers:
        return "already pinned", kind
    if kind == "from_numpy":
        return ("from_numpy bound" if bound else "from_numpy inline"), ""
    if kind == "factory":
        return "torch.tensor / factory", ("bound" if bound else "inline")
    if kind == "cpu":
        return ".cpu()", ("bound" if bound else "inline")
    return "other", kind


KINDS = ("inline", "same function", "across functions or files", "layout")
LIB_MODULES = {"torch", "numpy", "np", "math", "itertools", "functools", "operator", "einops", "triton"}


def _project_call(info: FileInfo, call: ast.Call) -> str | None:
    """``name`` when ``call`` calls a function or method of the project (not torch/NumPy/builtins)."""
    f = call.func
    if isinstance(f, ast.Name):
        return f.id if f.id in info.project_names and f.id not in info.lib_names else None
    if isinstance(f, ast.Attribute):
        root = f.value
        while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if isinstance(root, ast.Name) and root.id in ("self", "cls", "super"):
            return dotted(f) or f.attr
        if isinstance(root, ast.Name) and root.id in info.project_names and root.id not in info.lib_names:
            return dotted(f) or f.attr
    return None


def _origin(
    info: FileInfo, expr: ast.AST, line: int, func: ast.AST | None, depth: int, seen: set[tuple[str, int]]
) -> tuple[str, str] | None:
    """(kind, what) of the memory an expression reads: ``local`` (a CPU producer in this function),
    ``across`` (a parameter, an attribute, a project call) or ``layout``; None for literals."""
    if depth > 24:
        return ("across", "deep chain")
    e = unwrap(expr) if isinstance(expr, ast.expr) else expr
    if isinstance(e, ast.expr) and is_gapped(e):
        return ("layout", ast.unparse(e)[:50])
    if isinstance(e, ast.Name):
        if e.id in info.lib_names or e.id in ("self", "cls"):
            return None
        alts = info.alternatives(e.id, line, func)
        if not alts:
            return ("across", f"parameter or outer name `{e.id}`")
        got = []
        for value, lineno in alts:
            if value is None:
                got.append(("across", f"parameter `{e.id}`"))
            elif (e.id, lineno) not in seen:
                got.append(_origin(info, value, lineno, func, depth + 1, seen | {(e.id, lineno)}))
        got = [o for o in got if o]
        # alternatives (an ``if`` rebinding a parameter, items appended to a list): outside memory wins
        for k in ("across", "layout", "local"):
            for o in got:
                if o[0] == k:
                    return o
        return None
    if isinstance(e, ast.Attribute):
        return ("across", f"attribute `{ast.unparse(e)[:50]}`")
    if isinstance(e, ast.Call):
        kind = origin_kind(e)
        attr = e.func.attr if isinstance(e.func, ast.Attribute) else ""
        dev = next((k.value for k in e.keywords if k.arg == "device"), None)
        if kind == "factory" and isinstance(dev, ast.Attribute) and dev.attr == "device":
            return _origin(info, dev.value, line, func, depth + 1, seen)  # torch.zeros(n, device=x.device)
        if kind == "factory" and dev is None and attr in NEW_FACTORIES and isinstance(e.func, ast.Attribute):
            return _origin(info, e.func.value, line, func, depth + 1, seen)  # x.new_zeros(...): x's device
        if kind == "factory" and dev is None and attr.endswith("_like") and e.args:
            return _origin(info, e.args[0], line, func, depth + 1, seen)  # torch.zeros_like(x)
        if kind in ("from_numpy", "factory", "cpu"):
            return ("local", kind)
        proj = _project_call(info, e)
        if proj:
            return ("across", f"return of `{proj}()`")
        parts: list[ast.AST] = list(e.args) + [k.value for k in e.keywords if k.arg not in ("device", "dtype", "out")]
        if isinstance(e.func, ast.Attribute) and not _is_module(info, e.func.value):
            parts.insert(0, e.func.value)
        return _combine(
            info, parts, line, func, depth, seen, f"call {dotted(e.func) or getattr(e.func, 'attr', '?')}()"
        )
    if isinstance(e, ast.BinOp):
        return _combine(info, [e.left, e.right], line, func, depth, seen, "arithmetic")
    if isinstance(e, ast.Compare):
        return _combine(info, [e.left, *e.comparators], line, func, depth, seen, "comparison")
    if isinstance(e, (ast.UnaryOp,)):
        return _origin(info, e.operand, line, func, depth + 1, seen)
    if isinstance(e, ast.BoolOp):
        return _combine(info, e.values, line, func, depth, seen, "bool op")
    if isinstance(e, ast.IfExp):
        return _combine(info, [e.body, e.orelse], line, func, depth, seen, "conditional")
    if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
        return _combine(info, e.elts, line, func, depth, seen, "list")
    if isinstance(e, (ast.ListComp, ast.GeneratorExp)):
        return _combine(info, [e.elt], line, func, depth, seen, "comprehension")
    if isinstance(e, ast.Starred):
        return _origin(info, e.value, line, func, depth + 1, seen)
    return None


def _is_module(info: FileInfo, e: ast.AST) -> bool:
    """``torch``, ``F``, ``np``, ``torch.nn.functional``: a library module, not a tensor."""
    while isinstance(e, ast.Attribute):
        e = e.value
    return isinstance(e, ast.Name) and e.id in info.lib_names


def _combine(info, parts, line, func, depth, seen, what) -> tuple[str, str] | None:
    """A computed tensor lives where its tensor operands live: local when one operand is a local CPU
    producer (operands of one op share a device), else across when one comes from outside."""
    got = [o for o in (_origin(info, p, line, func, depth + 1, seen) for p in parts) if o]
    for k in ("local", "across", "layout"):
        for o in got:
            if o[0] == k:
                return (k, what if k == "local" else o[1])
    return None


def site_kind(info: FileInfo, sink: Sink) -> tuple[str, str]:
    """Kind of site (issue 7): how the pageable memory reaches the copy.

    ``layout``: the copied expression is a gapped view; ``inline``: the copied expression itself makes
    the memory (``torch.from_numpy(a).to(...)``, ``torch.cat([...]).to(...)``, arithmetic inline);
    ``same function``: it reaches the copy through local names whose producer and inputs are made in
    the function; ``across functions or files``: the memory (or, for a computed tensor, its inputs)
    comes from a parameter, an attribute or the return of a project function/method."""
    if is_gapped(sink.source):
        return "layout", ast.unparse(sink.source)[:50]
    base = unwrap(sink.source)
    got = _origin(info, sink.source, sink.start, sink.func, 0, set())
    if got is None:
        return ("inline" if not isinstance(base, ast.Name) else "same function"), "no tensor operand"
    kind, what = got
    if kind == "layout":
        return "layout", what
    if kind == "across":
        return "across functions or files", what
    return ("inline" if not isinstance(base, ast.Name) else "same function"), what


# --------------------------------------------------------------------------- sites


@dataclass
class Site:
    path: str
    line: int  # 0.28.0 line where the sink call starts
    end: int
    hunk: tuple[int, int]  # 0.28.0 line range of the hunk (1-based, inclusive)
    pattern: str
    detail: str
    fix: str
    kind: str = ""
    kind_detail: str = ""
    versions: list[str] = field(default_factory=list)
    found_strict: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # mode -> codes
    found_loose: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def fix_kind(added: list[str]) -> str:
    text = "\n".join(added)
    for key in ("async_tensor_h2d", "np_to_pinned_tensor", "copy_to_gpu", "CpuGpuBuffer", ".pin_memory(", "pin_memory"):
        if key in text:
            return key.strip(".(") if key != ".pin_memory(" else ".pin_memory()"
    return "per-row split"


def sites_of_diff(old_root: Path, new_root: Path, version: str, sites: dict[tuple[str, int, int], Site]) -> None:
    for old_file in sorted((old_root / "vllm").rglob("*.py")):
        rel = str(old_file.relative_to(old_root))
        new_file = new_root / rel
        if not new_file.is_file():
            continue
        a_raw = old_file.read_text(encoding="utf-8", errors="replace").splitlines()
        b_raw = new_file.read_text(encoding="utf-8", errors="replace").splitlines()
        if a_raw == b_raw:
            continue
        a, b = strip_comments(a_raw), strip_comments(b_raw)
        info = None
        for group in difflib.SequenceMatcher(None, a_raw, b_raw, autojunk=False).get_grouped_opcodes(3):
            removed = [i for t, i1, i2, _, _ in group if t != "equal" for i in range(i1, i2)]
            added = [j for t, _, _, j1, j2 in group if t != "equal" for j in range(j1, j2)]
            inserts_at = [i1 for t, i1, _, _, _ in group if t != "equal"]
            rem_text = [a[i] for i in removed]
            add_text = [b[j] for j in added]
            new_marker = markers(add_text) > markers(rem_text)
            split = (
                any("non_blocking" in line for line in rem_text)
                and any(line.lstrip().startswith("for ") for line in add_text)
                and any("non_blocking" in line for line in add_text)
            )
            if not (new_marker or split):
                continue
            if info is None:
                try:
                    info = FileInfo("\n".join(a_raw) + "\n")
                except SyntaxError:
                    break
            h0, h1 = group[0][1] + 1, group[-1][2]
            removed_lines = {i + 1 for i in removed}
            removes_sink_line = any("non_blocking" in line for line in rem_text)
            for sink in info.sinks:
                if not (h0 <= sink.start <= h1 or h0 <= sink.end <= h1):
                    continue
                span = set(range(sink.start, sink.end + 1))
                if span & removed_lines:
                    hit = True
                    if not new_marker and not is_gapped(sink.source):
                        hit = False  # the per-row split only counts for gapped sinks
                elif removes_sink_line:
                    hit = False
                else:
                    hit = False
                    base = unwrap(sink.source)
                    if isinstance(base, ast.Name):
                        assign = info.binding(base.id, sink.start, sink.func)
                        if assign is not None and set(range(assign.lineno, assign.end_lineno + 1)) & removed_lines:
                            hit = True
                        rebind = re.compile(rf"^\s*{re.escape(base.id)}\s*=[^=]")
                        if any(rebind.search(line) for line in add_text) and any(p < sink.start for p in inserts_at):
                            hit = True
                if not hit:
                    continue
                key = (rel, sink.start, sink.col)
                if key not in sites:
                    pattern, detail = classify(info, sink)
                    if pattern == "already pinned":
                        ALREADY_PINNED.add(key)
                        continue
                    kind, kind_detail = site_kind(info, sink)
                    sites[key] = Site(
                        rel, sink.start, sink.end, (h0, h1), pattern, detail, fix_kind(add_text), kind, kind_detail
                    )
                if version not in sites[key].versions:
                    sites[key].versions.append(version)


# --------------------------------------------------------------------------- reports


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:.0f} %" if d else "n/a"


def found(s: Site, mode: str, codes: tuple[str, ...] = CODES, loose: bool = False) -> bool:
    return bool((s.found_loose if loose else s.found_strict)[mode] & set(codes))


def group_table(sites: list[Site], col: str, groups: tuple[str, ...], plain: str, deep: str) -> str:
    """Recall per group (``col`` is the Site attribute: kind or pattern), strict, plain vs deep,
    plus deep's loose (hunk) recall."""
    rows = [
        f"| {col} | sites | found plain | recall plain | found deep | recall deep | deep (hunk) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    tot = [0, 0, 0, 0]
    for g in groups:
        grp = [s for s in sites if getattr(s, col) == g]
        n_p = sum(found(s, plain) for s in grp)
        n_d = sum(found(s, deep) for s in grp)
        n_l = sum(found(s, deep, loose=True) for s in grp)
        tot = [tot[0] + len(grp), tot[1] + n_p, tot[2] + n_d, tot[3] + n_l]
        rows.append(f"| {g} | {len(grp)} | {n_p} | {pct(n_p, len(grp))} | {n_d} | {pct(n_d, len(grp))} | {n_l} |")
    rows.append(
        f"| **all** | {tot[0]} | {tot[1]} | {pct(tot[1], tot[0])} | {tot[2]} | {pct(tot[2], tot[0])} | {tot[3]} |"
    )
    return "\n".join(rows)


def code_table(sites: list[Site]) -> str:
    rows = ["| code | " + " | ".join(MODES) + " |", "|---|" + "---:|" * len(MODES)]
    for code in CODES:
        rows.append(f"| {code} | " + " | ".join(str(sum(found(s, m, (code,)) for s in sites)) for m in MODES) + " |")
    return "\n".join(rows)


def verdict_of(f: dict, table: dict[tuple[str, object], tuple[str, str]]) -> tuple[str, str]:
    for key in ((f["path"], f["line"]), (f["path"], f["code"])):
        if key in table:
            return table[key]
    return "unjudged", ""


def union(runs: dict[str, dict]) -> list[tuple[tuple[str, int, str], dict, set[str]]]:
    """Findings of all modes, keyed by (path, line, code): (key, first finding seen, modes)."""
    merged: dict[tuple[str, int, str], tuple[dict, set[str]]] = {}
    for mode in MODES:
        for f in runs[mode]["findings"]:
            key = (f["path"], f["line"], f["code"])
            merged.setdefault(key, (f, set()))[1].add(mode)
    return [(k, f, ms) for k, (f, ms) in sorted(merged.items())]


def marks(modes: set[str]) -> str:
    return " | ".join("x" if m in modes else "" for m in MODES)


def anomalies(runs: dict[str, dict], tree: str) -> list[str]:
    """Findings a pre-filtered run has that the unfiltered one lacks (the pre-filter must only drop
    files), plain findings that deep lacks (deep should see at least what plain sees), and errors."""
    keys = {m: {(f["path"], f["line"], f["code"]) for f in runs[m]["findings"]} for m in MODES}
    subset = set(nb_files_cache.get(tree, []))
    out = []
    for a, b, why in (
        ("plain", "plain-nopf", "pre-filtered plain has it, unfiltered plain not"),
        ("deep", "deep-nopf", "pre-filtered deep has it, unfiltered deep not"),
        ("plain-nopf", "deep-nopf", "plain has it, deep not"),
        ("plain", "deep", "plain has it, deep not (both pre-filtered)"),
    ):
        for k in sorted(keys[a] - keys[b]):
            if b.endswith("nopf") and not a.endswith("nopf") and k[0] not in subset:
                continue  # outside the unfiltered subset
            out.append(f"- {tree}: {k[0]}:{k[1]} {k[2]}: {why}")
    for m in MODES:
        for e in runs[m].get("errors") or []:
            out.append(f"- {tree} {m}: error: {str(e)[:200]}")
    return out


nb_files_cache: dict[str, list[str]] = {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sdist-dir", type=Path, default=Path("/tmp/sdists"))
    ap.add_argument("--fetch-tool", type=Path, default=REPO.parent / "shared" / "tools" / "fetch-sdist")
    ap.add_argument("--pinfix", default=f"{sys.executable} -m pinfix", help="command that runs pinfix")
    ap.add_argument("--list-sites", action="store_true", help="also print every fix site")
    ap.add_argument("--json-dir", type=Path, help="keep each run's JSON there and reuse it (delete to rerun)")
    ap.add_argument("--jobs", type=int, default=3, help="pinfix runs at once")
    args = ap.parse_args()
    pinfix = args.pinfix.split()

    trees = {v: fetch(args.fetch_tool, v, args.sdist_dir) for v in (BASE, *NEWER, LATEST)}
    for v in (BASE, LATEST):
        nb_files_cache[trees[v].name] = nb_files(trees[v])
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {
            (v, m): pool.submit(run_pinfix, pinfix, trees[v], m, args.json_dir) for v in (BASE, LATEST) for m in MODES
        }
        sites: dict[tuple[str, int, int], Site] = {}
        for v in NEWER:
            sites_of_diff(trees[BASE], trees[v], v, sites)
        runs = {key: fut.result() for key, fut in futures.items()}
    site_list = sorted(sites.values(), key=lambda s: (s.path, s.line))
    base = {m: runs[(BASE, m)] for m in MODES}
    latest = {m: runs[(LATEST, m)] for m in MODES}

    on_site: set[tuple[str, int, str]] = set()
    for m in MODES:
        by_path: dict[str, list[dict]] = defaultdict(list)
        for f in base[m]["findings"]:
            by_path[f["path"]].append(f)
        for s in site_list:
            for f in by_path.get(s.path, []):
                if f["code"] not in CODES:
                    continue
                if s.line <= f["line"] <= s.end:
                    s.found_strict[m].add(f["code"])
                    on_site.add((f["path"], f["line"], f["code"]))
                if s.hunk[0] <= f["line"] <= s.hunk[1]:
                    s.found_loose[m].add(f["code"])

    out = print
    n_nb = len(nb_files_cache[trees[BASE].name])
    out(f"## Recall on vLLM {BASE} fix sites (diffs to {', '.join(NEWER)})\n")
    per_version = {v: sum(1 for s in site_list if v in s.versions) for v in NEWER}
    both = sum(1 for s in site_list if len(s.versions) == len(NEWER))
    out(
        f"{len(site_list)} fix sites in {len({s.path for s in site_list})} files "
        f"({', '.join(f'{n} in the diff to {v}' for v, n in per_version.items())}; {both} in both). "
        "pinfix on " + BASE + ": " + ", ".join(f"{m} {len(base[m]['findings'])} findings" for m in MODES) + ".\n"
    )
    out("Runs: " + "; ".join(f"`{m}` = {MODE_HELP[m]}" for m in MODES) + f" ({n_nb} files on {BASE}).\n")
    differ = any(
        found(s, "plain") != found(s, "plain-nopf") or found(s, "deep") != found(s, "deep-nopf") for s in site_list
    )
    plain, deep = "plain-nopf", "deep-nopf"
    out(
        "**Recall by kind of site** (strict: a PIN001-003 finding on the sink call's lines; deep (hunk): "
        "anywhere in the hunk). "
        + (
            "plain and deep are the runs without the text pre-filter (`PINFIX_NO_PREFILTER=1` on the files that "
            "say `non_blocking`): the pre-filtered runs find fewer sites (table below)."
            if differ
            else "The pre-filtered runs (whole tree) find the same sites as the unfiltered ones "
            f"(plain {sum(found(s, 'plain') for s in site_list)}, deep {sum(found(s, 'deep') for s in site_list)})."
        )
        + "\n"
    )
    out(group_table(site_list, "kind", KINDS, plain, deep))
    out("\n**Recall by pattern** (same runs)\n")
    out(group_table(site_list, "pattern", PATTERNS, plain, deep))
    out("\n**With vLLM's settings** (`deep-vllm`: `cpu-tensor-names` and the helpers; whole tree)\n")
    out(group_table(site_list, "kind", KINDS, plain, "deep-vllm"))
    if differ:
        out("\n**As shipped** (with the text pre-filter, whole tree)\n")
        out(group_table(site_list, "kind", KINDS, "plain", "deep"))
    out("\n**Sites found per code** (strict)\n")
    out(code_table(site_list))

    def found_cell(s: Site, m: str, shipped: str) -> str:
        codes = ",".join(sorted(s.found_strict[m]))
        if codes and not found(s, shipped):
            codes += " (no pre-filter only)"
        if not codes:
            codes = "(hunk: " + ",".join(sorted(s.found_loose[m])) + ")" if s.found_loose[m] else "-"
        return codes

    missed = [s for s in site_list if not found(s, deep)]
    if args.list_sites:
        out("\n### Fix sites\n")
        out("| path:line (0.28.0) | kind | pattern | detail | upstream fix | in | plain | deep | why deep misses it |")
        out("|---|---|---|---|---|---|---|---|---|")
        for s in site_list:
            cause = ""
            if not found(s, deep):
                group, why = ROOT_CAUSES.get((s.path, s.line), ("not analysed", ""))
                cause = f"{group}: {why}" if why else group
            detail = s.detail
            if s.kind == "across functions or files":
                detail = f"{detail}; from {s.kind_detail}" if detail else f"from {s.kind_detail}"
            out(
                f"| {s.path}:{s.line} | {s.kind} | {s.pattern} | {detail} | {s.fix} | {' '.join(s.versions)} "
                f"| {found_cell(s, plain, 'plain')} | {found_cell(s, deep, 'deep')} | {cause} |"
            )
    out(f"\n### Sites deep mode misses, by root cause ({len(missed)} of {len(site_list)})\n")
    by_cause: dict[str, list[Site]] = defaultdict(list)
    for s in missed:
        by_cause[ROOT_CAUSES.get((s.path, s.line), ("not analysed", ""))[0]].append(s)
    for group, grp in sorted(by_cause.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        out(f"- **{group}** ({len(grp)}): " + ", ".join(f"{Path(s.path).name}:{s.line}" for s in grp))
    shipped_miss = [s for s in site_list if found(s, deep) and not found(s, "deep")]
    if shipped_miss:
        out(
            f"- **found only without the pre-filter** ({len(shipped_miss)}; shipped `--deep` misses them): "
            + ", ".join(f"{Path(s.path).name}:{s.line}" for s in shipped_miss)
        )
    if ALREADY_PINNED:
        out(
            f"\nLeft out as already pinned: {len(ALREADY_PINNED)} rewritten sinks "
            f"({', '.join(sorted({p for p, _, _ in ALREADY_PINNED}))})."
        )

    off_site = [(k, f, ms) for k, f, ms in union(base) if k not in on_site and k[2] in CODES]
    if off_site:
        out(f"\n### Findings on {BASE} that are not on a fix site\n")
        out("| path:line | code | pattern | " + " | ".join(MODES) + " | verdict | reason |")
        out("|---|---|---|" + "---|" * len(MODES) + "---|---|")
        for k, f, ms in off_site:
            verdict, reason = verdict_of(f, VERDICTS_BASE)
            out(f"| {k[0]}:{k[1]} | {k[2]} | {f['pattern']} | {marks(ms)} | {verdict} | {reason} |")

    out(f"\n## Findings on vLLM {LATEST}\n")
    out("| path:line | code | pattern | " + " | ".join(MODES) + " | verdict | reason |")
    out("|---|---|---|" + "---|" * len(MODES) + "---|---|")
    counts: dict[str, dict[str, int]] = {m: defaultdict(int) for m in MODES}
    for k, f, ms in union(latest):
        verdict, reason = verdict_of(f, VERDICTS)
        for m in ms:
            counts[m][verdict] += 1
        out(f"| {k[0]}:{k[1]} | {k[2]} | {f['pattern']} | {marks(ms)} | {verdict} | {reason} |")
    out("\n| run | findings | true | false | unclear | unjudged | precision | precision (unclear left out) |")
    out("|---|---:|---:|---:|---:|---:|---:|---:|")
    for m in MODES:
        c = counts[m]
        judged = c["true"] + c["false"] + c["unclear"]
        out(
            f"| {m} | {sum(c.values())} | {c['true']} | {c['false']} | {c['unclear']} | {c['unjudged']} "
            f"| {pct(c['true'], judged)} | {pct(c['true'], c['true'] + c['false'])} |"
        )
    out("\nprecision = true / (true + false + unclear); unjudged findings are counted apart, never as true.")
    odd = anomalies(base, trees[BASE].name) + anomalies(latest, trees[LATEST].name)
    if odd:
        out("\n### Anomalies\n")
        out("\n".join(odd))


if __name__ == "__main__":
    main()
