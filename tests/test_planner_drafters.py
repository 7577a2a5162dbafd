"""Speculative drafters that are separate models (EAGLE3, DFlash): weights, KV groups and pools per rank,
as vLLM 0.26 / SGLang lay them out, and clear errors for drafters the planner cannot size."""

from __future__ import annotations

import json
from dataclasses import replace
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.models import get_model
from doctor.planner import parse_gpus, plan
from doctor.planner.drafters import (KVType, grouped_layout, known_drafters, resolve_drafter,
                                     sglang_drafter_cell_bytes, unified_types)
from doctor.planner.errors import PlanInputError
from doctor.planner.flags import config_kwargs, serve_config_from_argv
from doctor.planner.sglang_kv import sglang_pools
from doctor.planner.versions import sglang_rules

QWEN = get_model("Qwen/Qwen3.5-35B-A3B")
DFLASH = '{"method": "dflash", "model": "z-lab/Qwen3.5-35B-A3B-DFlash", "num_speculative_tokens": 15}'
MTP = '{"method": "qwen3_5_mtp", "num_speculative_tokens": 3}'


def _plan(backend: str, argv: list[str], gpus: str = "1xH200", **overrides):
    cfg = serve_config_from_argv(backend, argv, **overrides)
    return plan(QWEN, parse_gpus(gpus), cfg)


def test_registered_dflash_drafter_weighs_what_its_checkpoint_holds() -> None:
    """8 layers (q 4096, kv 4 x 128, SwiGLU 6144) + fc over 5 target layers: 473,995,264 BF16 parameters."""
    drafter = known_drafters()["z-lab/qwen3.5-35b-a3b-dflash"]
    assert drafter.weight_bytes(1) == 2 * 473_995_264
    assert not drafter.own_lm_head


def test_dflash_keeps_a_stacked_copy_of_its_kv_projections_for_the_fused_precompute() -> None:
    """qwen3_dflash.py _build_context_kv_buffers: cat of 8 x [2 x 4 x 128, 2048] K/V rows + stack of 8 x [128]
    K-norm weights, BF16; a rank of TP 2 holds its 2 KV heads' rows; other drafters keep none."""
    drafter = known_drafters()["z-lab/qwen3.5-35b-a3b-dflash"]
    assert drafter.fused_kv_copy_bytes(1) == 8 * (2 * 512 * 2048 + 128) * 2
    assert drafter.fused_kv_copy_bytes(2) == 8 * (2 * 256 * 2048 + 128) * 2
    assert replace(drafter, method="eagle3").fused_kv_copy_bytes(1) == 0


