"""The speculative drafter's dummy run in vLLM's profile run (doctor/planner/drafter_run.py): what it holds of the
target's forward, its own tensors per method and runner, and where it sets the profile's peak."""

from __future__ import annotations

import pytest

from doctor.models import get_model
from doctor.planner.coefficients import current
from doctor.planner.config import ServeConfig
from doctor.planner.drafter_run import aux_hidden_bytes, dense_layer_moments, drafter_run
from doctor.planner.drafters import drafter_from_config, known_drafters
from doctor.planner.forward import width
from doctor.planner.hardware import GIB, parse_gpus
from doctor.planner.moe import moe_workspace
from doctor.planner.overhead import (forward_peak, overhead_inputs, peak_activation, peak_phases, sampler_phase,
                                     v1_model_runner)

QWEN = get_model("Qwen/Qwen3.5-35B-A3B")
DFLASH = known_drafters()["z-lab/qwen3.5-35b-a3b-dflash"]
H200 = parse_gpus("1xH200").gpu
BF16 = 2


def _dflash(version: str, tokens: int, seqs: int, k: int = 15, tp: int = 1) -> ServeConfig:
    return ServeConfig(backend_version=version, tp=tp, max_num_batched_tokens=tokens, max_num_seqs=seqs, mtp_tokens=k,
                       speculative_method="dflash", drafter="z-lab/Qwen3.5-35B-A3B-DFlash",
                       language_model_only=True, max_model_len=32768)


def _run(cfg: ServeConfig, tokens: int, seqs: int):
    return drafter_run(QWEN, cfg, DFLASH if cfg.drafter else None, tokens, seqs, v1_model_runner(cfg),
                       moe_workspace(QWEN, cfg, tokens, H200.capability))


def _named(run, name: str) -> int:
    return sum(size for n, size, _ in run.tensors if n == name)


def test_a_dflash_target_keeps_one_hidden_state_per_target_layer_id_through_its_forward():
    # z-lab/Qwen3.5-35B-A3B-DFlash reads target_layer_ids [1, 10, 19, 28, 37]: five [T, 2048] BF16 tensors the
    # target's later pieces hold (models/interfaces.py _maybe_add_hidden_state)
    tokens = 32768
    with_drafter = forward_peak(QWEN, _dflash("0.26.0", tokens, 128), tokens).total
    plain = forward_peak(QWEN, ServeConfig(backend_version="0.26.0", max_num_batched_tokens=tokens,
                                           language_model_only=True), tokens).total
    assert with_drafter - plain == 5 * tokens * 2048 * BF16 == aux_hidden_bytes(QWEN, DFLASH, tokens)


def test_an_earlier_pipeline_stage_keeps_no_aux_states_for_a_drafter_it_does_not_run():
    cfg = _dflash("0.26.0", 8192, 128)
    assert forward_peak(QWEN, cfg, 8192, last_stage=False).total < forward_peak(QWEN, cfg, 8192).total


def test_the_v1_dflash_dummy_run_projects_every_drafter_layers_k_and_v_over_all_batched_tokens():
    # 8 layers x 2 (K, V) x 4 KV heads x 128 = 8,192 values a token, made by one GEMM and copied layer-major
    run = _run(_dflash("0.26.0", 32768, 128), 32768, 128)
    assert run.moment == "DFlash context K/V precompute"
    assert _named(run, "DFlash fused K/V projection of every layer") == 32768 * 8192 * BF16
    assert _named(run, "DFlash K/V layer-major contiguous copy") == 32768 * 8192 * BF16
    assert _named(run, "target aux hidden states for the drafter") == 5 * 32768 * 2048 * BF16


def test_the_dflash_projection_is_split_over_the_tp_group_by_kv_heads():
    one = _run(_dflash("0.26.0", 32768, 128), 32768, 128)
    four = _run(_dflash("0.26.0", 32768, 128, tp=4), 32768, 128)
    name = "DFlash fused K/V projection of every layer"
    assert _named(four, name) * 4 == _named(one, name)


def test_the_v2_dflash_dummy_run_samples_draft_logits_for_k_tokens_of_each_dummy_request():
    # v1/worker/gpu/model_runner.py _dummy_run (0.31+): num_reqs = min(T, max_num_seqs, T // (1 + k)) = 128
    run = _run(_dflash("0.32.0", 2048, 256), 2048, 256)
    assert run.moment == "DFlash draft logits over 1920 rows"
    assert _named(run, "draft logits") == 128 * 15 * QWEN.vocab_size * BF16


def test_before_0_31_the_v2_dummy_batch_is_not_cut_to_fit_the_speculators_query_tokens():
    # 0.29.0 / 0.30.0 _dummy_run: num_reqs = min(T, max_num_seqs) whatever 1 + k is: 256 requests x 15 draft rows
    run = _run(_dflash("0.30.0", 2048, 256), 2048, 256)
    capped = _run(_dflash("0.31.0", 2048, 256), 2048, 256)
    assert _named(run, "draft logits") == 256 * 15 * QWEN.vocab_size * BF16
    assert _named(capped, "draft logits") == 128 * 15 * QWEN.vocab_size * BF16


def test_v2_dflash_draft_logits_set_the_profile_peak_where_the_target_forward_is_small():
    cfg = _dflash("0.30.0", 2048, 256)
    inputs = overhead_inputs(QWEN, cfg, parse_gpus("1xRTX5090").gpu)
    assert inputs.drafter_phase > max(inputs.forward_bytes, sampler_phase(inputs, current()))
    assert peak_activation(inputs, current()) == inputs.drafter_phase


