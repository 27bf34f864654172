"""The hardware job: the codemod's rewrite computes exactly what the original did, without
pageable ``non_blocking`` copies, on the accelerator ``torch.accelerator`` reports.

Without an accelerator everything still runs on the CPU (rewrite, import side by side, bit-exact
outputs, host time); only the checks that need a device to mean anything skip, with the reason.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import time
import types
from pathlib import Path

import pytest

from . import hw_support
from .conftest import RESULTS

pytestmark = pytest.mark.hardware

np = pytest.importorskip("numpy")


def _row(spec_name: str) -> dict:
    for row in RESULTS:
        if row["builder"] == spec_name:
            return row
    row = {
        "builder": spec_name,
        "device": "-",
        "origin": "-",
        "bit_exact": "-",
        "viol_before": "skipped",
        "viol_after": "skipped",
        "us_before": "-",
        "us_after": "-",
        "torch": "-",
        "helper": "-",
    }
    RESULTS.append(row)
    return row


def _load_pair(spec, tmp_path, tag):
    try:
        path, origin = hw_support.rewritten_path(spec, tmp_path)
    except ImportError as e:
        pytest.skip(f"no pre-rewritten sources in {hw_support.REWRITTEN_DIR} and no libcst to rewrite now: {e}")
    original = hw_support.load_module(spec.source, f"pinfix_hw_{tag}_{spec.name}_original")
    rewritten = hw_support.load_module(path, f"pinfix_hw_{tag}_{spec.name}_rewritten")
    return original, rewritten, path, origin


@pytest.fixture(params=hw_support.BUILDERS, ids=lambda s: s.name)
def pair(request, tmp_path, helper_available, torch, device):
    spec = request.param
    original, rewritten, path, origin = _load_pair(spec, tmp_path, request.node.name.split("[")[0])
    row = _row(spec.name)
    row.update(device=device.type, origin=origin, torch=torch.__version__, helper=helper_available)
    return types.SimpleNamespace(spec=spec, original=original, rewritten=rewritten, path=path, row=row)


def _batch(module, torch, device, qsl):
    cpu = torch.tensor(qsl, dtype=torch.int32)
    return module.BatchInputs(cpu, cpu.to(device), int(qsl[-1]))


def _host_snapshot(torch, value):
    """Everything observable in a result, moved to the host with blocking copies."""
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), value.detach().cpu().contiguous().numpy().tobytes())
    if hasattr(value, "__dataclass_fields__"):
        return tuple((name, _host_snapshot(torch, getattr(value, name))) for name in value.__dataclass_fields__)
    return value


def _run(module, spec, torch, device, check=None):
    builder = getattr(module, spec.class_name)(hw_support.MAX_TOKENS, device)
    snapshots = []
    for qsl in hw_support.BATCHES:
        batch = _batch(module, torch, device, qsl)
        if check is None:
            metadata = builder.build(batch)
        else:
            with check:
                metadata = builder.build(batch)
        snapshots.append((_host_snapshot(torch, metadata), _host_snapshot(torch, builder.req_id_per_token_buffer)))
    return snapshots


def test_rewrite_uses_the_pinned_helper(pair):
    text = Path(pair.path).read_text()
    assert "np_to_pinned_tensor(req_id_per_token), non_blocking=True" in text
    assert "from vllm.utils.torch_utils import np_to_pinned_tensor" in text
    assert "torch.from_numpy(req_id_per_token)" not in text
    assert "torch.from_numpy(req_id_per_token)" in pair.spec.source.read_text()


def test_outputs_and_buffer_are_bit_exact(pair, torch, device):
    before = _run(pair.original, pair.spec, torch, device)
    after = _run(pair.rewritten, pair.spec, torch, device)
    for qsl, (meta, buffer) in zip(hw_support.BATCHES, before):
        # The original itself is right: each token maps to its request, the rest is zero.
        n = qsl[-1]
        expected = np.zeros(hw_support.MAX_TOKENS, dtype=np.int32)
        expected[:n] = np.repeat(np.arange(len(qsl) - 1, dtype=np.int32), np.diff(qsl))
        assert buffer[3] == expected.tobytes(), f"original builder wrong for {qsl}"
    for qsl, b, a in zip(hw_support.BATCHES, before, after):
        assert a == b, f"{pair.spec.name}: rewritten build() differs from the original for query_start_loc={qsl}"
    pair.row["bit_exact"] = "yes"


def test_checker_flags_the_original_and_never_the_rewrite(pair, torch, device, require_accelerator):
    from pinfix.runtime import pageable_copy_check

    before = pageable_copy_check("record")
    after = pageable_copy_check("record")
    _run(pair.original, pair.spec, torch, device, before)
    _run(pair.rewritten, pair.spec, torch, device, after)
    pair.row.update(viol_before=str(len(before.violations)), viol_after=str(len(after.violations)))
    assert before.violations, "the original's pageable copy_ was not flagged"
    v = before.violations[0]
    assert (v.op, v.direction, v.reason, v.file) == ("copy_", "H2D", "pageable", str(pair.spec.source))
    assert after.violations == [], [x.message() for x in after.violations]


def _median_host_us(module, spec, torch, device, warmup=20, rounds=15):
    builder = getattr(module, spec.class_name)(hw_support.MAX_TOKENS, device)
    batches = [_batch(module, torch, device, qsl) for qsl in hw_support.BATCHES]
    for i in range(warmup):
        builder.build(batches[i % len(batches)])
    samples = []
    for _ in range(rounds):
        for batch in batches:
            start = time.perf_counter()
            builder.build(batch)
            samples.append(time.perf_counter() - start)
    if device.type != "cpu":
        torch.accelerator.synchronize()
    return statistics.median(samples) * 1e6


def test_host_time_per_build(pair, torch, device):
    """Measured everywhere, for the table; only meaningful on an accelerator."""
    us_before = _median_host_us(pair.original, pair.spec, torch, device)
    us_after = _median_host_us(pair.rewritten, pair.spec, torch, device)
    pair.row.update(us_before=f"{us_before:.1f}", us_after=f"{us_after:.1f}")
    assert us_before > 0 and us_after > 0


def test_pre_rewritten_sources_are_used_and_stale_ones_refused(tmp_path):
    spec = hw_support.BUILDERS[0]
    out = tmp_path / "rewritten"
    try:
        hw_support.write_rewritten([spec], out)
    except ImportError as e:
        pytest.skip(f"host phase needs libcst: {e}")
    path, origin = hw_support.rewritten_path(spec, tmp_path, out)
    assert (origin, path.parent) == ("disk", out)
    changed = hw_support.BuilderSpec(spec.name, tmp_path / "edited.py", spec.class_name)
    changed.source.write_text(spec.source.read_text() + "\n# edited\n")
    with pytest.raises(hw_support.StaleRewrite, match="re-run the host phase"):
        hw_support.rewritten_path(changed, tmp_path, out)


# --- real vLLM -------------------------------------------------------------------------------

REAL = {
    "xpu": ("vllm/v1/attention/backends/mla/xpu_mla_sparse.py", "XPUMLASparseMetadataBuilder"),
    "rocm": ("vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py", "ROCMAiterMLASparseMetadataBuilder"),
}


def _real_builder(cls, torch, device):
    """The builder without its ``__init__`` (which wants a whole VllmConfig): only the state
    that ``build()`` reads, shaped as ``__init__`` makes it."""
    n, topk = hw_support.MAX_TOKENS, 4
    b = cls.__new__(cls)
    z = dict(dtype=torch.int32, device=device)
    b.device = device
    b.kv_cache_spec = types.SimpleNamespace(block_size=64)
    b.topk_tokens = topk
    b.reorder_batch_threshold = 1
    b.req_id_per_token_buffer = torch.zeros(n, **z)
    b.qo_indptr = torch.arange(0, n + 1, **z)
    b.paged_kv_last_page_len = torch.ones(n, **z)
    b.paged_kv_indices = torch.zeros(n * topk, **z)
    b.paged_kv_indptr = torch.zeros(n + 1, **z)
    b._prev_req_extent = 0
    b._prev_indices_extent = 0
    return b


def _real_common(torch, device, qsl):
    cpu = torch.tensor(qsl, dtype=torch.int32)
    lens = np.diff(qsl) if len(qsl) > 1 else np.zeros(0, dtype=np.int64)
    return types.SimpleNamespace(
        num_actual_tokens=int(qsl[-1]),
        num_reqs=len(qsl) - 1,
        max_query_len=int(lens.max()) if lens.size else 0,
        max_seq_len=int(lens.max()) if lens.size else 0,
        query_start_loc_cpu=cpu,
        query_start_loc=cpu.to(device),
        seq_lens=torch.tensor(lens, dtype=torch.int32).to(device),
        seq_lens_cpu=torch.tensor(lens, dtype=torch.int32),
        slot_mapping=torch.zeros(int(qsl[-1]), dtype=torch.int64, device=device),
        block_table_tensor=torch.zeros((max(len(qsl) - 1, 1), 1), dtype=torch.int32, device=device),
    )


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_vllm_builder(name, request, monkeypatch, tmp_path, torch, device):
    src = request.config.getoption("--vllm-src")
    if src is None:
        pytest.skip("real-vLLM mode is off: pass --vllm-src=PATH (a vLLM tree that imports here)")
    relpath, class_name = REAL[name]
    monkeypatch.syspath_prepend(src)
    loaded = set(sys.modules)
    # A failed or real import leaves vllm modules behind; drop them so later tests see the shim.
    request.addfinalizer(lambda: [sys.modules.pop(m) for m in set(sys.modules) - loaded if m.startswith("vllm")])
    modname = relpath[:-3].replace("/", ".")
    try:
        importlib.import_module(modname)
    except Exception as e:  # noqa: BLE001 - any import failure is a reason to skip
        pytest.skip(f"{modname} does not import from {src}: {type(e).__name__}: {e}")
    spec = hw_support.BuilderSpec(f"real-{name}", Path(src) / relpath, class_name)
    original, rewritten, _, _ = _load_pair(spec, tmp_path, "real")
    from pinfix.runtime import pageable_copy_check

    results, checks = [], []
    for module in (original, rewritten):
        builder = _real_builder(getattr(module, class_name), torch, device)
        check = pageable_copy_check("record")
        out = []
        for qsl in hw_support.BATCHES:
            try:
                with check:
                    metadata = builder.build(0, _real_common(torch, device, qsl))
            except Exception as e:
                if module is original:
                    pytest.skip(f"the real {class_name}.build cannot run on this machine: {type(e).__name__}: {e}")
                raise
            out.append(
                (
                    _host_snapshot(torch, metadata.req_id_per_token),
                    _host_snapshot(torch, builder.req_id_per_token_buffer),
                )
            )
        results.append(out)
        checks.append(check)
    assert results[0] == results[1]
    if device.type != "cpu":
        assert checks[0].violations and not checks[1].violations