def test_drafter_layers_shard_with_the_target_tp_but_fc_is_replicated() -> None:
    drafter = known_drafters()["z-lab/qwen3.5-35b-a3b-dflash"]
    layers = 8 * (2 * 4096 * 2048 + 2 * 512 * 2048 + 3 * 2048 * 6144)
    fc = 5 * 2048 * 2048
    small = 8 * (2 * 2048 + 2 * 128) + 2 * 2048
    assert drafter.weight_bytes(4) == 2 * (layers // 4 + fc + small)


def test_vllm_groups_layers_like_kv_cache_utils() -> None:
    """kv_cache_utils.py: 12 sw + 13 full (gpt-oss + eagle) -> group size 13; 10 full + 20 sw -> 10, 3 groups."""
    assert grouped_layout([KVType(13, 16, 1), KVType(12, 16, 1)], 0, 0)[1:] == (13, [1, 1], 0)
    assert grouped_layout([KVType(10, 16, 1), KVType(20, 16, 1)], 0, 0)[1:] == (10, [1, 2], 0)
    # Qwen3.5 + DFlash at TP 1: 10 target attention, 8 drafter attention, 30 GDN layers
    assert grouped_layout([KVType(10, 1, 1), KVType(8, 1, 1)], 30, 1)[1:] == (8, [2, 1], 4)


def test_a_smaller_drafter_page_gets_a_larger_block() -> None:
    """unify_kv_cache_spec_page_size: the smaller page's block size grows until the pages match."""
    unified = unified_types([KVType(10, 544, 544 * 1024), KVType(8, 544, 544 * 512)], 544 * 1024)
    assert [(t.block_size, t.page_bytes) for t in unified] == [(544, 544 * 1024), (1088, 544 * 1024)]


def test_dflash_loads_its_weights_and_costs_kv_capacity_in_vllm() -> None:
    base = _plan("vllm", [], tp=1, backend_version="0.26.0", language_model_only=True)
    dflash = _plan("vllm", ["--speculative-config", DFLASH], tp=1, backend_version="0.26.0", language_model_only=True)
    rank = dflash.ranks[0]
    # its parameters, its own rotary cos / sin cache, 262,144 x 128 BF16 (rope_cache.py), and the stacked copy of
    # its 8 layers' K/V projections and K norms (DrafterSpec.fused_kv_copy_bytes)
    fused = 8 * (2 * 512 * 2048 + 128) * 2
    assert rank.weights["drafter"] == 2 * 473_995_264 + 262_144 * 128 * 2 + fused and "mtp" not in rank.weights
    assert rank.weights["total"] == base.ranks[0].weights["total"] + rank.weights["drafter"]
    assert dflash.kv_tokens < base.kv_tokens


def test_the_mtp_head_still_plans_as_before() -> None:
    mtp = _plan("vllm", ["--speculative-config", MTP], tp=1, backend_version="0.26.0", language_model_only=True)
    assert "mtp" in mtp.ranks[0].weights and "drafter" not in mtp.ranks[0].weights
    assert mtp.ranks[0].full_layers == 11


def _eagle3_dir(tmp_path: Path) -> Path:
    """A one-layer EAGLE3 head with Qwen3.5-35B-A3B's per-layer KV size (4 kv heads x 128 = 2 x 256)."""
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 2048, "num_attention_heads": 16,
        "num_key_value_heads": 4, "head_dim": 128, "num_hidden_layers": 1, "intermediate_size": 8192,
        "vocab_size": 248320, "draft_vocab_size": 32000, "torch_dtype": "bfloat16"}))
    return tmp_path


def _sglang_pair(algorithm: str, drafter: str, version: str, tp: int = 1):
    """The drafter's plan and an NGRAM plan with the same draft tokens and fraction (no drafter weights or KV)."""
    common = ["--speculative-num-draft-tokens", "4", "--mem-fraction-static", "0.8"]
    gpus = f"{tp}xH200"
    with_drafter = _plan("sglang", ["--speculative-algorithm", algorithm, "--speculative-draft-model-path", drafter,
                                    *common], gpus, tp=tp, backend_version=version, language_model_only=True)
    ngram = _plan("sglang", ["--speculative-algorithm", "NGRAM", *common], gpus, tp=tp, backend_version=version,
                  language_model_only=True)
    return with_drafter, ngram


def _tokens_for_cell(p, cell: int) -> int:
    """max_total_num_tokens of the plan's rest with the given bytes per token (sglang_kv.sglang_pools)."""
    return sglang_pools(p.ranks[0].cache_bytes, cell, p.gdn_state_bytes_per_seq, p.config, p.max_model_len
                        ).max_total_num_tokens


def test_sglang_0_5_9_sizes_the_eagle3_pool_outside_the_fraction_0_5_16_inside(tmp_path: Path) -> None:
    """0.5.9: the target's pools are sized before the draft worker loads; the drafter's weights and its pool of
    the target's token count (draft_runner_cache_size) come out of the memory outside --mem-fraction-static.
    0.5.16: the drafter loads first (its weights shrink the rest) and the target's cell grows by 1 drafter layer /
    10 full layers (pool_configurator.py DefaultPoolConfigurator)."""
    drafter = str(_eagle3_dir(tmp_path))
    old, old_ngram = _sglang_pair("EAGLE3", drafter, "0.5.9")
    assert old.ranks[0].cache_bytes == old_ngram.ranks[0].cache_bytes
    assert old.kv_tokens == old_ngram.kv_tokens
    assert old.ranks[0].drafter_kv_bytes == old.kv_tokens * 1 * 2 * 4 * 128 * 2

    new, new_ngram = _sglang_pair("EAGLE3", drafter, "0.5.16")
    weights = new.ranks[0].weights["drafter"]
    assert abs(new_ngram.ranks[0].cache_bytes - new.ranks[0].cache_bytes - weights) <= 1
    assert new.ranks[0].drafter_kv_bytes == 0
    target_cell = 10 * 2 * 2 * 256 * 2
    assert new.kv_tokens == _tokens_for_cell(new, int(target_cell * (1 + 1 / 10))) < new_ngram.kv_tokens


