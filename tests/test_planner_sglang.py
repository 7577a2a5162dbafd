"""SGLang's memory accounting, rule by rule as read in its wheels (doctor/planner/sglang_kv.py, versions.py),
and the planner against the logged SGLang boots of tests/data/published_kv/sglang*.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from doctor.models import get_model
from doctor.planner import ServeConfig, parse_gpus, plan
from doctor.planner.accuracy import calibration, sglang_residual, sglang_residuals
from doctor.planner.hardware import GIB, MIB, GPU
from doctor.planner.errors import PlanInputError
from doctor.planner.sglang_kv import (POST_LOAD_BYTES, context_bytes, mtp_own_embed_head_bytes, decode_graph_max_bs, default_mem_fraction_static,
                                      mamba_cache_per_req, mamba_ratio, prefill_capture_sizes, sglang_capacity,
                                      sglang_pools)
from doctor.planner.versions import sglang_rules
from doctor.planner.weights import pp_partition

BF16 = get_model("Qwen/Qwen3.5-35B-A3B")
DATA = Path(__file__).parent / "data" / "published_kv"
ENTRIES = [e for p in sorted(DATA.glob("sglang*.yaml")) for e in yaml.safe_load(p.read_text())["entries"]]
H200_MIB = 143771                                    # nvidia-smi memory.total of an H200 (141 GB)
PER_REQ = 30 * (8192 * 3 * 2 + 32 * 128 * 128 * 4)  # 30 GDN layers x (bf16 conv + fp32 temporal state) at TP 1
CELL = 10 * 2 * 2 * 256 * 2                          # 10 full-attention layers x K,V x 2 heads x 256 x bf16
VLM = 0.95 * (1 - 0.1 * (1152 ** 2 / 1024 ** 2 - 1))   # adjust_mem_fraction_for_vlm for Qwen3.5's ViT


def sglang(version: str, **flags) -> ServeConfig:
    return ServeConfig(backend="sglang", backend_version=version, prefix_caching=True, **flags)


def test_0_5_16_default_fraction_on_a_141_gb_gpu_at_tp_1():
    # chunk 8192, decode graphs up to bs 256 (90-160 GiB GPUs), 58 prefill (breakable) graphs x 8 MB:
    # reserve = 512 + 8192 x 1.5 + 256 x 2 + 1/8 GiB + 464 = 13904 MB, above the 10 GiB floor
    reserve = 512 + 8192 * 1.5 + 256 * 2 + 1024 / 8 + 58 * 8
    assert default_mem_fraction_static(H200_MIB * MIB, sglang("0.5.16", language_model_only=True), BF16) == \
        round((H200_MIB - reserve) / H200_MIB, 3) == 0.903
    # the vision tower on: x 0.95 x the ViT factor
    assert default_mem_fraction_static(H200_MIB * MIB, sglang("0.5.16"), BF16) == pytest.approx(0.903 * VLM)


def test_0_5_15_keeps_breakable_prefill_graphs_off_for_multimodal_qwen3_5():
    without = 512 + 8192 * 1.5 + 256 * 2 + 1024 / 8
    assert default_mem_fraction_static(H200_MIB * MIB, sglang("0.5.15", language_model_only=True), BF16) == \
        round((H200_MIB - without) / H200_MIB, 3)
    assert not sglang_rules("0.5.15").prefill_graph_reserve and sglang_rules("0.5.16").prefill_graph_reserve


def test_the_prefill_graph_reserve_stops_at_the_context_length_in_0_5_16_only():
    def reserve(prefill_max: int) -> float:
        return 512 + 8192 * 1.5 + 256 * 2 + 1024 / 8 + len(prefill_capture_sizes(prefill_max)) * 8

    short = sglang("0.5.16", language_model_only=True, max_model_len=4096)
    assert default_mem_fraction_static(H200_MIB * MIB, short, BF16) == \
        round((H200_MIB - reserve(4096)) / H200_MIB, 3)
    later = short.with_(backend_version="0.5.18")
    assert default_mem_fraction_static(H200_MIB * MIB, later, BF16) == round((H200_MIB - reserve(8192)) / H200_MIB, 3)


def test_the_rest_is_free_memory_after_the_load_less_the_free_memory_before_it_times_one_minus_the_fraction():
    gpu = GPU("H200", H200_MIB * MIB, "9.0", torch_bytes=int(139.8 * GIB))
    cfg = sglang("0.5.16", mem_fraction_static=0.8, max_model_len=262144)
    cap = sglang_capacity(BF16, cfg, gpu, {"total": 65 * GIB}, GIB // 2, (0, 40), [(0, 40)], 262144)
    pre = 139.8 * GIB - GIB // 2
    assert cap.pre_model_load == int(pre)
    # 0.06 GiB more is in use when the pools are sized than at "Load weight end" (POST_LOAD_BYTES)
    assert cap.rest == pytest.approx((pre - 65 * GIB - POST_LOAD_BYTES) - pre * 0.2, abs=2)
    # 0.5.18 reserves SGLANG_VLM_CACHE_SIZE_MB (100) of it for a multimodal model
    later = sglang_capacity(BF16, cfg.with_(backend_version="0.5.18"), gpu, {"total": 65 * GIB}, GIB // 2, (0, 40),
                            [(0, 40)], 262144)
    assert cap.rest - later.rest == pytest.approx(100 * MIB, abs=2)


def test_the_free_memory_before_the_load_is_torch_s_total_less_the_measured_context():
    # H200, 0.5.16: torch total 139.80 GiB, "Load weight begin. avail mem=139.07 GB" at TP 1
    assert context_bytes(sglang("0.5.16")) == pytest.approx(0.73 * GIB, abs=MIB)
    # TP 2: "Init torch distributed ends. mem usage=0.19 GB" instead of 0.09
    assert context_bytes(sglang("0.5.16", tp=2)) == pytest.approx(0.83 * GIB, abs=MIB)
    assert context_bytes(sglang("0.5.16", overhead_gib=2)) == 2 * GIB
    p = plan(BF16, parse_gpus("1xH200"), sglang("0.5.16", mem_fraction_static=0.8, max_model_len=262144))
    assert p.ranks[0].budget_bytes == pytest.approx(0.8 * 139.07 * GIB, rel=1e-4)


def test_mamba_slots_take_ratio_over_one_plus_ratio_of_the_rest():
    rest = 40 * GIB
    pools = sglang_pools(rest, CELL, PER_REQ, sglang("0.5.16"), 262144)
    slots = int(40 * 0.9 / 1.9 * GIB // PER_REQ)
    assert pools.mamba_slots == slots == 315
    assert pools.max_total_num_tokens == (rest - slots * PER_REQ) // CELL
    # 0.5.18 prices the pool's padding slot: one slot less here, and its bytes come off the KV pool
    padded = sglang_pools(rest, CELL, PER_REQ, sglang("0.5.18"), 262144)
    assert padded.mamba_slots == int((40 * 0.9 / 1.9 * GIB - PER_REQ) // PER_REQ) == 314
    assert padded.max_total_num_tokens == (rest - 315 * PER_REQ) // CELL
    # --mamba-full-memory-ratio and --max-mamba-cache-size move the split
    assert sglang_pools(rest, CELL, PER_REQ, sglang("0.5.16", mamba_full_memory_ratio=0.5), 262144).mamba_slots == \
        int(40 / 3 * GIB // PER_REQ)
    fixed = sglang_pools(rest, CELL, PER_REQ, sglang("0.5.16", max_mamba_cache_size=100), 262144)
    assert fixed.mamba_slots == 100 and fixed.max_total_num_tokens == (rest - 100 * PER_REQ) // CELL


def test_running_requests_per_mamba_radix_strategy():
    rest = 40 * GIB
    # 0.5.9: radix "auto" -> no_buffer, 3 slots per request
    assert sglang_pools(rest, CELL, PER_REQ, sglang("0.5.9"), 262144).max_running_requests == 315 // 3
    # 0.5.14+: "auto" -> extra_buffer with the overlap scheduler, 3 + 2 ping-pong slots per request
    assert sglang_pools(rest, CELL, PER_REQ, sglang("0.5.16"), 262144).max_running_requests == 315 // 5
    # --disable-radix-cache: one slot per request
    off = sglang_pools(rest, CELL, PER_REQ, sglang("0.5.16").with_(prefix_caching=False), 262144)
    assert off.max_running_requests == min(2048, off.max_total_num_tokens // 2, 315)


def test_the_mamba_radix_strategy_and_the_overlap_scheduler_set_the_slots_per_request():
    def ratio(version: str, **flags) -> int:
        return mamba_ratio(sglang(version, **flags), sglang_rules(version))

    # 0.5.14+: extra_buffer's ping-pong slots are 2 with the overlap scheduler, 1 without it or when lazy
    assert ratio("0.5.16", mamba_radix_strategy="extra_buffer") == 5
    assert ratio("0.5.16", mamba_radix_strategy="extra_buffer", overlap_schedule=False) == 4
    assert ratio("0.5.16", mamba_radix_strategy="extra_buffer_lazy") == 4
    assert ratio("0.5.16", mamba_radix_strategy="no_buffer") == 3
    # "auto" without the overlap scheduler is no_buffer, unless pages > 1 ask for extra_buffer
    assert ratio("0.5.16", overlap_schedule=False) == 3
    assert ratio("0.5.16", overlap_schedule=False, block_size=64) == 4
    # speculative decoding keeps the overlap scheduler from 0.5.11 (spec v2), DFLASH from 0.5.14; NGRAM never
    assert ratio("0.5.16", mtp_tokens=3, speculative_method="nextn") == 5
    assert ratio("0.5.16", mtp_tokens=3, speculative_method="ngram") == 3
    assert ratio("0.5.11", mtp_tokens=3, speculative_method="nextn", mamba_radix_strategy="extra_buffer") == 5
    assert ratio("0.5.11", mtp_tokens=3, speculative_method="dflash", mamba_radix_strategy="extra_buffer") == 4
    assert ratio("0.5.10", mtp_tokens=3, speculative_method="nextn", mamba_radix_strategy="extra_buffer") == 4
    # 0.5.9 keys the ping-pong slots on speculative decoding, and "auto" is no_buffer
    assert ratio("0.5.9", mamba_radix_strategy="extra_buffer") == 5
    assert ratio("0.5.9", mamba_radix_strategy="extra_buffer", mtp_tokens=3) == 4
    assert ratio("0.5.9") == 3
    off = sglang("0.5.16", mamba_radix_strategy="extra_buffer").with_(prefix_caching=False)
    assert mamba_ratio(off, sglang_rules("0.5.16")) == 1


def test_mamba_ssm_dtype_sets_the_recurrent_state_bytes_on_sglang_only():
    bf16_states = 30 * (8192 * 3 * 2 + 32 * 128 * 128 * 2)
    stages = [(0, 40)]
    assert mamba_cache_per_req(BF16, sglang("0.5.16", mamba_ssm_dtype="bfloat16"), stages) == bf16_states
    assert mamba_cache_per_req(BF16, sglang("0.5.16"), stages) == PER_REQ
    assert mamba_cache_per_req(BF16, ServeConfig(mamba_ssm_dtype="bfloat16"), stages) == PER_REQ


def test_cuda_graph_flags_move_the_default_fraction():
    base = 512 + 8192 * 1.5 + 1024 / 8

    def fraction(version: str, **flags) -> float:
        return default_mem_fraction_static(H200_MIB * MIB, sglang(version, language_model_only=True, **flags), BF16)

    prefill = len(prefill_capture_sizes(8192)) * 8
    # --cuda-graph-max-bs replaces the decode graph limit of the GPU size (256 on 90-160 GiB at TP < 4)
    assert fraction("0.5.16", cuda_graph_max_bs=32) == round((H200_MIB - base - 32 * 2 - prefill) / H200_MIB, 3)
    # --disable-prefill-cuda-graph drops the breakable prefill graphs' 8 MB each
    assert fraction("0.5.16", prefill_cuda_graph=False) == round((H200_MIB - base - 256 * 2) / H200_MIB, 3)
    # --enable-piecewise-cuda-graph counts them in 0.5.9, where they are opt-in
    assert fraction("0.5.9", prefill_cuda_graph=True) == round((H200_MIB - base - 256 * 2 - prefill) / H200_MIB, 3)
    # from 0.5.22 a default decode limit stops at --max-running-requests; a given one does not
    assert fraction("0.5.22", max_num_seqs=8) == round((H200_MIB - base - 8 * 2 - prefill) / H200_MIB, 3)
    assert fraction("0.5.21", max_num_seqs=8) == round((H200_MIB - base - 256 * 2 - prefill) / H200_MIB, 3)
    assert fraction("0.5.22", max_num_seqs=8, cuda_graph_max_bs=64) == \
        round((H200_MIB - base - 64 * 2 - prefill) / H200_MIB, 3)
    assert decode_graph_max_bs(24564 * MIB, sglang("0.5.23", tp=4, max_num_seqs=1000), sglang_rules("0.5.23")) == 160


def test_engine_flags_that_size_sglang_s_pools_are_read():
    from doctor.planner.flags import config_kwargs

    argv = ["--page-size", "64", "--mamba-ssm-dtype", "bfloat16", "--mamba-scheduler-strategy", "extra_buffer",
            "--disable-overlap-schedule", "--cuda-graph-max-bs", "16", "--disable-piecewise-cuda-graph"]
    assert config_kwargs(argv) == {"block_size": 64, "mamba_ssm_dtype": "bfloat16",
                                   "mamba_radix_strategy": "extra_buffer", "overlap_schedule": False,
                                   "cuda_graph_max_bs": 16, "prefill_cuda_graph": False}
    assert config_kwargs(["--cuda-graph-max-bs-decode", "4", "--cuda-graph-backend-prefill", "breakable",
                          "--mamba-radix-cache-strategy", "no_buffer"]) == \
        {"cuda_graph_max_bs": 4, "prefill_cuda_graph": True, "mamba_radix_strategy": "no_buffer"}
    assert config_kwargs(["--cuda-graph-backend-prefill=disabled"]) == {"prefill_cuda_graph": False}
    with pytest.raises(PlanInputError, match="mamba-ssm-dtype"):
        ServeConfig(backend="sglang", mamba_ssm_dtype="fp8").validate()
    with pytest.raises(PlanInputError, match="mamba-radix-cache-strategy"):
        ServeConfig(backend="sglang", mamba_radix_strategy="ping_pong").validate()


def test_mtp_states_and_draft_kv_per_version():
    rest = 60 * GIB
    # 0.5.9: 48 requests x (3 + 1) draft tokens of states leave the rest before the split; the cell is the target's
    old, old_mtp = (sglang_pools(rest, CELL, PER_REQ, sglang("0.5.9", mtp_tokens=m), 262144) for m in (0, 3))
    assert old_mtp.mamba_slots == int((rest - 48 * 4 * PER_REQ) * 0.9 / 1.9 // PER_REQ)
    assert old_mtp.max_running_requests == min(48, old_mtp.mamba_slots // 3) < old.max_running_requests
    # 0.5.16: K x per_req x (1 + 4 / 5) = the mamba budget; the states of min(48, K // 5) requests come off
    new_mtp = sglang_pools(rest, CELL, PER_REQ, sglang("0.5.16", mtp_tokens=3), 262144)
    k = int(rest * 0.9 / 1.9 // (PER_REQ * (1 + 4 / 5)))
    assert new_mtp.mamba_slots == k
    assert new_mtp.max_total_num_tokens == (rest - k * PER_REQ - min(48, k // 5) * 4 * PER_REQ) // CELL
    # the checkpoint's MTP head (NEXTN without a draft path) keeps the target's cell in every version: its KV is
    # the draft worker's own pool (spec_aux_hidden_state.py reads draft layers only from a draft path)
    gpu = parse_gpus("1xH200").gpu
    weights = {"total": 66 * GIB, "mtp": GIB}
    caps = {v: sglang_capacity(BF16, sglang(v, mtp_tokens=3, mem_fraction_static=0.8), gpu, weights, GIB // 2,
                               (0, 40), [(0, 40)], 262144) for v in ("0.5.9", "0.5.14")}
    assert {v: c.cell_size for v, c in caps.items()} == {"0.5.9": CELL, "0.5.14": CELL}
    # from 0.5.14 the head loads before the pools are sized: its layer and the embedding and lm_head it builds for
    # itself leave the rest; 0.5.9 loads it after
    own = mtp_own_embed_head_bytes(BF16, sglang("0.5.14", mtp_tokens=3))
    assert own == 2 * 248320 * 2048 * 2
    assert caps["0.5.9"].rest - caps["0.5.14"].rest == pytest.approx(GIB + own, abs=2)


def test_pipeline_stages_price_all_or_the_largest_stage_s_gdn_layers():
    stages = pp_partition(40, 2)
    assert mamba_cache_per_req(BF16, sglang("0.5.16", pp=2), stages) == PER_REQ
    assert mamba_cache_per_req(BF16, sglang("0.5.18", pp=2), stages) == PER_REQ // 2


def test_pages_round_the_token_count_down():
    pools = sglang_pools(40 * GIB, CELL, PER_REQ, sglang("0.5.16", block_size=64), 262144)
    assert pools.max_total_num_tokens % 64 == 0
    assert pools.max_total_num_tokens == (40 * GIB - 315 * PER_REQ) // CELL // 64 * 64


def test_a_plan_reports_sglang_s_pools():
    p = plan(BF16, parse_gpus("1xH200"), sglang("0.5.16", mem_fraction_static=0.8, max_model_len=262144))
    rank = p.ranks[0]
    assert rank.cache_bytes > 0 and rank.mamba_slots > 0
    assert rank.kv_tokens * CELL + rank.mamba_slots * PER_REQ <= rank.cache_bytes


def test_every_logged_sglang_boot_is_reproduced_within_one_percent():
    rows = sglang_residuals(ENTRIES)
    assert rows, "no sglang_predict entry in tests/data/published_kv/sglang*.yaml"
    for r in rows:
        assert abs(r.tokens_error) <= 0.01, r
        assert r.slots_error is None or abs(r.slots_error) <= 0.01, r
        assert r.logged_running is None or r.planned_running == r.logged_running, r
        assert r.weights_error is None or abs(r.weights_error) <= 0.01, r


def test_the_shipped_sglang_summary_matches_the_data():
    rows = sglang_residuals(ENTRIES)
    shipped = calibration()["sglang"]
    assert shipped["boots"] == len({r.id for r in rows}) and shipped["rows"] == len(rows)
    assert max(abs(r.tokens_error) for r in rows) <= shipped["kv_tokens_max_abs_error"]


def test_partial_sglang_boots_are_evidence_only():
    partial = [e for e in ENTRIES if "missing" in e]
    assert partial and all(not e.get("sglang_predict") and not e.get("predict") for e in partial)


def test_a_pools_entry_takes_the_free_memory_before_the_load_from_mem_usage_when_the_begin_line_is_missing():
    entry = next(e for e in ENTRIES if e.get("sglang_predict") == "pools")
    without_begin = {**entry, "log": [line for line in entry["log"] if "Load weight begin" not in line]}
    # 14.08 + 8.85 = 22.93 GB, the logged "Load weight begin. avail mem"
    assert sglang_residual(without_begin) == sglang_residual(entry)
    without_end = {**entry, "log": [line for line in entry["log"] if "Load weight end" not in line]}
    with pytest.raises(ValueError, match="Load weight end"):
        sglang_residual(without_end)


def test_an_sglang_plan_prints_a_band_only_inside_the_span_of_the_boots_planned_end_to_end():
    from doctor.planner.render import band_text

    def band(gpus: str, version: str, model=BF16) -> str:
        return band_text(plan(model, parse_gpus(gpus), sglang(version, mem_fraction_static=0.8)))

    shipped = calibration()["sglang"]
    assert band("1xH200", "0.5.16").startswith(f"± {shipped['kv_tokens_max_abs_error']:.1%}")
    assert band("1xH200", "0.5.16", get_model("Qwen/Qwen3.5-35B-A3B-FP8")).startswith("±")
    assert "not measured" in band("1xH200", "0.5.21") and "SGLang 0.5.21" in band("1xH200", "0.5.21")
    assert "Ampere / Ada GPUs" in band("2xA100-80G", "0.5.16")
    assert band("1xH100", "0.5.16").startswith("±") and "GPUs under 79 GiB" in band("1xL40S", "0.5.16")


def test_an_sglang_plan_outside_the_logged_boots_prints_the_bound_of_its_terms_and_the_bound_covers_every_boot():
    from doctor.planner.render import band_text
    from doctor.planner.sglang_kv import term_bound

    # the default --mem-fraction-static on a release and a TP no boot logged: a figure, not only "not measured"
    text = band_text(plan(BF16, parse_gpus("2xH200"), sglang("0.5.21", tp=2)))
    assert text.startswith("± ") and "GiB of KV memory" in text and "TP > 1" in text and "SGLang 0.5.21" in text
    weights_rel = calibration()["sglang"]["weights_max_abs_error"]
    for entry in (e for e in ENTRIES if e.get("sglang_predict") == "plan"):
        cfg = ServeConfig(backend="sglang", backend_version=str(entry["sglang"]), **entry["flags"])
        rank = min(plan(get_model(entry["model"]), parse_gpus(entry["gpus"]), cfg).ranks, key=lambda r: r.kv_tokens)
        residual = sglang_residual(entry)
        # the pools' error in bytes: the token error of the KV pool, priced at the plan's bytes per token
        missed = abs(residual.tokens_error) * rank.cache_bytes
        assert missed <= term_bound(cfg, rank.weights["total"], weights_rel), entry["id"]
