"""The planner against real, published vLLM KV-cache lines (tests/data/published_kv/, cited per entry)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from doctor.models import get_model
from doctor.planner import ServeConfig
from doctor.planner.drafters import drafter_capacity, drafter_of
from doctor.planner.hardware import GIB
from doctor.planner.plan import resolve_config
from doctor.planner.versions import vllm_rules
from doctor.planner.vllm_kv import vllm_capacity, vllm_layout

DATA = Path(__file__).parent / "data" / "published_kv" / "vllm.yaml"
ENTRIES = yaml.safe_load(DATA.read_text())["entries"]

AVAILABLE = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
REFUSAL_ESTIMATE = re.compile(r"the estimated maximum model length is (\d+)")


def find(pattern: re.Pattern, lines: list[str]) -> re.Match:
    return next(m for line in lines if (m := pattern.search(line)))


def logged_figure(entry, capacity) -> int:
    """vLLM up to 0.20.0 logged num_blocks // groups x block size; 0.20.1 on logs max_concurrency x max_model_len
    (doctor/planner/versions.py; the 0.20.0 and 0.20.2 boots of vllm-partial.yaml show both sides)."""
    return capacity.tokens if vllm_rules(str(entry["vllm"])).tokens_from_concurrency else capacity.legacy_tokens


# A drafter's own layers form KV groups of their own (doctor/planner/drafters.py): the layout below is the target's.
TARGET_ONLY = [e for e in ENTRIES if "drafter" not in e["flags"]]


@pytest.mark.parametrize("entry", TARGET_ONLY, ids=[e["id"] for e in TARGET_ONLY])
def test_kv_tokens_from_logged_available_memory(entry):
    assert entry["source"].startswith(("https://github.com/", "qwen-doctor H200 rehearsal", "qwen-doctor H100 rehearsal"))
    spec = get_model(entry["model"])
    cfg = resolve_config(spec, ServeConfig(backend_version=entry["vllm"], **entry["flags"]))
    cfg = cfg.with_(max_model_len=cfg.max_model_len or spec.max_position_embeddings)
    available_gib = float(find(AVAILABLE, entry["log"]).group(1))
    full = len(spec.full_attention_layers) + (spec.mtp_layers if cfg.mtp_tokens else 0)
    layout = vllm_layout(spec, cfg, full, len(spec.linear_attention_layers))
    if not any(TOKENS.search(line) for line in entry["log"]):
        # a boot vLLM refused for want of KV memory: the same budget holds less than one max-length request, and
        # the refusal's "estimated maximum model length" is what that budget holds
        estimate = int(find(REFUSAL_ESTIMATE, entry["log"]).group(1))
        mid = vllm_capacity(layout, int(available_gib * GIB), cfg.max_model_len, cfg)
        assert mid.tokens < cfg.max_model_len
        assert abs(mid.tokens - estimate) <= 0.03 * estimate
        return
    logged_tokens = int(find(TOKENS, entry["log"]).group(1).replace(",", ""))

    # The log rounds the budget to 0.01 GiB: the true value lies within +-0.005 GiB of it.
    low = vllm_capacity(layout, int((available_gib - 0.005) * GIB), cfg.max_model_len, cfg)
    high = vllm_capacity(layout, int((available_gib + 0.005) * GIB), cfg.max_model_len, cfg)
    mid = vllm_capacity(layout, int(available_gib * GIB), cfg.max_model_len, cfg)
    assert logged_figure(entry, low) <= logged_tokens <= logged_figure(entry, high)
    assert abs(logged_figure(entry, mid) - logged_tokens) <= 0.03 * logged_tokens
    concurrency = [m for line in entry["log"] if (m := CONCURRENCY.search(line))]
    if concurrency:
        assert round(low.max_concurrency, 2) <= float(concurrency[0].group(2)) <= round(high.max_concurrency, 2)


def test_mtp_adds_a_drafter_attention_layer_and_three_padding_layers():
    # spark-vllm-docker#200: "Add 3 padding layers": 10 + 1 MTP attention layers set the group size to
    # 11, so the 30 GDN layers fill cdiv(30, 11) = 3 groups of 11 (33 slots, 3 padding).
    # Conv state grows by the 2 speculative tokens: (3 + 2) x 8192 x 2 B + 2 MiB recurrent = 2,179,072 B,
    # block 16 x cdiv(2179072, 16 x 1024) = 2128; 52.66 GiB // (2128 x 1024 x 11) = 2358 blocks;
    # legacy log: 2358 // 4 groups x 2128 = 1,253,392 tokens.
    cfg = ServeConfig(kv_cache_dtype="fp8", max_model_len=65536, mtp_tokens=2)
    layout = vllm_layout(get_model("fp8"), cfg, 11, 30)
    assert (layout.block_size, layout.group_size, layout.mamba_groups) == (2128, 11, 3)
    assert layout.mamba_groups * layout.group_size - 30 == 3
    assert int(52.66 * GIB) // (2128 * 1024 * 11) // 4 * 2128 == 1_253_392


def test_derivation_of_the_first_published_line():
    # fp8 KV: 2 x 2 heads x 256 x 1 B = 1024 B/token/layer; mamba page 2,146,304 B -> block 2096 tokens
    # (16 * cdiv(2146304, 16 * 1024)); 4 groups of 10 layers -> 2096 * 1024 * 10 B per block;
    # 6.01 GiB // 21,463,040 B = 300 blocks; a 131,072-token request needs cdiv(131072, 2096) = 63
    # attention blocks + 3 mamba groups x 2 blocks (prefix caching "align") = 69;
    # 300 / 69 = 4.3478x -> int(4.3478 x 131072) = 569,878 tokens, as logged.
    assert int(6.01 * GIB) // (2096 * 1024 * 10) == 300
    assert int(300 / (63 + 6) * 131072) == 569_878


PARTIAL = yaml.safe_load((DATA.parent / "vllm-partial.yaml").read_text())["entries"]
PARTIAL_AVAILABLE = re.compile(r"Available KV cache(?: memory)?: ([\d.]+) GiB")
PARTIAL_TOKENS = re.compile(r"(?:GPU KV cache size|KV cache capacity): \**([\d,]+) tokens")
WITH_CACHE_LINES = [e for e in PARTIAL if any(PARTIAL_TOKENS.search(line) for line in e["log"])]


@pytest.mark.parametrize("entry", WITH_CACHE_LINES, ids=[e["id"] for e in WITH_CACHE_LINES])
def test_partly_described_boots_still_confirm_the_cache_layout(entry):
    # The layout depends on the architecture, the KV dtype and the flags only, so a checkpoint the registry does
    # not describe (RedHatAI's NVFP4 export) is laid out as the base model.
    assert entry["source"].startswith("https://github.com/")
    spec = get_model("Qwen/Qwen3.5-35B-A3B")
    cfg = resolve_config(spec, ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"]))
    available_gib = float(find(PARTIAL_AVAILABLE, entry["log"]).group(1))
    logged_tokens = int(find(PARTIAL_TOKENS, entry["log"]).group(1).replace(",", ""))
    drafter = drafter_of(cfg)
    full = len(spec.full_attention_layers) + (spec.mtp_layers if cfg.mtp_tokens and drafter is None else 0)
    linear = len(spec.linear_attention_layers)
    layout = vllm_layout(spec, cfg, full, linear)

    def capacity(gib: float):
        if drafter is None:
            return vllm_capacity(layout, int(gib * GIB), cfg.max_model_len, cfg)
        return drafter_capacity(spec, cfg, drafter, layout, full, linear, int(gib * GIB), cfg.max_model_len,
                                cfg.max_num_batched_tokens)

    assert logged_figure(entry, capacity(available_gib - 0.005)) <= logged_tokens
    assert logged_tokens <= logged_figure(entry, capacity(available_gib + 0.005))


def test_a_dflash_drafter_keeps_its_own_attention_layers_beside_the_gdn_groups():
    # dgx-spark-99sono-prismaquant-dflash6-0.22.0 (vLLM 0.22.0, BF16 KV, 200,000 tokens, DFlash with 6 tokens):
    # "Add 2 padding layers" and "Add 6 padding layers": the drafter's 8 attention layers are a second KV spec,
    # not a layer of the target's attention group; 71.59 GiB gives 7.35x, as logged.
    entry = next(e for e in PARTIAL if e["id"] == "dgx-spark-99sono-prismaquant-dflash6-0.22.0")
    spec = get_model("Qwen/Qwen3.5-35B-A3B")
    cfg = resolve_config(spec, ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"]))
    full, linear = len(spec.full_attention_layers), len(spec.linear_attention_layers)
    layout = vllm_layout(spec, cfg, full, linear)
    with_drafter = drafter_capacity(spec, cfg, drafter_of(cfg), layout, full, linear, int(71.59 * GIB),
                                    cfg.max_model_len, cfg.max_num_batched_tokens)
    as_mtp_head = vllm_capacity(vllm_layout(spec, cfg, full + 1, linear), int(71.59 * GIB), cfg.max_model_len, cfg)
    assert round(with_drafter.max_concurrency, 2) == 7.35
    assert as_mtp_head.max_concurrency > 2 * with_drafter.max_concurrency


def test_the_graph_estimate_is_subtracted_from_the_0_20_0_wheel_on():
    # A 0.20.0 boot prints the "enabled" notice and its utilisation arithmetic equals the logged estimate:
    # (0.9000 - 0.8886) x 31.84 GiB (WSL2 RTX 5090) = 0.36 GiB; 0.18.1rc1 / 0.19.2rc1 boots only announce it.
    entry = next(e for e in PARTIAL if e["id"] == "rtx5090-wsl-99sono-redhat-nvfp4-64k-8192")
    assert any("CUDA graph memory profiling is enabled" in line for line in entry["log"])
    assert round((0.9000 - 0.8886) * 31.84, 2) == float(re.search(r"Estimated CUDA graph memory: ([\d.]+)", "\n".join(
        entry["log"])).group(1))
    assert vllm_rules("0.20.0").cudagraph_estimate_subtracted
    assert not vllm_rules("0.19.2rc1.dev8").cudagraph_estimate_subtracted
    assert not vllm_rules("0.18.1rc1.dev147+g290809456").cudagraph_estimate_subtracted


# club-3090 banks each boot's pool as its report script transcribes it (BENCHMARKS.md, compose headers): GiB and
# tokens ("KV pool 16.58 GiB / **3,292,687 tok**"), or tokens and concurrency only. These are TP=2 boots on
# RTX 3090 / RTX 5090 pairs: one KV head, 10 attention + 30 GDN layers per rank.
TRANSCRIBED = re.compile(r"KV pool ([\d.]+) GiB / \**([\d,]+) tok")
POOL_AND_CONCURRENCY = re.compile(r"([\d,]+)(?:-token| tokens = ).*?([\d.]+) × 262K")
WITH_TRANSCRIBED = [e for e in PARTIAL if any(TRANSCRIBED.search(line) for line in e["log"])]


def base_layout(entry):
    spec = get_model("Qwen/Qwen3.5-35B-A3B")
    cfg = resolve_config(spec, ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"]))
    return vllm_layout(spec, cfg, len(spec.full_attention_layers), len(spec.linear_attention_layers)), cfg


@pytest.mark.parametrize("entry", WITH_TRANSCRIBED, ids=[e["id"] for e in WITH_TRANSCRIBED])
def test_transcribed_tp2_pools_follow_the_layout(entry):
    layout, cfg = base_layout(entry)
    gib, tokens = find(TRANSCRIBED, entry["log"]).groups()
    logged = int(tokens.replace(",", ""))
    low = vllm_capacity(layout, int((float(gib) - 0.005) * GIB), cfg.max_model_len, cfg)
    high = vllm_capacity(layout, int((float(gib) + 0.005) * GIB), cfg.max_model_len, cfg)
    assert entry["gpus"] == "2xRTX5090" and cfg.tp == 2
    assert logged_figure(entry, low) <= logged <= logged_figure(entry, high)


def test_the_2x3090_agentworld_pool_is_904_blocks_of_2096_tokens():
    # 1,795,289 tokens at 6.85x: block 2096 (one fp8 KV head of 256 per rank, page padded to the GDN state),
    # a 262,144-token request takes cdiv(262144, 2096) = 126 attention blocks + 3 GDN groups x 2 ("align");
    # 904 / 132 = 6.8485x -> int(6.8485 x 262144) = 1,795,289: 904 x 2096 x 1024 x 10 B = 9.04 GiB per rank.
    entry = next(e for e in PARTIAL if e["id"] == "club-3090-2x3090-agentworld-awq-0.25.1")
    layout, cfg = base_layout(entry)
    tokens, concurrency = find(POOL_AND_CONCURRENCY, entry["log"]).groups()
    assert (layout.block_size, layout.group_size, layout.mamba_groups) == (2096, 10, 3)
    assert layout.blocks_per_request(cfg.max_model_len, cfg) == 132
    capacity = vllm_capacity(layout, 904 * layout.bytes_per_block, cfg.max_model_len, cfg)
    assert capacity.tokens == int(tokens.replace(",", "")) and round(capacity.max_concurrency, 2) == float(concurrency)
    assert round(904 * layout.bytes_per_block / GIB, 2) == 9.04


def test_the_2x3090_autoround_pool_is_1031_blocks():
    # "7.81× concurrency, 2.05M-token KV pool" on vLLM 0.22.0 (fp8_e5m2, one sequence, vision on): 1,031 blocks.
    entry = next(e for e in PARTIAL if e["id"] == "club-3090-2x3090-autoround-dual-0.22.0")
    layout, cfg = base_layout(entry)
    fits = [b for b in range(1, 3000) if round(b / layout.blocks_per_request(cfg.max_model_len, cfg), 2) == 7.81]
    assert fits == [1031]
    capacity = vllm_capacity(layout, 1031 * layout.bytes_per_block, cfg.max_model_len, cfg)
    assert round(capacity.tokens / 1e6, 2) == 2.05


def _graph_logged_entries() -> list[dict]:
    """Every published vLLM boot that logs its capture plan and ran vLLM's default capture sizes
    (--max-cudagraph-capture-size is not a planner flag)."""
    out = []
    for path in sorted(DATA.parent.glob("vllm*.yaml")):
        for entry in yaml.safe_load(path.read_text(encoding="utf-8"))["entries"]:
            log = entry.get("log") or []
            if (isinstance(entry.get("flags"), dict) and any("Profiling CUDA graph memory" in line for line in log)
                    and not any("max_cudagraph_capture_size" in line for line in log)):
                out.append(entry)
    return out


@pytest.mark.parametrize("entry", _graph_logged_entries(), ids=lambda e: e["id"])
def test_the_planned_graph_count_is_the_logged_capture_plan(entry):
    """PIECEWISE and FULL graphs as "Profiling CUDA graph memory: PIECEWISE=n (largest=..), FULL=m" logs them,
    speculative boots included (sizes rounded to multiples of 1 + k under FULL decode graphs; PIECEWISE only
    under FlashInfer without TRT-LLM kernels)."""
    from doctor.planner.hardware import parse_gpus
    from doctor.planner.overhead import overhead_inputs

    line = find(re.compile(r"Profiling CUDA graph memory: (.*)"), entry["log"]).group(1)
    logged = sum(int(n) for n in re.findall(r"=(\d+) \(", line))
    cfg = ServeConfig(backend_version=str(entry["vllm"]), **entry["flags"])
    model = get_model(entry.get("plan_as") or entry["model"])
    assert overhead_inputs(model, cfg, parse_gpus(entry["gpus"]).gpu).graphs == logged