def test_sglang_prices_the_dflash_drafter_by_version() -> None:
    """DFLASH (absent before 0.5.11): 0.5.11-0.5.17 scale the target's cell by (10 + 8) / 10 layers, rounded up;
    0.5.18+ add the drafter's own bytes per token (8 layers x its kv heads per rank x 128 x K and V). At TP 4 the
    target keeps 1 of 2 kv heads x 256 and the drafter 1 of 4 x 128: the two rules differ."""
    drafter = known_drafters()["z-lab/qwen3.5-35b-a3b-dflash"]
    cfg = serve_config_from_argv("sglang", [], tp=4)
    target_cell = 10 * 1 * 256 * 2 * 2
    extra = {v: sglang_drafter_cell_bytes(drafter, "dflash", target_cell, 10, QWEN, cfg, sglang_rules(v))
             for v in ("0.5.9", "0.5.13", "0.5.16", "0.5.17", "0.5.18", "0.5.23")}
    assert extra == {"0.5.9": 0, "0.5.13": 8 * 1024, "0.5.16": 8 * 1024, "0.5.17": 8 * 1024,
                     "0.5.18": 8 * 512, "0.5.23": 8 * 512}
    eagle3 = {v: sglang_drafter_cell_bytes(drafter, "eagle3", target_cell, 10, QWEN, cfg, sglang_rules(v))
              for v in ("0.5.13", "0.5.14")}
    assert eagle3 == {"0.5.13": 0, "0.5.14": 8 * 1024}


def test_sglang_0_5_23_takes_the_dflash_pool_and_weights_out_of_the_target_budget() -> None:
    dflash, ngram = _sglang_pair("DFLASH", "z-lab/Qwen3.5-35B-A3B-DFlash", "0.5.23")
    rank = dflash.ranks[0]
    assert rank.drafter_kv_bytes == 0
    assert abs(ngram.ranks[0].cache_bytes - rank.cache_bytes - rank.weights["drafter"]) <= 1
    target_cell, draft_cell = 10 * 2 * 2 * 256 * 2, 8 * 2 * 4 * 128 * 2
    assert dflash.kv_tokens == _tokens_for_cell(dflash, target_cell + draft_cell)


def test_sglang_eagle_without_a_draft_model_is_the_mtp_head() -> None:
    kwargs = config_kwargs(["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"])
    assert kwargs == {"mtp_tokens": 3, "speculative_method": "nextn", "drafter": None}


def test_sglang_algorithm_without_steps_takes_auto_choose_speculative_params() -> None:
    kwargs = config_kwargs(["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path",
                            "/models/Qwen3.5-35B-A3B-DFlash"])
    assert kwargs["mtp_tokens"] == 3 and kwargs["drafter"] == "/models/Qwen3.5-35B-A3B-DFlash"
    assert resolve_drafter("dflash", kwargs["drafter"]).name == "z-lab/Qwen3.5-35B-A3B-DFlash"


def test_unknown_drafter_is_a_clear_input_error() -> None:
    flags = ["--speculative-config", '{"method": "eagle3", "model": "me/Qwen3.5-35B-A3B-Eagle3"}']
    assert config_kwargs(flags)["drafter"] == "me/Qwen3.5-35B-A3B-Eagle3"   # parsing alone never refuses it
    with pytest.raises(PlanInputError, match="unknown drafter 'me/Qwen3.5-35B-A3B-Eagle3'.*z-lab/Qwen3.5-35B-A3B-DFlash"):
        _plan("vllm", flags, tp=1)
    with pytest.raises(PlanInputError, match="needs the drafter model"):
        resolve_drafter("dflash", None)
    with pytest.raises(PlanInputError, match="not planned"):
        resolve_drafter("medusa-ish", "x")