def test_0_34_drops_the_combined_context_states_before_the_precompute():
    held = _run(_dflash("0.32.0", 8192, 256), 8192, 256)
    dropped = _run(_dflash("0.34.0", 8192, 256), 8192, 256)
    assert held.total - dropped.total == 8192 * 2048 * BF16


@pytest.mark.parametrize("tokens, seqs", [(2048, 256), (8192, 1024), (16384, 1024), (32768, 128), (65536, 8)])
def test_the_mtp_layers_run_stays_below_the_targets_forward(tokens, seqs):
    # one attention + MoE layer with the target's hidden states held holds less than the target's GDN pieces:
    # the H200 MTP sweep (tests/fixtures/h200-rehearsal/kv-sweep) logs the forward's peak at 32,768 tokens
    cfg = ServeConfig(backend_version="0.26.0", max_num_batched_tokens=tokens, max_num_seqs=seqs, mtp_tokens=1,
                      speculative_method="mtp", language_model_only=True)
    inputs = overhead_inputs(QWEN, cfg, H200)
    assert 0 < inputs.drafter_phase < inputs.forward_bytes


def test_an_eagle3_drafters_first_layer_takes_embeddings_and_hidden_states_side_by_side():
    eagle3 = drafter_from_config({"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 2048,
                                  "num_attention_heads": 32, "num_key_value_heads": 4, "num_hidden_layers": 1,
                                  "intermediate_size": 8192, "vocab_size": 248320, "draft_vocab_size": 32000},
                                 "eagle3 head", "test")
    first = dense_layer_moments(eagle3, 1, first_layer=True)[0]
    later = dense_layer_moments(eagle3, 1, first_layer=False)[0]
    assert width(first) - width(later) == eagle3.hidden_size


@pytest.mark.parametrize("cfg", [
    ServeConfig(backend_version="0.26.0"),
    ServeConfig(backend_version="0.26.0", mtp_tokens=4, speculative_method="ngram"),
], ids=["no speculation", "n-gram"])
def test_no_drafter_model_means_no_drafter_phase(cfg):
    assert drafter_run(QWEN, cfg, None, 8192, 256, True, moe_workspace(QWEN, cfg, 8192)) is None
    assert overhead_inputs(QWEN, cfg, H200).drafter_phase == 0


def test_the_drafter_phase_is_reported_in_gib_that_add_up():
    run = _run(_dflash("0.26.0", 32768, 128), 32768, 128)
    assert run.total == sum(size for _, size, _ in run.tensors)
    assert 3 * GIB < run.total < 5 * GIB


def test_the_plan_names_the_drafters_run_where_it_sets_the_activation():
    from doctor.planner import plan
    from doctor.planner.render import render_text

    nvfp4 = get_model("nvidia/Qwen3.6-35B-A3B-NVFP4")
    drafting = plan(nvfp4, parse_gpus("1xRTX5090"), ServeConfig(backend_version="0.30.0", mtp_tokens=15,
                                                                speculative_method="dflash",
                                                                drafter="z-lab/Qwen3.5-35B-A3B-DFlash"))
    plain = plan(nvfp4, parse_gpus("1xRTX5090"), ServeConfig(backend_version="0.30.0"))
    assert drafting.ranks[0].terms.peak_phase == "the drafter's dummy run"
    assert "(at the drafter's dummy run)" in render_text(drafting)
    assert plain.ranks[0].terms.peak_phase == "the vision encoder"     # its dummy images, without a drafter
    assert "drafter's dummy run" not in render_text(plain)


def test_the_profile_peak_is_its_largest_phase_with_the_encoders_outputs_held_beside_the_later_ones():
    cfg = ServeConfig(backend_version="0.26.0", max_num_batched_tokens=8192, max_num_seqs=256, mtp_tokens=1,
                      speculative_method="mtp")
    inputs = overhead_inputs(QWEN, cfg, H200)
    phases = peak_phases(inputs, current())
    held = inputs.encoder_inputs + inputs.encoder_outputs
    assert held > 0
    assert phases["the drafter's dummy run"] == held + inputs.drafter_phase
    assert peak_activation(inputs, current()) == max(phases.values())


def _mtp_sweep() -> list[dict]:
    from pathlib import Path

    import yaml

    entries = yaml.safe_load((Path(__file__).parent / "data" / "published_kv" / "vllm.yaml").read_text())["entries"]
    return [e for e in entries if e["id"].startswith("h200-vllm-0.26-bf16-mtp")]


@pytest.mark.parametrize("entry", _mtp_sweep(), ids=lambda e: e["id"])
def test_on_the_h200_mtp_sweep_the_mtp_layers_run_never_sets_the_peak_and_the_plan_meets_each_logged_peak(entry):
    # tests/fixtures/h200-rehearsal/kv-sweep: K 1-3, 128-1,024 sequences, 4,096-32,768 batched tokens
    from doctor.planner.bootlog import parse_boot_log
    from doctor.planner.plan import resolve_config

    cfg = resolve_config(QWEN, ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"]))
    inputs = overhead_inputs(QWEN, cfg, parse_gpus(entry["gpus"]).gpu)
    phases = peak_phases(inputs, current())
    assert max(phases, key=phases.__getitem__) != "the drafter's dummy run"
    logged = parse_boot_log("\n".join(entry["log"])).activation_gib
    assert abs(peak_activation(inputs, current()) / GIB - logged) <= 0.15