def test_a_local_eagle3_drafter_is_read_from_its_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 2048, "num_attention_heads": 16,
        "num_key_value_heads": 4, "head_dim": 128, "num_hidden_layers": 1, "intermediate_size": 8192,
        "vocab_size": 248320, "draft_vocab_size": 32000, "torch_dtype": "bfloat16"}))
    drafter = resolve_drafter("eagle3", str(tmp_path))
    assert drafter is not None and drafter.method == "eagle3" and drafter.own_lm_head
    attention = 16 * 128 * 4096 + 2 * 4 * 128 * 4096 + 16 * 128 * 2048     # layer 0 reads 2 x hidden
    params = attention + 3 * 2048 * 8192 + 2 * 2048 + 2 * 128 + 3 * 2048 * 2048 + 2 * 2048 + 32000 * 2048
    assert drafter.weight_bytes(1) == 2 * params + 8 * 32000


def test_vllm_50722_dflash_boot_weights_are_closer_with_the_drafter() -> None:
    """vllm-project/vllm#50722 (tests/data/published_kv/vllm-partial.yaml): a TP 4 BF16 rank logged 16.92 GiB
    of weights; the thread's other boot ran the DFlash drafter. Whether this one did is not stated, so this
    only checks the direction: planning the drafter moves the rank toward the logged figure."""
    logged = 16.92 * (1 << 30)
    common = ["--tensor-parallel-size", "4", "--max-num-batched-tokens", "40000", "--max-model-len", "183872"]
    without = _plan("vllm", common, "4xA100-80G", backend_version="0.26.0")
    with_dflash = _plan("vllm", common + ["--speculative-config", DFLASH], "4xA100-80G", backend_version="0.26.0")
    assert abs(with_dflash.ranks[0].weights["total"] - logged) < abs(without.ranks[0].weights["total"] - logged)


def test_cli_plans_a_speculative_config_and_rejects_an_unknown_drafter() -> None:
    ok = subprocess.run([sys.executable, "-m", "doctor", "plan", "--gpus", "1xH200", "--tp", "1",
                         "--speculative-config", DFLASH], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "dflash drafter z-lab/Qwen3.5-35B-A3B-DFlash" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "doctor", "plan", "--gpus", "1xH200", "--flag",
                          "--speculative-algorithm EAGLE3 --speculative-draft-model-path nobody/none"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown drafter 'nobody/none'" in bad.stderr


def test_sliding_window_drafter_layers_hold_only_their_window(tmp_path: Path) -> None:
    """SlidingWindowSpec: a sliding drafter layer needs cdiv(min(window - 1 + in-flight, len), block) + 1 blocks,
    so a drafter whose layers slide costs less KV capacity than the same drafter with full attention."""
    config = {"architectures": ["DFlashDraftModel"], "hidden_size": 2048, "num_attention_heads": 32,
              "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 6, "intermediate_size": 6144,
              "vocab_size": 248320, "dflash_config": {"target_layer_ids": [1, 6, 11, 16, 22, 27, 32, 37]}}
    full_dir, swa_dir = tmp_path / "full", tmp_path / "swa"
    full_dir.mkdir(), swa_dir.mkdir()
    (full_dir / "config.json").write_text(json.dumps(config))
    (swa_dir / "config.json").write_text(json.dumps({**config, "sliding_window": 4096, "use_sliding_window": True,
                                                     "layer_types": ["sliding_attention"] * 5 + ["full_attention"]}))
    assert resolve_drafter("dflash", str(swa_dir)).sliding_layers == 5
    assert KVType(5, 1000, 1, 4096).blocks_per_request(262144, 8192) == 13 + 1   # cdiv(12287, 1000) + 1
    plans = [_plan("vllm", ["--speculative-config", json.dumps({"method": "dflash", "model": str(d),
                                                                "num_speculative_tokens": 7})],
                   tp=1, backend_version="0.26.0", language_model_only=True) for d in (full_dir, swa_dir)]
    assert plans[0].ranks[0].weights["drafter"] == plans[1].ranks[0].weights["drafter"]
    assert plans[1].kv_tokens > plans[0].kv_tokens
